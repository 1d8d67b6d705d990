package sim

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/failover"
)

// groupWorld is checkWorld with the policy of groups.
func groupWorld(t *testing.T, groups ...string) *World {
	t.Helper()
	w := checkWorld()
	w.policy = simGroupPolicy(groups)
	if err := w.policy.Validate(); err != nil {
		t.Fatalf("the simulator's policy for %v: %v", groups, err)
	}
	var err error
	if w.auth, err = newAuthority(w.policy); err != nil {
		t.Fatal(err)
	}
	return w
}

// groupMachine is a machine that applied w's policy (at log format 3,
// which groups need) and then cmds, one log entry each.
func groupMachine(t *testing.T, w *World, cmds ...failover.Payload) *failover.Machine {
	t.Helper()
	m := failover.New()
	all := append([]failover.Payload{failover.SetFormat{Format: failover.Format}, failover.SetPolicy{Policy: w.policy}}, cmds...)
	for i, p := range all {
		b, err := failover.Encode(failover.Command{At: int64(i + 1), Payload: p})
		if err != nil {
			t.Fatal(err)
		}
		if res, err := failover.DecodeResponse(m.Apply(uint64(i+1), b)); err != nil {
			t.Fatalf("command %d (%T): %v (%+v)", i+1, p, err, res)
		}
	}
	return m
}

// A seed fixes its groups: the same seed draws the same groups, probes
// and commands every time, and the seeds between them draw two and
// three groups, with and without the default group, outages of each
// group's own probe and of the region probe, and commands for one group
// and for all.
func TestScheduleGroupsFollowTheSeed(t *testing.T) {
	layouts := map[string]int{}
	probes := map[string]bool{}
	allGroups, oneGroup := 0, 0
	for seed := uint64(1); seed <= 400; seed++ {
		s := Generate(seed)
		if again := Generate(seed); again.String() != s.String() || !slices.Equal(again.Groups, s.Groups) {
			t.Fatalf("seed %d drew\n%s\nthen\n%s", seed, s, again)
		}
		layouts[strings.Join(s.Groups, ",")]++
		if len(s.Groups) == 0 {
			for _, e := range s.Events {
				if e.Probe != "" || e.Group != "" || e.AllGroups {
					t.Fatalf("seed %d has no groups but event %s names a probe or group", seed, e)
				}
			}
			continue
		}
		for _, e := range s.Events {
			switch {
			case e.Kind == "outage":
				if e.Probe != regionProbe && !slices.ContainsFunc(s.Groups, func(g string) bool { return ownProbe(g) == e.Probe }) {
					t.Fatalf("seed %d (groups %v): outage %s fails no group's probe", seed, s.Groups, e)
				}
				probes[e.Probe] = true
			case e.Kind == "op" && e.AllGroups:
				allGroups++
			case e.Kind == "op" || e.Kind == "depose":
				if !slices.Contains(s.Groups, e.Group) {
					t.Fatalf("seed %d (groups %v): %s names no group of the schedule", seed, s.Groups, e)
				}
				oneGroup++
			}
		}
	}
	for _, want := range []string{"", "default,apps", "apps,studio", "default,apps,studio", "apps,studio,wiki"} {
		if layouts[want] == 0 {
			t.Errorf("seeds 1-400: no schedule with groups %q; drew %v", want, layouts)
		}
	}
	for _, want := range []string{"web", "web-apps", "web-studio", "web-wiki", regionProbe} {
		if !probes[want] {
			t.Errorf("seeds 1-400: no outage of probe %s", want)
		}
	}
	if allGroups == 0 || oneGroup == 0 {
		t.Errorf("seeds 1-400: %d commands for all groups and %d for one, want some of each", allGroups, oneGroup)
	}
}

