package remediate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/drwatch/drwatch/test/fakeclock"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/poll"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// fakeCluster is the replicated log in one process: Propose stamps the
// command with the leader's clock and applies it to a real failover.Machine,
// as cluster.Node does with LeaderTransform.
type fakeCluster struct {
	mu       sync.Mutex
	m        *failover.Machine
	idx      uint64
	now      func() time.Time
	notLead  error
	proposed int
}

func newFakeCluster(now func() time.Time) *fakeCluster {
	return &fakeCluster{m: failover.New(), now: now}
}

func (c *fakeCluster) VerifyLeader(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.notLead
}

func (c *fakeCluster) Propose(_ context.Context, cmd []byte) ([]byte, uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, err := failover.Stamp(cmd, c.now().UnixNano())
	if err != nil {
		return nil, 0, err
	}
	c.idx++
	c.proposed++
	return c.m.Apply(c.idx, b), c.idx, nil
}

// fakeRemediator plans a fixed list of actions and records applies.
type fakeRemediator struct {
	name    string
	actions []Action
	planErr error
	failOn  string
	// errs makes Apply of a target fail with the error.
	errs    map[string]error
	blockOn string
	plans   int
	applied []string
	// tried lists every Apply call's target, failed or not.
	tried []string
}

func (f *fakeRemediator) Name() string { return f.name }
func (f *fakeRemediator) Plan(context.Context) ([]Action, error) {
	f.plans++
	return f.actions, f.planErr
}
func (f *fakeRemediator) Apply(_ context.Context, a Action) error {
	f.tried = append(f.tried, a.Target)
	if err := f.errs[a.Target]; err != nil {
		return err
	}
	if a.Target == f.failOn {
		return fmt.Errorf("apply %s: %w", a.Target, ErrPrecondition)
	}
	if a.Target == f.blockOn {
		return fmt.Errorf("apply %s: budget allows no disruption: %w", a.Target, ErrBlocked)
	}
	f.applied = append(f.applied, a.Target)
	return nil
}

func actions(n int, prefix string) []Action {
	out := make([]Action, n)
	for i := range out {
		t := fmt.Sprintf("%s%d", prefix, i)
		out[i] = Action{Target: t, Verb: "fix", Reason: "broken", Key: "fix/" + t}
	}
	return out
}

