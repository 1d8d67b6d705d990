package reconcile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/test/dnsservers"
)

const otherZone = "other.test."

var fourFences = map[string]string{"alpha": "_drwatch-alpha", "beta": "_drwatch-beta", "gamma": "_drwatch-gamma", "delta": "_drwatch-delta"}

// batchWindow is long enough that a batch is only ever sent because every
// member joined it: a loaded machine cannot split it.
const batchWindow = time.Minute

// batchedOnBIND is groups on BIND behind an update counter.
func batchedOnBIND(t *testing.T, groups []groupOnBIND) (*groupsOnBIND, *updateCounter) {
	t.Helper()
	var counter *updateCounter
	g := startGroupsOnBIND(t, fourFences, groups, func(bind string) string {
		counter = startUpdateCounter(t, bind)
		return counter.addr
	})
	return g, counter
}

// passAll runs one pass of each group's reconciler on c at once, sharing
// their writes as the leader does, and returns each pass's error. If
// atSend is set, it runs (on the test's goroutine) while the batch waits
// at its leadership check right before its UPDATE: c's first check, the
// members leaving the check to the batch.
func (g *groupsOnBIND) passAll(t *testing.T, c *fakeCluster, atSend func(), groups ...string) (batches int, errs map[string]error) {
	t.Helper()
	recs, batches := g.batched(t, c, groups...)
	return batches, passBatched(t, c, atSend, recs...)
}

// batched is the reconcilers of groups on c, in their order, sharing
// their writes as the leader's do, and how many batches they make.
func (g *groupsOnBIND) batched(t *testing.T, c *fakeCluster, groups ...string) ([]*Reconciler, int) {
	t.Helper()
	recs := make([]*Reconciler, len(groups))
	for i, name := range groups {
		recs[i] = g.reconciler(t, c, name)
	}
	return recs, BatchWrites(batchWindow, recs)
}

// passBatched runs one pass of each of recs at once and returns each
// pass's error by group; atSend as passAll's.
func passBatched(t *testing.T, c *fakeCluster, atSend func(), recs ...*Reconciler) (errs map[string]error) {
	t.Helper()
	at, resume := make(chan struct{}), make(chan struct{})
	if atSend != nil {
		var calls atomic.Int32
		c.leaderFn = func() error {
			if calls.Add(1) == 1 {
				at <- struct{}{}
				<-resume
			}
			return nil
		}
	}
	errs = map[string]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, r := range recs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := r.Pass(context.Background())
			mu.Lock()
			errs[r.groupName()] = err
			mu.Unlock()
		}()
	}
	passed := make(chan struct{})
	go func() {
		wg.Wait()
		close(passed)
	}()
	select {
	case <-at:
		func() {
			defer close(resume) // even if atSend fails the test
			atSend()
		}()
		<-passed
	case <-passed:
		if atSend != nil {
			t.Fatal("the passes ended without a batched write")
		}
	}
	return errs
}

// sinceSeeding is the UPDATEs after the first n (the seeding's).
func sinceSeeding(c *updateCounter, n int) []sentUpdate { return c.Updates()[n:] }

var (
	threeGroupsOneZone = []groupOnBIND{{"alpha", zone, "lms"}, {"beta", zone, "wiki"}, {"gamma", zone, "forum"}}
	threeNames         = []string{"alpha", "beta", "gamma"}
)

// expectRefusedBatch checks that got is one refused UPDATE writing want
// fences, then one UPDATE per group.
func expectRefusedBatch(t *testing.T, got []sentUpdate, want []string) {
	t.Helper()
	if len(got) != 1+len(want) || !slices.Equal(got[0].Fences, want) || got[0].Rcode == "NOERROR" {
		t.Errorf("got updates %v, want the refused batch of %v, then one write per group", got, want)
	}
}

func fences(gens map[string]uint64, groups ...string) []string {
	var out []string
	for _, name := range groups {
		out = append(out, fmt.Sprintf("%s=gen=%d", fourFences[name], gens[name]))
	}
	slices.Sort(out)
	return out
}

func gensOf(c *fakeCluster, groups ...string) map[string]uint64 {
	out := map[string]uint64{}
	for _, name := range groups {
		d, _ := c.m.GroupDesired(name)
		out[name] = d.Gen
	}
	return out
}

// Against real BIND, a region outage that moved three groups of one zone
// is written in ONE UPDATE carrying each group's own fence, and each group
// is then verified and recorded on its own.
func TestRegionOutageIsOneUpdatePerZoneOnBIND(t *testing.T) {
	groups, names := threeGroupsOneZone, threeNames
	g, counter := batchedOnBIND(t, groups)
	seeded := len(counter.Updates())
	gens := gensOf(g.new, names...)

	batches, errs := g.passAll(t, g.new, nil, names...)
	if batches != 1 {
		t.Fatalf("got %d batches, want 1", batches)
	}
	for _, name := range names {
		if errs[name] != nil {
			t.Errorf("group %s: pass: %v", name, errs[name])
		}
	}
	want := []sentUpdate{{Zone: zone, Rcode: "NOERROR", Fences: fences(gens, names...)}}
	if got := sinceSeeding(counter, seeded); !slices.EqualFunc(got, want, sameUpdate) {
		t.Errorf("got updates %v, want %v", got, want)
	}
	g.expectVerified(t, "after the region outage", groups, "198.51.100.1", gens)
}

