package failover

import (
	"slices"
	"testing"
	"time"
)

// groupsReplica steps p's machine with every node's report of every probe
// of both sites, each up unless named in down ("site/probe").
type groupsReplica struct {
	t     *testing.T
	m     *Machine
	p     Policy
	index uint64
}

func newGroupsReplica(t *testing.T, p Policy) *groupsReplica {
	r := &groupsReplica{t: t, m: New(), p: p}
	r.step(SetPolicy{Policy: p, Actor: "test"})
	return r
}

func (r *groupsReplica) step(p Payload) {
	r.t.Helper()
	r.index++
	if _, err := r.m.Step(r.index, Command{At: int64(r.index) * int64(100*time.Millisecond), Payload: p}); err != nil {
		r.t.Fatalf("step %d %T: %v", r.index, p, err)
	}
}

func (r *groupsReplica) report(node string, down ...string) {
	r.t.Helper()
	o := Observe{Node: node}
	for _, site := range sites {
		var names []string
		for _, name := range r.p.GroupNames() {
			gp, _ := r.p.ForGroup(name)
			names = addProbeNames(names, gp.Sites[site])
		}
		for _, n := range names {
			o.Results = append(o.Results, ProbeResult{Site: site, Probe: n, OK: !slices.Contains(down, probeKey(site, n))})
		}
	}
	r.step(o)
}

// With groups, a suspect site's fast rounds re-probe only the critical
// probes whose failures make it suspect: apps' own web probe failing names
// it alone, the shared kube probe failing names kube alone, though every
// group holds it (a region outage costs one probe per fast round, not every
// probe of every group), and two watchers failing two probes name both.
func TestSuspicionNamesOnlyTheFailingProbes(t *testing.T) {
	for _, tc := range []struct {
		down map[string]string // node -> its failing probe
		want []string
	}{
		{map[string]string{"b": "primary/web-apps"}, []string{"web-apps"}},
		{map[string]string{"b": "primary/kube"}, []string{"kube"}},
		{map[string]string{"b": "primary/kube", "c": "primary/web-lms"}, []string{"kube", "web-lms"}},
	} {
		r := newGroupsReplica(t, twoGroupPolicy())
		for _, n := range []string{"a", "b", "c"} {
			r.report(n)
		}
		if s := r.m.Suspicion("a"); len(s.Suspect) != 0 || s.Probes != nil {
			t.Fatalf("all up: got suspect %v probes %v, want none", s.Suspect, s.Probes)
		}
		for _, n := range []string{"b", "c"} {
			if tc.down[n] != "" {
				r.report(n, tc.down[n])
			}
		}
		s := r.m.Suspicion("a")
		if !slices.Equal(s.Suspect, []Site{Primary}) || len(s.Probes) != 1 || !slices.Equal(s.Probes[Primary], tc.want) {
			t.Fatalf("%v failing: got suspect %v probes %v, want the primary with %v", tc.down, s.Suspect, s.Probes, tc.want)
		}
	}
}

// Without groups a suspect site names no probes: its fast rounds re-probe
// every probe of it, as they always did.
func TestSuspicionWithoutGroupsNamesNoProbes(t *testing.T) {
	p := Policy{Nodes: []string{"a", "b", "c"}, Quorum: 2, Fall: 3, Rise: 2, Interval: time.Second,
		Sites: map[Site]SitePolicy{
			Primary: {Probes: []ProbeRef{{Name: "web", Critical: true}, {Name: "lb"}}},
			Backup:  {Probes: []ProbeRef{{Name: "web", Critical: true}}},
		},
		Zone: "example.org.", Records: []Record{{Name: "lms", Type: "A", TTL: 60, Primary: []string{"203.0.113.1"}, Backup: []string{"198.51.100.1"}}},
	}
	r := newGroupsReplica(t, p)
	for _, n := range []string{"a", "b", "c"} {
		r.report(n)
	}
	r.report("b", "primary/web")
	if s := r.m.Suspicion("a"); !slices.Equal(s.Suspect, []Site{Primary}) || s.Probes != nil {
		t.Fatalf("got suspect %v probes %v, want the primary with every probe (nil)", s.Suspect, s.Probes)
	}
	if got := p.CriticalProbes(Primary, []string{"web"}); got != nil {
		t.Fatalf("CriticalProbes without groups: got %v, want nil (every probe)", got)
	}
}

// CriticalProbes keeps the failing probes that some group holds
// critical: one group's own probe, a shared one, both, and never a probe
// no group holds critical.
func TestCriticalProbesKeepsTheFailingCriticalProbes(t *testing.T) {
	p := twoGroupPolicy()
	p.Groups[0].Sites[Primary] = SitePolicy{Probes: append(slices.Clone(p.Groups[0].Sites[Primary].Probes), ProbeRef{Name: "lb"})}
	for _, tc := range []struct {
		failing []string
		want    []string
	}{
		{[]string{"web-lms"}, []string{"web-lms"}},
		{[]string{"kube"}, []string{"kube"}},
		{[]string{"web-apps", "kube"}, []string{"kube", "web-apps"}},
		{[]string{"lb"}, []string{}},
	} {
		if got := p.CriticalProbes(Primary, tc.failing); got == nil || !slices.Equal(got, tc.want) {
			t.Fatalf("CriticalProbes(primary, %v): got %v, want %v", tc.failing, got, tc.want)
		}
	}
}

// addProbeNames adds the names of sp's probes missing from names.
func addProbeNames(names []string, sp SitePolicy) []string {
	for _, ref := range sp.Probes {
		if !slices.Contains(names, ref.Name) {
			names = append(names, ref.Name)
		}
	}
	return names
}
