package remediate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/internal/field"
)

// Mode says whether a remediator runs, and whether it writes.
type Mode string

// Modes. The zero value (empty) means off.
const (
	ModeOff    Mode = "off"
	ModeDryRun Mode = "dry-run"
	ModeOn     Mode = "on"
)

// Valid reports whether m is a known mode (empty counts as off).
func (m Mode) Valid() bool {
	switch m {
	case "", ModeOff, ModeDryRun, ModeOn:
		return true
	}
	return false
}

// Enabled reports whether the remediator plans at all (dry-run or on).
func (m Mode) Enabled() bool { return m == ModeDryRun || m == ModeOn }

// Action is one change a remediator proposes.
type Action struct {
	// Target names the object acted on: "node/worker-3", "pod/ns/name",
	// "deployment/ns/name".
	Target string
	// Verb is what is done to it: "taint", "untaint", "delete", "force-delete", "scale".
	Verb string
	// Reason says why, for the history and the on-call human.
	Reason string
	// Key identifies the action across passes and leaders. It must be stable
	// for as long as the same fix is due (include the object's UID and, for
	// per-decision actions, the generation), and new once a new fix is due,
	// because the Runner never applies a Key the records show as applied.
	// The Runner prefixes it with the remediator's name.
	Key string
	// Data is what Apply needs, opaque to the Runner; it is not recorded.
	Data any
	// ReportOnly, when set, says why the action cannot be carried out
	// (the cluster lacks what it needs): Reason still says what would be
	// done. The Runner records it as not applied (dry_run, with
	// "report-only: " and this in the detail), in every mode, and never
	// calls Apply for it; it counts against no cap.
	ReportOnly string
	// Disrupts names the node the action disrupts ("" for none): a reboot,
	// an out-of-service taint, a force-delete of pods from a node that is
	// not Ready. The Runner lets the remediations of one cluster
	// (Entry.Cluster) disrupt at most Entry.MaxDisruptedNodes nodes at a
	// time, counting those the Disruptors say are still disrupted; an
	// action beyond it is recorded as skipped_cap. More actions on a node
	// already disrupted stay within the budget.
	Disrupts string
}

// Remediator is one remediation. Implementations are used by one Runner
// pass at a time; Plan and Apply need not be safe for concurrent use.
type Remediator interface {
	// Name is the remediation's stable name ("orphaned-pods"), used in
	// config, records and metric labels.
	Name() string
	// Plan reads the actual world and returns the actions due now, in a
	// deterministic order. The Runner takes targets least recently attempted
	// first and uses plan order only among equals, so an action that must
	// wait for another (a delete after a reboot) is not planned until it
	// may run. It never writes. It is idempotent: with the world
	// unchanged it returns the same actions. An error means the world could
	// not be read; the Runner records nothing and retries next pass.
	Plan(ctx context.Context) ([]Action, error)
	// Apply performs one action returned by Plan. It is idempotent: when the
	// effect is already there (taint present, pod gone) it returns nil. It
	// rechecks the precondition it can check cheaply and returns an error
	// wrapping ErrPrecondition when the world moved on since Plan, one
	// wrapping ErrBlocked when a budget refused it for now, and one
	// wrapping ErrNeedsAdmin when retrying cannot help; any other error is
	// a failure the Runner records as failed (and backs off from, except
	// for ErrPrecondition, or parks the target for ErrNeedsAdmin).
	Apply(ctx context.Context, a Action) error
}

// ErrPrecondition means an action's precondition no longer holds; the
// Runner records it as failed with the reason, and the next Plan decides
// afresh.
var ErrPrecondition = errors.New("precondition no longer holds")

// ErrNeedsAdmin means an action failed for good: retrying cannot help until
// a human acts or the target's state changes by itself (the API refused the
// credentials' right to act, 403, or refused a state that will not change on
// its own, 409 on a load balancer stuck PENDING_*). A remediator's Apply
// wraps it; the Runner records the failure as needing an admin and parks the
// target until Plan gives it a new Key.
var ErrNeedsAdmin = errors.New("needs an admin")

// Census is implemented by remediators whose actions each concern one
// member of a population (the cluster's nodes, the watched load
// balancers). The Runner uses it for the disruption brake: when more than
// the brake share of the population qualifies at once, the trouble is
// likely in the infrastructure or in drwatch's view of it, not in the
// members, and acting on them all would make it worse (as
// kube-controller-manager stops evicting in a zone past
// unhealthy-zone-threshold).
type Census interface {
	// Census counts the population and how many distinct members acts (just
	// returned by Plan, report-only ones left out) would change. Actions that only undo an earlier
	// repair or only warn need not count. It never writes, and is called
	// once per pass after Plan. An error means the population could not be
	// counted: the Runner acts on none of acts.
	Census(ctx context.Context, acts []Action) (Population, error)
}

// Population is what Census counted.
type Population struct {
	// Total is the population's size, Affected how many of it acts concern.
	Total, Affected int
	// Unit names the members in records: "nodes", "load balancers".
	Unit string
}

// ErrBlocked means a guard of the target system refused the action for
// now: a PodDisruptionBudget answered an eviction with 429. The Runner
// records it as blocked, not failed: it uses no cap, and the action is
// tried again on the next pass. Apply wraps it with the refusal's detail.
var ErrBlocked = errors.New("refused by a disruption budget")

