package watcher

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/probes"
	"github.com/drwatch/drwatch/test/poll"
)

// replica is a decision core stepped by hand, read as a watcher reads it.
type replica struct {
	t     *testing.T
	m     *failover.Machine
	index uint64
	at    time.Time
}

func newReplica(t *testing.T) *replica { return newReplicaFall(t, 3) }

// newReplicaFall is newReplica with the policy's fall set to fall.
func newReplicaFall(t *testing.T, fall int) *replica {
	r := &replica{t: t, m: failover.New(), at: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	p := testPolicy()
	p.Fall = fall
	p.AutoFailover = true
	r.step(failover.SetPolicy{Policy: p, Actor: "test"})
	return r
}

func (r *replica) step(p failover.Payload) {
	r.t.Helper()
	r.index++
	r.at = r.at.Add(100 * time.Millisecond)
	if _, err := r.m.Step(r.index, failover.Command{At: r.at.UnixNano(), Payload: p}); err != nil {
		r.t.Fatalf("step %s: %v", p.CommandType(), err)
	}
}

// report commits one round from node: the primary's web probe ok or not,
// and the backup's, when given ("up", "down" or "" for none: a fast
// round of the primary only).
func (r *replica) report(node, primary, backup string) {
	r.t.Helper()
	o := failover.Observe{Node: node}
	for _, sv := range []struct {
		site  failover.Site
		state string
	}{{failover.Primary, primary}, {failover.Backup, backup}} {
		if sv.state != "" {
			o.Results = append(o.Results, failover.ProbeResult{Site: sv.site, Probe: "web", OK: sv.state == "up"})
		}
	}
	r.step(o)
}

// ownRound is this watcher's round with the primary's web probe ok or not.
func ownRound(ok bool) probes.Round {
	return probes.Round{Results: []probes.NamedResult{{Site: "primary", Probe: "web", Critical: true, Result: probes.Result{OK: ok}}}}
}

func fmtReprobes(rs []reprobe) string {
	if len(rs) == 0 {
		return "-"
	}
	var out string
	for _, r := range rs {
		out += fmt.Sprintf("%s fast=%v now=%v;", r.site, r.fast, r.now)
	}
	return out
}

func wantReprobes(t *testing.T, step string, got []reprobe, want string) {
	t.Helper()
	if g := fmtReprobes(got); g != want {
		t.Fatalf("%s: got %s, want %s", step, g, want)
	}
}

// A watcher whose own critical probe fails re-probes the site fast until
// that probe has failed fall times in a row, or until it succeeds once;
// a non-critical probe never makes a site suspect.
func TestSuspicionOwnFailure(t *testing.T) {
	s := newSuspicion(3)
	wantReprobes(t, "first failure", s.round(ownRound(false)), "primary fast=true now=false;")
	wantReprobes(t, "second failure", s.round(ownRound(false)), "-")
	wantReprobes(t, "third failure: fall reached", s.round(ownRound(false)), "primary fast=false now=false;")
	wantReprobes(t, "fourth failure", s.round(ownRound(false)), "-")
	wantReprobes(t, "recovery", s.round(ownRound(true)), "-")
	wantReprobes(t, "new failure", s.round(ownRound(false)), "primary fast=true now=false;")
	wantReprobes(t, "recovered after one", s.round(ownRound(true)), "primary fast=false now=false;")
	nc := probes.Round{Results: []probes.NamedResult{{Site: "backup", Probe: "lb", Result: probes.Result{OK: false}}}}
	wantReprobes(t, "non-critical failure", s.round(nc), "-")
}

// A failing report of another watcher, once committed, makes every
// watcher probe the site at once and then fast, until the site settles:
// here the failing watcher sees it UP again.
func TestSuspicionCommittedFailingReportOfAnotherNode(t *testing.T) {
	r := newReplica(t)
	s := newSuspicion(3)
	for _, n := range []string{"a", "b", "c"} {
		r.report(n, "up", "up")
	}
	wantReprobes(t, "all up", s.view(r.m.Suspicion("a")), "-")
	r.report("b", "down", "up")
	wantReprobes(t, "b's failure committed", s.view(r.m.Suspicion("a")), "primary fast=true now=true;")
	r.report("b", "down", "")
	wantReprobes(t, "b's second failure, a fast round", s.view(r.m.Suspicion("a")), "-")
	r.report("a", "up", "")
	wantReprobes(t, "a still sees it up", s.view(r.m.Suspicion("a")), "-")
	r.report("b", "up", "")
	wantReprobes(t, "b sees it up again: settled", s.view(r.m.Suspicion("a")), "primary fast=false now=false;")
	r.report("c", "", "down")
	wantReprobes(t, "c fails the backup", s.view(r.m.Suspicion("a")), "backup fast=true now=true;")
}

// Committed suspicion ends when a decision is taken, and does not start
// again while watchers still count down on the site the decision left.
func TestSuspicionEndsOnDecision(t *testing.T) {
	r := newReplica(t)
	s := newSuspicion(3)
	for _, n := range []string{"a", "b", "c"} {
		r.report(n, "up", "up")
	}
	r.report("a", "down", "up")
	wantReprobes(t, "a fails", s.view(r.m.Suspicion("c")), "primary fast=true now=true;")
	r.report("b", "down", "up")
	r.report("c", "up", "up")
	r.report("a", "down", "")
	r.report("b", "down", "")
	wantReprobes(t, "counting down", s.view(r.m.Suspicion("c")), "-")
	r.report("c", "down", "") // c begins to count down just before the decision lands
	r.report("a", "down", "")
	r.report("b", "down", "")
	if v := r.m.View(); v.Active != failover.Backup {
		t.Fatalf("got active %s, want the backup after a and b voted the primary DOWN", v.Active)
	}
	wantReprobes(t, "decision taken", s.view(r.m.Suspicion("c")), "primary fast=false now=false;")
	r.report("c", "down", "")
	wantReprobes(t, "c still counting down after the decision", s.view(r.m.Suspicion("c")), "-")
	r.report("c", "down", "")
	wantReprobes(t, "c DOWN too", s.view(r.m.Suspicion("c")), "-")
}

// A DOWN site is never probed fast for its recovery: neither a committed
// failure after a success (rise not reached), nor this watcher's own
// failure of a probe its replica holds DOWN for it.
func TestSuspicionNeverSpeedsUpRise(t *testing.T) {
	r := newReplica(t)
	s := newSuspicion(3)
	for range 3 {
		for _, n := range []string{"a", "b", "c"} {
			r.report(n, "down", "up")
		}
	}
	if v := r.m.View(); v.Active != failover.Backup {
		t.Fatalf("got active %s, want the backup", v.Active)
	}
	// Nothing the watcher does from here may make the primary fast: a's
	// own failures started while it was not yet DOWN in the replica.
	wantReprobes(t, "all DOWN", s.view(r.m.Suspicion("a")), "-")
	for i := range 3 {
		wantReprobes(t, fmt.Sprintf("own failure %d while DOWN", i+1), s.round(ownRound(false)), "-")
	}
	for _, n := range []string{"a", "b", "c"} {
		r.report(n, "up", "")
	}
	wantReprobes(t, "one success each (rise 2)", s.view(r.m.Suspicion("a")), "-")
	wantReprobes(t, "own success", s.round(ownRound(true)), "-")
	r.report("b", "down", "")
	wantReprobes(t, "b fails again while DOWN", s.view(r.m.Suspicion("a")), "-")
	wantReprobes(t, "own failure while DOWN", s.round(ownRound(false)), "-")
	if got := fmtReprobes(s.changes(nil)); got != "-" {
		t.Fatalf("got %s, want nothing fast", got)
	}
}

// With fall 1 a single failing report is DOWN at once: it makes every
// other watcher probe the site at once, so that a second vantage point
// confirms it within a fast interval. The watcher that voted DOWN does not
// re-probe fast: its vote is cast, and fast successes would only speed up
// its rise.
func TestSuspicionFallOneFirstReportIsConfirmedAtOnce(t *testing.T) {
	r := newReplicaFall(t, 1)
	sa, sb := newSuspicion(1), newSuspicion(1)
	for _, n := range []string{"a", "b", "c"} {
		r.report(n, "up", "up")
	}
	r.report("b", "down", "up")
	wantReprobes(t, "b's DOWN report committed, seen by a", sa.view(r.m.Suspicion("a")), "primary fast=true now=true;")
	wantReprobes(t, "b's DOWN report committed, seen by b", sb.view(r.m.Suspicion("b")), "-")
	wantReprobes(t, "b's own failure at fall 1", sb.round(ownRound(false)), "-")
	r.report("c", "down", "")
	if v := r.m.View(); v.Active != failover.Backup {
		t.Fatalf("got active %s, want the backup once b and c voted the primary DOWN", v.Active)
	}
	wantReprobes(t, "decision taken", sa.view(r.m.Suspicion("a")), "primary fast=false now=false;")
}

// One watcher cut off from a site the others see UP keeps failing it, but
// the others re-probe it fast only for (fall+1) intervals after its
// failure began, not for as long as the partition lasts.
func TestSuspicionOfOneCutOffWatcherEndsAfterItsWindow(t *testing.T) {
	r := newReplica(t)
	s := newSuspicion(3)
	for _, n := range []string{"a", "b", "c"} {
		r.report(n, "up", "up")
	}
	r.report("b", "down", "up")
	began := r.at
	wantReprobes(t, "b fails", s.view(r.m.Suspicion("a")), "primary fast=true now=true;")
	window := 4 * time.Second // (fall+1) intervals
	for {
		r.report("b", "down", "up")
		r.report("a", "up", "up")
		r.report("c", "up", "up")
		got := fmtReprobes(s.view(r.m.Suspicion("a")))
		if v := r.m.View(); v.Sites[failover.Primary].Verdict != failover.Up {
			t.Fatalf("got primary %s, want UP at quorum throughout", v.Sites[failover.Primary].Verdict)
		}
		elapsed := r.at.Sub(began)
		if got == "-" {
			if elapsed > window+300*time.Millisecond {
				t.Fatalf("still fast %v after b's failure began, want settled after %v", elapsed, window)
			}
			continue
		}
		if got != "primary fast=false now=false;" || elapsed <= window {
			t.Fatalf("after %v: got %s, want primary settled only after %v", elapsed, got, window)
		}
		break
	}
}

// fakeReprober records what the watcher asks of the scheduler.
type fakeReprober struct {
	mu    sync.Mutex
	calls []string
}

func (f *fakeReprober) SetFast(site string, on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("fast %s %v", site, on))
}

