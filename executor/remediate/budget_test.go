package remediate

import (
	"context"
	"errors"
	"fmt"
	"github.com/drwatch/drwatch/test/fakeclock"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
)

// agingRemediator plans the same broken targets every pass with a reason
// that carries how long each has been broken, as orphaned-pods',
// dead-node's and octavia's do; a target it applied stays fixed.
type agingRemediator struct {
	name  string
	now   func() time.Time
	since time.Time
	fakeRemediator
}

func (f *agingRemediator) Name() string { return f.name }
func (f *agingRemediator) Plan(context.Context) ([]Action, error) {
	age := f.now().Sub(f.since)
	var out []Action
	for _, a := range f.actions {
		if slices.Contains(f.applied, a.Target) {
			continue
		}
		a.Reason = fmt.Sprintf("NotReady for %s", age)
		out = append(out, a)
	}
	return out, nil
}

// appliedInAnyHour is the most entries of at (sorted) within one hour.
func appliedInAnyHour(at []time.Time) int {
	most := 0
	for i := range at {
		n := 0
		for j := i; j < len(at) && at[j].Sub(at[i]) < time.Hour; j++ {
			n++
		}
		most = max(most, n)
	}
	return most
}

// applyLog wraps a fakeRemediator's Apply with the clock's time.
type timedApply struct {
	Remediator
	now func() time.Time
	at  []time.Time
}

func (t *timedApply) Apply(ctx context.Context, a Action) error {
	err := t.Remediator.Apply(ctx, a)
	if err == nil {
		t.at = append(t.at, t.now())
	}
	return err
}

// TestRunnerHourlyCapHoldsWhileReasonsAge: 40 targets whose reasons carry
// a growing age, one action per pass, ten an hour, 120 passes 30 s apart:
// at most ten are applied in any hour, and each held target is recorded
// once per change of what holds it, not once per pass, so the records and
// the history stay small.
func TestRunnerHourlyCapHoldsWhileReasonsAge(t *testing.T) {
	clk := fakeclock.At(time.Unix(100000, 0))
	c := newFakeCluster(clk.Now)
	f := &agingRemediator{name: "aging", now: clk.Now, since: clk.Now(), fakeRemediator: fakeRemediator{actions: actions(40, "node")}}
	ta := &timedApply{Remediator: f, now: clk.Now}
	r := newRunner(t, c, clk, nil, Entry{Remediator: ta, Settings: Settings{Mode: ModeOn, MaxPerPass: 1, MaxPerHour: 10}})
	for range 120 {
		if rep := r.Pass(context.Background()); rep.Err != nil {
			t.Fatal(rep.Err)
		}
		clk.Add(30 * time.Second)
	}
	if n := appliedInAnyHour(ta.at); n > 10 {
		t.Fatalf("%d actions applied within one hour, cap 10 (applied at %v)", n, ta.at)
	}
	if len(ta.at) != 10 {
		t.Fatalf("%d actions applied in the hour, want the cap's 10", len(ta.at))
	}
	// Each target: one skipped_cap per cap that held it (per pass, then
	// per hour), and a planned and an applied record for the ten applied.
	if n := len(c.m.Remediations()); n > 40*2+10*2 {
		t.Fatalf("%d records after 120 passes over 40 targets, want at most %d: a held target is recorded once per change", n, 40*2+10*2)
	}
	if n := len(c.m.History()); n > 40*2+10 {
		t.Fatalf("%d history entries, want at most %d", n, 40*2+10)
	}
}

// TestRunnerRecordsAHeldTargetAgainWhenItsStateChanges is the look-alike:
// a target whose state changes (a new Key) or whose hold changes (another
// cap) is recorded again; only a new age in its reason is not.
func TestRunnerRecordsAHeldTargetAgainWhenItsStateChanges(t *testing.T) {
	clk := fakeclock.At(time.Unix(100000, 0))
	c := newFakeCluster(clk.Now)
	f := &agingRemediator{name: "aging", now: clk.Now, since: clk.Now(), fakeRemediator: fakeRemediator{actions: actions(2, "node")}}
	r := newRunner(t, c, clk, nil, Entry{Remediator: f, Settings: Settings{Mode: ModeDryRun}})
	held := func(target string) int {
		n := 0
		for _, rec := range c.m.Remediations() {
			if rec.Target == target && (rec.Result == failover.RemediationSkippedCap || rec.Result == failover.RemediationDryRun) {
				n++
			}
		}
		return n
	}
	// Dry-run, one action per pass: node0 is recorded as a dry run, node1
	// as skipped by the per-pass cap, whatever the order after that.
	for range 5 {
		r.Pass(context.Background())
		clk.Add(30 * time.Second)
	}
	total := held("node0") + held("node1")
	if total > 4 {
		t.Fatalf("%d records of two held targets over 5 passes, want at most 4 (each once per change of its hold)", total)
	}
	before := held("node0")
	f.actions[0].Key = "fix/node0/episode-2"
	r.Pass(context.Background())
	if got := held("node0"); got != before+1 {
		t.Fatalf("node0 with a new Key: %d records, want %d: a new state is recorded", got, before+1)
	}
}

