package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/failover"
)

// afterVerifiedFailovers is threeGroupsOneZone on BIND behind an update
// counter, with c's reconcilers, batched, kept across passes: they have
// written and verified every group's failover, and then passed once more
// with nothing to do, reading each group's records and fence as every
// idle pass of the leader does.
func afterVerifiedFailovers(t *testing.T, c func(*groupsOnBIND) *fakeCluster) (*groupsOnBIND, *updateCounter, []*Reconciler) {
	t.Helper()
	g, counter := batchedOnBIND(t, threeGroupsOneZone)
	recs, _ := g.batched(t, c(g), threeNames...)
	for i := range 2 {
		for name, err := range passBatched(t, c(g), nil, recs...) {
			if err != nil {
				t.Fatalf("group %s: pass %d: %v", name, i+1, err)
			}
		}
	}
	for _, name := range threeNames {
		if d, _ := c(g).m.GroupDesired(name); !d.Done {
			t.Fatalf("group %s: gen %d not verified", name, d.Gen)
		}
	}
	return g, counter, recs
}

// decideAll makes c's decision to move every group of threeNames to site.
func decideAll(t *testing.T, c *fakeCluster, to failover.Site) map[string]uint64 {
	t.Helper()
	for _, name := range threeNames {
		c.step(t, failover.Command{Payload: failover.Failover{Group: name, To: to, Force: true, Actor: "bob", Reason: "test"}})
	}
	return gensOf(c, threeNames...)
}

func newCluster(g *groupsOnBIND) *fakeCluster { return g.new }

// passCountingQueries runs one pass of each of recs at once on c, fails t
// on any pass's error, and returns how many queries reached the server
// before the batch's UPDATE.
func passCountingQueries(t *testing.T, c *fakeCluster, counter *updateCounter, recs []*Reconciler) int {
	t.Helper()
	before := counter.Queries()
	queries := -1
	for name, err := range passBatched(t, c, func() { queries = counter.Queries() - before }, recs...) {
		if err != nil {
			t.Errorf("group %s: pass: %v", name, err)
		}
	}
	return queries
}

// Against real BIND, the batch members of a region outage that read
// their records and fence in an earlier pass plan their UPDATE from that
// read: between the decisions and the one UPDATE, no query at all (it
// was two signed queries per group), and every group is written and
// verified.
func TestBatchedWritePlansFromTheLastReadOnBIND(t *testing.T) {
	g, counter, recs := afterVerifiedFailovers(t, newCluster)
	gens := decideAll(t, g.new, failover.Primary)
	if queries := passCountingQueries(t, g.new, counter, recs); queries != 0 {
		t.Errorf("got %d queries between the decisions and the batch's update, want 0", queries)
	}
	g.expectVerified(t, "after the failbacks", threeGroupsOneZone, "192.0.2.1", gens)
}

// expectVerified checks that BIND serves value for each of groups' record
// with the group's gen of gens as its fence, and that the new leader
// recorded that gen verified.
func (g *groupsOnBIND) expectVerified(t *testing.T, when string, groups []groupOnBIND, value string, gens map[string]uint64) {
	t.Helper()
	for _, gr := range groups {
		g.expect(t, when, gr.name, gr.record, value, gens[gr.name])
		if d, _ := g.new.m.GroupDesired(gr.name); !d.Done || d.Gen != gens[gr.name] {
			t.Errorf("%s: group %s: gen %d verified %v, want gen %d verified", when, gr.name, d.Gen, d.Done, gens[gr.name])
		}
	}
}

// Against real BIND, the look-alike that must still read: reconcilers
// with no earlier read (a new leader's) read each group's records and
// fence before they join the batch.
func TestBatchedWriteWithoutAnEarlierReadReadsOnBIND(t *testing.T) {
	g, counter := batchedOnBIND(t, threeGroupsOneZone)
	before := counter.Queries()
	queries := -1
	if _, errs := g.passAll(t, g.new, func() { queries = counter.Queries() - before }, threeNames...); len(errs) != len(threeNames) {
		t.Fatalf("got %d passes, want %d", len(errs), len(threeNames))
	}
	if want := 2 * len(threeNames); queries != want {
		t.Errorf("got %d queries before the batch's update, want %d (each group's record and fence)", queries, want)
	}
}