// Against real BIND, a batch checks leadership once, right before its
// UPDATE, not once per member as well: in a 50-group region outage the
// members' 50 checks were 50 leadership round trips before the write.
func TestBatchChecksLeadershipOnceBeforeItsUpdateOnBIND(t *testing.T) {
	g, _ := batchedOnBIND(t, threeGroupsOneZone)
	var calls atomic.Int32
	g.new.leaderFn = func() error { calls.Add(1); return nil }
	_, errs := g.passAll(t, g.new, nil, threeNames...)
	for _, name := range threeNames {
		if errs[name] != nil {
			t.Errorf("group %s: pass: %v", name, errs[name])
		}
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("got %d leadership checks, want 1, right before the batch's update", n)
	}
}

// Against real BIND, a batch whose leadership check fails writes nothing:
// no UPDATE at all, and every member's pass fails on the check, as a
// reconciler alone does (TestDeposedLeaderDoesNotWrite).
func TestDeposedLeadersBatchSendsNothingOnBIND(t *testing.T) {
	g, counter := batchedOnBIND(t, threeGroupsOneZone)
	seeded := len(counter.Updates())
	type served struct {
		values []string
		fence  uint64
	}
	before := map[string]served{}
	for _, gr := range threeGroupsOneZone {
		v, f := g.served(t, gr.name, gr.record)
		before[gr.name] = served{v, f}
	}
	deposed := errors.New("not the leader")
	g.new.leaderFn = func() error { return deposed }
	_, errs := g.passAll(t, g.new, nil, threeNames...)
	for _, name := range threeNames {
		if !errors.Is(errs[name], deposed) {
			t.Errorf("group %s: got %v, want the failed leadership check", name, errs[name])
		}
	}
	if got := sinceSeeding(counter, seeded); len(got) != 0 {
		t.Fatalf("a deposed leader sent %v", got)
	}
	for _, gr := range threeGroupsOneZone {
		if v, f := g.served(t, gr.name, gr.record); !slices.Equal(v, before[gr.name].values) || f != before[gr.name].fence {
			t.Errorf("group %s: serves %v with gen=%d, want %v with gen=%d as before", gr.name, v, f, before[gr.name].values, before[gr.name].fence)
		}
	}
}

// Against real BIND, groups in two zones are written in two UPDATEs, one
// per zone, each carrying only its own zone's groups.
func TestGroupsInTwoZonesAreTwoUpdatesOnBIND(t *testing.T) {
	groups := []groupOnBIND{{"alpha", zone, "lms"}, {"beta", zone, "wiki"}, {"gamma", otherZone, "lms"}, {"delta", otherZone, "wiki"}}
	g, counter := batchedOnBIND(t, groups)
	seeded := len(counter.Updates())
	names := []string{"alpha", "beta", "gamma", "delta"}
	gens := gensOf(g.new, names...)

	batches, errs := g.passAll(t, g.new, nil, names...)
	if batches != 2 {
		t.Fatalf("got %d batches, want 2", batches)
	}
	for _, name := range names {
		if errs[name] != nil {
			t.Errorf("group %s: pass: %v", name, errs[name])
		}
	}
	got := sinceSeeding(counter, seeded)
	slices.SortFunc(got, func(a, b sentUpdate) int { return cmp.Compare(a.Zone, b.Zone) })
	want := []sentUpdate{
		{Zone: zone, Rcode: "NOERROR", Fences: fences(gens, "alpha", "beta")},
		{Zone: otherZone, Rcode: "NOERROR", Fences: fences(gens, "gamma", "delta")},
	}
	if !slices.EqualFunc(got, want, sameUpdate) {
		t.Errorf("got updates %v, want %v", got, want)
	}
	for _, gr := range groups {
		g.expect(t, "after the region outage", gr.name, gr.record, "198.51.100.1", gens[gr.name])
	}
}

// Against real BIND, a deposed leader's batched write: it read every
// group's records and fence, and right before its one UPDATE the new leader
// wrote each group's failover and failback. BIND refuses the batch on the
// fences; each group's own write is then refused as a conflict on its own
// fence, so no group is rolled back.
func TestDeposedLeadersBatchedWriteRollsBackNothingOnBIND(t *testing.T) {
	g, counter := batchedOnBIND(t, threeGroupsOneZone)
	staleGens := gensOf(g.stale, threeNames...)
	newGens := map[string]uint64{}
	var seen int
	_, errs := g.passAll(t, g.stale, func() {
		for _, name := range threeNames {
			g.pass(t, g.new, name)
			newGens[name] = g.failback(t, name)
		}
		seen = len(counter.Updates())
	}, threeNames...)
	for _, name := range threeNames {
		var conflict *dnsprovider.ConflictError
		if !errors.As(errs[name], &conflict) || conflict.Fence != newGens[name] {
			t.Errorf("deposed leader, group %s: got %v, want a conflict with fence gen=%d", name, errs[name], newGens[name])
		}
	}
	got := sinceSeeding(counter, seen)
	expectRefusedBatch(t, got, fences(staleGens, threeNames...))
	for _, u := range got {
		if u.Rcode == "NOERROR" {
			t.Errorf("deposed leader's update %v went through", u)
		}
	}
	for _, gr := range threeGroupsOneZone {
		g.expect(t, "after the deposed leader's batched write", gr.name, gr.record, "192.0.2.1", newGens[gr.name])
	}
}