func (f *fakeReprober) ProbeNow(site string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "now "+site)
}

// SetFastProbes records a restriction; nil, every probe of the site,
// is what the scheduler starts with and is not recorded.
func (f *fakeReprober) SetFastProbes(site string, names []string) {
	if names == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("probes %s %v", site, names))
}

func (f *fakeReprober) got() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// The watcher's loops wire it up: its own failing round makes the site
// fast before the report is committed, and another node's failing report,
// once applied, makes this node probe the site at once.
func TestWatcherReprobesSuspectSites(t *testing.T) {
	w, fc := newTestWatcher(t, time.Second)
	rp := &fakeReprober{}
	w.cfg.Reprobe = rp
	fc.log.Step(t, failover.Command{Payload: failover.SetPolicy{Policy: w.cfg.Policy, Actor: "test"}})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	rounds := make(chan probes.Round)
	wg.Go(func() { w.reportLoop(ctx, rounds) })
	wg.Go(func() { w.suspectLoop(ctx) })
	defer func() { cancel(); wg.Wait() }()

	fc.log.Step(t, failover.Command{Payload: failover.Observe{Node: "b", Results: []failover.ProbeResult{{Site: failover.Backup, Probe: "web"}}}})
	// The fake log applies to the machine directly; wake the loops as the
	// cluster's FSM.Apply does, or the suspicion loop, if it already ran
	// its first look, never sees the report.
	w.cfg.FSM.wake()
	poll.Until(t, 10*time.Second, func() bool { return slices.Equal(rp.got(), []string{"now backup", "fast backup true"}) },
		"the backup probed at once, then fast, after b's failing report")
	if got := w.Suspect(); !slices.Equal(got, []failover.Site{failover.Backup}) {
		t.Fatalf("Suspect: got %v, want [backup]", got)
	}
	r := ownRound(false)
	r.Seq = 1
	rounds <- r
	poll.Until(t, 10*time.Second, func() bool { return slices.Contains(rp.got(), "fast primary true") },
		"the primary fast after this node's own failure")
}

