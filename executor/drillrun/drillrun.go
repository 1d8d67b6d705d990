package drillrun

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/executor/reconcile"
	"github.com/drwatch/drwatch/failover"
)

// State is the local replica as the executor reads it.
type State interface {
	// View is the status picture (the policy, the verdicts).
	View() failover.View
	// Drills returns the ended drills, oldest first, and the running one.
	Drills() (ended []failover.DrillRecord, running *failover.DrillRecord)
}

// Readiness runs the readiness checks of drill d as it ends (the backup's
// certificates, the records' TTL against the RTO budget with the times d
// measured, the remediation plan); each is PASS or FAIL with its reason.
type Readiness func(ctx context.Context, d failover.DrillRecord) []failover.DrillCheck

// Config wires a Runner.
type Config struct {
	Node    string // recorded as the actor that ended a drill
	State   State
	Cluster failover.Leader
	// DNS writes the canary. Its fence record must be the drill fence, not
	// the production one; when it implements dnsprovider.CompareAndSwapper
	// every write is a compare-and-swap.
	DNS      dnsprovider.Provider
	Verifier reconcile.Verifier // nil: the provider's own read is the verification
	// Schedule is how often the leader starts a drill by itself; 0 never.
	// Canary gives a scheduled drill its canary from the replicated policy.
	Schedule time.Duration
	Canary   func(failover.Policy) failover.DrillCanary
	// Readiness, if set, runs the readiness checks before a drill ends.
	Readiness Readiness
	// Interval is the requeue period with nothing to do.
	Interval time.Duration
	// BackoffBase and BackoffMax cap the retry after an error (default 200ms to 10s).
	BackoffBase, BackoffMax time.Duration
	Logger                  *slog.Logger
	Now                     func() time.Time
}

// Runner executes drills. Run it only while this node leads.
type Runner struct {
	cfg Config
	log *slog.Logger
	// current is the drill this runner has moved forward: a drill with
	// steps that is not current was left half done by another leader.
	current uint64
}

