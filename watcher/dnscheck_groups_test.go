package watcher

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/executor/remediate/remediatetest"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/poll"
)

// fakeZone is one zone's provider and verifier as the DNS check sees them:
// its servers serve what it holds, names relative to the zone, so records
// checked under another zone's names never match.
type fakeZone struct {
	dnsprovider.Provider // nil: the check only asks for Zone
	zone                 string
	// block, when set, holds every check until it is closed, whatever the
	// check's deadline: a server that never answers, made strict so that a
	// check that waited for it could not finish even at its timeout.
	block chan struct{}

	mu     sync.Mutex
	served map[string][]string // "name TYPE" -> values
	checks int                 // checks made
}

// checksMade is how many checks the zone's servers answered.
func (f *fakeZone) checksMade() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.checks
}

func newFakeZone(zone string) *fakeZone { return &fakeZone{zone: zone, served: map[string][]string{}} }

func (f *fakeZone) Zone() string { return f.zone }

// serve makes the zone's servers answer name (relative) type with values.
func (f *fakeZone) serve(name, typ string, values ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.served[name+" "+typ] = values
}

func (f *fakeZone) Verify(ctx context.Context, desired []dnsprovider.RRset) (*dnsprovider.Verification, error) {
	return f.Check(ctx, desired)
}

