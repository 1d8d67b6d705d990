package cluster

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/test/poll"
	"github.com/hashicorp/raft"
)

// listFSM is a state machine whose state is every command it applied, in
// order, and which counts its restores (each snapshot a follower installs).
type listFSM struct {
	mu       sync.Mutex
	applied  []string
	restores int
}

func (f *listFSM) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied = append(f.applied, string(l.Data))
	return nil
}

func (f *listFSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return listSnapshot(slices.Clone(f.applied)), nil
}

func (f *listFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var s []string
	if err := json.NewDecoder(rc).Decode(&s); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied, f.restores = s, f.restores+1
	return nil
}

func (f *listFSM) state() ([]string, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.applied), f.restores
}

type listSnapshot []string

func (s listSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := json.NewEncoder(sink).Encode([]string(s)); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (listSnapshot) Release() {}

// holeStore is a log store that turns raft's read of a missing entry
// while it applies committed entries into a recorded failure: raft panics
// there ("log not found"), which would end the test binary.
type holeStore struct {
	*raft.InmemStore
	mu    sync.Mutex
	holes []uint64
}

func (s *holeStore) GetLog(index uint64, l *raft.Log) error {
	err := s.InmemStore.GetLog(index, l)
	if err == nil || !calledFrom("(*Raft).processLogs") {
		return err
	}
	s.mu.Lock()
	s.holes = append(s.holes, index)
	s.mu.Unlock()
	*l = raft.Log{Index: index, Type: raft.LogNoop}
	return nil
}

func (s *holeStore) missing() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.holes)
}

// calledFrom reports whether a caller of the caller is the function
// whose name ends with fn.
func calledFrom(fn string) bool {
	pcs := make([]uintptr, 16)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, fn) {
			return true
		}
		if !more {
			return false
		}
	}
}

// server is one server's hand-built stores: its log, its current term and
// an optional snapshot of the commands of history up to snapAt.
type server struct {
	log            []*raft.Log
	term           uint64
	snapAt, snapOf uint64 // snapshot index and term; 0: none
}

func (sv server) stores(t *testing.T, conf raft.Configuration, trans raft.Transport, history []*raft.Log) (*holeStore, *raft.InmemSnapshotStore) {
	t.Helper()
	logs, snaps := &holeStore{InmemStore: raft.NewInmemStore()}, raft.NewInmemSnapshotStore()
	if err := logs.StoreLogs(sv.log); err != nil {
		t.Fatal(err)
	}
	if err := logs.SetUint64([]byte("CurrentTerm"), sv.term); err != nil {
		t.Fatal(err)
	}
	if sv.snapAt == 0 {
		return logs, snaps
	}
	sink, err := snaps.Create(1, sv.snapAt, sv.snapOf, conf, 1, trans)
	if err != nil {
		t.Fatal(err)
	}
	if err := listSnapshot(commands(history, sv.snapAt)).Persist(sink); err != nil {
		t.Fatal(err)
	}
	return logs, snaps
}

// commands returns the commands of log up to index hi.
func commands(log []*raft.Log, hi uint64) []string {
	var cs []string
	for _, l := range log {
		if l.Type == raft.LogCommand && l.Index <= hi {
			cs = append(cs, string(l.Data))
		}
	}
	return cs
}

// entries returns the log entries lo..hi of term (index 1 is the
// configuration), each command named after its term and index.
func entries(conf raft.Configuration, lo, hi, term uint64) []*raft.Log {
	var ls []*raft.Log
	for i := lo; i <= hi; i++ {
		l := &raft.Log{Index: i, Term: term, Type: raft.LogCommand, Data: fmt.Appendf(nil, "t%d-i%d", term, i)}
		if i == 1 {
			l.Type, l.Data = raft.LogConfiguration, raft.EncodeConfiguration(conf)
		}
		ls = append(ls, l)
	}
	return ls
}

// from returns the entries of log from index lo on.
func from(log []*raft.Log, lo uint64) []*raft.Log {
	return slices.DeleteFunc(slices.Clone(log), func(l *raft.Log) bool { return l.Index < lo })
}

