package cluster

import (
	"sync"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// trackedStore is the log and stable store, remembering whether its last
// write failed. A node whose disk is full or read-only cannot persist the
// log, and must say so rather than look healthy (DESIGN.md §4, invariant 7).
type trackedStore struct {
	*raftboltdb.BoltStore

	mu  sync.Mutex
	err error
	at  time.Time
}

var (
	_ raft.LogStore    = (*trackedStore)(nil)
	_ raft.StableStore = (*trackedStore)(nil)
)

func (s *trackedStore) track(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.err, s.at = err, time.Now()
	} else {
		s.err = nil
	}
	return err
}

// StoreLog implements raft.LogStore.
func (s *trackedStore) StoreLog(l *raft.Log) error { return s.track(s.BoltStore.StoreLog(l)) }

// StoreLogs implements raft.LogStore.
func (s *trackedStore) StoreLogs(ls []*raft.Log) error { return s.track(s.BoltStore.StoreLogs(ls)) }

// Set implements raft.StableStore.
func (s *trackedStore) Set(k, v []byte) error { return s.track(s.BoltStore.Set(k, v)) }

// SetUint64 implements raft.StableStore.
func (s *trackedStore) SetUint64(k []byte, v uint64) error {
	return s.track(s.BoltStore.SetUint64(k, v))
}

// failure returns the last write error, if the last write failed.
func (s *trackedStore) failure() (error, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err, s.at
}
