package reconcile

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/failover"
)

// writtenGate holds the proposal of a decision's written record, as a
// slow Raft commit does (fifty groups' records applied one after the
// other), until release is closed or held has passed; refuse, if set,
// is its answer instead.
type writtenGate struct {
	*fakeCluster
	release chan struct{}
	held    time.Duration
	refuse  error
}

// committedWritten reports whether the log holds gen's written record.
func (c *writtenGate) committedWritten(gen uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.m.History() {
		if e.Gen == gen && e.Kind == failover.KindAction && e.Outcome == failover.OutcomeWritten {
			return true
		}
	}
	return false
}

func (c *writtenGate) Propose(ctx context.Context, b []byte) ([]byte, uint64, error) {
	cmd, err := failover.Decode(b)
	if ar, ok := cmd.Payload.(failover.ActionResult); err == nil && ok && ar.Outcome == failover.OutcomeWritten {
		if c.refuse != nil {
			return nil, 0, c.refuse
		}
		select {
		case <-c.release:
		case <-time.After(c.held):
		}
	}
	return c.fakeCluster.Propose(ctx, b)
}

// verifyWatcher records whether a verification of gen started before its
// written record was committed, and releases that record's proposal.
type verifyWatcher struct {
	Verifier
	gate       *writtenGate
	gen        uint64 // the decision verified
	overlapped atomic.Bool
}

func (v *verifyWatcher) Verify(ctx context.Context, desired []dnsprovider.RRset) (*dnsprovider.Verification, error) {
	if !v.gate.committedWritten(v.gen) {
		v.overlapped.Store(true)
	}
	select {
	case <-v.gate.release:
	default:
		close(v.gate.release)
	}
	return v.Verifier.Verify(ctx, desired)
}

// gatedFixture is newFixture with its reconciler on a writtenGate and a
// verifyWatcher.
func gatedFixture(t *testing.T, held time.Duration, refuse error) (*fixture, *writtenGate, *verifyWatcher) {
	t.Helper()
	f := newFixture(t)
	gate := &writtenGate{fakeCluster: f.cluster, release: make(chan struct{}), held: held, refuse: refuse}
	vw := &verifyWatcher{Verifier: f.rec.cfg.Verifier, gate: gate}
	cfg := f.rec.cfg
	cfg.Cluster, cfg.Verifier = gate, vw
	rec, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.rec = rec
	return f, gate, vw
}

// The servers are verified while the written record is still being
// committed: a slow commit (fifty groups' records applied one after the
// other) does not delay the verification, and so verified_at. The log
// still says written before verified, and the verification is stamped
// after the write.
func TestVerificationDoesNotWaitForTheWrittenRecord(t *testing.T) {
	// Held far longer than a verification takes: if the pass waited for
	// the record before verifying, the verifier would find it pending no
	// more.
	f, _, vw := gatedFixture(t, 30*time.Second, nil)
	gen := f.failoverTo(t, failover.Backup)
	vw.gen = gen
	if _, err := f.rec.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !vw.overlapped.Load() {
		t.Fatal("the verification started only after the written record was committed")
	}
	d := f.cluster.m.Desired()
	if d.Gen != gen || !d.Done {
		t.Fatalf("got desired gen %d done %v, want gen %d verified", d.Gen, d.Done, gen)
	}
	var outcomes []string
	var tm failover.Timings
	for _, e := range f.cluster.m.History() {
		if e.Gen == gen && e.Kind == failover.KindAction {
			outcomes = append(outcomes, e.Outcome)
		}
		if e.Index == gen {
			tm = e.Timings
		}
	}
	if len(outcomes) != 2 || outcomes[0] != failover.OutcomeWritten || outcomes[1] != failover.OutcomeVerified {
		t.Fatalf("got outcomes %v, want written then verified", outcomes)
	}
	if tm.WrittenAt == 0 || tm.VerifiedAt < tm.WrittenAt {
		t.Fatalf("got written_at %d verified_at %d, want verified at or after written", tm.WrittenAt, tm.VerifiedAt)
	}
}

// A written record the log refuses (leadership lost right after the
// write) fails the pass: nothing is recorded verified by a node that may
// no longer lead, and the next leader's pass picks the flip up from DNS.
func TestRefusedWrittenRecordRecordsNothingVerified(t *testing.T) {
	lost := errors.New("leadership lost")
	f, _, _ := gatedFixture(t, 0, lost)
	gen := f.failoverTo(t, failover.Backup)
	_, err := f.rec.Pass(context.Background())
	if !errors.Is(err, lost) {
		t.Fatalf("got %v, want the refused proposal", err)
	}
	if d := f.cluster.m.Desired(); d.Gen != gen || d.Done {
		t.Fatalf("got desired gen %d done %v, want gen %d not verified", d.Gen, d.Done, gen)
	}
	for _, e := range f.cluster.m.History() {
		if e.Gen == gen && e.Kind == failover.KindAction && e.Outcome == failover.OutcomeVerified {
			t.Fatalf("history records gen %d verified: %+v", gen, e)
		}
	}
}

// Post-flip hooks act on the platform, so they wait for the written
// record: a node whose record the log refuses (deposed right after the
// write) runs none.
func TestRefusedWrittenRecordRunsNoHook(t *testing.T) {
	lost := errors.New("leadership lost")
	f, _, _ := gatedFixture(t, 0, lost)
	var hooks atomic.Int32
	cfg := f.rec.cfg
	cfg.AfterVerified = func(context.Context, Decision) string { hooks.Add(1); return "" }
	rec, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.failoverTo(t, failover.Backup)
	if _, err := rec.Pass(context.Background()); !errors.Is(err, lost) {
		t.Fatalf("got %v, want the refused proposal", err)
	}
	if n := hooks.Load(); n != 0 {
		t.Fatalf("hooks ran %d times, want none", n)
	}
}