func newRunner(t *testing.T, c *fakeCluster, clk *fakeclock.Clock, reg prometheus.Registerer, entries ...Entry) *Runner {
	t.Helper()
	r, err := NewRunner(RunnerConfig{Node: "a", Cluster: c, State: c.m, Remediators: entries, Registerer: reg, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// results counts the machine's records per result for one remediation.
func results(m *failover.Machine, name string) map[string]int {
	out := map[string]int{}
	for _, r := range m.Remediations() {
		if r.Name == name {
			out[r.Result]++
		}
	}
	return out
}

func eqCounts(got, want map[string]int) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

func TestRunnerModes(t *testing.T) {
	tests := []struct {
		mode        Mode
		wantPlans   int
		wantApplied int
		wantRecords map[string]int
	}{
		{"", 0, 0, map[string]int{}},
		{ModeOff, 0, 0, map[string]int{}},
		{ModeDryRun, 1, 0, map[string]int{"dry_run": 2}},
		{ModeOn, 1, 2, map[string]int{"planned": 2, "applied": 2}},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			clk := fakeclock.At(time.Unix(1000, 0))
			c := newFakeCluster(clk.Now)
			f := &fakeRemediator{name: "fake", actions: actions(2, "x")}
			r := newRunner(t, c, clk, nil, Entry{Remediator: f, Settings: Settings{Mode: tt.mode, MaxPerPass: 5}})
			if rep := r.Pass(context.Background()); rep.Err != nil {
				t.Fatal(rep.Err)
			}
			if f.plans != tt.wantPlans || len(f.applied) != tt.wantApplied {
				t.Fatalf("got %d plans %d applies, want %d and %d", f.plans, len(f.applied), tt.wantPlans, tt.wantApplied)
			}
			if got := results(c.m, "fake"); !eqCounts(got, tt.wantRecords) {
				t.Fatalf("got records %v, want %v", got, tt.wantRecords)
			}
		})
	}
}

func TestRunnerRecordsEverything(t *testing.T) {
	clk := fakeclock.At(time.Unix(1000, 0))
	c := newFakeCluster(clk.Now)
	// Give the machine a decision generation to carry.
	pol := failover.Policy{Nodes: []string{"a", "b", "c"}, Quorum: 2, Fall: 3, Rise: 2, Interval: time.Second, AutoFailover: true,
		Sites: map[failover.Site]failover.SitePolicy{
			failover.Primary: {Probes: []failover.ProbeRef{{Name: "p", Critical: true}}},
			failover.Backup:  {Probes: []failover.ProbeRef{{Name: "p", Critical: true}}},
		},
		Zone:    "example.org.",
		Records: []failover.Record{{Name: "www", Type: "A", TTL: 60, Primary: []string{"192.0.2.1"}, Backup: []string{"192.0.2.2"}}}}
	for _, cmd := range []failover.Command{
		failover.Command{Payload: failover.SetPolicy{Policy: pol}},
		failover.Command{Payload: failover.Failover{To: failover.Backup, Force: true, Actor: "alice"}},
	} {
		b, err := failover.Encode(cmd)
		if err != nil {
			t.Fatal(err)
		}
		resp, _, _ := c.Propose(context.Background(), b)
		if _, err := failover.DecodeResponse(resp); err != nil {
			t.Fatal(err)
		}
	}
	gen := c.m.Desired().Gen
	if gen == 0 {
		t.Fatal("no decision made")
	}
	reg := prometheus.NewRegistry()
	f := &fakeRemediator{name: "fake", actions: actions(3, "x"), failOn: "x1"}
	r := newRunner(t, c, clk, reg, Entry{Remediator: f, Settings: Settings{Mode: ModeOn, MaxPerPass: 2, MaxPerHour: 10}})
	r.Pass(context.Background())
	want := map[string]int{"planned": 2, "applied": 1, "failed": 1, "skipped_cap": 1}
	if got := results(c.m, "fake"); !eqCounts(got, want) {
		t.Fatalf("got records %v, want %v", got, want)
	}
	for _, rec := range c.m.Remediations() {
		if rec.Gen != gen || rec.Reason != "broken" || rec.Actor != "a" || rec.Key != "fake/fix/"+rec.Target || rec.At != clk.Now().UnixNano() {
			t.Fatalf("got record %+v, want gen %d, reason, actor, key and leader time", rec, gen)
		}
		if rec.Result == failover.RemediationFailed && !strings.Contains(rec.Detail, "precondition") {
			t.Fatalf("got failed detail %q, want the apply error", rec.Detail)
		}
	}
	kinds := 0
	for _, e := range c.m.History() {
		if e.Kind == failover.KindRemediation {
			kinds++
		}
	}
	if kinds != 3 {
		t.Fatalf("got %d remediation history entries, want 3 (applied, failed, skipped_cap)", kinds)
	}
	got, series := gatherActions(t, reg)
	for res, n := range want {
		if got["fake/"+res] != n {
			t.Fatalf("metric %s{result=%s}: got %v, want %d", MetricActions, res, got["fake/"+res], n)
		}
	}
	if series != 6 {
		t.Fatalf("got %d series, want 6 (one per result)", series)
	}
}

// TestRunnerBlockedKeepsTheCap: an Apply refused by a guard in the target
// system (ErrBlocked: a PodDisruptionBudget answering 429) is recorded as
// blocked, with its detail, in the history; it neither uses the hourly cap
// nor counts as applied, so it is tried again on the next pass.
func TestRunnerBlockedKeepsTheCap(t *testing.T) {
	clk := fakeclock.At(time.Unix(1000, 0))
	c := newFakeCluster(clk.Now)
	f := &fakeRemediator{name: "fake", actions: actions(2, "x"), blockOn: "x0"}
	r := newRunner(t, c, clk, nil, Entry{Remediator: f, Settings: Settings{Mode: ModeOn, MaxPerPass: 2, MaxPerHour: 2}})
	if rep := r.Pass(context.Background()); rep.Err != nil {
		t.Fatal(rep.Err)
	}
	want := map[string]int{"planned": 2, "blocked": 1, "applied": 1}
	if got := results(c.m, "fake"); !eqCounts(got, want) {
		t.Fatalf("first pass: got records %v, want %v", got, want)
	}
	var hist []string
	for _, e := range c.m.History() {
		if e.Kind == failover.KindRemediation {
			hist = append(hist, e.Outcome+" "+e.Detail)
		}
	}
	if len(hist) != 2 || !strings.Contains(hist[0], "blocked fix x0: apply x0: budget allows no disruption") {
		t.Fatalf("got history %q, want the blocked action with its detail, then the applied one", hist)
	}
	// The budget allows it now: the blocked action is applied within the
	// hourly cap of 2, since being blocked used none of it.
	f.blockOn = ""
	clk.Add(time.Minute)
	r.Pass(context.Background())
	if !slices.Equal(f.applied, []string{"x1", "x0"}) {
		t.Fatalf("got applies %q, want x1 then x0 (the blocked one, retried)", f.applied)
	}
}

func TestRunnerCapsAcrossLeaderChange(t *testing.T) {
	clk := fakeclock.At(time.Unix(10000, 0))
	c := newFakeCluster(clk.Now)
	set := Settings{Mode: ModeOn, MaxPerPass: 2, MaxPerHour: 3}
	f1 := &fakeRemediator{name: "fake", actions: actions(2, "a")}
	newRunner(t, c, clk, nil, Entry{Remediator: f1, Settings: set}).Pass(context.Background())
	if len(f1.applied) != 2 {
		t.Fatalf("leader 1: got %d applies, want 2", len(f1.applied))
	}

	// A new leader: new Runner and remediator, same replicated records.
	clk.Add(10 * time.Minute)
	f2 := &fakeRemediator{name: "fake", actions: actions(3, "b")}
	r2 := newRunner(t, c, clk, nil, Entry{Remediator: f2, Settings: set})
	r2.Pass(context.Background())
	if len(f2.applied) != 1 {
		t.Fatalf("leader 2: got %d applies, want 1 (hourly cap 3, 2 already used)", len(f2.applied))
	}
	if got := results(c.m, "fake")["skipped_cap"]; got != 2 {
		t.Fatalf("got %d skipped_cap records, want 2", got)
	}
	// A repeated pass within the hour applies nothing and records nothing new.
	before := len(c.m.Remediations())
	r2.Pass(context.Background())
	if len(f2.applied) != 1 || len(c.m.Remediations()) != before {
		t.Fatalf("repeated pass: got %d applies and %d new records, want 1 and 0", len(f2.applied), len(c.m.Remediations())-before)
	}
	// An hour after the first two, their budget is free again.
	clk.Add(51 * time.Minute)
	r2.Pass(context.Background())
	if len(f2.applied) != 3 {
		t.Fatalf("after the hour: got %d applies, want 3", len(f2.applied))
	}
}

func TestRunnerIdempotentByKey(t *testing.T) {
	clk := fakeclock.At(time.Unix(1000, 0))
	c := newFakeCluster(clk.Now)
	set := Settings{Mode: ModeOn, MaxPerPass: 5, MaxPerHour: 50}
	f1 := &fakeRemediator{name: "fake", actions: actions(2, "x")}
	newRunner(t, c, clk, nil, Entry{Remediator: f1, Settings: set}).Pass(context.Background())
	// The next leader's Plan still sees the same work (say its watch lags):
	// it must not redo what the records show as applied.
	f2 := &fakeRemediator{name: "fake", actions: actions(3, "x")}
	rep := newRunner(t, c, clk, nil, Entry{Remediator: f2, Settings: set}).Pass(context.Background())
	if len(f2.applied) != 1 || f2.applied[0] != "x2" {
		t.Fatalf("got applies %v, want only x2", f2.applied)
	}
	if rep.Counts["fake"]["done"] != 2 {
		t.Fatalf("got counts %v, want done=2", rep.Counts)
	}
	// Another remediator with the same action key is not affected.
	f3 := &fakeRemediator{name: "other", actions: actions(1, "x")}
	newRunner(t, c, clk, nil, Entry{Remediator: f3, Settings: set}).Pass(context.Background())
	if len(f3.applied) != 1 {
		t.Fatalf("other remediator: got %d applies, want 1", len(f3.applied))
	}
}

func TestRunnerVerifyLeaderBlocksApply(t *testing.T) {
	clk := fakeclock.At(time.Unix(1000, 0))
	c := newFakeCluster(clk.Now)
	deposed := errors.New("not the leader")
	c.notLead = deposed
	f := &fakeRemediator{name: "fake", actions: actions(2, "x")}
	g := &fakeRemediator{name: "later", actions: actions(1, "y")}
	r := newRunner(t, c, clk, nil, Entry{Remediator: f, Settings: Settings{Mode: ModeOn, MaxPerPass: 5}}, Entry{Remediator: g, Settings: Settings{Mode: ModeOn}})
	rep := r.Pass(context.Background())
	if !errors.Is(rep.Err, deposed) {
		t.Fatalf("got err %v, want it to wrap the VerifyLeader error", rep.Err)
	}
	if len(f.applied)+len(g.applied) != 0 || g.plans != 0 {
		t.Fatalf("got %d+%d applies and %d later plans, want none: the pass stops", len(f.applied), len(g.applied), g.plans)
	}
	if got := results(c.m, "fake"); !eqCounts(got, map[string]int{"planned": 1}) {
		t.Fatalf("got records %v, want one planned", got)
	}
}

func TestRunnerPlanErrorSkipsOnlyThatRemediator(t *testing.T) {
	clk := fakeclock.At(time.Unix(1000, 0))
	c := newFakeCluster(clk.Now)
	bad := &fakeRemediator{name: "bad", planErr: errors.New("api down")}
	good := &fakeRemediator{name: "good", actions: actions(1, "x")}
	rep := newRunner(t, c, clk, nil, Entry{Remediator: bad, Settings: Settings{Mode: ModeOn}}, Entry{Remediator: good, Settings: Settings{Mode: ModeOn}}).Pass(context.Background())
	if rep.Err == nil || len(good.applied) != 1 {
		t.Fatalf("got err %v and %d applies, want a plan error and good applied", rep.Err, len(good.applied))
	}
}

func TestNewRunnerChecks(t *testing.T) {
	c := newFakeCluster(time.Now)
	f := &fakeRemediator{name: "fake"}
	tests := []struct {
		name string
		cfg  RunnerConfig
	}{
		{"no cluster", RunnerConfig{State: c.m}},
		{"bad mode", RunnerConfig{Cluster: c, State: c.m, Remediators: []Entry{{Remediator: f, Settings: Settings{Mode: "yes"}}}}},
		{"repeated name", RunnerConfig{Cluster: c, State: c.m, Remediators: []Entry{{Remediator: f, Settings: Settings{}}, {Remediator: f, Settings: Settings{}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewRunner(tt.cfg); err == nil {
				t.Fatal("got nil error, want one")
			}
		})
	}
	// A second Runner on the same registry (after a leader change) reuses the counter.
	reg := prometheus.NewRegistry()
	for range 2 {
		if _, err := NewRunner(RunnerConfig{Cluster: c, State: c.m, Registerer: reg}); err != nil {
			t.Fatal(err)
		}
	}
}

// gatherActions reads drwatch_remediation_actions_total from reg as
// "remediation/result" -> value, and the number of series.
func gatherActions(t *testing.T, reg *prometheus.Registry) (map[string]int, int) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out, n := map[string]int{}, 0
	for _, mf := range mfs {
		if mf.GetName() != MetricActions {
			continue
		}
		for _, m := range mf.GetMetric() {
			n++
			out[label(m, "remediation")+"/"+label(m, "result")] = int(m.GetCounter().GetValue())
		}
	}
	return out, n
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func eventually(t *testing.T, d time.Duration, cond func() bool, what string) {
	t.Helper()
	poll.For(t, d, what, cond)
}

func TestRunnerRunStopsWithContext(t *testing.T) {
	clk := fakeclock.At(time.Unix(1000, 0))
	c := newFakeCluster(clk.Now)
	f := &fakeRemediator{name: "fake", actions: actions(1, "x")}
	r, err := NewRunner(RunnerConfig{Cluster: c, State: c.m, Interval: time.Hour, Now: clk.Now,
		Remediators: []Entry{{Remediator: f, Settings: Settings{Mode: ModeDryRun}}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	eventually(t, 10*time.Second, func() bool { return len(c.m.Remediations()) == 1 }, "the first pass to record its dry run")
	cancel()
	<-done
	if last := r.Last(); last.Counts["fake"]["dry_run"] != 1 || last.Err != nil {
		t.Fatalf("got last report %+v, want one dry run", last)
	}
}

// triedCount counts the Apply calls on target.
func triedCount(f *fakeRemediator, target string) int {
	n := 0
	for _, t := range f.tried {
		if t == target {
			n++
		}
	}
	return n
}

// TestRunnerBacksOffPerTarget: a target whose action keeps failing is
// retried after 1, 2, 4, 8... minutes (capped), not on every pass, while
// another target's actions still run on the next pass.
func TestRunnerBacksOffPerTarget(t *testing.T) {
	clk := fakeclock.At(time.Unix(100000, 0))
	c := newFakeCluster(clk.Now)
	f := &fakeRemediator{name: "fake", actions: actions(1, "x"), errs: map[string]error{"x0": errors.New("octavia: 503")}}
	r, err := NewRunner(RunnerConfig{Node: "a", Cluster: c, State: c.m, Now: clk.Now,
		BackoffBase: time.Minute, BackoffMax: 8 * time.Minute,
		Remediators: []Entry{{Remediator: f, Settings: Settings{Mode: ModeOn, MaxPerPass: 5, MaxPerHour: 100}}}})
	if err != nil {
		t.Fatal(err)
	}
	start := clk.Now()
	var at []time.Duration
	for range 60 { // 30 minutes of 30 s passes
		n := len(f.tried)
		r.Pass(context.Background())
		if len(f.tried) > n {
			at = append(at, clk.Now().Sub(start))
		}
		clk.Add(30 * time.Second)
	}
	want := []time.Duration{0, time.Minute, 3 * time.Minute, 7 * time.Minute, 15 * time.Minute, 23 * time.Minute}
	if fmt.Sprint(at) != fmt.Sprint(want) {
		t.Fatalf("got attempts at %v, want %v (backoff 1m doubling, capped at 8m)", at, want)
	}
	// A success resets the backoff: the next failure waits 1m again.
	f.errs = nil
	clk.Add(8 * time.Minute)
	r.Pass(context.Background())
	if len(f.applied) != 1 {
		t.Fatalf("got %d applies after the backoff, want 1", len(f.applied))
	}
}

// TestRunnerFailingTargetCannotStarveOthers: with one action per pass and
// a target at the head of the plan that always fails, the other targets are
// applied on the following passes, and the failing target's repeated
// failures count once toward the hourly cap.
func TestRunnerFailingTargetCannotStarveOthers(t *testing.T) {
	clk := fakeclock.At(time.Unix(100000, 0))
	c := newFakeCluster(clk.Now)
	f := &fakeRemediator{name: "fake", actions: actions(4, "x"), errs: map[string]error{"x0": errors.New("octavia: 503")}}
	r := newRunner(t, c, clk, nil, Entry{Remediator: f, Settings: Settings{Mode: ModeOn, MaxPerPass: 1, MaxPerHour: 5}})
	for range 40 { // 20 minutes of 30 s passes
		r.Pass(context.Background())
		clk.Add(30 * time.Second)
	}
	if fmt.Sprint(f.applied) != "[x1 x2 x3]" {
		t.Fatalf("got applies %v, want x1, x2 and x3 despite x0 failing at the head of the plan", f.applied)
	}
	if n := triedCount(f, "x0"); n < 2 || n > 5 {
		t.Fatalf("got %d attempts on x0 in 20 minutes, want 2 to 5 (backed off)", n)
	}
	for _, rec := range c.m.Remediations() {
		if strings.Contains(rec.Detail, "per-hour cap") {
			t.Fatalf("got record %+v, want none held by the hourly cap of 5: x0's failures count once", rec)
		}
	}
}

// TestRunnerLeastRecentlyAttemptedFirst: when a target's work recurs (a new
// key on every pass), a target never attempted goes before it, so plan
// order cannot starve the targets at its tail.
func TestRunnerLeastRecentlyAttemptedFirst(t *testing.T) {
	clk := fakeclock.At(time.Unix(100000, 0))
	c := newFakeCluster(clk.Now)
	f := &fakeRemediator{name: "fake"}
	r := newRunner(t, c, clk, nil, Entry{Remediator: f, Settings: Settings{Mode: ModeOn, MaxPerPass: 1, MaxPerHour: 100}})
	for i := range 3 {
		f.actions = []Action{
			{Target: "x0", Verb: "fix", Reason: "flapping", Key: fmt.Sprintf("fix/x0/%d", i)},
			{Target: "x1", Verb: "fix", Reason: "broken", Key: "fix/x1"},
			{Target: "x2", Verb: "fix", Reason: "broken", Key: "fix/x2"},
		}
		r.Pass(context.Background())
		clk.Add(30 * time.Second)
	}
	if fmt.Sprint(f.applied) != "[x0 x1 x2]" {
		t.Fatalf("got applies %v, want x0, x1, x2 (least recently attempted first)", f.applied)
	}
}

// TestRunnerParksNeedsAdmin: an Apply error wrapping ErrNeedsAdmin is
// recorded as a failure that needs an admin, and the target is not tried
// again, whatever the backoff, until its plan gives it a new key.
func TestRunnerParksNeedsAdmin(t *testing.T) {
	clk := fakeclock.At(time.Unix(100000, 0))
	c := newFakeCluster(clk.Now)
	refused := fmt.Errorf("octavia refused the failover (403): %w", ErrNeedsAdmin)
	f := &fakeRemediator{name: "fake", actions: actions(2, "x"), errs: map[string]error{"x0": refused}}
	r := newRunner(t, c, clk, nil, Entry{Remediator: f, Settings: Settings{Mode: ModeOn, MaxPerPass: 5, MaxPerHour: 100}})
	var rep PassReport
	for range 6 * 60 / 5 { // six hours of passes every 5 minutes
		rep = r.Pass(context.Background())
		clk.Add(5 * time.Minute)
	}
	if n := triedCount(f, "x0"); n != 1 {
		t.Fatalf("got %d attempts on x0, want 1: it needs an admin", n)
	}
	if rep.Counts["fake"]["needs_admin"] != 1 {
		t.Fatalf("got counts %v, want needs_admin=1 in the last pass", rep.Counts)
	}
	var parked []failover.RemediationRecord
	for _, rec := range c.m.Remediations() {
		if rec.NeedsAdmin {
			parked = append(parked, rec)
		}
	}
	if len(parked) != 1 || parked[0].Target != "x0" || parked[0].Result != failover.RemediationFailed || !strings.Contains(parked[0].Detail, "403") {
		t.Fatalf("got needs-admin records %+v, want one failure of x0 with the error", parked)
	}
	// A new reason alone (an age that grows) does not unpark it.
	f.actions[0].Reason = "broken for longer"
	r.Pass(context.Background())
	if n := triedCount(f, "x0"); n != 1 {
		t.Fatalf("got %d attempts on x0 after a new reason, want 1", n)
	}
	// Its state changes (a new key): it is tried again.
	f.actions[0].Key = "fix/x0/episode-2"
	f.errs = nil
	r.Pass(context.Background())
	if triedCount(f, "x0") != 2 {
		t.Fatalf("got %d attempts on x0 after its state changed, want 2", triedCount(f, "x0"))
	}
}

// censusRemediator is a fakeRemediator with a population: every planned
// target is one member.
type censusRemediator struct {
	*fakeRemediator
	total int
	err   error
}

func (c *censusRemediator) Census(_ context.Context, acts []Action) (Population, error) {
	seen := map[string]bool{}
	for _, a := range acts {
		seen[a.Target] = true
	}
	return Population{Total: c.total, Affected: len(seen), Unit: "nodes"}, c.err
}

// TestRunnerDisruptionBrake: when more than the brake share of the
// population qualifies at once (and at least BrakeMinAffected members),
// nothing is applied, every action is recorded as skipped with the reason,
// and the brake gauge is 1 until the share falls again.
func TestRunnerDisruptionBrake(t *testing.T) {
	tests := []struct {
		name      string
		total     int
		qualify   int
		share     float64
		censusErr error
		wantApply int
		wantBrake float64
	}{
		{"majority down", 10, 6, 0, nil, 0, 1},
		{"half down", 10, 5, 0, nil, 5, 0},
		{"share set lower", 10, 4, 0.3, nil, 0, 1},
		{"share 0.55", 20, 12, 0.55, nil, 0, 1},
		{"share one never brakes", 10, 10, 1, nil, 10, 0},
		{"small cluster acts", 2, 2, 0, nil, 2, 0},
		{"three of four", 4, 3, 0, nil, 0, 1},
		{"census fails closed", 10, 1, 0, errors.New("list nodes: 503"), 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := fakeclock.At(time.Unix(100000, 0))
			c := newFakeCluster(clk.Now)
			f := &censusRemediator{fakeRemediator: &fakeRemediator{name: "fake", actions: actions(tt.qualify, "node")}, total: tt.total, err: tt.censusErr}
			reg := prometheus.NewRegistry()
			r := newRunner(t, c, clk, reg, Entry{Remediator: f, Settings: Settings{Mode: ModeOn, MaxPerPass: 20, MaxPerHour: 100, BrakeShare: tt.share}})
			rep := r.Pass(context.Background())
			if len(f.applied) != tt.wantApply {
				t.Fatalf("%d of %d qualify: got %d applies, want %d", tt.qualify, tt.total, len(f.applied), tt.wantApply)
			}
			if (tt.censusErr != nil) != (rep.Err != nil) {
				t.Fatalf("got pass error %v, want one only when the census fails", rep.Err)
			}
			if got := gauge(t, reg, MetricBrake, "fake"); got != tt.wantBrake {
				t.Fatalf("got %s %v, want %v", MetricBrake, got, tt.wantBrake)
			}
			if tt.wantBrake == 1 {
				recs := c.m.Remediations()
				if len(recs) != tt.qualify {
					t.Fatalf("got %d records, want one skipped record per action", len(recs))
				}
				for _, rec := range recs {
					share := map[float64]string{0: "50%", 0.3: "30%", 0.55: "55%"}[tt.share]
					if rec.Result != failover.RemediationSkippedCap ||
						!strings.Contains(rec.Detail, fmt.Sprintf("disruption brake: %d of %d nodes qualify at once, more than %s:", tt.qualify, tt.total, share)) {
						t.Fatalf("got record %+v, want skipped_cap naming the disruption brake", rec)
					}
				}
				// The disruption ends: the brake releases.
				f.actions = f.actions[:1]
				r.Pass(context.Background())
				if len(f.applied) != 1 || gauge(t, reg, MetricBrake, "fake") != 0 {
					t.Fatalf("after the disruption: got %d applies and brake %v, want 1 and 0", len(f.applied), gauge(t, reg, MetricBrake, "fake"))
				}
			}
		})
	}
}

// TestRunnerBrakeWeighsOnlyActions: report-only actions change nothing, so
// they do not count toward the disruption brake: four acting nodes of ten
// are repaired even when six more nodes are only reported.
func TestRunnerBrakeWeighsOnlyActions(t *testing.T) {
	clk := fakeclock.At(time.Unix(100000, 0))
	c := newFakeCluster(clk.Now)
	acts := actions(10, "node")
	for i := range acts[4:] {
		acts[4+i].ReportOnly = "its instance still runs"
	}
	f := &censusRemediator{fakeRemediator: &fakeRemediator{name: "fake", actions: acts}, total: 10}
	reg := prometheus.NewRegistry()
	r := newRunner(t, c, clk, reg, Entry{Remediator: f, Settings: Settings{Mode: ModeOn, MaxPerPass: 20, MaxPerHour: 100}})
	if rep := r.Pass(context.Background()); rep.Err != nil {
		t.Fatal(rep.Err)
	}
	if len(f.applied) != 4 || gauge(t, reg, MetricBrake, "fake") != 0 {
		t.Fatalf("got %d applies and brake %v, want the 4 acting nodes applied and no brake", len(f.applied), gauge(t, reg, MetricBrake, "fake"))
	}
}

// gauge reads the gauge name{remediation=rem} from reg (-1: no such series).
func gauge(t *testing.T, reg *prometheus.Registry, name, rem string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label(m, "remediation") == rem {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}

// TestRunnerBrakeGaugeClearedWhenRunStops: a node that stops running passes
// (it lost the leadership) does not keep reporting an engaged brake; the
// new leader's Runner reports its own.
func TestRunnerBrakeGaugeClearedWhenRunStops(t *testing.T) {
	clk := fakeclock.At(time.Unix(100000, 0))
	c := newFakeCluster(clk.Now)
	f := &censusRemediator{fakeRemediator: &fakeRemediator{name: "fake", actions: actions(6, "node")}, total: 10}
	reg := prometheus.NewRegistry()
	r, err := NewRunner(RunnerConfig{Cluster: c, State: c.m, Interval: time.Hour, Now: clk.Now, Registerer: reg,
		Remediators: []Entry{{Remediator: f, Settings: Settings{Mode: ModeOn}}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	eventually(t, 10*time.Second, func() bool { return r.Last().Counts["fake"]["skipped_cap"] == 6 }, "the first pass to hold the brake")
	if got := gauge(t, reg, MetricBrake, "fake"); got != 1 {
		t.Fatalf("got brake %v while running, want 1", got)
	}
	cancel()
	<-done
	if got := gauge(t, reg, MetricBrake, "fake"); got != 0 {
		t.Fatalf("got brake %v after Run returned, want 0", got)
	}
}

// TestRunnerPreconditionNotBackedOff: a failure wrapping ErrPrecondition
// (the world moved on since Plan, nothing was done) is recorded as such and
// the next pass plans and tries afresh, without a backoff.
func TestRunnerPreconditionNotBackedOff(t *testing.T) {
	clk := fakeclock.At(time.Unix(100000, 0))
	c := newFakeCluster(clk.Now)
	f := &fakeRemediator{name: "fake", actions: actions(1, "x"), errs: map[string]error{"x0": fmt.Errorf("port revision 412: %w", ErrPrecondition)}}
	r := newRunner(t, c, clk, nil, Entry{Remediator: f, Settings: Settings{Mode: ModeOn, MaxPerPass: 5, MaxPerHour: 100}})
	r.Pass(context.Background())
	f.errs = nil
	f.actions[0].Key = "fix/x0/rev2"
	clk.Add(time.Second)
	r.Pass(context.Background())
	if fmt.Sprint(f.tried) != "[x0 x0]" || len(f.applied) != 1 {
		t.Fatalf("got tries %v and %d applies, want x0 tried again at once and applied", f.tried, len(f.applied))
	}
	var pre int
	for _, rec := range c.m.Remediations() {
		if rec.Precondition {
			pre++
		}
	}
	if pre != 1 {
		t.Fatalf("got %d records marked precondition, want 1", pre)
	}
}

// TestRunnerNeverAppliesReportOnly: an action the remediator can only
// report (its Reason says what it would do, ReportOnly why it cannot) is
// recorded as not applied with that why, in mode on too; it is never
// applied, and takes no place under the caps from actions that can be.
func TestRunnerNeverAppliesReportOnly(t *testing.T) {
	clk := fakeclock.At(time.Unix(1000, 0))
	c := newFakeCluster(clk.Now)
	acts := actions(3, "x")
	acts[0].ReportOnly = "the cluster cannot do this"
	acts[1].ReportOnly = "the cluster cannot do this"
	f := &fakeRemediator{name: "fake", actions: acts}
	r := newRunner(t, c, clk, nil, Entry{Remediator: f, Settings: Settings{Mode: ModeOn, MaxPerPass: 1}})
	for pass := 0; pass < 2; pass++ {
		if rep := r.Pass(context.Background()); rep.Err != nil {
			t.Fatal(rep.Err)
		}
	}
	if len(f.applied) != 1 || f.applied[0] != "x2" {
		t.Fatalf("got applied %v, want only x2", f.applied)
	}
	got := map[string][]string{}
	for _, rec := range c.m.Remediations() {
		got[rec.Target] = append(got[rec.Target], rec.Result+": "+rec.Detail)
	}
	for _, target := range []string{"x0", "x1"} {
		want := []string{"dry_run: report-only: the cluster cannot do this"}
		if strings.Join(got[target], "|") != strings.Join(want, "|") {
			t.Errorf("%s: got records %q, want %q (once, though two passes ran)", target, got[target], want)
		}
	}
	if want := "planned: |applied: "; strings.Join(got["x2"], "|") != want {
		t.Errorf("x2: got records %q, want %q", got["x2"], want)
	}
}

// A warning about an action that is not applied (report-only, or over a
// cap) is logged when the record is new, not again every pass that finds
// the same thing: the record is deduplicated, and so is the log line.
func TestRunnerWarnsOnceForARepeatedSkip(t *testing.T) {
	clk := fakeclock.At(time.Unix(100000, 0))
	c := newFakeCluster(clk.Now)
	f := &fakeRemediator{name: "fake", actions: []Action{
		{Target: "node/w1", Verb: "taint", Reason: "down", Key: "taint/w1", ReportOnly: "Kubernetes v1.24"},
		{Target: "node/w2", Verb: "taint", Reason: "down", Key: "taint/w2"},
		{Target: "node/w3", Verb: "taint", Reason: "down", Key: "taint/w3"},
	}}
	var logs bytes.Buffer
	r, err := NewRunner(RunnerConfig{Node: "a", Cluster: c, State: c.m, Registerer: prometheus.NewRegistry(), Now: clk.Now,
		Logger:      slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Remediators: []Entry{{Remediator: f, Settings: Settings{Mode: ModeDryRun, MaxPerPass: 1, MaxPerHour: 10, BrakeShare: 1}}}})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		r.Pass(context.Background())
		clk.Add(time.Minute)
	}
	for _, msg := range []string{"remediation cannot be applied here", "remediation cap reached"} {
		if n := strings.Count(logs.String(), msg); n != 1 {
			t.Errorf("%q: logged %d times in 3 passes, want 1:\n%s", msg, n, logs.String())
		}
	}
}
