package e2e

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// appendUnreadable appends to the raft log in dataDir, after its last
// entry and in its term, a command this release cannot read: a set_format
// to the format after its own, as the leader of a newer release would
// write if the format gate were wrong. It returns the entry's index. The
// entry wears cluster's v1 envelope (version byte 1, key length, key),
// as every command on the log does.
func appendUnreadable(t *testing.T, dataDir string) uint64 {
	t.Helper()
	store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dataDir, "raft.db")})
	if err != nil {
		t.Fatalf("open %s: %v", dataDir, err)
	}
	defer store.Close()
	last, err := store.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	var prev raft.Log
	if err := store.GetLog(last, &prev); err != nil {
		t.Fatalf("read entry %d: %v", last, err)
	}
	key := []byte("from-a-newer-release")
	cmd := fmt.Sprintf(`{"v":1,"type":"set_format","set_format":{"at":%d,"format":%d}}`, time.Now().UnixNano(), failover.Format+1)
	data := append([]byte{1, byte(len(key))}, key...)
	data = append(data, cmd...)
	entry := raft.Log{Index: last + 1, Term: prev.Term, Type: raft.LogCommand, Data: data, AppendedAt: time.Now()}
	if err := store.StoreLog(&entry); err != nil {
		t.Fatalf("append to %s: %v", dataDir, err)
	}
	return entry.Index
}

// A log entry this release cannot read stops every node that reaches it:
// each one halts its replica, says so with the entry's index and what to
// do, and exits non-zero, so that no node runs on (or leads from) a state
// that is no longer the cluster's. None skips the entry: it would diverge
// silently, as an old follower's replica did before the format gate. A
// quorum reaches it (a leader commits it); the last node may not, when the
// other two stop before it learns the entry committed: it then waits
// without a quorum, its replica short of the entry.
func TestEveryNodeStopsAtAnEntryItCannotRead(t *testing.T) {
	w := Start(t, Options{})
	w.WaitHealthy(60 * time.Second)
	for _, n := range w.Nodes {
		n.Kill() // all at once, so that their logs end close together
	}
	at := map[string]uint64{}
	for _, n := range w.Nodes {
		at[n.ID] = appendUnreadable(t, n.DataDir)
	}
	for _, n := range w.Nodes {
		must(t, n.Start())
	}
	stopped := func() (out []*Node) {
		for _, n := range w.Nodes {
			if _, exited := n.Exited(); exited {
				out = append(out, n)
			}
		}
		return out
	}
	// Settled: a quorum stopped, and every node still running has no
	// leader (nothing more can commit) and is not halting.
	settled := func() bool {
		if len(stopped()) < w.Opts.Quorum {
			return false
		}
		for _, n := range w.Nodes {
			if _, exited := n.Exited(); exited {
				continue
			}
			st, err := w.Status(n)
			if err != nil || st.Leader != "" || len(LogLines(n, "replica halted")) > 0 {
				return false
			}
		}
		return true
	}
	if !Within(90*time.Second, settled) {
		for _, n := range w.Nodes {
			_, exited := n.Exited()
			t.Errorf("node %s exited %v; log tail:\n%s", n.ID, exited, tail(n.Log(), 20))
		}
		t.Fatalf("within 90 s, fewer than a quorum (%d) of nodes stopped at the unreadable entry, or a node still running had a leader or was halting", w.Opts.Quorum)
	}
	for _, n := range w.Nodes {
		code, exited := n.Exited()
		if !exited {
			// It never reached the entry: it must not have applied it,
			// nor anything past it.
			st, err := w.Status(n)
			if err != nil {
				t.Errorf("node %s runs but does not answer: %v", n.ID, err)
				continue
			}
			if st.Raft.AppliedIndex >= at[n.ID] {
				t.Errorf("node %s runs and applied through %d, past the unreadable entry %d", n.ID, st.Raft.AppliedIndex, at[n.ID])
			}
			continue
		}
		if code == 0 {
			t.Errorf("node %s exited 0 after its replica halted, want a failure", n.ID)
		}
		halted := LogLines(n, "replica halted")
		if len(halted) == 0 {
			t.Errorf("node %s exited without logging that its replica halted; log tail:\n%s", n.ID, tail(n.Log(), 20))
			continue
		}
		// The entry it names is the one appended here, or, for a node
		// whose log was shorter, the leader's copy of one at that index.
		named := false
		for _, id := range []string{"a", "b", "c"} {
			if strings.Contains(halted[0], "log entry "+strconv.FormatUint(at[id], 10)+" cannot be read") {
				named = true
			}
		}
		if !named || !strings.Contains(halted[0], "install a release that reads this log") {
			t.Errorf("node %s: %q, want the unreadable entry's index (one of %v) and what to do", n.ID, halted[0], at)
		}
		if len(LogLines(n, "stopped: ")) == 0 {
			t.Errorf("node %s: no line says why it stopped", n.ID)
		}
	}
}