// TestRunnerBudgetOutlivesRecordChurn: another remediator's dry-run
// records, new every pass (its targets' states keep changing), push every
// record of a repairing remediator out of the bounded records; its hourly
// cap, its applied keys and its backoff hold all the same.
func TestRunnerBudgetOutlivesRecordChurn(t *testing.T) {
	clk := fakeclock.At(time.Unix(100000, 0))
	c := newFakeCluster(clk.Now)
	fix := &fakeRemediator{name: "fix", actions: actions(30, "node")}
	fixT := &timedApply{Remediator: fix, now: clk.Now}
	flaky := &fakeRemediator{name: "flaky", actions: actions(1, "lb"), errs: map[string]error{"lb0": errors.New("octavia: 503")}}
	churn := &churnRemediator{name: "churn", targets: 60}
	r := newRunner(t, c, clk, nil,
		Entry{Remediator: churn, Settings: Settings{Mode: ModeDryRun, MaxPerPass: 60}},
		Entry{Remediator: fixT, Settings: Settings{Mode: ModeOn, MaxPerPass: 1, MaxPerHour: 3}},
		Entry{Remediator: flaky, Settings: Settings{Mode: ModeOn, MaxPerPass: 1, MaxPerHour: 10}})
	for range 120 {
		if rep := r.Pass(context.Background()); rep.Err != nil {
			t.Fatal(rep.Err)
		}
		clk.Add(30 * time.Second)
	}
	if churn.plans < 120 || len(c.m.Remediations()) != failover.MaxRemediations {
		t.Fatalf("the churn filled %d of %d records, want all", len(c.m.Remediations()), failover.MaxRemediations)
	}
	if n := appliedInAnyHour(fixT.at); n > 3 {
		t.Fatalf("%d repairs applied within one hour, cap 3 (at %v)", n, fixT.at)
	}
	seen := map[string]bool{}
	for _, target := range fix.applied {
		if seen[target] {
			t.Fatalf("%s applied twice under the same key: its applied record was evicted and forgotten", target)
		}
		seen[target] = true
	}
	// Backoff 1m doubling to 30m: tries at 0, 1, 3, 7, 15, 31 and 61 minutes at most.
	if n := triedCount(flaky, "lb0"); n > 7 {
		t.Fatalf("lb0 tried %d times in an hour, want at most 7 under backoff", n)
	}
}

// churnRemediator plans targets whose state (and so Key) changes every
// pass, with a random-looking reason.
type churnRemediator struct {
	name    string
	targets int
	plans   int
}

func (f *churnRemediator) Name() string { return f.name }
func (f *churnRemediator) Plan(context.Context) ([]Action, error) {
	f.plans++
	out := make([]Action, f.targets)
	for i := range out {
		target := fmt.Sprintf("pod%d", i)
		out[i] = Action{Target: target, Verb: "delete", Reason: fmt.Sprintf("seen %d times", f.plans*7919%1000),
			Key: fmt.Sprintf("%s@%d", target, f.plans)}
	}
	return out, nil
}
func (f *churnRemediator) Apply(context.Context, Action) error { return nil }

// randomRemediator is a remediator whose world changes at random: targets
// break (a new episode, so a new Key), change state while broken, and its
// Apply succeeds, fails, needs an admin, finds its precondition gone or is
// blocked, at random. Every Apply is logged with the clock's time.
type randomRemediator struct {
	name   string
	rng    *rand.Rand
	now    func() time.Time
	broken map[string]int // target -> episode
	next   int
	tries  []try
}

// try is one Apply of a randomRemediator and its outcome.
type try struct {
	at          time.Time
	target, key string
	err         error
}

func (f *randomRemediator) Name() string { return f.name }

func (f *randomRemediator) Plan(context.Context) ([]Action, error) {
	var out []Action
	for _, target := range slices.Sorted(maps.Keys(f.broken)) {
		// A reason that says something new every pass, as an age does.
		out = append(out, Action{Target: target, Verb: "fix", Key: fmt.Sprintf("%s@%d", target, f.broken[target]),
			Reason: fmt.Sprintf("broken, seen %d", f.rng.Int())})
	}
	return out, nil
}

func (f *randomRemediator) Apply(_ context.Context, a Action) error {
	var err error
	switch p := f.rng.Float64(); {
	case p < 0.45:
		if f.rng.Float64() < 0.7 { // else Plan still sees it: the runner must know it is done
			delete(f.broken, a.Target)
		}
	case p < 0.70:
		err = errors.New("api: 503")
	case p < 0.78:
		err = fmt.Errorf("api: 403: %w", ErrNeedsAdmin)
	case p < 0.90:
		err = fmt.Errorf("gone: %w", ErrPrecondition)
	default:
		err = fmt.Errorf("pdb: %w", ErrBlocked)
	}
	f.tries = append(f.tries, try{at: f.now(), target: a.Target, key: a.Key, err: err})
	return err
}

