package remediate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/drwatch/drwatch/failover"
	"github.com/prometheus/client_golang/prometheus"
)

// Cluster is the slice of the cluster node the Runner needs; *cluster.Node
// satisfies it.
type Cluster interface {
	// VerifyLeader returns nil only if this node is still the leader,
	// confirmed by a quorum, at the time of the call.
	VerifyLeader(ctx context.Context) error
	// Propose commits cmd (an encoded failover.Command) through the log and
	// returns the machine's encoded response.
	Propose(ctx context.Context, cmd []byte) (resp []byte, index uint64, err error)
}

// State is the local replica; *failover.Machine satisfies it. Both methods
// are safe for concurrent use and return copies.
type State interface {
	Desired() failover.Desired
	Remediations() []failover.RemediationRecord
}

// Entry is one remediator with its settings.
type Entry struct {
	Remediator Remediator
	Settings   Settings
}

// RunnerConfig wires a Runner.
type RunnerConfig struct {
	// Node is this node's ID, recorded as the actor of each record.
	Node        string
	Cluster     Cluster
	State       State
	Remediators []Entry
	// Interval is the period between passes in Run (default 30s).
	Interval time.Duration
	// Registerer receives drwatch_remediation_actions_total; nil registers nothing.
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	// Now is the clock for the hourly window (tests); default time.Now.
	Now func() time.Time
}

// Runner runs the remediators' passes on the leader. Run it only while
// this node leads; a new leader's Runner picks up from the replicated records.
type Runner struct {
	cfg     RunnerConfig
	log     *slog.Logger
	actions *prometheus.CounterVec

	mu   sync.Mutex
	last PassReport
}

// PassReport is what one pass did, for logs and the status page.
type PassReport struct {
	At  time.Time
	Gen uint64
	// Counts per remediation and result ("applied", "skipped_cap", ...,
	// and "done" for actions skipped because their Key was already applied).
	Counts map[string]map[string]int
	Err    error
}

// MetricActions is the name of the actions counter.
const MetricActions = "drwatch_remediation_actions_total"

// NewRunner checks cfg, registers the metric and returns a Runner.
func NewRunner(cfg RunnerConfig) (*Runner, error) {
	if cfg.Cluster == nil || cfg.State == nil {
		return nil, errors.New("remediate: Cluster and State are required")
	}
	seen := map[string]bool{}
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
		cfg.Remediators[i].Settings = e.Settings.withDefaults()
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 30 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Runner{cfg: cfg, log: log}
	r.actions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricActions,
		Help: "Remediation actions recorded in the replicated history, by remediation and result.",
	}, []string{"remediation", "result"})
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(r.actions); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, fmt.Errorf("remediate: register metric: %w", err)
			}
			// A new Runner after a leader change reuses the counter.
			r.actions = are.ExistingCollector.(*prometheus.CounterVec)
		}
	}
	for _, e := range cfg.Remediators {
		for _, res := range []string{failover.RemediationPlanned, failover.RemediationApplied, failover.RemediationFailed,
			failover.RemediationSkippedCap, failover.RemediationDryRun, failover.RemediationBlocked} {
			r.actions.WithLabelValues(e.Remediator.Name(), res)
		}
	}
	return r, nil
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