// Each scenario's outages and commands are about one group: the stale
// watcher's outages fail one group's own probe, and a deposed writer's
// failover and failback name the same group.
func TestScheduleScenariosKeepToOneGroup(t *testing.T) {
	checked := 0
	for seed := uint64(1); seed <= 400; seed++ {
		s := Generate(seed)
		if len(s.Groups) == 0 {
			continue
		}
		groups := map[int]map[string]bool{}
		for _, e := range s.Events {
			if e.scenario == 0 {
				continue
			}
			g := e.Group
			if e.Kind == "outage" {
				g = strings.TrimPrefix(strings.TrimPrefix(e.Probe, "web"), "-")
				if g == "" {
					g = failover.DefaultGroup
				}
			}
			if e.Kind != "outage" && e.Kind != "op" && e.Kind != "depose" {
				continue
			}
			if groups[e.scenario] == nil {
				groups[e.scenario] = map[string]bool{}
			}
			groups[e.scenario][g] = true
		}
		for n, gs := range groups {
			if len(gs) != 1 {
				t.Fatalf("seed %d: scenario %d is about groups %v, want one\n%s", seed, n, gs, s)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("seeds 1-400 with groups drew no scenario")
	}
}

// rounds of three nodes at, at-1s and at-2s, each seeing the probes of
// down failing on site.
func groupRounds(at time.Time, site failover.Site, nodes []string, down ...string) map[string][]round {
	out := map[string][]round{}
	for _, id := range []string{"a", "b", "c"} {
		for i := range 3 {
			r := round{at: at.Add(-time.Duration(i) * Interval), down: map[failover.Site][]string{}}
			if slices.Contains(nodes, id) {
				r.down[site] = slices.Clone(down)
			}
			out[id] = append(out[id], r)
		}
	}
	return out
}

// Invariant 1, per group: an automatic flip of a group needs a quorum
// failing one of that group's own critical probes (or the region probe
// it names); a quorum failing another group's probe explains nothing.
func TestAutoFlipCheckCountsOnlyTheGroupsOwnProbes(t *testing.T) {
	at := time.Unix(1000, 0)
	flip := failover.Entry{Index: 40, At: at.UnixNano(), Kind: failover.KindAutoFailover, Group: "apps", From: failover.Primary, To: failover.Backup}
	for _, tc := range []struct {
		name string
		down []string
		want bool
	}{
		{"quorum failing the group's own probe", []string{"web-apps"}, false},
		{"quorum failing the region probe", []string{regionProbe}, false},
		{"quorum failing another group's probe", []string{"web-studio"}, true},
		{"quorum failing the default group's probe", []string{"web"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := groupWorld(t, failover.DefaultGroup, "apps", "studio")
			w.rounds = groupRounds(at, failover.Primary, []string{"a", "b"}, tc.down...)
			g, _ := w.simGroup("apps")
			w.checkAutoFlip("a", g, flip)
			if got := len(w.violations) > 0; got != tc.want {
				t.Fatalf("violation: got %v (%v), want %v", got, w.violations, tc.want)
			}
		})
	}
}

// One group's fault never changes another: an automatic entry of a group
// (flip or withheld) whose own probes and region probe no watcher ever
// saw failing is a violation, whatever the other groups saw.
func TestGroupIndependenceCheckFlagsAnotherGroupsFault(t *testing.T) {
	at := time.Unix(1000, 0)
	for _, tc := range []struct {
		name  string
		entry failover.Entry
		down  []string
		site  failover.Site
		want  bool
	}{
		{"flip of a group on another group's outage", failover.Entry{Kind: failover.KindAutoFailover, Group: "apps"}, []string{"web-studio"}, failover.Primary, true},
		{"withheld on another group's outage", failover.Entry{Kind: failover.KindWithheld, Group: "wiki"}, []string{"web-apps"}, failover.Primary, true},
		{"default group's flip on a named group's outage", failover.Entry{Kind: failover.KindAutoFailover}, []string{"web-apps"}, failover.Primary, true},
		{"flip on the group's own outage", failover.Entry{Kind: failover.KindAutoFailover, Group: "apps"}, []string{"web-apps"}, failover.Primary, false},
		{"withheld on the group's own backup outage", failover.Entry{Kind: failover.KindWithheld, Group: "wiki"}, []string{"web-wiki"}, failover.Backup, false},
		{"flip on the shared region outage", failover.Entry{Kind: failover.KindAutoFailover, Group: "studio"}, []string{regionProbe}, failover.Primary, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := groupWorld(t, "apps", "studio", "wiki")
			if tc.entry.Group == "" {
				w = groupWorld(t, failover.DefaultGroup, "apps", "studio")
			}
			w.rounds = groupRounds(at, tc.site, []string{"c"}, tc.down...)
			e := tc.entry
			e.Index, e.At = 40, at.UnixNano()
			g, ok := w.simGroup(entryGroup(e))
			if !ok {
				t.Fatalf("no group %s", entryGroup(e))
			}
			w.checkGroupIndependence("a", g, e)
			if got := len(w.violations) > 0; got != tc.want {
				t.Fatalf("violation: got %v (%v), want %v", got, w.violations, tc.want)
			}
		})
	}
}

// No replica's decision of a group goes back: within one machine's life
// the fence watch flags a group whose Desired.Gen went down, and not a
// group whose generation stays while another group's moves.
func TestGroupFenceWatchFlagsADecisionGoingBack(t *testing.T) {
	w := groupWorld(t, failover.DefaultGroup, "apps", "studio")
	before := groupMachine(t, w)
	after := groupMachine(t, w, failover.Failover{Group: "apps", To: failover.Backup, Force: true, Actor: "alice", Reason: "drill"})
	if d, _ := after.GroupDesired("apps"); d.Gen == 0 {
		t.Fatal("the forced failover of apps made no decision")
	}
	var f fenceWatch
	if v := f.check(before, w.simGroups(), "a", 2); len(v) > 0 {
		t.Fatalf("no decision yet: got %v, want none", v)
	}
	if v := f.check(after, w.simGroups(), "a", 3); len(v) > 0 {
		t.Fatalf("apps decided, the others stayed: got %v, want none", v)
	}
	if v := f.check(after, w.simGroups(), "a", 4); len(v) > 0 {
		t.Fatalf("nothing changed: got %v, want none", v)
	}
	v := f.check(before, w.simGroups(), "a", 5)
	if len(v) != 1 || !strings.Contains(v[0], "group apps's decision went back") {
		t.Fatalf("apps back to no decision: got %v, want one violation for apps", v)
	}

	// A snapshot installed below what the replica applied takes the
	// machine back as a whole, as a restart does: the watch starts again
	// from it, and an apply that goes back from there is still caught.
	var g fenceWatch
	g.check(after, w.simGroups(), "a", 3)
	g.restart(before, w.simGroups())
	if v := g.check(before, w.simGroups(), "a", 4); len(v) > 0 {
		t.Fatalf("apply after a snapshot below the applied index: got %v, want none", v)
	}
	g.check(after, w.simGroups(), "a", 5)
	if v := g.check(before, w.simGroups(), "a", 6); len(v) != 1 {
		t.Fatalf("apps back to no decision after the snapshot's baseline moved on: got %v, want one violation", v)
	}
}

// Invariant 2, per group: each group's fence and records are checked on
// their own. A group's decision written under its own fence passes while
// another group has none; a group's fence lowered, a group's records
// that are not its fence's decision, and a record of no group are each
// flagged.
func TestFencingCheckHoldsEachGroupToItsOwnFence(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T) (*World, uint64, []dnsprovider.RRset, []dnsprovider.RRset) {
		w := groupWorld(t, failover.DefaultGroup, "apps", "studio")
		m := groupMachine(t, w, failover.Failover{Group: "apps", To: failover.Backup, Force: true, Actor: "alice", Reason: "drill"})
		w.nodes = []*simNode{{id: "a", machine: m}}
		d, _ := m.GroupDesired("apps")
		g, _ := w.simGroup("apps")
		return w, d.Gen, siteRecords(*g.policy, failover.Primary), siteRecords(*g.policy, failover.Backup)
	}
	for _, tc := range []struct {
		name  string
		write func(w *World, gen uint64, primary, backup []dnsprovider.RRset) error
		want  string // "" for none
	}{
		{"a group's decision under its own fence", func(w *World, gen uint64, primary, backup []dnsprovider.RRset) error {
			return w.auth.Client("_drwatch-apps").Swap(ctx, primary, backup, 0, gen)
		}, ""},
		{"a group's decision under another group's fence", func(w *World, gen uint64, primary, backup []dnsprovider.RRset) error {
			return w.auth.Client("_drwatch-studio").Swap(ctx, primary, backup, 0, gen)
		}, "invariant 2: group studio"},
		{"a group's fence lowered", func(w *World, gen uint64, primary, backup []dnsprovider.RRset) error {
			c := w.auth.Client("_drwatch-apps")
			if err := c.Swap(ctx, primary, backup, 0, gen); err != nil {
				return err
			}
			return c.Swap(ctx, backup, backup[:0:0], gen, gen-1)
		}, "took group apps the fence"},
		{"a record of no group", func(w *World, _ uint64, _, _ []dnsprovider.RRset) error {
			stray := dnsprovider.RRset{Name: "stray", Type: "A", TTL: time.Minute, Values: []string{"192.0.2.99"}}
			_, err := w.auth.Client("").SetRecords(ctx, []dnsprovider.RRset{stray})
			return err
		}, "no group's records or fence"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, gen, primary, backup := setup(t)
			if err := tc.write(w, gen, primary, backup); err != nil {
				t.Fatal(err)
			}
			w.checkFencing()
			if tc.want == "" && len(w.violations) > 0 {
				t.Fatalf("got %v, want no violation", w.violations)
			}
			if tc.want != "" && (len(w.violations) != 1 || !strings.Contains(w.violations[0], tc.want)) {
				t.Fatalf("got %v, want one violation with %q", w.violations, tc.want)
			}
		})
	}
}