// transports returns an InmemTransport per server of conf, unconnected.
func transports(conf raft.Configuration) map[string]*raft.InmemTransport {
	trans := map[string]*raft.InmemTransport{}
	for _, s := range conf.Servers {
		_, trans[string(s.ID)] = raft.NewInmemTransport(s.Address)
	}
	return trans
}

// link connects a to each of peers, both ways.
func link(trans map[string]*raft.InmemTransport, a string, peers ...string) {
	for _, b := range peers {
		if a != b {
			trans[a].Connect(raft.ServerAddress(b), trans[b])
			trans[b].Connect(raft.ServerAddress(a), trans[a])
		}
	}
}

// startRaft starts server id on its hand-built stores sv, with short
// timeouts and no snapshots of its own, and shuts it down at cleanup.
func startRaft(t *testing.T, id string, sv server, conf raft.Configuration, trans *raft.InmemTransport, history []*raft.Log) (*listFSM, *holeStore) {
	t.Helper()
	logs, snaps := sv.stores(t, conf, trans, history)
	c := raft.DefaultConfig()
	c.LocalID = raft.ServerID(id)
	c.HeartbeatTimeout, c.ElectionTimeout = 100*time.Millisecond, 100*time.Millisecond
	c.LeaderLeaseTimeout, c.CommitTimeout = 50*time.Millisecond, 5*time.Millisecond
	c.SnapshotInterval, c.SnapshotThreshold, c.TrailingLogs = time.Hour, 1<<20, 128
	c.LogOutput = io.Discard
	fsm := &listFSM{}
	r, err := raft.NewRaft(c, fsm, logs, logs, snaps, trans)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Shutdown().Error() })
	return fsm, logs
}

// A follower holding a former leader's uncommitted entries past the
// index of the snapshot the leader sends it must drop them when it
// installs the snapshot. hashicorp/raft v1.8.0 keeps them: the follower
// then rejects every AppendEntries after the snapshot and is sent the
// snapshot again, for ever (hashicorp/raft#697). The leaders' logs start
// past the point where the logs part, so only a snapshot can repair the
// follower. A follower that is merely behind must still catch up with a
// single install.
func TestFollowerInstallingASnapshotCatchesUp(t *testing.T) {
	conf := raft.Configuration{}
	for _, id := range []string{"l", "g", "f"} {
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(id), Address: raft.ServerAddress(id)})
	}
	for _, tc := range []struct {
		name     string
		history  []*raft.Log // the leaders' log, whole
		leader   server      // l's and g's stores
		follower server      // f's stores
	}{{
		// Entries 1..10 agree; 11..35 were written by a leader of term 2
		// that never committed them. The leaders' snapshot ends at 30.
		name:     "conflicting entries past the snapshot",
		history:  slices.Concat(entries(conf, 1, 10, 1), entries(conf, 11, 40, 3)),
		leader:   server{log: from(slices.Concat(entries(conf, 1, 10, 1), entries(conf, 11, 40, 3)), 26), term: 3, snapAt: 30, snapOf: 3},
		follower: server{log: slices.Concat(entries(conf, 1, 10, 1), entries(conf, 11, 35, 2)), term: 2},
	}, {
		// The look-alike: a follower merely behind, every entry it holds
		// agreeing with the leader's.
		name:     "behind, nothing conflicting",
		history:  slices.Concat(entries(conf, 1, 10, 1), entries(conf, 11, 40, 3)),
		leader:   server{log: from(slices.Concat(entries(conf, 1, 10, 1), entries(conf, 11, 40, 3)), 26), term: 3, snapAt: 30, snapOf: 3},
		follower: server{log: entries(conf, 1, 10, 1), term: 1},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			trans := transports(conf)
			for _, sv := range conf.Servers {
				link(trans, string(sv.ID), "l", "g", "f")
			}
			fsms, logs := map[string]*listFSM{}, map[string]*holeStore{}
			for _, sv := range conf.Servers {
				id := string(sv.ID)
				stores := tc.leader
				if id == "f" {
					stores = tc.follower
				}
				fsms[id], logs[id] = startRaft(t, id, stores, conf, trans[id], tc.history)
			}
			_, atStart := fsms["f"].state()

			// A new leader commits once an entry of its own term is
			// stored by a quorum; f applies everything once it caught up.
			// A follower in the loop installs the snapshot over and over:
			// a handful of installs is proof enough.
			want := commands(tc.history, math.MaxUint64)
			const loop = 20
			poll.For(t, 30*time.Second, "f to apply the leader's log, read a hole or loop on the snapshot", func() bool {
				got, restores := fsms["f"].state()
				return restores-atStart > loop || len(logs["f"].missing()) > 0 || (len(got) >= len(want) && slices.Equal(got[:len(want)], want))
			})
			if holes := logs["f"].missing(); len(holes) > 0 {
				t.Fatalf("f applied committed entries missing from its log (raft panics there): %v", holes)
			}
			got, restores := fsms["f"].state()
			if installs := restores - atStart; installs != 1 {
				t.Errorf("f installed the snapshot %d times and applied %d of %d commands, want it to catch up after one install", installs, len(got), len(want))
			}
			if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
				t.Errorf("f applied %d commands, not the leader's %d", len(got), len(want))
			}
		})
	}
}

