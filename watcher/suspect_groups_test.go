package watcher

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/probes"
)

// groupsPolicy has two failover groups, lms and apps, each with its own
// web probe and the region's shared kube probe on both sites.
func groupsPolicy() *failover.Policy {
	refs := func(web string) map[failover.Site]failover.SitePolicy {
		rs := []failover.ProbeRef{{Name: web, Critical: true}, {Name: "kube", Critical: true}}
		return map[failover.Site]failover.SitePolicy{failover.Primary: {Probes: rs}, failover.Backup: {Probes: slices.Clone(rs)}}
	}
	rec := func(name, p, b string) []failover.Record {
		return []failover.Record{{Name: name, Type: "A", TTL: 60, Primary: []string{p}, Backup: []string{b}}}
	}
	return &failover.Policy{
		Nodes: []string{"a", "b", "c"}, Quorum: 2, Fall: 3, Rise: 2, Interval: time.Second,
		Groups: []failover.Group{
			{Name: "lms", AutoFailover: true, Sites: refs("web-lms"), Zone: "example.org.", Records: rec("lms", "203.0.113.1", "198.51.100.1")},
			{Name: "apps", AutoFailover: true, Sites: refs("web-apps"), Zone: "example.org.", Records: rec("apps", "203.0.113.2", "198.51.100.2")},
		},
	}
}

// groupsReport commits one round of node's: every probe of both sites up
// but those named in down ("site/probe").
func (r *replica) groupsReport(node string, down ...string) {
	r.t.Helper()
	o := failover.Observe{Node: node}
	for _, site := range []failover.Site{failover.Primary, failover.Backup} {
		for _, n := range []string{"kube", "web-apps", "web-lms"} {
			o.Results = append(o.Results, failover.ProbeResult{Site: site, Probe: n, OK: !slices.Contains(down, string(site)+"/"+n)})
		}
	}
	r.step(o)
}

func fmtGroupReprobes(rs []reprobe) string {
	if len(rs) == 0 {
		return "-"
	}
	var out string
	for _, r := range rs {
		names := "all"
		if r.probes != nil {
			names = fmt.Sprint(r.probes)
		}
		out += fmt.Sprintf("%s fast=%v now=%v probes=%s;", r.site, r.fast, r.now, names)
	}
	return out
}

// With groups a committed failure re-probes the failing probe only, and
// the shared probe's failure on another watcher then adds it at once: not
// the healthy probes of the groups that name them.
func TestSuspicionWithGroupsReprobesTheFailingProbes(t *testing.T) {
	r := &replica{t: t, m: failover.New(), at: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	r.step(failover.SetPolicy{Policy: *groupsPolicy(), Actor: "test"})
	s := newSuspicion(3)
	for _, n := range []string{"a", "b", "c"} {
		r.groupsReport(n)
	}
	if got := fmtGroupReprobes(s.view(r.m.Suspicion("a"))); got != "-" {
		t.Fatalf("all up: got %s, want nothing fast", got)
	}
	r.groupsReport("b", "primary/web-apps")
	if got, want := fmtGroupReprobes(s.view(r.m.Suspicion("a"))), "primary fast=true now=true probes=[web-apps];"; got != want {
		t.Fatalf("apps fails on b: got %s, want %s", got, want)
	}
	r.groupsReport("b", "primary/web-apps")
	if got := fmtGroupReprobes(s.view(r.m.Suspicion("a"))); got != "-" {
		t.Fatalf("apps fails again on b: got %s, want no change", got)
	}
	r.groupsReport("c", "primary/kube")
	if got, want := fmtGroupReprobes(s.view(r.m.Suspicion("a"))), "primary fast=true now=true probes=[kube web-apps];"; got != want {
		t.Fatalf("kube fails on c: got %s, want %s", got, want)
	}
}

// With groups this watcher's own failing critical probe makes fast that
// probe alone, the shared one too; without a policy (or without groups)
// every probe of the site, as before groups.
func TestSuspicionOwnFailureWithGroupsReprobesTheFailingProbe(t *testing.T) {
	round := func(probe string) probes.Round {
		return probes.Round{Results: []probes.NamedResult{{Site: "primary", Probe: probe, Critical: true, Result: probes.Result{OK: false}}}}
	}
	s := newSuspicion(3)
	s.setPolicy(groupsPolicy())
	if got, want := fmtGroupReprobes(s.round(round("web-lms"))), "primary fast=true now=false probes=[web-lms];"; got != want {
		t.Fatalf("own web-lms failure: got %s, want %s", got, want)
	}
	if got, want := fmtGroupReprobes(s.round(round("kube"))), "primary fast=true now=false probes=[kube web-lms];"; got != want {
		t.Fatalf("own kube failure: got %s, want %s", got, want)
	}

	plain := newSuspicion(3)
	p := testPolicy()
	plain.setPolicy(&p)
	if got, want := fmtGroupReprobes(plain.round(ownRound(false))), "primary fast=true now=false probes=all;"; got != want {
		t.Fatalf("without groups: got %s, want %s", got, want)
	}
}

// The watcher restricts a site's fast rounds before it asks for them, so
// that the round asked for at once is already the restricted one.
func TestWatcherRestrictsFastRoundsBeforeAskingForThem(t *testing.T) {
	w, _ := newTestWatcher(t, time.Second)
	rp := &fakeReprober{}
	w.cfg.Reprobe = rp
	w.reprobe([]reprobe{{site: failover.Primary, fast: true, now: true, probes: []string{"kube", "web-apps"}}})
	if got, want := rp.got(), []string{"probes primary [kube web-apps]", "now primary", "fast primary true"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