// Against real BIND, a plan from a read that DNS no longer matches:
// another writer changed beta's record and fence after the members read
// them. BIND refuses the batch on beta's prerequisites; every member
// whose plan came from its earlier read then reads again and writes on
// its own, so every group, beta included, gets its decision's records at
// its decision's generation.
func TestStaleReadInBatchIsRefusedAndEveryGroupStillWrittenOnBIND(t *testing.T) {
	g, counter, recs := afterVerifiedFailovers(t, newCluster)
	gens := decideAll(t, g.new, failover.Primary)
	other := g.provider(t, "beta")
	_, fenceB := g.served(t, "beta", "wiki")
	if err := other.Swap(context.Background(),
		[]dnsprovider.RRset{{Name: "wiki", Type: "A", TTL: time.Minute, Values: []string{"198.51.100.1"}}},
		[]dnsprovider.RRset{{Name: "wiki", Type: "A", TTL: time.Minute, Values: []string{"203.0.113.9"}}},
		fenceB, fenceB+1); err != nil {
		t.Fatalf("the other writer: %v", err)
	}
	seen := len(counter.Updates())
	errs := passBatched(t, g.new, nil, recs...)
	for _, name := range threeNames {
		if errs[name] != nil {
			t.Errorf("group %s: pass: %v", name, errs[name])
		}
	}
	got := sinceSeeding(counter, seen)
	expectRefusedBatch(t, got, fences(gens, threeNames...))
	for _, u := range got[1:] {
		if u.Rcode != "NOERROR" {
			t.Errorf("a group's own write after a fresh read was refused: %v", u)
		}
	}
	g.expectVerified(t, "after the refused batch", threeGroupsOneZone, "192.0.2.1", gens)
}

// Against real BIND, a deposed leader whose reconcilers read every group
// in an earlier pass: since then the new leader wrote each group's
// failback and failover again, and the deposed leader, driving its own
// failbacks, plans its batch from its earlier read. BIND refuses it on
// the fences; each member reads again, finds its group's fence newer,
// and writes nothing, so no group is rolled back.
func TestDeposedLeadersPlannedBatchRollsBackNothingOnBIND(t *testing.T) {
	g, counter, recs := afterVerifiedFailovers(t, func(g *groupsOnBIND) *fakeCluster { return g.stale })
	staleGens := decideAll(t, g.stale, failover.Primary)
	newGens := map[string]uint64{}
	for _, name := range threeNames {
		g.pass(t, g.new, name) // DNS already holds the failover: verified
	}
	for range 30 {
		// The new leader's log is longer than the deposed one's.
		g.new.step(t, failover.Command{Payload: failover.Tick{}})
	}
	for _, name := range threeNames {
		g.failback(t, name)
		g.new.step(t, failover.Command{Payload: failover.Failover{Group: name, To: failover.Backup, Force: true, Actor: "carol", Reason: "again"}})
		d, _ := g.new.m.GroupDesired(name)
		g.pass(t, g.new, name)
		newGens[name] = d.Gen
		if newGens[name] <= staleGens[name] {
			t.Fatalf("group %s: the new leader's gen %d is not after the deposed one's %d", name, newGens[name], staleGens[name])
		}
	}
	seen := len(counter.Updates())
	errs := passBatched(t, g.stale, nil, recs...)
	for _, name := range threeNames {
		if !errors.Is(errs[name], ErrStale) {
			t.Errorf("deposed leader, group %s: got %v, want ErrStale", name, errs[name])
		}
	}
	// Its one UPDATE, planned from the earlier read, refused; after
	// reading again, no group writes on its own.
	if got := sinceSeeding(counter, seen); len(got) != 1 || got[0].Rcode == "NOERROR" || !slices.Equal(got[0].Fences, fences(staleGens, threeNames...)) {
		t.Errorf("got updates %v, want only the deposed leader's batch of %v, refused", got, fences(staleGens, threeNames...))
	}
	for _, gr := range threeGroupsOneZone {
		g.expect(t, fmt.Sprintf("after the deposed leader's passes (its gen %d)", staleGens[gr.name]), gr.name, gr.record, "198.51.100.1", newGens[gr.name])
	}
}

// Against real BIND, the part of a plan the prerequisites cannot check:
// beta's record already had its decision's value and TTL at the earlier
// read (an operator's drift), and then only its TTL changed. Value
// prerequisites would pass, and a plan from the earlier read would leave
// that RRset as it is; so beta reads again and its write sets the
// decision's TTL, while alpha and gamma plan from their reads.
func TestBatchedWriteRereadsARecordThatWouldNotChangeOnBIND(t *testing.T) {
	g, counter, recs := afterVerifiedFailovers(t, newCluster)
	beta := g.provider(t, "beta")
	set := func(ttl time.Duration) {
		t.Helper()
		if _, err := beta.SetRecords(context.Background(), []dnsprovider.RRset{{Name: "wiki", Type: "A", TTL: ttl, Values: []string{"192.0.2.1"}}}); err != nil {
			t.Fatal(err)
		}
	}
	set(time.Minute)
	for name, err := range passBatched(t, g.new, nil, recs...) {
		if err != nil {
			t.Fatalf("group %s: idle pass: %v", name, err)
		}
	}
	gens := decideAll(t, g.new, failover.Primary)
	set(5 * time.Minute)
	if queries := passCountingQueries(t, g.new, counter, recs); queries != 2 {
		t.Errorf("got %d queries before the batch's update, want 2 (beta's record and fence)", queries)
	}
	sets, err := beta.GetRecords(context.Background(), []dnsprovider.RRsetID{{Name: "wiki", Type: "A"}})
	if err != nil {
		t.Fatal(err)
	}
	if sets[0].TTL != time.Minute {
		t.Errorf("wiki's TTL is %s after beta's write, want the decision's %s", sets[0].TTL, time.Minute)
	}
	g.expectVerified(t, "after the failbacks", threeGroupsOneZone, "192.0.2.1", gens)
}

