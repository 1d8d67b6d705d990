package cluster

import (
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// trackedStore is the log and stable store, remembering whether its last
// write failed. A node whose disk is full or read-only cannot persist the
// log, and must say so rather than look healthy (DESIGN.md §4, invariant 7).
type trackedStore struct {
	log    raft.LogStore
	stable raft.StableStore
	closer io.Closer // raft.db; nil for stores the caller keeps (Config.Raft)

	mu  sync.Mutex
	err error
	at  time.Time

	// appended counts the log entries stored and the bytes of their data:
	// on a follower, what the leader replicated to it.
	appendedEntries, appendedBytes atomic.Uint64
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

// FirstIndex implements raft.LogStore.
func (s *trackedStore) FirstIndex() (uint64, error) { return s.log.FirstIndex() }

// LastIndex implements raft.LogStore.
func (s *trackedStore) LastIndex() (uint64, error) { return s.log.LastIndex() }

// GetLog implements raft.LogStore.
func (s *trackedStore) GetLog(index uint64, l *raft.Log) error { return s.log.GetLog(index, l) }

// StoreLog implements raft.LogStore.
func (s *trackedStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// StoreLogs implements raft.LogStore.
func (s *trackedStore) StoreLogs(ls []*raft.Log) error {
	err := s.track(s.log.StoreLogs(ls))
	if err == nil {
		var n uint64
		for _, l := range ls {
			n += uint64(len(l.Data) + len(l.Extensions))
		}
		s.appendedEntries.Add(uint64(len(ls)))
		s.appendedBytes.Add(n)
	}
	return err
}

// DeleteRange implements raft.LogStore.
func (s *trackedStore) DeleteRange(lo, hi uint64) error { return s.log.DeleteRange(lo, hi) }

// Get implements raft.StableStore.
func (s *trackedStore) Get(k []byte) ([]byte, error) { return s.stable.Get(k) }

// GetUint64 implements raft.StableStore.
func (s *trackedStore) GetUint64(k []byte) (uint64, error) { return s.stable.GetUint64(k) }

// Set implements raft.StableStore.
func (s *trackedStore) Set(k, v []byte) error { return s.track(s.stable.Set(k, v)) }

// SetUint64 implements raft.StableStore.
func (s *trackedStore) SetUint64(k []byte, v uint64) error {
	return s.track(s.stable.SetUint64(k, v))
}

// Close closes raft.db; stores the caller keeps stay open.
func (s *trackedStore) Close() error {
	if s.closer == nil {
		return nil
	}
	return s.closer.Close()
}

// failure returns the last write error, if the last write failed.
func (s *trackedStore) failure() (error, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err, s.at
}
