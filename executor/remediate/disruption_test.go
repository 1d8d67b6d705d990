package remediate

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/fakeclock"
)

// disruptingRemediator is a fakeRemediator whose actions disrupt nodes
// (its targets are "node/<name>"), and that keeps a node it rebooted
// disrupted until the test says the node is back.
type disruptingRemediator struct {
	*fakeRemediator
	back  map[string]bool // node -> Ready again or gone
	err   error
	given [][]Applied // what each Disrupted call was given
}

func (d *disruptingRemediator) Disrupted(_ context.Context, applied []Applied) ([]Disruption, error) {
	d.given = append(d.given, applied)
	if d.err != nil {
		return nil, d.err
	}
	var out []Disruption
	for _, a := range applied {
		node := strings.TrimPrefix(a.Target, "node/")
		if strings.HasPrefix(a.Key, "reboot/") && !d.back[node] {
			out = append(out, Disruption{Node: node, Why: "rebooted, not Ready again"})
		}
	}
	return out, nil
}

func disrupting(name string, nodes ...string) *disruptingRemediator {
	f := &fakeRemediator{name: name}
	for _, n := range nodes {
		f.actions = append(f.actions, Action{Target: "node/" + n, Verb: "reboot", Reason: "stuck", Key: "reboot/" + n, Disrupts: n})
	}
	return &disruptingRemediator{fakeRemediator: f, back: map[string]bool{}}
}

// The remediations of one cluster share one node disruption budget: with
// the default of one node, a second node (of the same or another
// remediation) waits, recorded as skipped with the node that holds the
// budget, until the first is Ready again; then it goes. Look-alikes left
// alone: another cluster's node, an action that disrupts no node, and a
// second action on the node already disrupted.
func TestRunnerDisruptsOneNodeAtATime(t *testing.T) {
	clk := fakeclock.At(time.Unix(100000, 0))
	c := newFakeCluster(clk.Now)
	reboot := disrupting("reboot", "w1", "w2")
	reboot.actions = append(reboot.actions, Action{Target: "node/w1", Verb: "release", Reason: "fenced", Key: "release/w1", Disrupts: "w1"})
	taint := disrupting("taint", "w3")
	taint.actions = append(taint.actions, Action{Target: "node/w9", Verb: "untaint", Reason: "Ready again", Key: "untaint/w9"})
	other := disrupting("other-cluster", "b1")
	on := Settings{Mode: ModeOn, MaxPerPass: 10, MaxPerHour: 100}
	r := newRunner(t, c, clk, nil,
		Entry{Remediator: reboot, Settings: on, Cluster: "primary"},
		Entry{Remediator: taint, Settings: on, Cluster: "primary"},
		Entry{Remediator: other, Settings: on, Cluster: "backup"})
	pass := func() {
		t.Helper()
		if rep := r.Pass(context.Background()); rep.Err != nil {
			t.Fatal(rep.Err)
		}
		clk.Add(time.Minute)
	}

	pass()
	if !slices.Equal(reboot.applied, []string{"node/w1", "node/w1"}) || !slices.Equal(taint.applied, []string{"node/w9"}) ||
		!slices.Equal(other.applied, []string{"node/b1"}) {
		t.Fatalf("first pass: got reboot %q, taint %q, other %q; want w1 (reboot and release), w9's untaint, b1",
			reboot.applied, taint.applied, other.applied)
	}
	skipped := map[string]string{}
	for _, rec := range c.m.Remediations() {
		if rec.Result == failover.RemediationSkippedCap {
			skipped[rec.Target] = rec.Detail
		}
	}
	for _, n := range []string{"node/w2", "node/w3"} {
		if d := skipped[n]; !strings.Contains(d, "node disruption budget of cluster primary: at most 1 node(s)") || !strings.Contains(d, "node w1") {
			t.Fatalf("%s: got detail %q, want skipped by the budget naming w1", n, d)
		}
	}

	pass()
	if len(reboot.applied) != 2 || len(taint.applied) != 1 {
		t.Fatalf("w1 not back: got reboot %q, taint %q; want nothing more", reboot.applied, taint.applied)
	}
	if g := reboot.given; len(g) == 0 || !slices.Contains(g[len(g)-1], Applied{Target: "node/w1", Key: "reboot/w1"}) {
		t.Fatalf("Disrupted was given %v, want w1's applied reboot among them", reboot.given)
	}

	reboot.back["w1"] = true
	pass()
	// One of w2 and w3 goes (the least recently attempted first, then
	// config order), the other waits for it.
	if n := len(reboot.fakeRemediator.applied) + len(taint.fakeRemediator.applied); n != 4 {
		for _, rec := range c.m.Remediations() {
			t.Logf("%s %s %s %s", rec.Name, rec.Result, rec.Target, rec.Detail)
		}
		t.Fatalf("w1 back: got reboot %q, taint %q; want exactly one more node disrupted", reboot.fakeRemediator.applied, taint.fakeRemediator.applied)
	}
}

// max_disrupted_nodes 2 lets two nodes go at once, and no third.
func TestRunnerDisruptionBudgetOfTwo(t *testing.T) {
	clk := fakeclock.At(time.Unix(100000, 0))
	c := newFakeCluster(clk.Now)
	f := disrupting("reboot", "w1", "w2", "w3")
	r := newRunner(t, c, clk, nil, Entry{Remediator: f, Settings: Settings{Mode: ModeOn, MaxPerPass: 10, MaxPerHour: 100}, Cluster: "primary", MaxDisruptedNodes: 2})
	r.Pass(context.Background())
	if !slices.Equal(f.fakeRemediator.applied, []string{"node/w1", "node/w2"}) {
		t.Fatalf("got %q, want w1 and w2", f.fakeRemediator.applied)
	}
}