// barrierCluster counts the barriers the watcher asks for.
type barrierCluster struct {
	*fakeCluster
	barriers atomic.Int32
}

func (c *barrierCluster) Barrier(context.Context) error {
	c.barriers.Add(1)
	return nil
}

// On the leader, a site newly suspect pushes the commit to the followers
// with one barrier, so that their confirming probes do not wait for the
// leader's next heartbeat; a site that stays suspect asks for no more,
// and a follower never asks.
func TestLeaderPushesTheCommitOfANewSuspicion(t *testing.T) {
	for _, leading := range []bool{true, false} {
		w, fc := newTestWatcher(t, time.Second)
		bc := &barrierCluster{fakeCluster: fc}
		w.cfg.Cluster = bc
		w.setLeading(leading)
		fc.log.Step(t, failover.Command{Payload: failover.SetPolicy{Policy: w.cfg.Policy, Actor: "test"}})
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { w.suspectLoop(ctx) })
		fc.log.Step(t, failover.Command{Payload: failover.Observe{Node: "b", Seq: 1, Results: []failover.ProbeResult{{Site: failover.Backup, Probe: "web"}}}})
		w.cfg.FSM.wake()
		poll.Until(t, 10*time.Second, func() bool { return slices.Contains(w.Suspect(), failover.Backup) }, "the backup suspect")
		fc.log.Step(t, failover.Command{Payload: failover.Observe{Node: "b", Seq: 2, Results: []failover.ProbeResult{{Site: failover.Backup, Probe: "web"}}}})
		w.cfg.FSM.wake()
		want := int32(0)
		if leading {
			want = 1
			poll.Until(t, 10*time.Second, func() bool { return bc.barriers.Load() >= 1 }, "a barrier from the leader")
		}
		// The loop has taken both reports once it has gone round again.
		w.cfg.FSM.wake()
		poll.Until(t, 10*time.Second, func() bool { return len(w.cfg.FSM.suspectChanged) == 0 }, "the loop idle")
		cancel()
		wg.Wait()
		if got := bc.barriers.Load(); got != want {
			t.Fatalf("leading %v: got %d barriers, want %d", leading, got, want)
		}
	}
}