// New checks cfg and returns a Runner.
func New(cfg Config) (*Runner, error) {
	switch {
	case cfg.State == nil || cfg.Cluster == nil || cfg.DNS == nil:
		return nil, errors.New("drillrun: State, Cluster and DNS are required")
	case cfg.Interval <= 0:
		return nil, errors.New("drillrun: Interval must be > 0")
	case cfg.Schedule > 0 && cfg.Canary == nil:
		return nil, errors.New("drillrun: a Schedule needs a Canary")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Runner{cfg: cfg, log: log}, nil
}

// Run runs passes until ctx ends (leadership lost or shutdown), retrying
// errors with capped exponential backoff; wake makes the next pass start
// at once (a command was applied).
func (r *Runner) Run(ctx context.Context, wake <-chan struct{}) {
	backoff := reconcile.Backoff{Base: r.cfg.BackoffBase, Max: r.cfg.BackoffMax}
	for {
		wait, err := r.Pass(ctx)
		woken := wake
		switch {
		case ctx.Err() != nil:
			return
		case err == nil:
			backoff.Reset()
		default:
			// Every applied command wakes the runner; a retry waits its
			// backoff out all the same, so a DNS server that refuses is
			// not asked again on every probe round.
			wait, woken = backoff.Next(), nil
			r.log.Warn("drill will retry", "err", err, "retry_in", wait)
		}
		if wait > 0 && !reconcile.Wait(ctx, wait, woken) {
			return
		}
	}
}

// Pass carries the running drill to its end, or starts a scheduled drill
// that is due. It is safe to repeat and returns when to run the next pass.
func (r *Runner) Pass(ctx context.Context) (time.Duration, error) {
	ended, running := r.cfg.State.Drills()
	if running != nil {
		if err := r.execute(ctx, *running); err != nil {
			return 0, err
		}
		return r.cfg.Interval, nil
	}
	if !r.due(ended) {
		return r.cfg.Interval, nil
	}
	return r.startScheduled(ctx)
}

// due reports whether a scheduled drill should start now: a schedule
// interval after the last drill started (skipped ones included, so a rule
// that refuses does not make it retry every pass), or, before the first
// drill, once the watchers can judge the backup.
func (r *Runner) due(ended []failover.DrillRecord) bool {
	if r.cfg.Schedule <= 0 {
		return false
	}
	if n := len(ended); n > 0 {
		return r.cfg.Now().Sub(time.Unix(0, ended[n-1].StartedAt)) >= r.cfg.Schedule
	}
	v := r.cfg.State.View()
	return v.Policy != nil && v.Sites[failover.Backup].Verdict != failover.NoQuorum
}

func (r *Runner) startScheduled(ctx context.Context) (time.Duration, error) {
	v := r.cfg.State.View()
	if v.Policy == nil {
		return r.cfg.Interval, nil
	}
	start := failover.DrillStart{Reason: "scheduled, every " + r.cfg.Schedule.String(), Actor: failover.SystemActor,
		Canary: r.cfg.Canary(*v.Policy), Scheduled: true, RequestedAt: r.cfg.Now().UnixNano()}
	res, _, err := failover.Submit(ctx, r.cfg.Cluster, failover.Command{Payload: start})
	if err != nil {
		return 0, fmt.Errorf("start scheduled drill: %w", err)
	}
	r.log.Info("scheduled drill started", "result", res.Message)
	return 0, nil
}

// errLeader marks an error of the cluster (leadership, proposing): the
// drill is not at fault, and the next pass or the next leader carries on.
type errLeader struct{ err error }

func (e errLeader) Error() string { return e.err.Error() }
func (e errLeader) Unwrap() error { return e.err }

// stepError is a DNS step of the drill that failed: the drill fails at
// Step and is rolled back.
type stepError struct {
	Step string
	Err  error
}

func (e *stepError) Error() string { return e.Step + ": " + e.Err.Error() }
func (e *stepError) Unwrap() error { return e.Err }

// canary is the drill's target in the provider's shape.
type canary struct {
	primary, backup dnsprovider.RRset
	// fwd and back are the fences of the write to the backup values and of
	// the write back.
	fwd, back uint64
}

func (r *Runner) canaryOf(d failover.DrillRecord) canary {
	zone := r.cfg.DNS.Zone()
	sets := reconcile.ToProvider([]failover.RRset{d.Canary.RRset(failover.Primary), d.Canary.RRset(failover.Backup)}, zone)
	return canary{primary: sets[0], backup: sets[1], fwd: d.ID, back: d.ID + 1}
}

func (r *Runner) execute(ctx context.Context, d failover.DrillRecord) error {
	c := r.canaryOf(d)
	_, failing := d.Step(failover.DrillStepRollback)
	_, interrupted := d.Step(failover.DrillStepInterrupted)
	// A drill with steps that this runner did not take was left half done
	// by a leader that died: what it wrote and verified is not known for
	// sure (a write of its may still land), so it is rolled back, never
	// carried on as if nothing had happened.
	if len(d.Steps) > 0 && r.current != d.ID && !failing && !interrupted && d.AbortedBy == 0 {
		if err := r.step(ctx, d.ID, failover.DrillStepInterrupted, "the leader that ran it was lost mid-drill; "+r.cfg.Node+" rolls it back", nil); err != nil {
			return err
		}
		interrupted = true
	}
	if d.AbortedBy == 0 && !failing && !interrupted {
		r.current = d.ID
		err := r.forward(ctx, &d, c)
		var se *stepError
		switch {
		case err == nil:
			return r.end(ctx, d, "", "")
		case errors.As(err, &se) && ctx.Err() == nil:
			r.log.Warn("drill step failed; rolling the canary back", "drill", d.ID, "step", se.Step, "err", se.Err)
			if err := r.step(ctx, d.ID, failover.DrillStepRollback, se.Error(), nil); err != nil {
				return err
			}
		case errors.Is(err, errAborted):
		default:
			return err
		}
	}
	// Read the drill again: the rollback, the interruption or the abort is on it.
	_, running := r.cfg.State.Drills()
	if running == nil || running.ID != d.ID {
		return nil
	}
	d = *running
	if d.AbortedBy != 0 {
		if _, ok := d.Step(failover.DrillStepRollback); !ok {
			if err := r.step(ctx, d.ID, failover.DrillStepRollback, fmt.Sprintf("a real decision (gen %d) arrived mid-drill", d.AbortedBy), nil); err != nil {
				return err
			}
		}
	}
	if err := r.writeBack(ctx, &d, c); err != nil && !r.untouched(ctx, d, c, err) {
		return err
	}
	switch _, interrupted := d.Step(failover.DrillStepInterrupted); {
	case d.AbortedBy != 0:
		return r.finish(ctx, d, failover.DrillRolledBack, "", fmt.Sprintf("rolled back: a real decision (gen %d) arrived mid-drill", d.AbortedBy), nil)
	case interrupted:
		return r.finish(ctx, d, failover.DrillRolledBack, "", "rolled back: the leader that ran it was lost mid-drill", nil)
	}
	rb, _ := d.Step(failover.DrillStepRollback)
	return r.end(ctx, d, failedStep(d), "rolled back after "+rb.Detail)
}

// untouched reports whether a write back that failed with err may be
// given up: the zone refuses the drill's writes for good (a terminal
// error: the update policy, the key), the drill never recorded writing
// the canary, and the canary does not hold the backup values. Nothing of
// the drill's is in the zone then, and retrying would keep the drill
// running, and every later drill refused, for ever.
func (r *Runner) untouched(ctx context.Context, d failover.DrillRecord, c canary, err error) bool {
	if _, wrote := d.Step(failover.DrillStepBackupWritten); wrote || !dnsprovider.IsTerminal(err) {
		return false
	}
	got, rerr := r.cfg.DNS.GetRecords(ctx, []dnsprovider.RRsetID{c.backup.ID()})
	if rerr != nil || got[0].Equal(c.backup) {
		return false
	}
	r.log.Error("the zone refuses the drill's writes; a human must act", "drill", d.ID, "err", err)
	return true
}

// failedStep is the first step towards the backup that was not recorded
// before the rollback: the one that failed.
func failedStep(d failover.DrillRecord) string {
	for _, s := range []string{failover.DrillStepBackupWritten, failover.DrillStepBackupVerified} {
		if _, ok := d.Step(s); !ok {
			return s
		}
	}
	return failover.DrillStepPrimaryWritten
}

var errAborted = errors.New("drill aborted by a real decision")

// forward runs the steps of d that are not recorded yet: the canary to the
// backup values and verified, then back to the primary values and verified.
func (r *Runner) forward(ctx context.Context, d *failover.DrillRecord, c canary) error {
	if _, ok := d.Step(failover.DrillStepBackupWritten); !ok {
		if err := r.write(ctx, c.backup, c.fwd, failover.DrillStepBackupWritten); err != nil {
			return err
		}
		if err := r.step(ctx, d.ID, failover.DrillStepBackupWritten, "wrote "+c.backup.String(), nil); err != nil {
			return err
		}
	}
	if _, ok := d.Step(failover.DrillStepBackupVerified); !ok {
		detail, servers, err := r.verify(ctx, c.backup, c.fwd, failover.DrillStepBackupVerified)
		if err != nil {
			return err
		}
		if err := r.step(ctx, d.ID, failover.DrillStepBackupVerified, detail, servers); err != nil {
			return err
		}
	}
	// A real decision that arrived meanwhile wins: roll back now.
	if _, running := r.cfg.State.Drills(); running != nil && running.ID == d.ID {
		*d = *running
		if d.AbortedBy != 0 {
			return errAborted
		}
	}
	return r.writeBack(ctx, d, c)
}

// writeBack puts the canary at its primary values and verifies it,
// recording the steps not yet recorded. Its errors are returned as they
// are: the write back is retried until it succeeds, whatever failed before.
func (r *Runner) writeBack(ctx context.Context, d *failover.DrillRecord, c canary) error {
	if _, ok := d.Step(failover.DrillStepPrimaryWritten); !ok {
		if err := r.write(ctx, c.primary, c.back, failover.DrillStepPrimaryWritten); err != nil {
			return err
		}
		if err := r.step(ctx, d.ID, failover.DrillStepPrimaryWritten, "wrote "+c.primary.String(), nil); err != nil {
			return err
		}
	}
	if _, ok := d.Step(failover.DrillStepPrimaryVerified); !ok {
		detail, servers, err := r.verify(ctx, c.primary, c.back, failover.DrillStepPrimaryVerified)
		if err != nil {
			return err
		}
		if err := r.step(ctx, d.ID, failover.DrillStepPrimaryVerified, detail, servers); err != nil {
			return err
		}
	}
	return nil
}

// write makes the canary hold want with fence gen=fence. A canary already
// there under that fence (a write whose record was lost with the leader)
// is not written again.
func (r *Runner) write(ctx context.Context, want dnsprovider.RRset, fence uint64, step string) error {
	actual, err := r.cfg.DNS.GetRecords(ctx, []dnsprovider.RRsetID{want.ID()})
	if err != nil {
		return &stepError{step, fmt.Errorf("read canary: %w", err)}
	}
	cas, isCAS := r.cfg.DNS.(dnsprovider.CompareAndSwapper)
	var cur uint64
	if isCAS {
		if cur, err = cas.GetFence(ctx); err != nil {
			return &stepError{step, fmt.Errorf("read drill fence: %w", err)}
		}
	}
	if actual[0].Equal(want) && (!isCAS || cur == fence) {
		return nil
	}
	if err := r.cfg.Cluster.VerifyLeader(ctx); err != nil {
		return errLeader{fmt.Errorf("verify leader before the drill's dns write: %w", err)}
	}
	switch {
	case !isCAS:
		_, err = r.cfg.DNS.SetRecords(ctx, []dnsprovider.RRset{want})
	case cur == fence:
		// The fence is ours, the values are not (changed by hand): nothing
		// to swap the fence with, so write the values alone.
		_, err = r.cfg.DNS.SetRecords(ctx, []dnsprovider.RRset{want})
	case cur > fence:
		return &stepError{step, fmt.Errorf("%w: drill fence gen=%d is newer than this drill's gen=%d", reconcile.ErrStale, cur, fence)}
	default:
		err = cas.Swap(ctx, actual, []dnsprovider.RRset{want}, cur, fence)
	}
	if err != nil {
		return &stepError{step, fmt.Errorf("write canary: %w", err)}
	}
	r.log.Info("drill canary written", "record", want.String(), "fence", fence)
	return nil
}

// verify waits until every authoritative server serves want (and the
// drill fence gen=fence with a compare-and-swap provider).
func (r *Runner) verify(ctx context.Context, want dnsprovider.RRset, fence uint64, step string) (string, []failover.ServerVerification, error) {
	if r.cfg.Verifier == nil {
		got, err := r.cfg.DNS.GetRecords(ctx, []dnsprovider.RRsetID{want.ID()})
		switch {
		case err != nil:
			return "", nil, &stepError{step, fmt.Errorf("read canary: %w", err)}
		case !got[0].Equal(want):
			return "", nil, &stepError{step, fmt.Errorf("provider serves %s, want %s", got[0], want)}
		}
		return "provider read matches", nil, nil
	}
	sets := []dnsprovider.RRset{want}
	if cas, ok := r.cfg.DNS.(dnsprovider.CompareAndSwapper); ok {
		sets = append(sets, dnsprovider.RRset{Name: cas.FenceName(), Type: "TXT", TTL: dnsprovider.FenceTTL, Values: []string{dnsprovider.FenceText(fence)}})
	}
	start := r.cfg.Now()
	v, err := r.cfg.Verifier.Verify(ctx, sets)
	if err == nil {
		err = v.Err()
	}
	if err != nil {
		return "", nil, &stepError{step, fmt.Errorf("verify canary: %w", err)}
	}
	return reconcile.DescribeVerification(v), reconcile.ServerTimes(v, start), nil
}

func (r *Runner) step(ctx context.Context, id uint64, step, detail string, servers []failover.ServerVerification) error {
	cmd := failover.DrillStep{ID: id, Step: step, StepAt: r.cfg.Now().UnixNano(), Detail: detail, Servers: servers}
	if _, _, err := failover.Submit(ctx, r.cfg.Cluster, failover.Command{Payload: cmd}); err != nil {
		return errLeader{fmt.Errorf("record drill %d step %s: %w", id, step, err)}
	}
	return nil
}

// end runs the readiness checks and ends d: passed when no step failed
// (failed names the step that did) and every check passed.
func (r *Runner) end(ctx context.Context, d failover.DrillRecord, failed, detail string) error {
	creds := failover.DrillCheck{Name: "dns_credentials", Pass: true, Reason: "the drill's write with the configured credentials succeeded"}
	if _, ok := d.Step(failover.DrillStepBackupWritten); !ok {
		creds.Pass, creds.Reason = false, "the drill could not write the canary: "+detail
	}
	checks := []failover.DrillCheck{creds}
	if r.cfg.Readiness != nil {
		checks = append(checks, r.cfg.Readiness(ctx, d)...)
	}
	outcome, rule := failover.DrillPassed, failed
	if failed != "" {
		outcome = failover.DrillFailed
	}
	for _, c := range checks {
		if !c.Pass {
			outcome = failover.DrillFailed
			if rule == "" {
				rule = c.Name
				detail = "readiness check " + c.Name + " failed: " + c.Reason
			}
		}
	}
	return r.finish(ctx, d, outcome, rule, detail, checks)
}

func (r *Runner) finish(ctx context.Context, d failover.DrillRecord, outcome, rule, detail string, checks []failover.DrillCheck) error {
	end := failover.DrillEnd{ID: d.ID, Outcome: outcome, Rule: rule, Detail: detail, Actor: r.cfg.Node, Readiness: slices.Clone(checks)}
	if _, _, err := failover.Submit(ctx, r.cfg.Cluster, failover.Command{Payload: end}); err != nil {
		return errLeader{fmt.Errorf("end drill %d: %w", d.ID, err)}
	}
	r.log.Info("drill ended", "drill", d.ID, "outcome", outcome, "rule", rule, "detail", detail)
	return nil
}
