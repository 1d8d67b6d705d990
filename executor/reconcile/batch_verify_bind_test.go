package reconcile

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/poll"
)

// countingVerifier counts how a reconciler's verifications are made: on
// its own (Verify) or together with others (VerifyEach).
type countingVerifier struct {
	TogetherVerifier
	key    string // "" keeps the verifier's own key
	counts *verifyCounts
}

type verifyCounts struct {
	mu  sync.Mutex
	own int
	// together is how many decisions each VerifyEach call was given, by
	// the VerifyKey of the verifier it was made with.
	together map[string][]int
}

func (c *countingVerifier) Verify(ctx context.Context, desired []dnsprovider.RRset) (*dnsprovider.Verification, error) {
	c.counts.mu.Lock()
	c.counts.own++
	c.counts.mu.Unlock()
	return c.TogetherVerifier.Verify(ctx, desired)
}

func (c *countingVerifier) VerifyEach(ctx context.Context, desired [][]dnsprovider.RRset, done func(int, *dnsprovider.Verification)) error {
	c.counts.mu.Lock()
	if c.counts.together == nil {
		c.counts.together = map[string][]int{}
	}
	c.counts.together[c.VerifyKey()] = append(c.counts.together[c.VerifyKey()], len(desired))
	c.counts.mu.Unlock()
	return c.TogetherVerifier.VerifyEach(ctx, desired, done)
}

func (c *countingVerifier) VerifyKey() string {
	if c.key != "" {
		return c.key
	}
	return c.TogetherVerifier.VerifyKey()
}

