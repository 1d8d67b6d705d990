package cluster

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
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

// raftStores are one server's stores, built by hand before it starts.
type raftStores struct {
	logs  *raft.InmemStore
	snaps *raft.InmemSnapshotStore
}

// handBuiltStores returns the stores of a server whose log holds entries
// from..to (index 1 is the configuration, the others commands named
// after their term and index), whose current term is term, and, when
// snapAt > 0, a snapshot of the commands 2..snapAt of the leader's log.
func handBuiltStores(t *testing.T, conf raft.Configuration, trans raft.Transport, entries []*raft.Log, term, snapAt, snapTerm uint64, leaderLog []*raft.Log) raftStores {
	t.Helper()
	s := raftStores{logs: raft.NewInmemStore(), snaps: raft.NewInmemSnapshotStore()}
	if err := s.logs.StoreLogs(entries); err != nil {
		t.Fatal(err)
	}
	if err := s.logs.SetUint64([]byte("CurrentTerm"), term); err != nil {
		t.Fatal(err)
	}
	if snapAt == 0 {
		return s
	}
	var state []string
	for _, l := range leaderLog {
		if l.Type == raft.LogCommand && l.Index <= snapAt {
			state = append(state, string(l.Data))
		}
	}
	sink, err := s.snaps.Create(1, snapAt, snapTerm, conf, 1, trans)
	if err != nil {
		t.Fatal(err)
	}
	if err := listSnapshot(state).Persist(sink); err != nil {
		t.Fatal(err)
	}
	return s
}

// entries returns the log entries lo..hi of term (index 1 is the
// configuration).
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

// A follower that holds conflicting entries past the index of the
// snapshot the leader sends it (a former leader's uncommitted tail) must
// drop them when it installs the snapshot, as rule 7 of the Raft paper's
// InstallSnapshot says. hashicorp/raft v1.8.0 keeps them: the follower
// then rejects every AppendEntries after the snapshot and is sent the
// snapshot again, for ever (hashicorp/raft#697). The leader's log here
// starts past the point where the logs part, so no AppendEntries can
// repair the follower, only the snapshot. A follower that is merely
// behind must still catch up with a single install.
func TestFollowerInstallingASnapshotDropsItsConflictingEntries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		follower func(conf raft.Configuration) []*raft.Log
	}{
		// Entries 1..10 agree; 11..35 were written by a leader of term 2
		// that never committed them. The leader's snapshot ends at 30.
		{"conflicting tail past the snapshot", func(conf raft.Configuration) []*raft.Log {
			return slices.Concat(entries(conf, 1, 10, 1), entries(conf, 11, 35, 2))
		}},
		// The look-alike: a follower merely behind, every entry it holds
		// agreeing with the leader's.
		{"behind, nothing conflicting", func(conf raft.Configuration) []*raft.Log {
			return entries(conf, 1, 10, 1)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids := []string{"l", "g", "f"}
			conf := raft.Configuration{}
			trans := map[string]*raft.InmemTransport{}
			for _, id := range ids {
				conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(id), Address: raft.ServerAddress(id)})
				_, trans[id] = raft.NewInmemTransport(raft.ServerAddress(id))
			}
			for _, a := range ids {
				for _, b := range ids {
					if a != b {
						trans[a].Connect(raft.ServerAddress(b), trans[b])
					}
				}
			}
			// The leader's history: 1..10 of term 1, 11..40 of term 3. Its
			// snapshot ends at 30 and its log keeps 26..40 only.
			leaderLog := slices.Concat(entries(conf, 1, 10, 1), entries(conf, 11, 40, 3))
			stores := map[string]raftStores{}
			for _, id := range []string{"l", "g"} {
				stores[id] = handBuiltStores(t, conf, trans[id], leaderLog[25:], 3, 30, 3, leaderLog)
			}
			stores["f"] = handBuiltStores(t, conf, trans["f"], tc.follower(conf), 2, 0, 0, nil)

			fsms := map[string]*listFSM{}
			var rafts []*raft.Raft
			for _, id := range ids {
				c := raft.DefaultConfig()
				c.LocalID = raft.ServerID(id)
				c.HeartbeatTimeout, c.ElectionTimeout = 100*time.Millisecond, 100*time.Millisecond
				c.LeaderLeaseTimeout, c.CommitTimeout = 50*time.Millisecond, 5*time.Millisecond
				c.SnapshotInterval, c.SnapshotThreshold, c.TrailingLogs = time.Hour, 1<<20, 128
				c.LogOutput = io.Discard
				fsms[id] = &listFSM{}
				r, err := raft.NewRaft(c, fsms[id], stores[id].logs, stores[id].logs, stores[id].snaps, trans[id])
				if err != nil {
					t.Fatal(err)
				}
				rafts = append(rafts, r)
			}
			t.Cleanup(func() {
				for _, r := range rafts {
					_ = r.Shutdown().Error()
				}
			})

			var want []string
			for _, l := range leaderLog {
				if l.Type == raft.LogCommand {
					want = append(want, string(l.Data))
				}
			}
			// A new leader commits once an entry of its own term is
			// stored by a quorum; f applies everything once it caught up.
			// A follower in the loop installs the snapshot over and over:
			// a handful of installs is proof enough.
			const loop = 20
			poll.For(t, 30*time.Second, "f to apply the leader's log, or to loop on the snapshot", func() bool {
				got, restores := fsms["f"].state()
				return restores > loop || (len(got) >= len(want) && slices.Equal(got[:len(want)], want))
			})
			got, restores := fsms["f"].state()
			if restores > loop {
				t.Fatalf("f installed the snapshot %d times and applied %d commands, want it to catch up after one install", restores, len(got))
			}
			if restores != 1 {
				t.Errorf("f installed the snapshot %d times, want 1", restores)
			}
			if !slices.Equal(got[:len(want)], want) {
				t.Errorf("f applied %v, want %v", got, want)
			}
		})
	}
}
