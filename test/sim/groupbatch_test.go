package sim

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/sim/simdns"
)

// runSched plays sched in a bubble of its own and returns the world once
// it has settled, with every invariant checked.
func runSched(t *testing.T, sched Schedule) *World {
	t.Helper()
	var w *World
	synctest.Test(t, func(t *testing.T) {
		var err error
		if w, err = Run(sched); err != nil {
			t.Fatal(err)
		}
	})
	if v := w.Violations(); len(v) > 0 {
		t.Fatalf("%v\n%s", v, sched)
	}
	return w
}

// batchFences lists the fence TXTs a write of the authority's history
// set, as the groups name them.
func batchFences(w *World, wr simdns.Write) []string {
	var out []string
	for _, g := range w.simGroups() {
		id := dnsprovider.RRsetID{Name: w.auth.Client(g.fence).FenceName(), Type: "TXT"}
		if slices.ContainsFunc(wr.Sets, func(s dnsprovider.RRset) bool { return s.ID() == id }) {
			out = append(out, g.name)
		}
	}
	return out
}

// A region outage that moves three groups of one zone is written as one
// UPDATE: the leader's reconcilers share their writes as the watcher's
// do, and the authority applies the three groups' records and fences in
// one batch, with no swap of its own for any group.
func TestSimRegionOutageWritesEveryGroupInOneBatch(t *testing.T) {
	groups := []string{failover.DefaultGroup, "apps", "studio"}
	w := runGroups(t, groups, regionProbe)
	for _, g := range groups {
		groupMoved(t, w, g, true)
	}
	var writes []string
	var batched [][]string
	for _, wr := range w.auth.History() {
		if wr.Op == "set" {
			continue // the operator's records, before any decision
		}
		writes = append(writes, wr.Op)
		if wr.Op == "batch" {
			batched = append(batched, batchFences(w, wr))
		}
	}
	if len(writes) != 1 || len(batched) != 1 || !slices.Equal(batched[0], groups) {
		t.Fatalf("writes %v, batches with fences %v; want one batch with the fences of %v", writes, batched, groups)
	}
	if s := w.Stats(); s.BatchWrites != 1 || s.BatchedSwaps != 3 || s.BatchesRefused != 0 {
		t.Fatalf("stats: %d batches carrying %d swaps, %d refused; want 1 carrying 3, none refused", s.BatchWrites, s.BatchedSwaps, s.BatchesRefused)
	}
}

// A leader deposed while its batch of three groups' swaps is in flight
// (its path to the authority takes 8 s) is refused as a whole when the
// batch lands: the next leader has written the same decisions under
// their fences by then, so the deposed leader's fence prerequisites no
// longer hold, and no group's fence or records go back (the run's
// invariants). The new leader's own write is a batch too. The three
// groups are named ones, moved by one failover --all-groups, so their
// reconcilers' passes (two reads each, 8 s apiece) stay in step and
// reach the write together; the default group's pass reads the
// break-glass record first, and the others would not wait for it longer
// than the window.
func TestSimDeposedLeadersBatchIsRefused(t *testing.T) {
	groups := []string{"apps", "studio", "wiki"}
	events := []Event{
		{At: 3 * time.Second, Kind: "dnsslow", Node: "leader", Latency: 8 * time.Second, For: 40 * time.Second},
		{At: 5 * time.Second, Kind: "op", Op: "failover", AllGroups: true},
	}
	// The first check that finds the leader's write in flight crashes
	// it; an operator's ack follows through a survivor.
	for at := 6 * time.Second; at < 40*time.Second; at += 500 * time.Millisecond {
		events = append(events, Event{At: at, Kind: "depose", Op: "ack", Group: "apps", For: time.Second})
	}
	events = append(events, Event{At: 45 * time.Second, Kind: "revive"})
	for i := range events {
		events[i].Seq = i + 1
	}
	sched := Schedule{Seed: 1, Length: 50 * time.Second, Groups: groups, Events: events}
	w := runSched(t, sched)
	w.mu.Lock()
	deposed, refused := w.dnsw.deposed, slices.Clone(w.dnsw.refusedBatches)
	// The refused batch's sender lost its leadership before the revive:
	// it is the leader the depose crashed.
	senderDeposed := len(refused) > 0 && slices.ContainsFunc(w.leads, func(l *leadTerm) bool {
		return l.node == refused[0] && l.ended && l.end.Sub(w.sched.start) < 45*time.Second
	})
	w.mu.Unlock()
	s := w.Stats()
	if !deposed || !senderDeposed || s.BatchWrites < 2 {
		t.Fatalf("deposed %v, batches refused (by sender) %v, sender deposed %v, %d batches in all; want a deposed leader's batch refused and the new leader's batch\n%s",
			deposed, refused, senderDeposed, s.BatchWrites, sched)
	}
	var batches int
	for _, wr := range w.auth.History() {
		if wr.Op == "batch" {
			batches++
			if got := batchFences(w, wr); !slices.Equal(got, groups) {
				t.Errorf("a batch set fences %v, want %v", got, groups)
			}
		}
	}
	if batches != 1 {
		t.Fatalf("%d batches applied, want the new leader's alone", batches)
	}
	for _, g := range w.simGroups() {
		d, _ := w.nodes[0].machine.GroupDesired(g.name)
		if d.Gen == 0 || d.Active != failover.Backup || !d.Done {
			t.Fatalf("group %s: desired %+v, want on the backup, verified", g.name, d)
		}
	}
}

// A soak with enough runs with groups and no batched write fails, so it
// cannot silently stop covering the batch path; fewer group runs, or one
// batch, pass. The lean-report gap is checked the same way.
func TestSoakFailsWhenNoGroupRunBatched(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Stats
		gaps int
	}{
		{"enough group runs, no batch", Stats{GroupRuns: minGroupRunsForBatches}, 1},
		{"enough group runs, one batch", Stats{GroupRuns: minGroupRunsForBatches, BatchWrites: 1}, 0},
		{"too few group runs to tell", Stats{GroupRuns: minGroupRunsForBatches - 1}, 0},
		{"committed reports, none lean", Stats{ReportsCommitted: 101}, 1},
	} {
		if got := coverageGaps(tc.s); len(got) != tc.gaps {
			t.Errorf("%s: gaps %q, want %d", tc.name, got, tc.gaps)
		}
	}
}
