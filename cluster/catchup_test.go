package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/drwatch/drwatch/test/poll"
)

// gatedSM is a listSM whose Apply waits until gate is closed, so a test
// can hold a replica behind the log.
type gatedSM struct {
	listSM
	gate chan struct{}
}

func (s *gatedSM) Apply(index uint64, cmd []byte) []byte {
	<-s.gate
	return s.listSM.Apply(index, cmd)
}

func (s *gatedSM) applied() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.items)
}

// A leader that restarts learns the commit index only by committing in
// its new term, so its state machine starts behind the log. Leader-only
// work (the DNS reconciler, the remediation runner) reads that state
// machine: RunWhileLeader must not start it before the replica has
// applied everything committed before the leadership began.
func TestRunWhileLeaderStartsOnlyOnceTheReplicaCaughtUp(t *testing.T) {
	const entries = 5
	tc := newCluster(t, 1, nil)
	nd := tc.nodes[0]
	l := tc.leader(electionBound(testConfig()))
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	for range entries {
		if _, _, err := l.node.Propose(ctx, []byte("x")); err != nil {
			t.Fatalf("propose: %v", err)
		}
	}
	tc.stop(nd)

	ln, err := listenEventually(t, nd.addr)
	if err != nil {
		t.Fatalf("relisten: %v", err)
	}
	sm := &gatedSM{gate: make(chan struct{})}
	cfg := nd.cfg
	cfg.Listener = ln
	n, err := New(context.Background(), cfg, sm)
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	nd.node = n // the harness kills it at cleanup
	seen := make(chan int, 1)
	runCtx, stopRun := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		n.RunWhileLeader(runCtx, func(lctx context.Context) {
			seen <- sm.applied()
			<-lctx.Done()
		})
	}()
	defer func() {
		stopRun()
		<-ran
	}()
	poll.For(t, electionBound(testConfig()), "the restarted node leads", func() bool {
		_, ok := n.LeaderContext()
		return ok
	})
	select {
	case got := <-seen:
		t.Fatalf("fn started with %d of %d committed entries applied, before the replica caught up", got, entries)
	default:
	}
	close(sm.gate)
	select {
	case got := <-seen:
		if got < entries {
			t.Fatalf("fn started with %d of %d committed entries applied, want all", got, entries)
		}
	case <-time.After(long):
		t.Fatal("fn never started once the replica could apply")
	}
}