// Pass runs each enabled remediator once: Plan, then for each action in
// order record it and, within the caps and in mode on, verify leadership,
// Apply and record the outcome. A remediator whose Plan fails is skipped;
// a failed proposal or lost leadership ends the pass, since nothing may be
// applied that cannot be recorded.
func (r *Runner) Pass(ctx context.Context) PassReport {
	now := r.cfg.Now()
	gen := r.cfg.State.Desired().Gen
	rep := PassReport{At: now, Gen: gen, Counts: map[string]map[string]int{}}
	var errs []error
	for _, e := range r.cfg.Remediators {
		if !e.Settings.Mode.Enabled() {
			continue
		}
		err := r.runOne(ctx, e, gen, now, &rep)
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

func (r *Runner) runOne(ctx context.Context, e Entry, gen uint64, now time.Time, rep *PassReport) error {
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
	// Read the records after Plan: the applied keys and the hourly count
	// must be as fresh as possible.
	applied := map[string]bool{}
	hour := 0
	cutoff := now.Add(-time.Hour).UnixNano()
	for _, rec := range r.cfg.State.Remediations() {
		if rec.Name != name {
			continue
		}
		if rec.Result == failover.RemediationApplied {
			applied[rec.Key] = true
		}
		if (rec.Result == failover.RemediationApplied || rec.Result == failover.RemediationFailed) && rec.At >= cutoff {
			hour++
		}
	}
	pass := 0
	for _, a := range acts {
		key := name + "/" + a.Key
		if applied[key] {
			// Invariant 6: a previous leader (or pass) applied it already.
			count("done")
			continue
		}
		rec := failover.Remediation{Name: name, Gen: gen, Target: a.Target, Verb: a.Verb,
			Reason: a.Reason, Key: key, Actor: r.cfg.Node}
		switch {
		case a.ReportOnly != "":
			// Never applied, in any mode: the remediator says it cannot.
			rec.Result = failover.RemediationDryRun
			rec.Detail = "report-only: " + a.ReportOnly
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
		if err := r.record(ctx, rec, count); err != nil {
			return err
		}
		if rec.Result != failover.RemediationPlanned {
			if rec.Result == failover.RemediationSkippedCap {
				r.log.Warn("remediation cap reached", "remediation", name, "target", a.Target, "reason", rec.Detail)
			}
			if a.ReportOnly != "" {
				r.log.Warn("remediation cannot be applied here", "remediation", name, "target", a.Target, "reason", a.ReportOnly)
			}
			continue
		}
		if err := r.cfg.Cluster.VerifyLeader(ctx); err != nil {
			return errStop{fmt.Errorf("verify leader before %s %s: %w", a.Verb, a.Target, err)}
		}
		pass++
		hour++
		aerr := e.Remediator.Apply(ctx, a)
		rec.Result, rec.Detail = failover.RemediationApplied, ""
		switch {
		case errors.Is(aerr, ErrBlocked):
			// A budget said "not now": no harm done, none of the hourly cap
			// used, and the next pass asks again.
			hour--
			rec.Result, rec.Detail = failover.RemediationBlocked, truncate(aerr.Error(), 1024)
			r.log.Warn("remediation blocked", "remediation", name, "target", a.Target, "gen", gen, "reason", aerr.Error())
		case aerr != nil:
			rec.Result, rec.Detail = failover.RemediationFailed, truncate(aerr.Error(), 1024)
			r.log.Error("remediation failed", "remediation", name, "target", a.Target, "gen", gen, "err", aerr)
		default:
			r.log.Info("remediation applied", "remediation", name, "target", a.Target, "verb", a.Verb, "gen", gen, "reason", a.Reason)
		}
		if err := r.record(ctx, rec, count); err != nil {
			return err
		}
	}
	return nil
}

// record proposes rec and counts it when the machine recorded it (a
// duplicate of the latest record for its Key is not counted again).
func (r *Runner) record(ctx context.Context, rec failover.Remediation, count func(string)) error {
	rec.Reason = truncate(rec.Reason, 1024)
	b, err := failover.Encode(rec.Command())
	if err != nil {
		return errStop{fmt.Errorf("encode record: %w", err)}
	}
	resp, _, err := r.cfg.Cluster.Propose(ctx, b)
	if err != nil {
		return errStop{fmt.Errorf("record %s %s: %w", rec.Verb, rec.Target, err)}
	}
	res, err := failover.DecodeResponse(resp)
	if err != nil {
		return errStop{fmt.Errorf("record %s %s: %w", rec.Verb, rec.Target, err)}
	}
	count(rec.Result)
	if res.Noop == "" {
		r.actions.WithLabelValues(rec.Name, rec.Result).Inc()
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
