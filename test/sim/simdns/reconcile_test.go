package simdns_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/drwatch/drwatch/executor/reconcile"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/sim/simdns"
)

// oneNodeLog applies proposals to a real failover.Machine in order, as a
// one-node Raft log would, stamping the leader's (virtual) time.
type oneNodeLog struct {
	mu    sync.Mutex
	m     *failover.Machine
	index uint64
}

func (l *oneNodeLog) VerifyLeader(context.Context) error { return nil }

func (l *oneNodeLog) Propose(_ context.Context, cmd []byte) ([]byte, uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.index++
	b, err := failover.Stamp(cmd, time.Now().UnixNano())
	if err != nil {
		return nil, 0, err
	}
	return l.m.Apply(l.index, b), l.index, nil
}

func (l *oneNodeLog) step(t *testing.T, c failover.Command) {
	t.Helper()
	if _, _, err := failover.Submit(context.Background(), l, c); err != nil {
		t.Fatalf("step %s: got %v, want nil", c.Type(), err)
	}
}

// TestReconcilerResolvesAnAmbiguousWriteInABubble runs the real leader
// reconciler against the authority on synctest's virtual clock: its swap is
// applied but the reply is lost, and the reconciler's next pass finds its
// own fence, verifies and records the decision without writing again.
func TestReconcilerResolvesAnAmbiguousWriteInABubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		auth := simdns.New(zone, "")
		seed := auth.Client("")
		if _, err := seed.SetRecords(t.Context(), primary); err != nil {
			t.Fatalf("seed: %v", err)
		}
		log := &oneNodeLog{m: failover.New()}
		log.step(t, failover.Command{Payload: failover.SetPolicy{Policy: failover.Policy{
			Nodes: []string{"a", "b", "c"}, Quorum: 2, Fall: 2, Rise: 2, Interval: time.Second,
			AutoFailover: true, BlockWindow: time.Hour, Failback: failover.FailbackPolicy{Mode: failover.FailbackManual},
			Sites: map[failover.Site]failover.SitePolicy{
				failover.Primary: {Probes: []failover.ProbeRef{{Name: "lms", Critical: true}}},
				failover.Backup:  {Probes: []failover.ProbeRef{{Name: "lms", Critical: true}}},
			},
			Zone: zone,
			Records: []failover.Record{
				{Name: "lms", Type: "A", TTL: 60, Primary: []string{"203.0.113.10"}, Backup: []string{"198.51.100.10"}},
				{Name: "studio", Type: "A", TTL: 60, Primary: []string{"203.0.113.10"}, Backup: []string{"198.51.100.10"}},
			},
		}}})
		log.step(t, failover.Command{Payload: failover.Failover{To: failover.Backup, Reason: "sim", Actor: "alice", Force: true}})
		gen := log.m.Desired().Gen

		auth.InjectWrites(simdns.FaultLostReply, 1)
		swaps := 0 // the hook runs on the reconciler's goroutine; read after <-done
		auth.SetHook(func(c simdns.Call) {
			if c.Op == "swap" && c.Stage == simdns.BeforeApply {
				swaps++
			}
		})
		rec, err := reconcile.New(reconcile.Config{Node: "a", State: log.m, Cluster: log, DNS: auth.Client(""),
			Verifier: auth.Verifier(""), Interval: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); rec.Run(ctx, nil) }()
		deadline := time.Now().Add(time.Minute)
		for !log.m.Desired().Done && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		cancel()
		<-done
		if !log.m.Desired().Done {
			t.Fatalf("decision gen %d: not verified within a virtual minute; last pass %+v", gen, rec.Last())
		}
		if swaps != 1 {
			t.Fatalf("swap calls: got %d, want 1 (the retry finds the applied write and does not write again)", swaps)
		}
		if fence, _ := auth.Fence(); fence != gen {
			t.Fatalf("fence: got %d, want %d", fence, gen)
		}
		holds(t, seed, backup)
		h := auth.History()
		if len(h) != 2 || h[1].Op != "swap" || h[1].FenceBefore != 0 || h[1].FenceAfter != gen {
			t.Fatalf("history: got %+v, want the seed and one swap 0->%d", h, gen)
		}
		if w, back := auth.FenceWentBackwards(); back {
			t.Fatalf("FenceWentBackwards: got %+v", w)
		}
	})
}
