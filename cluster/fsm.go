package cluster

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/hashicorp/raft"
)

// StateMachine is what cluster replicates. It uses only stdlib types so the
// packages implementing it need not import raft.
//
// Apply, Snapshot and Restore are called from one goroutine, never
// concurrently with each other; a StateMachine that is also read by other
// goroutines (a status page) must guard its own state.
type StateMachine interface {
	// Apply applies a committed command at log index and returns an opaque
	// response handed back to the proposer. It must be deterministic: no
	// clock, no randomness, no I/O, sorted map iteration.
	Apply(index uint64, cmd []byte) []byte
	// Snapshot returns the complete state as bytes. It runs between two
	// Applies, so it need not lock against Apply.
	Snapshot() ([]byte, error)
	// Restore replaces the complete state with one returned by Snapshot.
	Restore(state []byte) error
}

// ReplayAware is a StateMachine that wants to know which entries it is
// applying again after a restart. Before Raft starts, New calls
// ReplayThrough with the last index of the log on disk: the entries up to
// it may have been applied before the restart (all but those that were not
// yet committed or applied then), and Raft applies them again on top of
// the latest snapshot.
type ReplayAware interface {
	ReplayThrough(index uint64)
}

// Envelope format, version 1 (the log entry raft stores):
//
//	byte 0      envelopeV1
//	byte 1      key length k (0..255; 0 = no dedupe)
//	bytes 2..   key (k bytes), then the command
const envelopeV1 byte = 1

func encodeEnvelope(key, cmd []byte) []byte {
	out := make([]byte, 0, 2+len(key)+len(cmd))
	out = append(out, envelopeV1, byte(len(key)))
	out = append(out, key...)
	return append(out, cmd...)
}

func decodeEnvelope(b []byte) (key, cmd []byte, err error) {
	if len(b) < 2 || b[0] != envelopeV1 {
		return nil, nil, errors.New("not a v1 envelope")
	}
	k := int(b[1])
	if len(b) < 2+k {
		return nil, nil, errors.New("envelope key truncated")
	}
	return b[2 : 2+k], b[2+k:], nil
}

// applyResult is what the wrapper FSM returns through raft's ApplyFuture.
type applyResult struct {
	resp  []byte
	index uint64 // the index at which the command took effect
	dup   bool   // a retry: resp and index are the first application's
	err   error  // the envelope could not be decoded
}

// dedupeEntry remembers one applied key.
type dedupeEntry struct {
	key   string
	index uint64
	resp  []byte
}

// fsm wraps a StateMachine with the envelope and a bounded dedupe table.
// The table is part of the replicated state: every replica evicts the same
// oldest keys at the same index, and snapshots carry it, so a retry is
// recognised on any node, even after a restore.
type fsm struct {
	sm  StateMachine
	max int

	mu    sync.Mutex
	byKey map[string]*dedupeEntry
	order []*dedupeEntry // oldest first
	// restoreErr is the state machine's last refusal of a snapshot.
	restoreErr error
}

var _ raft.FSM = (*fsm)(nil)

func newFSM(sm StateMachine, max int) *fsm {
	return &fsm{sm: sm, max: max, byKey: make(map[string]*dedupeEntry)}
}

// Apply implements raft.FSM.
func (f *fsm) Apply(l *raft.Log) any {
	key, cmd, err := decodeEnvelope(l.Data)
	if err != nil {
		// Every replica rejects it the same way; the proposer learns why.
		return applyResult{index: l.Index, err: fmt.Errorf("log entry %d: %w", l.Index, err)}
	}
	if len(key) > 0 {
		f.mu.Lock()
		e, ok := f.byKey[string(key)]
		f.mu.Unlock()
		if ok {
			return applyResult{resp: e.resp, index: e.index, dup: true}
		}
	}
	resp := f.sm.Apply(l.Index, cmd)
	f.mu.Lock()
	if len(key) > 0 {
		e := &dedupeEntry{key: string(key), index: l.Index, resp: resp}
		f.byKey[e.key] = e
		f.order = append(f.order, e)
		for len(f.order) > f.max {
			delete(f.byKey, f.order[0].key)
			f.order[0] = nil
			f.order = f.order[1:]
		}
	}
	f.mu.Unlock()
	return applyResult{resp: resp, index: l.Index}
}