// Against real BIND, another writer changes beta's record after the
// leader read it: BIND refuses the batch on beta's prerequisite, and each
// group then writes on its own: alpha and gamma are written and verified,
// beta reports the conflict and keeps the other writer's record.
func TestConflictInBatchStillWritesTheOtherGroupsOnBIND(t *testing.T) {
	g, counter := batchedOnBIND(t, threeGroupsOneZone)
	gens := gensOf(g.new, threeNames...)
	var seen int
	_, errs := g.passAll(t, g.new, func() {
		if _, err := g.provider(t, "beta").SetRecords(context.Background(), []dnsprovider.RRset{
			{Name: "wiki", Type: "A", TTL: time.Minute, Values: []string{"203.0.113.9"}},
		}); err != nil {
			t.Fatal(err)
		}
		seen = len(counter.Updates())
	}, threeNames...)
	var conflict *dnsprovider.ConflictError
	if !errors.As(errs["beta"], &conflict) {
		t.Errorf("group beta: got %v, want a conflict", errs["beta"])
	}
	for _, name := range []string{"alpha", "gamma"} {
		if errs[name] != nil {
			t.Errorf("group %s: pass: %v", name, errs[name])
		}
		if d, _ := g.new.m.GroupDesired(name); !d.Done {
			t.Errorf("group %s: gen %d not verified", name, d.Gen)
		}
	}
	expectRefusedBatch(t, sinceSeeding(counter, seen), fences(gens, threeNames...))
	g.expect(t, "after the batch", "alpha", "lms", "198.51.100.1", gens["alpha"])
	g.expect(t, "after the batch", "gamma", "forum", "198.51.100.1", gens["gamma"])
	g.expect(t, "after the batch", "beta", "wiki", "203.0.113.9", 0)
}

// Against real BIND, a key whose update policy leaves out beta's record
// (dnsservers.KeyNoWiki): BIND refuses the batch as a whole, and each
// group then writes on its own: alpha and gamma are written and verified,
// and only beta fails, refused.
func TestRefusedBatchStillWritesTheGrantedGroupsOnBIND(t *testing.T) {
	g, counter := batchedOnBIND(t, threeGroupsOneZone)
	g.key = dnsservers.KeyNoWiki
	seeded := len(counter.Updates())
	gens := gensOf(g.new, threeNames...)
	_, errs := g.passAll(t, g.new, nil, threeNames...)
	if !errors.Is(errs["beta"], dnsprovider.ErrRefused) {
		t.Errorf("group beta: got %v, want refused", errs["beta"])
	}
	for _, name := range []string{"alpha", "gamma"} {
		if errs[name] != nil {
			t.Errorf("group %s: pass: %v", name, errs[name])
		}
		if d, _ := g.new.m.GroupDesired(name); !d.Done {
			t.Errorf("group %s: gen %d not verified", name, d.Gen)
		}
	}
	expectRefusedBatch(t, sinceSeeding(counter, seeded), fences(gens, threeNames...))
	g.expect(t, "after the batch", "alpha", "lms", "198.51.100.1", gens["alpha"])
	g.expect(t, "after the batch", "gamma", "forum", "198.51.100.1", gens["gamma"])
	g.expect(t, "after the batch", "beta", "wiki", "192.0.2.1", 0)
}

func sameUpdate(a, b sentUpdate) bool {
	return a.Zone == b.Zone && a.Rcode == b.Rcode && slices.Equal(a.Fences, b.Fences)
}

// Against real BIND, a group whose reconciler never reaches its write (a
// gate holds it, its pass is slow) holds its sibling back one window at
// the most: alpha is written on its own, beta is left as it is.
func TestBatchWaitsForAStragglerOneWindowAtMostOnBIND(t *testing.T) {
	g := newGroupsOnBIND(t, ownFences)
	alpha, beta := g.reconciler(t, g.new, "alpha"), g.reconciler(t, g.new, "beta")
	if n := BatchWrites(100*time.Millisecond, []*Reconciler{alpha, beta}); n != 1 {
		t.Fatalf("got %d batches, want 1", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := alpha.Pass(ctx); err != nil {
		t.Fatalf("alpha's pass while beta's never comes: %v", err)
	}
	genA, _ := g.new.m.GroupDesired("alpha")
	g.expect(t, "after alpha's pass", "alpha", "lms", "198.51.100.1", genA.Gen)
	g.expect(t, "after alpha's pass", "beta", "wiki", "192.0.2.1", 0)
}
