package sim

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/hashicorp/raft"
)

// snapshotStore is a simulated node's snapshot directory: what
// raft.FileSnapshotStore (the production store) does, in memory. A
// snapshot is listed once its sink closes, a cancelled one never, and
// List returns the newest first (by term, then index), keeping the
// retain newest, so a restart restores the newest complete snapshot.
//
// raft.InmemSnapshotStore keeps the last snapshot created instead,
// complete or not. When a follower's own snapshot, started before it
// installed a newer one from the leader, finishes after the install, that
// older snapshot becomes the only one, and a restart goes back to it
// while the log starts past the newer one: raft then panics ("log not
// found") at the first commit, as no production node would.
type snapshotStore struct {
	retain int

	mu    sync.Mutex
	seq   int
	snaps []*storedSnapshot // newest first
}

type storedSnapshot struct {
	meta raft.SnapshotMeta
	data []byte
}

var _ raft.SnapshotStore = (*snapshotStore)(nil)

func newSnapshotStore(retain int) *snapshotStore { return &snapshotStore{retain: retain} }

// Create implements raft.SnapshotStore.
func (s *snapshotStore) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration, configurationIndex uint64, _ raft.Transport) (raft.SnapshotSink, error) {
	if version != 1 {
		return nil, fmt.Errorf("unsupported snapshot version %d", version)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return &snapshotSink{store: s, snap: &storedSnapshot{meta: raft.SnapshotMeta{
		Version: version, ID: fmt.Sprintf("%d-%d-%d", term, index, s.seq), Index: index, Term: term,
		Configuration: configuration, ConfigurationIndex: configurationIndex,
	}}}, nil
}

// List implements raft.SnapshotStore: the complete snapshots, newest
// first.
func (s *snapshotStore) List() ([]*raft.SnapshotMeta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var metas []*raft.SnapshotMeta
	for _, sn := range s.snaps {
		meta := sn.meta
		metas = append(metas, &meta)
	}
	return metas, nil
}

// Open implements raft.SnapshotStore.
func (s *snapshotStore) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sn := range s.snaps {
		if sn.meta.ID == id {
			meta := sn.meta
			return &meta, io.NopCloser(bytes.NewReader(sn.data)), nil
		}
	}
	return nil, nil, fmt.Errorf("snapshot %s: not found", id)
}

// keep lists sn, newest first as raft.FileSnapshotStore sorts, and drops
// the oldest beyond retain.
func (s *snapshotStore) keep(sn *storedSnapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.snaps = append(s.snaps, sn)
	slices.SortFunc(s.snaps, func(a, b *storedSnapshot) int {
		return cmp.Or(cmp.Compare(b.meta.Term, a.meta.Term), cmp.Compare(b.meta.Index, a.meta.Index), cmp.Compare(b.meta.ID, a.meta.ID))
	})
	if len(s.snaps) > s.retain {
		s.snaps = s.snaps[:s.retain]
	}
}

// snapshotSink is a snapshot being written: listed when it closes.
type snapshotSink struct {
	store *snapshotStore
	snap  *storedSnapshot
	buf   bytes.Buffer
	done  bool
}

func (k *snapshotSink) Write(p []byte) (int, error) { return k.buf.Write(p) }

func (k *snapshotSink) ID() string { return k.snap.meta.ID }

// Close implements raft.SnapshotSink: the snapshot is complete.
func (k *snapshotSink) Close() error {
	if k.done {
		return nil
	}
	k.done = true
	k.snap.data = bytes.Clone(k.buf.Bytes())
	k.snap.meta.Size = int64(len(k.snap.data))
	k.store.keep(k.snap)
	return nil
}

// Cancel implements raft.SnapshotSink: the snapshot is dropped.
func (k *snapshotSink) Cancel() error {
	k.done = true
	return nil
}
