package remediate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/internal/field"
	"github.com/drwatch/drwatch/internal/kubeconfig"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// State is the local replica; *failover.Machine satisfies it. Both methods
// are safe for concurrent use and return copies.
type State interface {
	Desired() failover.Desired
	// RemediationBudget is what all of a remediation's records say, those
	// evicted from the bounded records included (invariant 13).
	RemediationBudget(name string) failover.RemediationBudget
}

// GroupMachine is what GroupState reads; *failover.Machine satisfies it.
type GroupMachine interface {
	GroupDesired(group string) (failover.Desired, bool)
	GroupRemediationBudget(group, name string) failover.RemediationBudget
}

// GroupState is failover group's decision and remediation budgets, as the
// State of the Runner of that group's remediations (RunnerConfig.Group):
// the group's generation, and budgets that hold the group's own records
// only, so that one group's actions never use another's caps nor count as
// its applied keys. A group the replicated policy does not have (yet: the
// leader's file may be newer than the log) has no decision, generation 0.
func GroupState(m GroupMachine, group string) State { return groupState{m: m, group: group} }

type groupState struct {
	m     GroupMachine
	group string
}

func (g groupState) Desired() failover.Desired {
	d, ok := g.m.GroupDesired(g.group)
	if !ok {
		return failover.Desired{}
	}
	return d
}

func (g groupState) RemediationBudget(name string) failover.RemediationBudget {
	return g.m.GroupRemediationBudget(g.group, name)
}

// Entry is one remediator with its settings.
type Entry struct {
	Remediator Remediator
	Settings   Settings
	// Cluster names the Kubernetes cluster whose nodes the remediator's
	// actions disrupt (Action.Disrupts): entries with the same Cluster share
	// one node disruption budget. "" means its actions disrupt no node.
	Cluster string
	// MaxDisruptedNodes is Cluster's budget: how many of its nodes may be
	// disrupted at once (0: DefaultMaxDisruptedNodes). Entries of one
	// Cluster must agree.
	MaxDisruptedNodes int
}

// DefaultMaxDisruptedNodes is how many nodes of a cluster the repairs may
// disrupt at once unless configured otherwise: the default of
// remediations.kubernetes.<site>.max_disrupted_nodes.
const DefaultMaxDisruptedNodes = kubeconfig.DefaultMaxDisruptedNodes

// RunnerConfig wires a Runner.
type RunnerConfig struct {
	// Node is this node's ID, recorded as the actor of each record.
	Node string
	// Group is the failover group whose remediations these are, recorded
	// on each record (failover.Remediation.Group): State must then be the
	// group's (GroupState). "" is the top-level remediations section's
	// runner, as before groups.
	Group       string
	Cluster     failover.Leader // proposes the records, confirms leadership before each Apply
	State       State
	Remediators []Entry
	// Interval is the period between passes in Run (default 30s).
	Interval time.Duration
	// Registerer receives drwatch_remediation_actions_total; nil registers nothing.
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	// Now is the clock for the hourly window (tests); default time.Now.
	Now func() time.Time
	// BackoffBase and BackoffMax bound the wait before a failed target is
	// tried again (defaults DefaultBackoffBase, DefaultBackoffMax).
	BackoffBase, BackoffMax time.Duration
}

// Runner runs the remediators' passes on the leader. Run it only while
// this node leads; a new leader's Runner picks up from the replicated records.
type Runner struct {
	cfg     RunnerConfig
	log     *slog.Logger
	actions *prometheus.CounterVec
	brake   *prometheus.GaugeVec

	mu   sync.Mutex
	last PassReport
}

// PassReport is what one pass did, for logs and the status page.
type PassReport struct {
	At  time.Time
	Gen uint64
	// Counts per remediation and result ("applied", "skipped_cap", ...,
	// "done" for actions skipped because their Key was already applied,
	// "backoff" for targets waiting out a backoff, and "needs_admin" for
	// parked ones).
	Counts map[string]map[string]int
	Err    error
}

// MetricActions is the name of the actions counter.
const MetricActions = "drwatch_remediation_actions_total"

// Defaults for RunnerConfig's backoff: a failed target waits 1m, 2m, 4m...
// up to 30m before it is tried again.
const (
	DefaultBackoffBase = time.Minute
	DefaultBackoffMax  = 30 * time.Minute
)