// perturb breaks and changes targets at random between passes.
func (f *randomRemediator) perturb(targets int) {
	for range f.rng.IntN(3) {
		f.next++
		f.broken[fmt.Sprintf("t%d", f.rng.IntN(targets))] = f.next
	}
}

// checkBudgets fails t unless f's tries kept s's caps, never applied a
// Key twice, waited out every backoff of r and never retried a parked Key.
func checkBudgets(t *testing.T, seed uint64, f *randomRemediator, s Settings, r *Runner, passes []time.Time) {
	t.Helper()
	for _, end := range passes {
		used, failed, inPass := 0, map[string]bool{}, 0
		for _, x := range f.tries {
			if x.at.Equal(end) {
				inPass++
			}
			if x.at.After(end) || x.at.Before(end.Add(-time.Hour)) || errors.Is(x.err, ErrBlocked) {
				continue
			}
			switch {
			case x.err == nil:
				used++
			case !failed[x.target]:
				failed[x.target] = true
				used++
			}
		}
		if used > s.MaxPerHour || inPass > s.MaxPerPass {
			t.Fatalf("seed %d, %s: in the hour to %s %d counted against max_per_hour %d, %d tries in its pass (max_per_pass %d)",
				seed, f.name, end.Format(time.TimeOnly), used, s.MaxPerHour, inPass, s.MaxPerPass)
		}
	}
	type backoff struct {
		failures int
		last     time.Time
	}
	bo := map[string]backoff{}
	applied, parked := map[string]bool{}, map[string]bool{}
	for _, x := range f.tries {
		b := bo[x.target]
		switch {
		case applied[x.key]:
			t.Fatalf("seed %d, %s: %s tried at %s after it was applied", seed, f.name, x.key, x.at.Format(time.TimeOnly))
		case parked[x.key]:
			t.Fatalf("seed %d, %s: %s tried at %s after it needed an admin", seed, f.name, x.key, x.at.Format(time.TimeOnly))
		case b.failures > 0 && x.at.Before(b.last.Add(r.backoff(b.failures))):
			t.Fatalf("seed %d, %s: %s tried at %s, within the backoff after failure %d at %s", seed, f.name, x.target,
				x.at.Format(time.TimeOnly), b.failures, b.last.Format(time.TimeOnly))
		}
		switch {
		case x.err == nil:
			applied[x.key], b = true, backoff{}
		case errors.Is(x.err, ErrNeedsAdmin):
			parked[x.key] = true
		case errors.Is(x.err, ErrPrecondition), errors.Is(x.err, ErrBlocked):
		default:
			b = backoff{failures: b.failures + 1, last: x.at}
		}
		bo[x.target] = b
	}
}

// TestRunnerBudgetsHoldForRandomTraffic: for random worlds (many targets,
// reasons new every pass, outcomes of every kind, another repair whose
// dry-run records churn the bounded records) over hours of passes at
// random intervals, each repair keeps its caps in every hour and pass,
// never tries an applied or parked Key again and waits out every backoff.
// Seeded: a failure names its seed.
func TestRunnerBudgetsHoldForRandomTraffic(t *testing.T) {
	seeds := 4
	if testing.Short() {
		seeds = 2
	}
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 31))
		clk := fakeclock.At(time.Unix(100000, 0))
		c := newFakeCluster(clk.Now)
		var fs []*randomRemediator
		var entries []Entry
		targets := map[string]int{}
		for i := range 3 {
			f := &randomRemediator{name: fmt.Sprintf("r%d", i), rng: rng, now: clk.Now, broken: map[string]int{}}
			fs = append(fs, f)
			targets[f.name] = 5 + rng.IntN(46)
			entries = append(entries, Entry{Remediator: f, Settings: Settings{Mode: ModeOn, MaxPerPass: 1 + rng.IntN(3), MaxPerHour: 1 + rng.IntN(8)}})
		}
		churn := &churnRemediator{name: "churn", targets: 10 + rng.IntN(31)}
		entries = append(entries, Entry{Remediator: churn, Settings: Settings{Mode: ModeDryRun, MaxPerPass: 100}})
		r := newRunner(t, c, clk, nil, entries...)
		var passes []time.Time
		for range 240 {
			for _, f := range fs {
				f.perturb(targets[f.name])
			}
			if rep := r.Pass(context.Background()); rep.Err != nil {
				t.Fatalf("seed %d: %v", seed, rep.Err)
			}
			passes = append(passes, clk.Now())
			clk.Add(time.Duration(5+rng.IntN(86)) * time.Second)
		}
		if len(c.m.Remediations()) != failover.MaxRemediations {
			t.Fatalf("seed %d: %d records, want the churn to fill all %d", seed, len(c.m.Remediations()), failover.MaxRemediations)
		}
		for i, f := range fs {
			if len(f.tries) == 0 {
				t.Fatalf("seed %d: %s never tried anything", seed, f.name)
			}
			checkBudgets(t, seed, f, r.cfg.Remediators[i].Settings, r, passes)
		}
	}
}