// Decision is the failover decision a remediator may act on: the current
// generation and the site it makes active, and whether DNS serves it yet.
type Decision struct {
	Gen    uint64
	Active failover.Site
	// Verified is true once every authoritative server was seen serving
	// the decision's records (the replicated "verified" result).
	Verified bool
	// VerifiedAt is when that was seen, by the reconciler's clock; zero
	// when unknown (not verified, or the decision left the history).
	VerifiedAt time.Time
	// TTL is the longest TTL of the decision's records: how long after
	// VerifiedAt a resolver may still hand out the previous answer.
	TTL time.Duration
}

// NewDecision reads the decision from a replica's desired state and
// history (failover.Machine's Desired and History, or a status answer's).
func NewDecision(d failover.Desired, history []failover.Entry) Decision {
	out := Decision{Gen: d.Gen, Active: d.Active, Verified: d.Done}
	for _, r := range d.Records {
		out.TTL = max(out.TTL, time.Duration(r.TTL)*time.Second)
	}
	if !d.Done {
		return out
	}
	for i := len(history) - 1; i >= 0; i-- {
		if e := history[i]; e.Index == d.Gen && e.Gen == d.Gen && e.Timings.VerifiedAt != 0 {
			out.VerifiedAt = time.Unix(0, e.Timings.VerifiedAt)
			break
		}
	}
	return out
}

// Settings are one remediator's mode and caps.
type Settings struct {
	Mode Mode `yaml:"mode" default:"off" doc:"off, dry-run (record what would be done, write nothing) or on."`
	// MaxPerPass bounds the actions applied in one pass; 0 means the default 1.
	MaxPerPass int `yaml:"max_per_pass" default:"1" doc:"Most actions applied in one pass; the rest are recorded as skipped_cap."`
	// MaxPerHour bounds the actions applied in any hour, counted from the
	// replicated budget, plus each target that failed in it, counted once
	// however often it failed (so one failing target cannot use up the cap);
	// 0 means the default 10.
	MaxPerHour int `yaml:"max_per_hour" default:"10" doc:"Most actions applied in the last hour, plus one per target that failed in it (however often), counted from the replicated budget, which no record traffic evicts."`
	// BrakeShare is the disruption brake; 0 means DefaultBrakeShare.
	BrakeShare float64 `yaml:"brake_share" default:"0.5" doc:"Disruption brake: act on nothing when more than this share of the population (the cluster's nodes for dead_node_out_of_service and orphaned_pods; the cluster's instances for never_ready_instances and security_groups; the router's routes into the pod CIDR for neutron_route_gc; the watched load balancers for octavia_stuck_lb; the cluster's load balancers, floating IPs and volumes for cloud_debris) qualify at once, and, except for the repairs that disrupt nodes (dead_node_out_of_service, orphaned_pods, never_ready_instances), at least 3 members: so 2 of 3 nodes trip it (1 turns the brake off; ignored by the other remediations)."`
}

// Defaults for Settings.
const (
	DefaultMaxPerPass = 1
	DefaultMaxPerHour = 10
	// DefaultBrakeShare: act on nothing when more than half the population
	// qualifies at once.
	DefaultBrakeShare = 0.5
	// BrakeMinAffected is the fewest qualifying members that engage the
	// brake of a repair that disrupts no node, so that a small population
	// with one or two bad members is still repaired. A repair that disrupts
	// nodes has no floor: it would let 2 of 3 nodes be disrupted at once.
	BrakeMinAffected = 3
)

// Validate checks a remediator's mode, caps and brake, by path relative to
// the remediator's section; zero caps and brake are the defaults.
func (s Settings) Validate() field.Errors {
	var errs field.Errors
	if !s.Mode.Valid() {
		errs.Add("mode", "%q must be off, dry-run or on", s.Mode)
	}
	if s.MaxPerPass < 0 || s.MaxPerHour < 0 {
		errs.Add("", "caps must be >= 0")
	}
	if s.BrakeShare < 0 || s.BrakeShare > 1 || math.IsNaN(s.BrakeShare) {
		errs.Add("brake_share", "%v must be > 0 and <= 1 (0 or unset: %v)", s.BrakeShare, DefaultBrakeShare)
	}
	return errs
}

// Planned is one action with the remediator that planned it, for
// `drwatch remediate plan`. Held, when set, is why the runner would act on
// none of its remediator's actions this pass (the disruption brake, or a
// census that failed); report-only actions are never held.
type Planned struct {
	Remediation string
	Action
	Held string
}

// PlanAll runs Plan of each entry's remediator, and the disruption brake as
// the Runner judges it, read-only, and returns all actions sorted by
// remediation then plan order. It returns every error at once.
func PlanAll(ctx context.Context, entries []Entry) ([]Planned, error) {
	var out []Planned
	var errs []error
	for _, e := range entries {
		r := e.Remediator
		acts, err := r.Plan(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.Name(), err))
			continue
		}
		held, err := judgeBrake(ctx, r, e.Settings.BrakeShare, brakeFloor(e), acts)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.Name(), err))
			held = fmt.Sprintf("the population could not be counted, so the disruption brake cannot be judged: %v", err)
		}
		for _, a := range acts {
			p := Planned{Remediation: r.Name(), Action: a}
			if a.ReportOnly == "" {
				p.Held = held
			}
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Remediation < out[j].Remediation })
	return out, errors.Join(errs...)
}