// restoreFailure is the state machine's last refusal of a snapshot, nil
// when it refused none.
func (f *fsm) restoreFailure() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.restoreErr
}

// dedupeLen is the number of keys remembered.
func (f *fsm) dedupeLen() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.order)
}

// Snapshot implements raft.FSM: it copies the table under the lock and
// takes the user state; Persist writes both later, off the apply path.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	state, err := f.sm.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("state machine snapshot: %w", err)
	}
	f.mu.Lock()
	entries := make([]dedupeEntry, len(f.order))
	for i, e := range f.order {
		entries[i] = *e
	}
	f.mu.Unlock()
	return &fsmSnapshot{entries: entries, state: state}, nil
}

// Restore implements raft.FSM: it replaces the table and the user state.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	entries, state, err := readSnapshot(bufio.NewReader(rc))
	if err != nil {
		return fmt.Errorf("read snapshot: %w", err)
	}
	if err := f.sm.Restore(state); err != nil {
		f.mu.Lock()
		f.restoreErr = err
		f.mu.Unlock()
		return fmt.Errorf("state machine restore: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.byKey = make(map[string]*dedupeEntry, len(entries))
	f.order = make([]*dedupeEntry, 0, len(entries))
	for i := range entries {
		e := &entries[i]
		f.byKey[e.key] = e
		f.order = append(f.order, e)
	}
	return nil
}

// Snapshot format, version 1:
//
//	"DRWS" 0x01
//	uvarint n, then n × (uvarint len, key, uvarint index, uvarint len, resp)
//	uvarint len, user state
const snapshotMagic = "DRWS\x01"

// maxSnapshotField bounds one length field, so a corrupt file cannot make
// Restore allocate without limit.
const maxSnapshotField = 1 << 30

type fsmSnapshot struct {
	entries []dedupeEntry
	state   []byte
}

// Persist implements raft.FSMSnapshot; on any error it cancels the sink so
// raft keeps the previous snapshot.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	w := bufio.NewWriter(sink)
	err := writeSnapshot(w, s.entries, s.state)
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("persist snapshot: %w", err)
	}
	return sink.Close()
}

// Release implements raft.FSMSnapshot.
func (s *fsmSnapshot) Release() {}

func writeSnapshot(w io.Writer, entries []dedupeEntry, state []byte) error {
	var buf []byte
	buf = append(buf, snapshotMagic...)
	buf = binary.AppendUvarint(buf, uint64(len(entries)))
	for _, e := range entries {
		buf = binary.AppendUvarint(buf, uint64(len(e.key)))
		buf = append(buf, e.key...)
		buf = binary.AppendUvarint(buf, e.index)
		buf = binary.AppendUvarint(buf, uint64(len(e.resp)))
		buf = append(buf, e.resp...)
	}
	buf = binary.AppendUvarint(buf, uint64(len(state)))
	if _, err := w.Write(buf); err != nil {
		return err
	}
	_, err := w.Write(state)
	return err
}

func readSnapshot(r *bufio.Reader) ([]dedupeEntry, []byte, error) {
	magic := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(r, magic); err != nil {
		return nil, nil, err
	}
	if string(magic) != snapshotMagic {
		return nil, nil, errors.New("unknown snapshot format")
	}
	readBytes := func() ([]byte, error) {
		n, err := binary.ReadUvarint(r)
		if err != nil {
			return nil, err
		}
		if n > maxSnapshotField {
			return nil, fmt.Errorf("field of %d bytes too large", n)
		}
		b := make([]byte, n)
		_, err = io.ReadFull(r, b)
		return b, err
	}
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, nil, err
	}
	if n > maxSnapshotField {
		return nil, nil, fmt.Errorf("%d dedupe entries too many", n)
	}
	entries := make([]dedupeEntry, 0, min(n, 1<<16))
	for range n {
		k, err := readBytes()
		if err != nil {
			return nil, nil, err
		}
		idx, err := binary.ReadUvarint(r)
		if err != nil {
			return nil, nil, err
		}
		resp, err := readBytes()
		if err != nil {
			return nil, nil, err
		}
		entries = append(entries, dedupeEntry{key: string(k), index: idx, resp: resp})
	}
	state, err := readBytes()
	if err != nil {
		return nil, nil, err
	}
	return entries, state, nil
}
