package cluster

import (
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

type nopFSM struct{}

func (nopFSM) Apply(*raft.Log) any                 { return nil }
func (nopFSM) Snapshot() (raft.FSMSnapshot, error) { return nil, raft.ErrNothingNewToSnapshot }
func (nopFSM) Restore(io.ReadCloser) error         { return nil }

// Node.wait relies on unblockAtShutdown reaching the ShutdownCh of raft's
// own future types: raft answers no future still queued when it shuts
// down, and without that field a wait (and Shutdown, which waits for it)
// blocked for ever. This fails if a raft upgrade renames or retypes the
// field, which would silently turn the fix off.
func TestUnblockAtShutdownReachesRaftFutures(t *testing.T) {
	conf := raft.DefaultConfig()
	conf.LocalID = "a"
	conf.HeartbeatTimeout, conf.ElectionTimeout, conf.LeaderLeaseTimeout = 50*time.Millisecond, 50*time.Millisecond, 50*time.Millisecond
	conf.Logger = nil
	conf.LogOutput = io.Discard
	store := raft.NewInmemStore()
	addr, trans := raft.NewInmemTransport("")
	snaps := raft.NewInmemSnapshotStore()
	if err := raft.BootstrapCluster(conf, store, store, snaps, trans, raft.Configuration{Servers: []raft.Server{{ID: "a", Address: addr}}}); err != nil {
		t.Fatal(err)
	}
	r, err := raft.NewRaft(conf, nopFSM{}, store, store, snaps, trans)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Shutdown().Error() }()
	futures := map[string]raft.Future{
		"Apply":        r.Apply([]byte("x"), time.Second),
		"VerifyLeader": r.VerifyLeader(),
		"Barrier":      r.Barrier(time.Second),
	}
	for name, f := range futures {
		if reflect.TypeOf(f).Kind() != reflect.Pointer {
			t.Fatalf("%s: raft returned %T (%v), an error future; want a queued one", name, f, f.Error())
		}
		down := make(chan struct{})
		unblockAtShutdown(f, down)
		got := reflect.ValueOf(f).Elem().FieldByName("ShutdownCh")
		if !got.IsValid() || got.Pointer() != reflect.ValueOf(down).Pointer() {
			t.Errorf("%s (%T): ShutdownCh not set to the node's shutdown channel", name, f)
		}
	}
}