// Invariant 5, per group: two automatic flips of different groups within
// a block window are independent, and an ack in one group lifts no
// other's block; two of one group with no ack of that group between are
// flagged, each group with its own window.
func TestAntiFlapCheckIsPerGroup(t *testing.T) {
	w := groupWorld(t, failover.DefaultGroup, "apps", "studio")
	groups := w.simGroups()
	at := func(s int) int64 { return time.Unix(1000+int64(s), 0).UnixNano() }
	e := func(i uint64, s int, kind, group string) failover.Entry {
		return failover.Entry{Index: i, Gen: i, At: at(s), Kind: kind, Group: group}
	}
	for _, tc := range []struct {
		name    string
		history []failover.Entry
		want    string
	}{
		{"two groups 5s apart", []failover.Entry{e(5, 0, failover.KindAutoFailover, "apps"), e(6, 5, failover.KindAutoFailover, "studio")}, ""},
		{"default and a group 5s apart", []failover.Entry{e(5, 0, failover.KindAutoFailover, ""), e(6, 5, failover.KindAutoFailover, "apps")}, ""},
		{"one group twice within its window", []failover.Entry{e(5, 0, failover.KindAutoFailover, "apps"), e(9, 10, failover.KindAutoFailback, "apps")}, "group apps"},
		{"one group twice past its 20s window", []failover.Entry{e(5, 0, failover.KindAutoFailover, "apps"), e(9, 25, failover.KindAutoFailback, "apps")}, ""},
		{"25s is within studio's 45s window", []failover.Entry{e(5, 0, failover.KindAutoFailover, "studio"), e(9, 25, failover.KindAutoFailback, "studio")}, "group studio"},
		{"an ack of another group between", []failover.Entry{e(5, 0, failover.KindAutoFailover, "apps"), e(7, 5, failover.KindAck, "studio"),
			e(9, 10, failover.KindAutoFailback, "apps")}, "group apps"},
		{"an ack of the group between", []failover.Entry{e(5, 0, failover.KindAutoFailover, "apps"), e(7, 5, failover.KindAck, "apps"),
			e(9, 10, failover.KindAutoFailback, "apps")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := groupsAntiFlapViolation(tc.history, groups)
			if (got == "") != (tc.want == "") || !strings.HasPrefix(got, tc.want) {
				t.Fatalf("violation: got %q, want %q", got, tc.want)
			}
		})
	}
}

