package cluster

import (
	"context"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"github.com/drwatch/drwatch/test/poll"
)

// shutdownBound is how long a test lets Shutdown take: far above what a
// stop costs on a loaded 2-core machine under -race (drainWait plus a few
// stopWaits), and finite, so that a stop that never finishes fails.
const shutdownBound = 60 * time.Second

// pipelineHold makes the AppendEntries pipelines of every node it is armed
// on block in AppendEntries until the pipeline is closed: the state
// hashicorp/raft v1.8.0 leaves a pipeline in once its result reader has
// stopped (pipelines.go), with the request written and the send waiting
// for a reader that never comes back.
type pipelineHold struct {
	armed atomic.Bool
	mu    sync.Mutex
	held  []*heldPipeline
}

func (h *pipelineHold) holding() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.held)
}

// release frees every held send, as raft itself never does.
func (h *pipelineHold) release() {
	h.armed.Store(false)
	h.mu.Lock()
	held := h.held
	h.mu.Unlock()
	for _, p := range held {
		p.free()
	}
}

// holdingTransport is a node's in-memory raft transport whose pipelines
// hold their sends while the hold is armed.
type holdingTransport struct {
	*raft.InmemTransport
	hold *pipelineHold
}

func (t *holdingTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := t.InmemTransport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	return &heldPipeline{AppendPipeline: p, hold: t.hold, closed: make(chan struct{})}, nil
}

type heldPipeline struct {
	raft.AppendPipeline
	hold   *pipelineHold
	once   sync.Once
	closed chan struct{}
}

func (p *heldPipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	if !p.hold.armed.Load() {
		return p.AppendPipeline.AppendEntries(args, resp)
	}
	p.hold.mu.Lock()
	p.hold.held = append(p.hold.held, p)
	p.hold.mu.Unlock()
	<-p.closed
	return nil, raft.ErrPipelineShutdown
}

func (p *heldPipeline) free() { p.once.Do(func() { close(p.closed) }) }

func (p *heldPipeline) Close() error {
	p.free()
	return p.AppendPipeline.Close()
}

// newInmemCluster starts n nodes whose raft runs on connected in-memory
// transports (Config.Raft) that hold pipeline sends while hold is armed;
// the cluster RPC still runs over mTLS.
func newInmemCluster(t *testing.T, n int, hold *pipelineHold) *tcluster {
	t.Helper()
	trans := map[string]*raft.InmemTransport{}
	tc := newClusterNoStart(t, n, nil)
	for _, nd := range tc.nodes {
		_, trans[nd.id] = raft.NewInmemTransport(raft.ServerAddress(nd.addr))
	}
	for _, nd := range tc.nodes {
		for _, peer := range tc.nodes {
			if peer != nd {
				trans[nd.id].Connect(raft.ServerAddress(peer.addr), trans[peer.id])
			}
		}
		store := raft.NewInmemStore()
		nd.cfg.Raft = &RaftParts{Transport: &holdingTransport{InmemTransport: trans[nd.id], hold: hold}, Log: store, Stable: store, Snapshots: raft.NewInmemSnapshotStore()}
	}
	for _, nd := range tc.nodes {
		tc.startWith(nd, nil)
	}
	return tc
}

// shutdownWithin runs nd's Shutdown and fails the test if it does not
// return within shutdownBound.
func shutdownWithin(t *testing.T, nd *tnode) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- nd.node.Shutdown(context.Background()) }()
	select {
	case err := <-done:
		return err
	case <-time.After(shutdownBound):
		t.Fatalf("%s: Shutdown did not return within %s", nd.id, shutdownBound)
		return nil
	}
}

// A leader whose replication is stuck in a pipeline send still stops, and
// stops cleanly: closing the pipeline frees raft's replication goroutine,
// so raft's own shutdown completes and nothing is abandoned. The same
// cluster with nothing held is the look-alike: it stops without closing
// anything under raft.
func TestShutdownFreesAReplicationPipelineStuckInASend(t *testing.T) {
	for _, held := range []bool{true, false} {
		name := "nothing held"
		if held {
			name = "pipeline send held"
		}
		t.Run(name, func(t *testing.T) {
			hold := &pipelineHold{}
			tc := newInmemCluster(t, 3, hold)
			t.Cleanup(hold.release) // before the cluster's own cleanup kills the nodes
			l := tc.leader(electionBound(testConfig()))
			tc.propose(l, "x") // replication is pipelined once a follower caught up
			if held {
				hold.armed.Store(true)
				poll.Until(t, 30*time.Second, func() bool { return hold.holding() > 0 }, "a pipeline send held")
			}
			if err := shutdownWithin(t, l); err != nil {
				t.Fatalf("%s: Shutdown: %v", l.id, err)
			}
			if got := l.logs.count("shutdown abandoned a wait", nil); got != 0 {
				t.Errorf("%s: shutdown abandoned %d waits; want raft to have stopped", l.id, got)
			}
			if got := l.logs.count("cluster node stopped", nil); got != 1 {
				t.Errorf("%s: %d \"cluster node stopped\" lines, want 1", l.id, got)
			}
		})
	}
}

// A wait that never ends (here a goroutine of the node that never
// returns) no longer holds Shutdown for ever: past stopWait it is logged
// and left behind, and the store and the listener are still released.
func TestShutdownAbandonsAStuckWaitAndStillReleases(t *testing.T) {
	tc := newCluster(t, 1, nil)
	nd := tc.nodes[0]
	tc.leader(electionBound(testConfig()))
	stuck := make(chan struct{})
	t.Cleanup(func() { close(stuck) })
	if !nd.node.spawn(func() { <-stuck }) {
		t.Fatal("spawn refused before shutdown")
	}
	nd.node.stopWait = time.Second
	_ = shutdownWithin(t, nd)

	want := map[string]string{"waiting_for": "the node's goroutines (raft's shutdown among them)"}
	if got := nd.logs.count("shutdown abandoned a wait", want); got != 1 {
		t.Errorf("abandoned waits logged for the node's goroutines: %d, want 1", got)
	}
	db, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(nd.dir, "raft.db"), BoltOptions: &bbolt.Options{Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatalf("raft.db still held after Shutdown: %v", err)
	}
	_ = db.Close()
	ln, err := net.Listen("tcp", nd.addr)
	if err != nil {
		t.Fatalf("listener still open after Shutdown: %v", err)
	}
	_ = ln.Close()
}