// Against real BIND, the members of a batch whose UPDATE landed are
// verified together, in one VerifyEach over every member's records and
// fence, not one Verify each; each member still records its own
// verification, of its own records and fence. A member whose verifier
// asks other servers (another VerifyKey) is verified apart from the
// others, by its own verifier.
func TestBatchVerifiesItsMembersTogetherOnBIND(t *testing.T) {
	for _, tc := range []struct {
		name     string
		otherKey string // gamma's verifier key, "" the others'
		together map[string][]int
	}{
		{name: "one verifier", together: map[string][]int{"": {3}}},
		{name: "gamma asks other servers", otherKey: "other servers", together: map[string][]int{"": {2}, "other servers": {1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, _ := batchedOnBIND(t, threeGroupsOneZone)
			gens := gensOf(g.new, threeNames...)
			recs, batches := g.batched(t, g.new, threeNames...)
			if batches != 1 {
				t.Fatalf("got %d batches, want 1", batches)
			}
			counts := &verifyCounts{}
			for _, r := range recs {
				cv := &countingVerifier{TogetherVerifier: r.cfg.Verifier.(TogetherVerifier), counts: counts}
				if r.groupName() == "gamma" {
					cv.key = tc.otherKey
				}
				r.cfg.Verifier = cv
			}
			for name, err := range passBatched(t, g.new, nil, recs...) {
				if err != nil {
					t.Errorf("group %s: pass: %v", name, err)
				}
			}
			want := map[string][]int{}
			for k, n := range tc.together {
				if k == "" {
					k = recs[0].cfg.Verifier.(TogetherVerifier).VerifyKey()
				}
				want[k] = n
			}
			if counts.own != 0 || !maps.EqualFunc(counts.together, want, slices.Equal) {
				t.Errorf("got %d verifications on their own and together %v (decisions by verifier key), want none on its own and %v", counts.own, counts.together, want)
			}
			for i, r := range recs {
				gr := threeGroupsOneZone[i]
				rep := r.Last()
				if rep.Action != "verify" || rep.Verified == nil || !rep.Verified.OK() {
					t.Fatalf("group %s: got action %q, verification %+v, want a verified write", gr.name, rep.Action, rep.Verified)
				}
				got := rep.Verified.Servers[0].Got
				wantNames := []string{gr.record, fourFences[gr.name]}
				var names []string
				for _, s := range got {
					names = append(names, s.Name)
				}
				if !slices.Equal(names, wantNames) {
					t.Errorf("group %s: its verification read %v, want its own record and fence %v", gr.name, names, wantNames)
				}
			}
			g.expectVerified(t, "after the batched write", threeGroupsOneZone, "198.51.100.1", gens)
		})
	}
}

// A batch's verification is its members' own to wait for: a member whose
// leadership ends while it waits gives up, as a Verify of its own would.
func TestMemberWaitingForItsBatchsVerificationStopsWithItsContext(t *testing.T) {
	r := &Reconciler{verifying: make(chan verified)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, _, err := r.verify(ctx, nil); err == nil {
		t.Fatal("got a verification, want the context's error")
	}
	if r.verifying != nil {
		t.Fatal("the batch's verification is still pending for the next pass")
	}
}

// A member's servers' propagation times count from when its batch's
// verification started, not from when the member came to wait for it
// (later, by as much as the members before it took to record their
// writes): the times it records are when the servers were seen serving.
func TestBatchVerificationCountsFromItsOwnStart(t *testing.T) {
	started := time.Unix(100, 0)
	ch := make(chan verified, 1)
	want := &dnsprovider.Verification{Servers: []dnsprovider.ServerResult{{Server: "ns1:53", Matched: true, After: time.Second}}}
	ch <- verified{v: want, start: started}
	r := &Reconciler{verifying: ch, cfg: Config{Now: func() time.Time { return time.Unix(200, 0) }}}
	v, start, err := r.verify(context.Background(), nil)
	if err != nil || v != want || !start.Equal(started) {
		t.Fatalf("got %v from %s (%v), want the batch's verification from its start %s", v, start, err, started)
	}
	if got := serverTimes(v, start); len(got) != 1 || got[0].VerifiedAt != time.Unix(101, 0).UnixNano() {
		t.Errorf("got server times %v, want ns1:53 at the start plus its second", got)
	}
}

// Against real BIND, the members of a batch record when its one UPDATE
// was answered as their written time, the same for all, and as their
// verified time when the last server was seen serving their records:
// not when each member got to stamp them, which after a region's UPDATE
// is the later the more members queue for the cores.
func TestBatchMembersStampTheirUpdateAndTheirLastServerOnBIND(t *testing.T) {
	g, _ := batchedOnBIND(t, threeGroupsOneZone)
	gens := gensOf(g.new, threeNames...)
	recs, batches := g.batched(t, g.new, threeNames...)
	if batches != 1 {
		t.Fatalf("got %d batches, want 1", batches)
	}
	for name, err := range passBatched(t, g.new, nil, recs...) {
		if err != nil {
			t.Fatalf("group %s: pass: %v", name, err)
		}
	}
	var written int64
	for _, e := range g.new.m.History() {
		if e.Group == "" || e.Index != gens[e.Group] {
			continue
		}
		tm := e.Timings
		if written == 0 {
			written = tm.WrittenAt
		}
		if tm.WrittenAt == 0 || tm.WrittenAt != written {
			t.Errorf("group %s: written at %d, want the batch's one answer, %d", e.Group, tm.WrittenAt, written)
		}
		var last int64
		for _, s := range tm.Servers {
			last = max(last, s.VerifiedAt)
		}
		if len(tm.Servers) == 0 || tm.VerifiedAt != last || tm.VerifiedAt < tm.WrittenAt {
			t.Errorf("group %s: written at %d, verified at %d, servers %+v; want verified when its last server was seen, after the write",
				e.Group, tm.WrittenAt, tm.VerifiedAt, tm.Servers)
		}
	}
	if written == 0 {
		t.Fatal("no group's decision recorded a write")
	}
}

// recordSpy notes when each group's written record was proposed.
type recordSpy struct {
	*fakeCluster
	mu      sync.Mutex
	written map[string]time.Time
}

func (c *recordSpy) Propose(ctx context.Context, b []byte) ([]byte, uint64, error) {
	if cmd, err := failover.Decode(b); err == nil {
		if ar, ok := cmd.Payload.(failover.ActionResult); ok && ar.Outcome == failover.OutcomeWritten {
			c.mu.Lock()
			c.written[ar.Group] = time.Now()
			c.mu.Unlock()
		}
	}
	return c.fakeCluster.Propose(ctx, b)
}

func (c *recordSpy) writtenAt() map[string]time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.written)
}

