package cluster

import (
	"context"
	"errors"
	"testing"
	"time"
)

// refusingSM refuses every snapshot, as a release refuses one of a newer
// log format than it reads.
type refusingSM struct{ listSM }

var errTooNew = errors.New("snapshot of a newer format")

func (*refusingSM) Restore([]byte) error { return errTooNew }

// TestStartSaysWhyNoSnapshotRestored: a node whose state machine refuses
// the snapshot on disk does not start, and its error says the state
// machine's reason, not only raft's "failed to load any existing
// snapshots"; the same data directory with a state machine that reads
// the snapshot starts.
func TestStartSaysWhyNoSnapshotRestored(t *testing.T) {
	tc := newCluster(t, 1, nil)
	nd := tc.leader(30 * time.Second)
	tc.propose(nd, "x")
	if err := nd.node.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	tc.stop(nd)

	ln, err := listenEventually(t, nd.addr)
	if err != nil {
		t.Fatal(err)
	}
	cfg := nd.cfg
	cfg.Listener = ln
	n, err := New(context.Background(), cfg, &refusingSM{})
	if err == nil {
		n.kill()
		t.Fatal("started over a snapshot its state machine refuses, want an error")
	}
	if !errors.Is(err, errTooNew) {
		t.Errorf("start: %v, want it to say %v", err, errTooNew)
	}
	tc.restart(nd)
	if got := nd.sm.list(); len(got) != 1 || got[0] != "x" {
		t.Errorf("restart with a state machine that reads it: got %v, want [x]", got)
	}
}