func (f *fakeZone) Check(_ context.Context, desired []dnsprovider.RRset) (*dnsprovider.Verification, error) {
	if f.block != nil {
		<-f.block
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checks++
	matched := len(desired) > 0
	for _, rr := range desired {
		if !slices.Equal(f.served[rr.Name+" "+rr.Type], rr.Values) {
			matched = false
		}
	}
	return &dnsprovider.Verification{Servers: []dnsprovider.ServerResult{{Server: "ns." + f.zone, Matched: matched}}}, nil
}

// groupsCheckWatcher is node a's watcher for policy p, with top as the dns
// section's zone and groups' zones by group name, its DNS check running
// until the test ends.
func groupsCheckWatcher(t *testing.T, p failover.Policy, top *fakeZone, groups map[string]*fakeZone) (*Watcher, *remediatetest.Log) {
	t.Helper()
	return groupsCheckWatcherEvery(t, p, top, groups, 100*time.Millisecond)
}

// groupsCheckWatcherEvery is groupsCheckWatcher probing at interval (the
// check's own period is five of them, at least 2s).
func groupsCheckWatcherEvery(t *testing.T, p failover.Policy, top *fakeZone, groups map[string]*fakeZone, interval time.Duration) (*Watcher, *remediatetest.Log) {
	t.Helper()
	l := remediatetest.NewLog()
	l.Step(t, failover.Command{Payload: failover.SetPolicy{Policy: p}})
	cfg := Config{Node: "a", Policy: p, Interval: interval, FSM: NewFSM(l.M, nil), Cluster: &fakeCluster{log: l},
		DNS: top, Verifier: top}
	for _, g := range p.Groups {
		cfg.Groups = append(cfg.Groups, GroupDNS{Name: g.Name, DNS: groups[g.Name], Verifier: groups[g.Name]})
	}
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.dnsCheckLoop(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return w, l
}

// checked waits until group's DNS check has looked at decision gen, and
// returns it.
func checked(t *testing.T, w *Watcher, group string, gen uint64) DNSCheck {
	t.Helper()
	var chk DNSCheck
	poll.Until(t, 30*time.Second, func() bool {
		var ok bool
		chk, ok = w.LastGroupDNSCheck(group)
		return ok && chk.Gen == gen
	}, "group "+group+"'s DNS check of its decision")
	return chk
}

// Without a default group each group's records are checked in the group's
// own zone at its own servers: nothing of a group is looked for in the dns
// section's zone, so DNS that serves every group's records matches, on the
// status (the first group's check) and on every group's series.
func TestDNSCheckWithoutDefaultGroupChecksEachGroupInItsOwnZone(t *testing.T) {
	p := twoGroups()
	top := newFakeZone("example.org.") // serves nothing of the groups'
	zones := map[string]*fakeZone{"alpha": newFakeZone("alpha.test."), "beta": newFakeZone("beta.test.")}
	for _, z := range zones {
		z.serve("www", "A", "192.0.2.1")
	}
	w, _ := groupsCheckWatcher(t, p, top, zones)

	for _, g := range []string{"alpha", "beta"} {
		chk := checked(t, w, g, 0)
		if !chk.Match || chk.Zone != g+".test." || chk.Group != g || chk.Err != "" {
			t.Errorf("group %s: got %+v, want a match in zone %s.test.", g, chk, g)
		}
	}
	if chk := w.LastDNSCheck(); !chk.Match || chk.Group != "alpha" {
		t.Errorf("the status's DNS check: got %+v, want group alpha's, matching", chk)
	}
	if _, ok := w.LastGroupDNSCheck(failover.DefaultGroup); ok {
		t.Error("a default group the policy lacks was checked")
	}
	got := series(t, w)
	for k, want := range map[string]float64{
		"drwatch_dns_records_match_desired{group=alpha}": 1,
		"drwatch_dns_records_match_desired{group=beta}":  1,
	} {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", k, v, ok, want)
		}
	}
	for _, k := range []string{"drwatch_dns_records_match_desired{}", "drwatch_dns_records_match_desired{group=default}"} {
		if _, ok := got[k]; ok {
			t.Errorf("series %s, for a default group the policy lacks", k)
		}
	}
}

// One group whose servers serve the wrong address sets only its own series
// to 0: the default group, checked in the dns section's zone, and the
// other group still match.
func TestDNSCheckMismatchOfOneGroupSetsOnlyItsSeries(t *testing.T) {
	p := twoGroups()
	def := testPolicy()
	p.Sites, p.Zone, p.Records = def.Sites, def.Zone, def.Records
	top := newFakeZone("example.org.")
	top.serve("www", "A", "192.0.2.1")
	zones := map[string]*fakeZone{"alpha": newFakeZone("alpha.test."), "beta": newFakeZone("beta.test.")}
	zones["alpha"].serve("www", "A", "192.0.2.1")
	zones["beta"].serve("www", "A", "203.0.113.99") // edited by hand
	w, _ := groupsCheckWatcher(t, p, top, zones)

	for g, want := range map[string]bool{"": true, "alpha": true, "beta": false} {
		if chk := checked(t, w, g, 0); chk.Match != want {
			t.Errorf("group %q: got %+v, want match %v", g, chk, want)
		}
	}
	got := series(t, w)
	for k, want := range map[string]float64{
		"drwatch_dns_records_match_desired{group=default}": 1,
		"drwatch_dns_records_match_desired{group=alpha}":   1,
		"drwatch_dns_records_match_desired{group=beta}":    0,
	} {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", k, v, ok, want)
		}
	}
	if chk := w.LastDNSCheck(); chk.Group != "" || !chk.Match {
		t.Errorf("the status's DNS check: got %+v, want the default group's", chk)
	}
}

// A group whose servers never answer holds up no other group's check:
// while alpha's check hangs (alpha is checked first, in name order), beta's
// result is published, and beta's next decision is checked too.
func TestDNSCheckOfOneGroupWaitsForNoOtherGroupsServers(t *testing.T) {
	p := twoGroups()
	zones := map[string]*fakeZone{"alpha": newFakeZone("alpha.test."), "beta": newFakeZone("beta.test.")}
	zones["alpha"].block = make(chan struct{})
	zones["beta"].serve("www", "A", "192.0.2.1")
	w, l := groupsCheckWatcher(t, p, newFakeZone("example.org."), zones)
	t.Cleanup(func() { close(zones["alpha"].block) }) // runs before the loop is stopped

	if chk := checked(t, w, "beta", 0); !chk.Match {
		t.Fatalf("beta: got %+v, want a match", chk)
	}
	zones["beta"].serve("www", "A", "198.51.100.1")
	l.Step(t, failover.Command{Payload: failover.Failover{Group: "beta", To: failover.Backup, Force: true, Actor: "alice", Reason: "test"}})
	d, _ := l.M.GroupDesired("beta")
	if chk := checked(t, w, "beta", d.Gen); !chk.Match {
		t.Fatalf("beta after its failover: got %+v, want a match", chk)
	}
	if chk, ok := w.LastGroupDNSCheck("alpha"); ok {
		t.Fatalf("alpha's check finished (%+v) though its servers never answered", chk)
	}
}

