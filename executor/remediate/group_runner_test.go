package remediate

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/fakeclock"
	"github.com/prometheus/client_golang/prometheus"
)

// setGroups sets a policy of two failover groups, lms and apps, without a
// default group, on c's machine.
func setGroups(t *testing.T, c *fakeCluster) {
	t.Helper()
	refs := map[failover.Site]failover.SitePolicy{
		failover.Primary: {Probes: []failover.ProbeRef{{Name: "p", Critical: true}}},
		failover.Backup:  {Probes: []failover.ProbeRef{{Name: "p", Critical: true}}},
	}
	group := func(name, ip string) failover.Group {
		return failover.Group{Name: name, AutoFailover: true, Sites: refs, Zone: "example.org.",
			Records: []failover.Record{{Name: name, Type: "A", TTL: 60, Primary: []string{"192.0.2." + ip}, Backup: []string{"198.51.100." + ip}}}}
	}
	pol := failover.Policy{Nodes: []string{"a", "b", "c"}, Quorum: 2, Fall: 3, Rise: 2, Interval: time.Second,
		Groups: []failover.Group{group("lms", "1"), group("apps", "2")}}
	b, err := failover.Encode(failover.Command{Payload: failover.SetPolicy{Policy: pol}})
	if err != nil {
		t.Fatal(err)
	}
	resp, _, _ := c.Propose(context.Background(), b)
	if _, err := failover.DecodeResponse(resp); err != nil {
		t.Fatal(err)
	}
}

// groupRunner is a Runner of group's remediations on c, its metrics on
// reg with the group label, as the leader builds one per group.
func groupRunner(t *testing.T, c *fakeCluster, clk *fakeclock.Clock, reg prometheus.Registerer, group string, entries ...Entry) *Runner {
	t.Helper()
	r, err := NewRunner(RunnerConfig{Node: "a", Group: group, Cluster: c, State: GroupState(c.m, group), Remediators: entries,
		Registerer: prometheus.WrapRegistererWith(prometheus.Labels{"group": group}, reg), Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Each group's runner records with its group and keeps to its own caps:
// lms using up its hourly cap does not stop apps' runner, running the
// same remediation on targets of the same names, from applying; the
// actions metric counts each group's under its group label.
func TestGroupRunnersKeepTheirOwnCaps(t *testing.T) {
	clk := fakeclock.At(time.Unix(1000, 0))
	c := newFakeCluster(clk.Now)
	setGroups(t, c)
	reg := prometheus.NewRegistry()
	set := Settings{Mode: ModeOn, MaxPerPass: 1, MaxPerHour: 2}
	lmsFix := &fakeRemediator{name: "fix", actions: actions(4, "x")}
	appsFix := &fakeRemediator{name: "fix", actions: actions(4, "x")}
	lms := groupRunner(t, c, clk, reg, "lms", Entry{Remediator: lmsFix, Settings: set})
	apps := groupRunner(t, c, clk, reg, "apps", Entry{Remediator: appsFix, Settings: set})
	for range 3 {
		clk.Add(time.Minute)
		if rep := lms.Pass(context.Background()); rep.Err != nil {
			t.Fatal(rep.Err)
		}
	}
	if len(lmsFix.applied) != 2 {
		t.Fatalf("lms applied %v, want 2: its hourly cap", lmsFix.applied)
	}
	if rep := apps.Pass(context.Background()); rep.Err != nil {
		t.Fatal(rep.Err)
	}
	if len(appsFix.applied) != 1 || appsFix.applied[0] != "x0" {
		t.Fatalf("apps applied %v after lms used up its cap, want x0: its own cap, and x0 is not lms's applied key", appsFix.applied)
	}
	byGroup := map[string]map[string]int{}
	for _, rec := range c.m.Remediations() {
		if byGroup[rec.Group] == nil {
			byGroup[rec.Group] = map[string]int{}
		}
		byGroup[rec.Group][rec.Result]++
		if strings.HasPrefix(rec.Detail, "per-hour cap") {
			byGroup[rec.Group]["hour_cap"]++
		}
	}
	if _, ok := byGroup[""]; ok {
		t.Fatalf("records without a group: %v", byGroup[""])
	}
	if got := byGroup["lms"]; got[failover.RemediationApplied] != 2 || got["hour_cap"] == 0 {
		t.Fatalf("lms records %v, want 2 applied and the hourly cap recorded", got)
	}
	if got := byGroup["apps"]; got[failover.RemediationApplied] != 1 || got["hour_cap"] != 0 {
		t.Fatalf("apps records %v, want 1 applied and no hourly cap", got)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	applied := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != MetricActions {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label(m, "result") == failover.RemediationApplied {
				applied[label(m, "group")] += m.GetCounter().GetValue()
			}
		}
	}
	if applied["lms"] != 2 || applied["apps"] != 1 || len(applied) != 2 {
		t.Fatalf("%s{result=applied} by group: %v, want lms 2 and apps 1", MetricActions, applied)
	}
}

// A group's runner plans against its own group's decision: its records
// carry the group's generation, not the other group's, and the top-level
// runner's budget holds none of them.
func TestGroupRunnerRecordsItsGroupsGeneration(t *testing.T) {
	clk := fakeclock.At(time.Unix(1000, 0))
	c := newFakeCluster(clk.Now)
	setGroups(t, c)
	b, err := failover.Encode(failover.Command{Payload: failover.Failover{Group: "apps", To: failover.Backup, Force: true, Actor: "alice"}})
	if err != nil {
		t.Fatal(err)
	}
	resp, _, _ := c.Propose(context.Background(), b)
	if _, err := failover.DecodeResponse(resp); err != nil {
		t.Fatal(err)
	}
	appsGen := func() uint64 { d, _ := c.m.GroupDesired("apps"); return d.Gen }()
	if appsGen == 0 {
		t.Fatal("apps made no decision")
	}
	set := Settings{Mode: ModeOn, MaxPerPass: 1, MaxPerHour: 10}
	for _, g := range []struct {
		name string
		gen  uint64
	}{{"apps", appsGen}, {"lms", 0}} {
		f := &fakeRemediator{name: "fix", actions: actions(1, "x")}
		if rep := groupRunner(t, c, clk, nil, g.name, Entry{Remediator: f, Settings: set}).Pass(context.Background()); rep.Err != nil {
			t.Fatal(rep.Err)
		}
		for _, rec := range c.m.Remediations() {
			if rec.Group == g.name && rec.Gen != g.gen {
				t.Errorf("%s record %+v, want gen %d", g.name, rec, g.gen)
			}
		}
	}
	if top := c.m.RemediationBudget("fix"); len(top.Targets) != 0 {
		t.Fatalf("top-level budget %v, want none of the groups' records", top.Targets)
	}
}
