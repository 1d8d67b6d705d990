package watcher

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/remediatetest"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/poll"
	"github.com/prometheus/client_golang/prometheus"
)

// fixer plans one action on target every pass and counts its applies.
type fixer struct {
	target string
	mu     sync.Mutex
	n      int
}

func (f *fixer) Name() string { return "fix" }
func (f *fixer) Plan(context.Context) ([]remediate.Action, error) {
	return []remediate.Action{{Target: f.target, Verb: "fix", Reason: "broken", Key: f.target}}, nil
}
func (f *fixer) Apply(context.Context, remediate.Action) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	return nil
}

func on(r remediate.Remediator) []remediate.Entry {
	return []remediate.Entry{{Remediator: r, Settings: remediate.Settings{Mode: remediate.ModeOn}}}
}

// actionsByGroup is drwatch_remediation_actions_total{result=applied} in
// reg by its group label ("" without one).
func actionsByGroup(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != remediate.MetricActions {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["result"] == failover.RemediationApplied {
				out[labels["group"]] += m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// The leader runs one remediation runner per failover group with
// remediations of its own, beside the top-level one: each records under
// its group, on its group's decision, and its metrics carry the group
// label ("default" for the top-level runner). A group without
// remediations of its own gets no runner and no records.
func TestLeaderRunsARemediationRunnerPerGroup(t *testing.T) {
	l := remediatetest.NewLog()
	p := twoGroups()
	l.Step(t, failover.Command{Payload: failover.SetPolicy{Policy: p}})
	l.Step(t, failover.Command{Payload: failover.Failover{Group: "alpha", To: failover.Backup, Force: true, Actor: "alice", Reason: "drill"}})
	alphaGen := func() uint64 { d, _ := l.M.GroupDesired("alpha"); return d.Gen }()
	reg := prometheus.NewRegistry()
	top, alpha := &fixer{target: "top"}, &fixer{target: "alpha"}
	w, err := New(Config{Node: "a", Policy: p, Interval: 20 * time.Millisecond, FSM: NewFSM(l.M, nil),
		Cluster: leadingCluster{&fakeCluster{log: l}}, Registry: reg,
		Remediators: on(top), RemediationInterval: 20 * time.Millisecond,
		GroupRemediations: []GroupRemediations{{Name: "alpha", Remediators: on(alpha), Interval: 20 * time.Millisecond}}})
	if err != nil {
		t.Fatal(err)
	}
	leadUntilCleanup(t, w)
	poll.Until(t, 30*time.Second, func() bool {
		got := actionsByGroup(t, reg)
		return got[failover.DefaultGroup] >= 1 && got["alpha"] >= 1
	}, "the top-level runner and alpha's each applied their action")
	for _, r := range l.M.Remediations() {
		switch {
		case r.Target == "top" && r.Group != "":
			t.Errorf("top-level record %+v carries a group", r)
		case r.Target == "alpha" && (r.Group != "alpha" || r.Gen != alphaGen):
			t.Errorf("alpha record %+v, want group alpha at its gen %d", r, alphaGen)
		case r.Group == "beta":
			t.Errorf("record %+v for beta, which has no remediations", r)
		}
	}
	if got := actionsByGroup(t, reg); len(got) != 2 || got[""] != 0 {
		t.Errorf("applied actions by group label: %v, want default and alpha only", got)
	}
}

// Without groups the top-level runner's metrics are exactly those before
// groups: no group label.
func TestRemediationMetricsWithoutGroupsHaveNoGroupLabel(t *testing.T) {
	l := remediatetest.NewLog()
	p := testPolicy()
	l.Step(t, failover.Command{Payload: failover.SetPolicy{Policy: p}})
	reg := prometheus.NewRegistry()
	w, err := New(Config{Node: "a", Policy: p, Interval: time.Second, FSM: NewFSM(l.M, nil),
		Cluster: leadingCluster{&fakeCluster{log: l}}, Registry: reg, Remediators: on(&fixer{target: "x"})})
	if err != nil {
		t.Fatal(err)
	}
	runners := w.remediationRunners()
	if len(runners) != 1 {
		t.Fatalf("%d runners, want the top-level one", len(runners))
	}
	if rep := runners[0].Pass(context.Background()); rep.Err != nil {
		t.Fatal(rep.Err)
	}
	if got := actionsByGroup(t, reg); len(got) != 1 || got[""] != 1 {
		t.Fatalf("applied actions by group label: %v, want one without a group label", got)
	}
}