// runGroups plays one outage of probe on the primary, seen by every
// watcher for 15 s, in a run with groups, and returns the world once
// it has settled, with every invariant checked.
func runGroups(t *testing.T, groups []string, probe string) *World {
	t.Helper()
	sched := Schedule{Seed: 1, Length: 30 * time.Second, Groups: groups, Events: []Event{
		{Seq: 1, At: 5 * time.Second, Kind: "outage", Site: failover.Primary, Probe: probe, Nodes: []string{"a", "b", "c"}, For: 15 * time.Second},
	}}
	return runSched(t, sched)
}

// groupMoved checks, on every replica and in DNS, that group moved to
// the backup by an automatic flip, under a fence of its own, verified;
// or, unless moved, that it has no decision and DNS still holds its
// primary's records with no fence.
func groupMoved(t *testing.T, w *World, group string, moved bool) {
	t.Helper()
	g, _ := w.simGroup(group)
	for _, n := range w.nodes {
		d, _ := n.machine.GroupDesired(group)
		autos := slices.DeleteFunc(n.machine.History(), func(e failover.Entry) bool { return entryGroup(e) != group || !automaticKind(e.Kind) })
		switch {
		case moved && (d.Gen == 0 || d.Active != failover.Backup || !d.Done || len(autos) != 1 || autos[0].Kind != failover.KindAutoFailover):
			t.Fatalf("%s: group %s desired %+v, automatic entries %v; want one automatic failover to the backup, verified", n.id, group, d, autos)
		case !moved && (d.Gen != 0 || len(autos) != 0):
			t.Fatalf("%s: group %s desired gen %d, automatic entries %v; want it untouched", n.id, group, d.Gen, autos)
		}
	}
	d, _ := w.nodes[0].machine.GroupDesired(group)
	want, gen := w.dnsWants(g, d)
	if ok, why := w.dnsHolds(g, want, gen); !ok {
		t.Fatalf("group %s in DNS: %s", group, why)
	}
}

// An outage of one group's own probe moves that group alone, in a run
// of three groups: the others keep their records, their fences and
// their histories.
func TestSimOneGroupsOutageMovesOnlyThatGroup(t *testing.T) {
	w := runGroups(t, []string{failover.DefaultGroup, "apps", "studio"}, "web-apps")
	groupMoved(t, w, "apps", true)
	groupMoved(t, w, failover.DefaultGroup, false)
	groupMoved(t, w, "studio", false)
}

// An outage of the region probe every group names moves every group,
// each by its own decision under its own fence, in a run of two named
// groups without the default group.
func TestSimRegionOutageMovesEveryGroup(t *testing.T) {
	w := runGroups(t, []string{"apps", "studio"}, regionProbe)
	groupMoved(t, w, "apps", true)
	groupMoved(t, w, "studio", true)
}