// A follower sent a snapshot older than the state it applied goes back
// to the snapshot, and must then take the entries after it from the
// leader. hashicorp/raft v1.8.0 keeps the follower's log, which starts
// past the snapshot: once a leader that agrees with the log's last entry
// commits, the follower applies from the snapshot on, reads the entries
// it never had, and panics with "log not found" (the whole process ends).
//
// f applied up to its snapshot at 60 and holds entries 61..70 that l
// wrote in term 3 and never committed. k, whose snapshot ends at 30, wins
// an election with f's vote (its last entry is of term 4) and, not
// finding its log's start in f's, sends f its snapshot. Then k is cut
// off, and l, whose log agrees with f's at 70, leads: its first commit
// used to reach f's hole at 31.
func TestFollowerSurvivesASnapshotOlderThanItApplied(t *testing.T) {
	conf := raft.Configuration{}
	for _, id := range []string{"l", "k", "f"} {
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(id), Address: raft.ServerAddress(id)})
	}
	committed := slices.Concat(entries(conf, 1, 40, 1), entries(conf, 41, 60, 2))
	history := slices.Concat(committed, entries(conf, 61, 70, 3))
	trans := transports(conf)
	link(trans, "k", "f") // l is cut off
	fsms, logs := map[string]*listFSM{}, map[string]*holeStore{}
	fsms["l"], logs["l"] = startRaft(t, "l", server{log: history, term: 3}, conf, trans["l"], history)
	fsms["k"], logs["k"] = startRaft(t, "k", server{log: from(slices.Concat(committed, entries(conf, 61, 65, 4)), 31), term: 4, snapAt: 30, snapOf: 1}, conf, trans["k"], history)
	fsms["f"], logs["f"] = startRaft(t, "f", server{log: from(history, 61), term: 3, snapAt: 60, snapOf: 2}, conf, trans["f"], history)
	_, atStart := fsms["f"].state()

	poll.For(t, 30*time.Second, "f to install k's snapshot", func() bool {
		_, restores := fsms["f"].state()
		return restores > atStart
	})
	for _, peer := range []string{"l", "f"} {
		trans["k"].Disconnect(raft.ServerAddress(peer))
		trans[peer].Disconnect("k")
	}
	link(trans, "l", "f")

	// Whichever of l and f leads, the two must end up applying the same
	// commands, at least the 59 committed ones.
	poll.For(t, 30*time.Second, "l and f to agree, or f to read a hole", func() bool {
		lGot, _ := fsms["l"].state()
		fGot, _ := fsms["f"].state()
		return len(logs["f"].missing()) > 0 || (len(fGot) >= len(commands(committed, 60)) && slices.Equal(lGot, fGot))
	})
	if holes := logs["f"].missing(); len(holes) > 0 {
		t.Fatalf("f applied committed entries missing from its log (raft panics there): %d..%d", holes[0], holes[len(holes)-1])
	}
	got, _ := fsms["f"].state()
	if want := commands(committed, 60); !slices.Equal(got[:len(want)], want) {
		t.Errorf("f applied %v first, want the committed %v", got[:len(want)], want)
	}
}