// Without failover groups the DNS check's series is the one it always was:
// no group label, 1 while the dns section's zone serves the records.
func TestDNSCheckWithoutGroupsKeepsItsSeries(t *testing.T) {
	top := newFakeZone("example.org.")
	top.serve("www", "A", "192.0.2.1")
	w, _ := groupsCheckWatcher(t, testPolicy(), top, nil)
	if chk := checked(t, w, "", 0); !chk.Match || w.LastDNSCheck().Gen != chk.Gen {
		t.Fatalf("got %+v, want a match", chk)
	}
	got := series(t, w)
	if v, ok := got["drwatch_dns_records_match_desired{}"]; !ok || v != 1 {
		t.Errorf("drwatch_dns_records_match_desired{} = %v (present %v), want 1", v, ok)
	}
	for k := range got {
		if strings.Contains(k, "group=") {
			t.Errorf("series %s has a group label in a cluster without groups", k)
		}
	}
}

// A group's DNS check runs again at once when the group's new decision is
// verified, and not for other commands: probe reports, ticks, the other
// groups' decisions and the decision itself while it is being written
// leave it to its own period (hours here), so with many groups a command
// does not cost every node a check of every group, and a region outage's
// decisions are not checked against the records they replace while the
// leader writes and verifies them.
func TestDNSCheckWakesOnlyForTheGroupsVerifiedDecision(t *testing.T) {
	p := twoGroups()
	zones := map[string]*fakeZone{"alpha": newFakeZone("alpha.test."), "beta": newFakeZone("beta.test.")}
	w, l := groupsCheckWatcherEvery(t, p, newFakeZone("example.org."), zones, time.Hour)
	checked(t, w, "alpha", 0)
	checked(t, w, "beta", 0)
	before := zones["beta"].checksMade()
	var mu sync.Mutex
	var woken []string
	w.dnsCheckWoken = func(group string, d failover.Desired) {
		mu.Lock()
		defer mu.Unlock()
		woken = append(woken, fmt.Sprintf("%s gen %d verified %v", group, d.Gen, d.Done))
	}
	// The fake log applies without the FSM: wake the loop as each applied
	// command does, and wait until it took each wake-up.
	applied := func(c failover.Command) {
		t.Helper()
		l.Step(t, c)
		w.cfg.FSM.wake()
		poll.Until(t, 10*time.Second, func() bool { return len(w.cfg.FSM.dnsChanged) == 0 }, "the check loop takes the wake-up")
	}
	for range 10 {
		applied(failover.Command{Payload: failover.Tick{}})
	}
	applied(failover.Command{Payload: failover.Failover{Group: "alpha", To: failover.Backup, Force: true, Actor: "alice", Reason: "alpha down"}})
	d, _ := l.M.GroupDesired("alpha")
	applied(failover.Command{Payload: failover.ActionResult{Group: "alpha", Gen: d.Gen, Outcome: failover.OutcomeWritten, Actor: "a", WrittenAt: 1}})
	// applied returns once the loop took the next wake-up, so the loop
	// is done with the decision's and the write's: every wake-up of
	// alpha's check they made is in woken.
	mu.Lock()
	early := slices.Clone(woken)
	mu.Unlock()
	if len(early) != 0 {
		t.Errorf("alpha's check woken for %v before its decision was verified, want no wake-up until then", early)
	}
	applied(failover.Command{Payload: failover.ActionResult{Group: "alpha", Gen: d.Gen, Outcome: failover.OutcomeVerified, Actor: "a", WrittenAt: 1, VerifiedAt: 2}})
	if d, _ := l.M.GroupDesired("alpha"); !d.Done {
		t.Fatalf("alpha's decision gen %d is not verified after its verified action result", d.Gen)
	}
	checked(t, w, "alpha", d.Gen)
	if n := zones["beta"].checksMade() - before; n != 0 {
		t.Errorf("beta, with no new decision: checked %d more times over 13 commands, want 0 before its period", n)
	}
}