// A budget that cannot be judged (the nodes cannot be read) disrupts no
// node, and the pass says so; actions that disrupt no node still run.
func TestRunnerDisruptionBudgetFailsClosed(t *testing.T) {
	clk := fakeclock.At(time.Unix(100000, 0))
	c := newFakeCluster(clk.Now)
	f := disrupting("reboot", "w1", "w2")
	on := Settings{Mode: ModeOn, MaxPerPass: 10, MaxPerHour: 100}
	r := newRunner(t, c, clk, nil, Entry{Remediator: f, Settings: on, Cluster: "primary"})
	r.Pass(context.Background()) // w1 applied
	f.err = errors.New("list nodes: 503")
	f.back["w1"] = true
	f.actions = append(f.actions, Action{Target: "node/w5", Verb: "uncordon", Reason: "Ready", Key: "uncordon/w5"})
	r.Pass(context.Background())
	if !slices.Equal(f.fakeRemediator.applied, []string{"node/w1", "node/w5"}) {
		t.Fatalf("got %q, want w1 then only w5's uncordon", f.fakeRemediator.applied)
	}
	var detail string
	for _, rec := range c.m.Remediations() {
		if rec.Target == "node/w2" && rec.Result == failover.RemediationSkippedCap {
			detail = rec.Detail
		}
	}
	if !strings.Contains(detail, "cannot tell which nodes it keeps disrupted: list nodes: 503") {
		t.Fatalf("got w2's detail %q, want the budget's failure", detail)
	}
}

// In dry-run the budget shows what mode on would do, and takes none of it
// from a remediation that is on.
func TestRunnerDryRunTakesNoDisruptionBudget(t *testing.T) {
	clk := fakeclock.At(time.Unix(100000, 0))
	c := newFakeCluster(clk.Now)
	dry := disrupting("a-dry", "w1", "w2")
	on := disrupting("b-on", "w3")
	r := newRunner(t, c, clk, nil,
		Entry{Remediator: dry, Settings: Settings{Mode: ModeDryRun, MaxPerPass: 10}, Cluster: "primary"},
		Entry{Remediator: on, Settings: Settings{Mode: ModeOn, MaxPerPass: 10, MaxPerHour: 100}, Cluster: "primary"})
	r.Pass(context.Background())
	if !slices.Equal(on.fakeRemediator.applied, []string{"node/w3"}) {
		t.Fatalf("got %q, want w3 applied despite the dry run before it", on.fakeRemediator.applied)
	}
	got := map[string]string{}
	for _, rec := range c.m.Remediations() {
		if rec.Name == "a-dry" {
			got[rec.Target] = rec.Result
		}
	}
	if got["node/w1"] != failover.RemediationDryRun || got["node/w2"] != failover.RemediationSkippedCap {
		t.Fatalf("got dry-run records %v, want w1 dry_run and w2 skipped by the budget", got)
	}
}

// The brake of a repair that disrupts nodes is a share with no floor: 2 of
// 3 nodes, a majority, trip it, and 1 of 3 does not. A repair outside any
// cluster budget keeps the floor of BrakeMinAffected.
func TestRunnerNodeBrakeHasNoFloor(t *testing.T) {
	tests := []struct {
		name             string
		cluster          string
		total, qualify   int
		wantApplied      int
		wantBrakeInCause bool
	}{
		{"2 of 3 nodes", "primary", 3, 2, 0, true},
		{"1 of 3 nodes", "primary", 3, 1, 1, false},
		{"1 of 2 nodes", "primary", 2, 1, 1, false},
		{"2 of 3 outside a node budget", "", 3, 2, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := fakeclock.At(time.Unix(100000, 0))
			c := newFakeCluster(clk.Now)
			f := &censusRemediator{fakeRemediator: &fakeRemediator{name: "fake", actions: actions(tt.qualify, "node")}, total: tt.total}
			r := newRunner(t, c, clk, nil, Entry{Remediator: f, Settings: Settings{Mode: ModeOn, MaxPerPass: 10, MaxPerHour: 100},
				Cluster: tt.cluster, MaxDisruptedNodes: 10})
			r.Pass(context.Background())
			if len(f.applied) != tt.wantApplied {
				t.Fatalf("%d of %d: got %d applied, want %d", tt.qualify, tt.total, len(f.applied), tt.wantApplied)
			}
			braked := false
			for _, rec := range c.m.Remediations() {
				braked = braked || strings.Contains(rec.Detail, "disruption brake")
			}
			if braked != tt.wantBrakeInCause {
				t.Fatalf("%d of %d: got brake %v, want %v", tt.qualify, tt.total, braked, tt.wantBrakeInCause)
			}
		})
	}
}

// Entries of one cluster must agree on its budget.
func TestRunnerRefusesDisagreeingBudgets(t *testing.T) {
	c := newFakeCluster(time.Now)
	_, err := NewRunner(RunnerConfig{Cluster: c, State: c.m, Remediators: []Entry{
		{Remediator: disrupting("a"), Cluster: "primary", MaxDisruptedNodes: 2},
		{Remediator: disrupting("b"), Cluster: "primary"},
	}})
	if err == nil {
		t.Fatal("got no error, want one for two budgets of one cluster")
	}
}