// Against real BIND, one group's flip among settled siblings (the leader
// wakes only its reconciler): alone in its batch, it writes the plan
// from its last read itself, with no query between the decision and its
// UPDATE (it read its record and fence again), and is verified.
func TestLoneGroupWritesItsPlanWithoutReadingOnBIND(t *testing.T) {
	g, counter, recs := afterVerifiedFailovers(t, newCluster)
	g.new.step(t, failover.Command{Payload: failover.Failover{Group: "alpha", To: failover.Primary, Force: true, Actor: "bob", Reason: "test"}})
	gens := gensOf(g.new, "alpha")
	if queries := passCountingQueries(t, g.new, counter, recs[:1]); queries != 0 {
		t.Errorf("got %d queries between alpha's decision and its update, want 0", queries)
	}
	g.expectVerified(t, "after alpha's failback", threeGroupsOneZone[:1], "192.0.2.1", gens)
}

// Against real BIND, the look-alike: the lone group's plan is stale
// (another writer changed its record and fence after its read). BIND
// refuses it on its prerequisites; the group reads again and writes on
// its own, and gets its decision's records at its decision's generation.
func TestLoneGroupsStalePlanIsRefusedThenWrittenOnBIND(t *testing.T) {
	g, counter, recs := afterVerifiedFailovers(t, newCluster)
	g.new.step(t, failover.Command{Payload: failover.Failover{Group: "alpha", To: failover.Primary, Force: true, Actor: "bob", Reason: "test"}})
	gens := gensOf(g.new, "alpha")
	name, record := threeGroupsOneZone[0].name, threeGroupsOneZone[0].record
	other := g.provider(t, name)
	_, fence := g.served(t, name, record)
	if err := other.Swap(context.Background(),
		[]dnsprovider.RRset{{Name: record, Type: "A", TTL: time.Minute, Values: []string{"198.51.100.1"}}},
		[]dnsprovider.RRset{{Name: record, Type: "A", TTL: time.Minute, Values: []string{"203.0.113.9"}}},
		fence, fence+1); err != nil {
		t.Fatalf("the other writer: %v", err)
	}
	seen := len(counter.Updates())
	if err := passBatched(t, g.new, nil, recs[0])[name]; err != nil {
		t.Errorf("group %s: pass: %v", name, err)
	}
	got := sinceSeeding(counter, seen)
	if len(got) != 2 || got[0].Rcode == "NOERROR" || got[1].Rcode != "NOERROR" {
		t.Errorf("updates %v, want the planned one refused, then one after a fresh read", got)
	}
	g.expectVerified(t, "after the refused plan", threeGroupsOneZone[:1], "192.0.2.1", gens)
}

// Against real BIND, a deposed leader's lone plan: it read alpha's record
// and fence, then the new leader wrote alpha's failback and a newer
// failover. The deposed leader's own failback of alpha, planned from its
// earlier read and alone in its batch, is refused on the fence; alpha
// reads again, finds the newer fence and writes nothing.
func TestDeposedLeadersLonePlanRollsBackNothingOnBIND(t *testing.T) {
	g, counter, recs := afterVerifiedFailovers(t, func(g *groupsOnBIND) *fakeCluster { return g.stale })
	gr := threeGroupsOneZone[0]
	g.stale.step(t, failover.Command{Payload: failover.Failover{Group: gr.name, To: failover.Primary, Force: true, Actor: "bob", Reason: "test"}})
	staleGen := gensOf(g.stale, gr.name)[gr.name]
	g.pass(t, g.new, gr.name)
	for range 30 {
		// The new leader's log is longer than the deposed one's.
		g.new.step(t, failover.Command{Payload: failover.Tick{}})
	}
	g.failback(t, gr.name)
	g.new.step(t, failover.Command{Payload: failover.Failover{Group: gr.name, To: failover.Backup, Force: true, Actor: "carol", Reason: "again"}})
	g.pass(t, g.new, gr.name)
	newGen := gensOf(g.new, gr.name)[gr.name]
	if newGen <= staleGen {
		t.Fatalf("the new leader's gen %d is not after the deposed one's %d", newGen, staleGen)
	}
	seen := len(counter.Updates())
	if err := passBatched(t, g.stale, nil, recs[0])[gr.name]; !errors.Is(err, ErrStale) {
		t.Errorf("deposed leader: got %v, want ErrStale", err)
	}
	if got := sinceSeeding(counter, seen); len(got) != 1 || got[0].Rcode == "NOERROR" {
		t.Errorf("got updates %v, want only the deposed leader's planned one, refused", got)
	}
	g.expect(t, fmt.Sprintf("after the deposed leader's pass (its gen %d)", staleGen), gr.name, gr.record, "198.51.100.1", newGen)
}