// handingVerifier notes when the batch's verification started and when
// it handed each group its verification, and holds it, until release
// is closed, before it starts.
type handingVerifier struct {
	TogetherVerifier
	release chan struct{}
	mu      sync.Mutex
	started time.Time
	handed  map[string]time.Time
}

func (h *handingVerifier) VerifyEach(ctx context.Context, desired [][]dnsprovider.RRset, done func(int, *dnsprovider.Verification)) error {
	h.mu.Lock()
	h.started = time.Now()
	h.mu.Unlock()
	select {
	case <-h.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return h.TogetherVerifier.VerifyEach(ctx, desired, func(i int, v *dnsprovider.Verification) {
		for _, gr := range threeGroupsOneZone {
			if n := desired[i][0].Name; n == gr.record || strings.HasPrefix(n, gr.record+".") {
				h.mu.Lock()
				h.handed[gr.name] = time.Now()
				h.mu.Unlock()
			}
		}
		done(i, v)
	})
}

// onVerifyingBatch makes the three groups' batch on BIND with spy as
// their cluster and one handingVerifier, released when release is.
func onVerifyingBatch(t *testing.T, release chan struct{}) ([]*Reconciler, *recordSpy, *handingVerifier, *fakeCluster) {
	t.Helper()
	g, _ := batchedOnBIND(t, threeGroupsOneZone)
	recs, batches := g.batched(t, g.new, threeNames...)
	if batches != 1 {
		t.Fatalf("got %d batches, want 1", batches)
	}
	spy := &recordSpy{fakeCluster: g.new, written: map[string]time.Time{}}
	hv := &handingVerifier{TogetherVerifier: recs[0].cfg.Verifier.(TogetherVerifier), release: release, handed: map[string]time.Time{}}
	for _, r := range recs {
		r.cfg.Cluster, r.cfg.Verifier = spy, hv
	}
	return recs, spy, hv, g.new
}

// Against real BIND, a member of a batch holds back the record of its
// write until the batch's verification hands it its own: the members'
// proposals would otherwise take the cores the verification needs.
func TestBatchMemberRecordsItsWriteOnceVerifiedOnBIND(t *testing.T) {
	release := make(chan struct{})
	close(release)
	recs, spy, hv, c := onVerifyingBatch(t, release)
	for name, err := range passBatched(t, c, nil, recs...) {
		if err != nil {
			t.Fatalf("group %s: pass: %v", name, err)
		}
	}
	written := spy.writtenAt()
	for _, name := range threeNames {
		handed, ok := hv.handed[name]
		if !ok || written[name].IsZero() || written[name].Before(handed) {
			t.Errorf("group %s: written record proposed at %v, verification handed at %v; want the record after it", name, written[name], handed)
		}
	}
}

// ...but for batchRecordGrace at most: a verification that takes its
// time (a server that lags) does not keep the write out of the log.
func TestBatchMemberRecordsItsWriteWithinTheGraceOnBIND(t *testing.T) {
	release := make(chan struct{})
	recs, spy, hv, c := onVerifyingBatch(t, release)
	passed := make(chan map[string]error, 1)
	go func() { passed <- passBatched(t, c, nil, recs...) }()
	poll.Until(t, 10*time.Second, func() bool { return len(spy.writtenAt()) == len(threeNames) },
		"every member records its write while the verification is held")
	hv.mu.Lock()
	started := hv.started
	hv.mu.Unlock()
	for name, at := range spy.writtenAt() {
		if at.Sub(started) < batchRecordGrace {
			t.Errorf("group %s: written record proposed %s after the verification started, want at least %s", name, at.Sub(started), batchRecordGrace)
		}
	}
	close(release)
	for name, err := range <-passed {
		if err != nil {
			t.Errorf("group %s: pass: %v", name, err)
		}
	}
}