// MetricBrake is the name of the disruption brake gauge.
const MetricBrake = "drwatch_remediation_brake_engaged"

// NewRunner checks cfg, registers the metric and returns a Runner.
func NewRunner(cfg RunnerConfig) (*Runner, error) {
	if cfg.Cluster == nil || cfg.State == nil {
		return nil, errors.New("remediate: Cluster and State are required")
	}
	seen := map[string]bool{}
	maxNodes := map[string]int{}
	for i, e := range cfg.Remediators {
		if e.Remediator == nil {
			return nil, fmt.Errorf("remediate: remediator %d is nil", i)
		}
		n := e.Remediator.Name()
		if n == "" || seen[n] {
			return nil, fmt.Errorf("remediate: remediator name %q empty or repeated", n)
		}
		seen[n] = true
		if !e.Settings.Mode.Valid() {
			return nil, fmt.Errorf("remediate: %s: mode %q (want off, dry-run or on)", n, e.Settings.Mode)
		}
		// Entries built in code get the defaults of the settings' tags.
		field.SetDefaults(&cfg.Remediators[i].Settings)
		if e.Cluster == "" {
			continue
		}
		m := e.MaxDisruptedNodes
		if m < 0 {
			return nil, fmt.Errorf("remediate: %s: max disrupted nodes %d (want >= 0)", n, m)
		}
		if m == 0 {
			m = DefaultMaxDisruptedNodes
		}
		if prev, ok := maxNodes[e.Cluster]; ok && prev != m {
			return nil, fmt.Errorf("remediate: %s: max disrupted nodes %d in cluster %s, where another remediation has %d", n, m, e.Cluster, prev)
		}
		maxNodes[e.Cluster] = m
		cfg.Remediators[i].MaxDisruptedNodes = m
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 30 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.BackoffBase <= 0 {
		cfg.BackoffBase = DefaultBackoffBase
	}
	if cfg.BackoffMax < cfg.BackoffBase {
		cfg.BackoffMax = max(DefaultBackoffMax, cfg.BackoffBase)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	actions, err := register(cfg.Registerer, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricActions,
		Help: "Remediation actions recorded in the replicated history, by remediation and result.",
	}, []string{"remediation", "result"}))
	if err != nil {
		return nil, err
	}
	brake, err := register(cfg.Registerer, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: MetricBrake,
		Help: "1 while a remediation's disruption brake holds: more than its brake_share of nodes or load balancers qualify at once, and it acts on none.",
	}, []string{"remediation"}))
	if err != nil {
		return nil, err
	}
	r := &Runner{cfg: cfg, log: log, actions: actions, brake: brake}
	for _, e := range cfg.Remediators {
		for _, res := range []string{failover.RemediationPlanned, failover.RemediationApplied, failover.RemediationFailed,
			failover.RemediationSkippedCap, failover.RemediationDryRun, failover.RemediationBlocked} {
			r.actions.WithLabelValues(e.Remediator.Name(), res)
		}
		r.brake.WithLabelValues(e.Remediator.Name())
	}
	return r, nil
}

// register registers c with reg (nil: none) and returns it, or the
// collector already registered under its name: a new Runner after a leader
// change reuses the metrics.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if reg == nil {
		return c, nil
	}
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return c, fmt.Errorf("remediate: register metric: %w", err)
		}
		return are.ExistingCollector.(C), nil
	}
	return c, nil
}

