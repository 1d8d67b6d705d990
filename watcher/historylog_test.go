package watcher

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cluster"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/clustertest"
	"github.com/drwatch/drwatch/test/poll"
)

// journal is a JSON slog sink that tests read while nodes write to it.
type journal struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (j *journal) Write(p []byte) (int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.buf.Write(p)
}

func (j *journal) logger() *slog.Logger { return slog.New(slog.NewJSONHandler(j, nil)) }

// entries returns the "history entry" lines, decoded.
func (j *journal) entries(t testing.TB) []map[string]any {
	t.Helper()
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(j.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] == "history entry" {
			out = append(out, m)
		}
	}
	return out
}

// count is how many lines of kind at index there are, and how many of them
// are marked replayed.
func (j *journal) count(t testing.TB, index uint64, kind string) (n, replayed int) {
	for _, e := range j.entries(t) {
		if e["index"] == float64(index) && e["kind"] == kind {
			n++
			if e["replayed"] == true {
				replayed++
			}
		}
	}
	return n, replayed
}

func encode(t testing.TB, c failover.Command) []byte {
	t.Helper()
	b, err := failover.Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every node, followers included, writes each history entry it applies to
// its log once, as one structured line with stable keys, so each journal
// keeps the whole trail however far the replicated history has moved on.
// A restarted node applies its log again and marks those lines replayed.
func TestEveryNodeLogsEachHistoryEntryOnce(t *testing.T) {
	journals := map[string]*journal{"a": {}, "b": {}, "c": {}}
	c := clustertest.New(t, 3, clustertest.Options{
		NewStateMachine: func(id string) cluster.StateMachine { return NewFSM(failover.New(), journals[id].logger()) },
	})
	l := c.Leader(30 * time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, addAt, err := l.Node.Propose(ctx, encode(t, failover.Command{At: 5, Payload: failover.Membership{
		Op: failover.MemberAdd, ID: "d", Addr: "10.0.0.4:7400", Actor: "root", Reason: "new site"}}))
	if err != nil {
		t.Fatalf("propose membership: %v", err)
	}
	_, pauseAt, err := l.Node.Propose(ctx, encode(t, failover.Command{At: 6, Payload: failover.Pause{Actor: "alice", Reason: "maintenance"}}))
	if err != nil {
		t.Fatalf("propose pause: %v", err)
	}
	for id, j := range journals {
		poll.Until(t, 30*time.Second, func() bool { n, _ := j.count(t, pauseAt, failover.KindPause); return n > 0 }, "node %s logs the pause", id)
		for _, want := range []struct {
			index uint64
			kind  string
		}{{addAt, failover.KindMemberAdd}, {pauseAt, failover.KindPause}} {
			if n, r := j.count(t, want.index, want.kind); n != 1 || r != 0 {
				t.Errorf("node %s: %d lines for %s at %d (%d replayed), want one", id, n, want.kind, want.index, r)
			}
		}
	}
	for _, e := range journals["b"].entries(t) {
		if e["index"] == float64(addAt) {
			for k, v := range map[string]any{"gen": float64(0), "kind": "member_add", "audit": true, "actor": "root",
				"reason": "new site", "detail": "d at 10.0.0.4:7400", "from": "", "to": "", "at": "1970-01-01T00:00:00.000000005Z"} {
				if e[k] != v {
					t.Errorf("member_add line: %s = %v, want %v (line %v)", k, e[k], v, e)
				}
			}
		}
	}

	f := c.Follower(l)
	c.Stop(f)
	c.Start(f)
	j := journals[f.ID]
	poll.Until(t, 30*time.Second, func() bool { _, r := j.count(t, pauseAt, failover.KindPause); return r > 0 }, "restarted node %s replays the pause", f.ID)
	if n, r := j.count(t, pauseAt, failover.KindPause); n != 2 || r != 1 {
		t.Errorf("restarted node %s: %d lines for the pause, %d replayed; want the first and one replayed", f.ID, n, r)
	}
}

// A command that records nothing logs nothing, and text from an old entry
// is escaped on its one line.
func TestHistoryLineEscapesTextAndSkipsEntrylessCommands(t *testing.T) {
	j := &journal{}
	s := NewFSM(failover.New(), j.logger())
	s.Apply(1, []byte(`{"v":1,"type":"tick","tick":{"at":5}}`))
	if got := j.entries(t); len(got) != 0 {
		t.Fatalf("tick: got %d history lines, want none", len(got))
	}
	// Written before the text rule: a newline, an escape and an override.
	s.Apply(2, []byte(`{"v":1,"type":"pause","pause":{"at":6,"reason":"old\nforged \u001b[2J \u202edetrever","actor":"bob"}}`))
	j.mu.Lock()
	raw := j.buf.String()
	j.mu.Unlock()
	if strings.Count(raw, "\n") != 1 || strings.ContainsRune(raw, '\u202e') {
		t.Errorf("want one line with no raw override, got %q", raw)
	}
	got := j.entries(t)
	if len(got) != 1 || got[0]["reason"] != `old\nforged \x1b[2J \u202edetrever` || got[0]["audit"] != false {
		t.Errorf("got %v, want the pause with its reason escaped", got)
	}
}

// A follower that catches up by installing the leader's snapshot logs the
// entries it did not apply, marked from_snapshot; the snapshot a node
// restores at start logs nothing, since it logged those entries itself.
func TestSnapshotInstallLogsTheEntriesItSkipped(t *testing.T) {
	leader := failover.New()
	for i, c := range []failover.Command{
		{At: 5, Payload: failover.Pause{Actor: "alice", Reason: "one"}},
		{At: 6, Payload: failover.Resume{Actor: "alice", Reason: "two"}},
		{At: 7, Payload: failover.Membership{Op: failover.MemberRemove, ID: "d", Actor: "root", Reason: "three"}},
	} {
		if _, err := leader.Step(uint64(i+1), c); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := leader.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	j := &journal{}
	s := NewFSM(failover.New(), j.logger())
	s.Apply(1, encode(t, failover.Command{At: 5, Payload: failover.Pause{Actor: "alice", Reason: "one"}}))
	if err := s.Restore(snap); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range j.entries(t) {
		got = append(got, e["kind"].(string))
		if e["index"] != float64(1) && e["from_snapshot"] != true {
			t.Errorf("line %v: want from_snapshot", e)
		}
	}
	if strings.Join(got, " ") != "pause resume member_remove" {
		t.Errorf("got lines %v, want the applied pause, then resume and member_remove from the snapshot", got)
	}

	boot := &journal{}
	if err := NewFSM(failover.New(), boot.logger()).Restore(snap); err != nil {
		t.Fatal(err)
	}
	if got := boot.entries(t); len(got) != 0 {
		t.Errorf("restore at start: got %d lines, want none", len(got))
	}
}
