package remediate

import (
	"context"
	"errors"
	"fmt"
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
	clk := &clock{t: time.Unix(100000, 0)}
	c := newFakeCluster(clk.Now)
	f := &agingRemediator{name: "aging", now: clk.Now, since: clk.Now(), fakeRemediator: fakeRemediator{actions: actions(40, "node")}}
	ta := &timedApply{Remediator: f, now: clk.Now}
	r := newRunner(t, c, clk, nil, Entry{ta, Settings{Mode: ModeOn, MaxPerPass: 1, MaxPerHour: 10}})
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
	clk := &clock{t: time.Unix(100000, 0)}
	c := newFakeCluster(clk.Now)
	f := &agingRemediator{name: "aging", now: clk.Now, since: clk.Now(), fakeRemediator: fakeRemediator{actions: actions(2, "node")}}
	r := newRunner(t, c, clk, nil, Entry{f, Settings{Mode: ModeDryRun}})
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
	clk := &clock{t: time.Unix(100000, 0)}
	c := newFakeCluster(clk.Now)
	fix := &fakeRemediator{name: "fix", actions: actions(30, "node")}
	fixT := &timedApply{Remediator: fix, now: clk.Now}
	flaky := &fakeRemediator{name: "flaky", actions: actions(1, "lb"), errs: map[string]error{"lb0": errors.New("octavia: 503")}}
	churn := &churnRemediator{name: "churn", targets: 60}
	r := newRunner(t, c, clk, nil,
		Entry{churn, Settings{Mode: ModeDryRun, MaxPerPass: 60}},
		Entry{fixT, Settings{Mode: ModeOn, MaxPerPass: 1, MaxPerHour: 3}},
		Entry{flaky, Settings{Mode: ModeOn, MaxPerPass: 1, MaxPerHour: 10}})
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