// Last returns the latest pass's report.
func (r *Runner) Last() PassReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// Run runs a pass every Interval until ctx ends (leadership lost or
// shutdown). Errors are logged and retried next interval.
func (r *Runner) Run(ctx context.Context) {
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	// A node that no longer runs passes holds no brake; the next leader's
	// Runner reports its own.
	defer func() {
		for _, e := range r.cfg.Remediators {
			r.brake.WithLabelValues(e.Remediator.Name()).Set(0)
		}
	}()
	for {
		if rep := r.Pass(ctx); rep.Err != nil && ctx.Err() == nil {
			r.log.Warn("remediation pass failed", "gen", rep.Gen, "err", rep.Err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// errStop aborts the whole pass: this node cannot record or is not leader.
type errStop struct{ err error }

func (e errStop) Error() string { return e.err.Error() }
func (e errStop) Unwrap() error { return e.err }

// Pass runs each enabled remediator once: Plan, then (for a Census) the
// disruption brake, then for each action, least recently attempted target
// first, record it and, within its cluster's node disruption budget (read
// once at the start of the pass from every Disruptor of the cluster) and
// the caps and in mode on, verify leadership, Apply and record the outcome. A target that failed waits out its backoff
// (BackoffBase doubled per consecutive failure, at most BackoffMax); one
// whose failure wraps ErrNeedsAdmin is parked until Plan gives it a new
// Key. Both are read from the replicated budget, which no record traffic
// can evict, so a new leader honours them. A held or skipped target is
// recorded once per change of its state (Key, result, detail), not every
// pass, whatever its reason says. A failure wrapping ErrPrecondition is not backed off: the
// next Plan decides afresh. A remediator whose Plan or Census fails is skipped; a failed
// proposal or lost leadership ends the pass, since nothing may be applied
// that cannot be recorded.
func (r *Runner) Pass(ctx context.Context) PassReport {
	now := r.cfg.Now()
	gen := r.cfg.State.Desired().Gen
	rep := PassReport{At: now, Gen: gen, Counts: map[string]map[string]int{}}
	var errs []error
	budgets := r.disruptionBudgets(ctx)
	for _, e := range r.cfg.Remediators {
		if !e.Settings.Mode.Enabled() {
			continue
		}
		err := r.runOne(ctx, e, gen, now, &rep, budgets[e.Cluster])
		if err == nil {
			continue
		}
		errs = append(errs, fmt.Errorf("%s: %w", e.Remediator.Name(), err))
		var stop errStop
		if errors.As(err, &stop) {
			break
		}
	}
	rep.Err = errors.Join(errs...)
	r.mu.Lock()
	r.last = rep
	r.mu.Unlock()
	return rep
}

func (r *Runner) runOne(ctx context.Context, e Entry, gen uint64, now time.Time, rep *PassReport, nodes *nodeBudget) error {
	name, set := e.Remediator.Name(), e.Settings
	count := func(result string) {
		if rep.Counts[name] == nil {
			rep.Counts[name] = map[string]int{}
		}
		rep.Counts[name][result]++
	}
	acts, err := e.Remediator.Plan(ctx)
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	brake, err := judgeBrake(ctx, e.Remediator, set.BrakeShare, brakeFloor(e), acts)
	if err != nil {
		// Fail closed: without the population the brake cannot be judged.
		return err
	}
	engaged := 0.0
	if brake != "" {
		engaged = 1
	}
	// Log the changes only: the gauge and the records say it every pass.
	switch g := r.brake.WithLabelValues(name); {
	case brake != "" && gaugeValue(g) == 0:
		r.log.Error("remediation disruption brake engaged: acting on none", "remediation", name, "reason", brake)
	case brake == "" && gaugeValue(g) == 1:
		r.log.Info("remediation disruption brake released", "remediation", name)
	}
	r.brake.WithLabelValues(name).Set(engaged)
	// Read the budget after Plan: the applied keys and the hourly count
	// must be as fresh as possible.
	bud := r.cfg.State.RemediationBudget(name)
	cutoff := now.Add(-time.Hour).UnixNano()
	hour := bud.Hour(cutoff)
	// The targets that failed in the hour count once, however often.
	failedTargets := map[string]bool{}
	for _, ev := range bud.Window {
		if ev.Target != "" && ev.At >= cutoff {
			failedTargets[ev.Target] = true
		}
	}
	order := fairOrder(acts, &bud)
	// A dry run shows what mode on would do, within the budget, without
	// taking any of it from the remediations that are on.
	if nodes != nil && set.Mode != ModeOn {
		nodes = nodes.clone()
	}
	pass := 0
	for _, a := range order {
		key := name + "/" + a.Key
		t := bud.Targets[a.Target]
		if t == nil {
			t = &failover.TargetBudget{}
		}
		if slices.Contains(t.Applied, key) {
			// Invariant 6: a previous leader (or pass) applied it already.
			count("done")
			continue
		}
		if t.Parked == key {
			// Parked: the record says why. The Key is new once the target's
			// state changes (the Remediator contract), and only then is it
			// tried again; the Reason may carry an age that grows every pass.
			count("needs_admin")
			continue
		}
		if set.Mode == ModeOn && t.Failures > 0 && now.Before(time.Unix(0, t.LastFailure).Add(r.backoff(t.Failures))) {
			count("backoff")
			continue
		}
		rec := failover.Remediation{Name: name, Group: r.cfg.Group, Gen: gen, Target: a.Target, Verb: a.Verb,
			Reason: a.Reason, Key: key, Actor: r.cfg.Node}
		switch {
		case a.ReportOnly != "":
			// Never applied, in any mode: the remediator says it cannot.
			rec.Result = failover.RemediationDryRun
			rec.Detail = "report-only: " + a.ReportOnly
		case brake != "":
			rec.Result = failover.RemediationSkippedCap
			rec.Detail = brake
		case a.Disrupts != "" && nodes.refuse(a.Disrupts) != "":
			rec.Result = failover.RemediationSkippedCap
			rec.Detail = nodes.refuse(a.Disrupts)
		case pass >= set.MaxPerPass:
			rec.Result = failover.RemediationSkippedCap
			rec.Detail = fmt.Sprintf("per-pass cap %d reached", set.MaxPerPass)
		case set.Mode == ModeOn && hour >= set.MaxPerHour:
			rec.Result = failover.RemediationSkippedCap
			rec.Detail = fmt.Sprintf("per-hour cap %d reached", set.MaxPerHour)
		case set.Mode == ModeDryRun:
			rec.Result = failover.RemediationDryRun
			pass++
		default:
			rec.Result = failover.RemediationPlanned
		}
		if a.Disrupts != "" && (rec.Result == failover.RemediationPlanned || rec.Result == failover.RemediationDryRun) && a.ReportOnly == "" {
			// Taken before Apply, and kept whatever Apply returns: a
			// failed reboot may still have happened.
			nodes.take(a.Disrupts, name)
		}
		var fresh bool
		switch {
		case (rec.Result == failover.RemediationSkippedCap || rec.Result == failover.RemediationDryRun) &&
			t.Last == failover.RecordDigest(&rec):
			// Held or skipped as last recorded: the target's state has
			// not changed, only perhaps the age in its reason.
			count(rec.Result)
		default:
			if fresh, err = r.record(ctx, rec, count); err != nil {
				return err
			}
		}
		if rec.Result != failover.RemediationPlanned {
			// The records say it every pass; the log says it when it is new.
			switch {
			case !fresh:
			case rec.Result == failover.RemediationSkippedCap && brake == "" && a.Disrupts != "" && nodes.refuse(a.Disrupts) != "":
				r.log.Warn("remediation waits for the node disruption budget", "remediation", name, "target", a.Target, "reason", rec.Detail)
			case rec.Result == failover.RemediationSkippedCap && brake == "":
				r.log.Warn("remediation cap reached", "remediation", name, "target", a.Target, "reason", rec.Detail)
			case a.ReportOnly != "":
				r.log.Warn("remediation cannot be applied here", "remediation", name, "target", a.Target, "reason", a.ReportOnly)
			}
			continue
		}
		if err := r.cfg.Cluster.VerifyLeader(ctx); err != nil {
			return errStop{fmt.Errorf("verify leader before %s %s: %w", a.Verb, a.Target, err)}
		}
		pass++
		aerr := e.Remediator.Apply(ctx, a)
		rec.Result, rec.Detail = failover.RemediationApplied, ""
		switch {
		case aerr == nil:
			hour++
			r.log.Info("remediation applied", "remediation", name, "target", a.Target, "verb", a.Verb, "gen", gen, "reason", a.Reason)
		case errors.Is(aerr, ErrBlocked):
			// A budget said "not now": no harm done, none of the hourly cap
			// used, no backoff, and the next pass asks again.
			rec.Result, rec.Detail = failover.RemediationBlocked, truncate(aerr.Error(), 1024)
			r.log.Warn("remediation blocked", "remediation", name, "target", a.Target, "gen", gen, "reason", aerr.Error())
		default:
			rec.Result, rec.Detail = failover.RemediationFailed, truncate(aerr.Error(), 1024)
			rec.NeedsAdmin = errors.Is(aerr, ErrNeedsAdmin)
			rec.Precondition = !rec.NeedsAdmin && errors.Is(aerr, ErrPrecondition)
			if !failedTargets[a.Target] {
				failedTargets[a.Target] = true
				hour++
			}
			r.log.Error("remediation failed", "remediation", name, "target", a.Target, "gen", gen, "needs_admin", rec.NeedsAdmin, "err", aerr)
		}
		if _, err := r.record(ctx, rec, count); err != nil {
			return err
		}
	}
	return nil
}

// judgeBrake is the disruption brake's verdict on acts, just planned by r: why
// none of them may be applied, or "" when they may: more than share of the
// population, and at least floor members, qualify at once. Report-only
// actions change nothing, so the brake weighs the others. An error means
// r's population could not be counted.
func judgeBrake(ctx context.Context, r Remediator, share float64, floor int, acts []Action) (string, error) {
	c, ok := r.(Census)
	acting := slices.DeleteFunc(slices.Clone(acts), func(a Action) bool { return a.ReportOnly != "" })
	if !ok || len(acting) == 0 {
		return "", nil
	}
	pop, err := c.Census(ctx, acting)
	if err != nil {
		return "", fmt.Errorf("census: %w", err)
	}
	return brakeReason(pop, share, floor), nil
}

// brakeFloor is the fewest qualifying members that engage e's brake. A
// repair that disrupts nodes has no floor: with one, 2 of 3 nodes, a
// majority, could be disrupted at once. The others keep BrakeMinAffected.
func brakeFloor(e Entry) int {
	if e.Cluster != "" {
		return 1
	}
	return BrakeMinAffected
}

func brakeReason(pop Population, share float64, floor int) string {
	if pop.Affected < floor || float64(pop.Affected) <= share*float64(pop.Total) {
		return ""
	}
	unit := pop.Unit
	if unit == "" {
		unit = "members"
	}
	return fmt.Sprintf("disruption brake: %d of %d %s qualify at once, more than %.4g%%: likely an outage or a wrong view of it, not %d broken %s",
		pop.Affected, pop.Total, unit, share*100, pop.Affected, unit)
}

// gaugeValue reads g's current value.
func gaugeValue(g prometheus.Gauge) float64 {
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		return 0
	}
	return m.GetGauge().GetValue()
}

// fairOrder returns acts with the least recently attempted targets first,
// in plan order among equals, so that neither a target that keeps failing
// nor one whose work recurs can hold the head of every pass.
func fairOrder(acts []Action, b *failover.RemediationBudget) []Action {
	attempt := func(target string) int64 {
		if t := b.Targets[target]; t != nil {
			return t.LastAttempt
		}
		return 0
	}
	out := slices.Clone(acts)
	slices.SortStableFunc(out, func(x, y Action) int {
		return cmp.Compare(attempt(x.Target), attempt(y.Target))
	})
	return out
}

// backoff is the wait after the nth consecutive failure of a target:
// BackoffBase doubled each time, at most BackoffMax.
func (r *Runner) backoff(n int) time.Duration {
	d := r.cfg.BackoffBase
	for i := 1; i < n && d < r.cfg.BackoffMax; i++ {
		d *= 2
	}
	return min(d, r.cfg.BackoffMax)
}

// record proposes rec. fresh is whether the machine recorded it as new:
// a duplicate of the latest record for its Key is not counted again in the
// metric, nor logged again by the caller.
func (r *Runner) record(ctx context.Context, rec failover.Remediation, count func(string)) (fresh bool, err error) {
	rec.Reason = truncate(rec.Reason, 1024)
	res, index, err := failover.Submit(ctx, r.cfg.Cluster, failover.Command{Payload: rec})
	if err != nil {
		if index == 0 && errors.Is(err, failover.ErrBadCommand) {
			// Submit proposes nothing that does not encode.
			return false, errStop{fmt.Errorf("encode record: %w", err)}
		}
		return false, errStop{fmt.Errorf("record %s %s: %w", rec.Verb, rec.Target, err)}
	}
	count(rec.Result)
	if res.Noop != "" {
		return false, nil
	}
	r.actions.WithLabelValues(rec.Name, rec.Result).Inc()
	return true, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
