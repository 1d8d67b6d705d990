package failover

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// testdata/compat/v2_streaks.* were written by the release before failover
// groups (log format 2, commit ed7affa): a seeded generator log that raises
// the format to 2 and carries watchers' streaks, with the responses and the
// final snapshot that release produced. A policy without groups must decide
// exactly as it did, so the log replays to the same bytes, and a snapshot
// taken by that release restores and snapshots unchanged.
func TestPreviousReleaseLogReplaysToItsBytes(t *testing.T) {
	var entries [][]byte
	sc := bufio.NewScanner(bytes.NewReader(readFile(t, "testdata/compat/v2_streaks.log")))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var s string
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("line %d: %v", len(entries)+1, err)
		}
		entries = append(entries, []byte(s))
	}
	m := New()
	var resps bytes.Buffer
	for i, b := range entries {
		resps.Write(m.Apply(uint64(i+1), b))
		resps.WriteByte('\n')
	}
	got, want := strings.Split(resps.String(), "\n"), strings.Split(string(readFile(t, "testdata/compat/v2_streaks.responses")), "\n")
	if len(got) != len(want) {
		t.Fatalf("got %d responses, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("entry %d: response %s, want %s", i+1, got[i], want[i])
		}
	}
	snap, err := m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	wantSnap := bytes.TrimSuffix(readFile(t, "testdata/compat/v2_streaks.snapshot.json"), []byte("\n"))
	if !bytes.Equal(snap, wantSnap) {
		t.Fatalf("snapshot after replaying the previous release's log differs:\ngot  %s\nwant %s", snap, wantSnap)
	}
	for _, s := range []string{`"format":2`, `"streak_at"`, `"kind":"auto_failover"`, `"kind":"action"`} {
		if !bytes.Contains(snap, []byte(s)) {
			t.Errorf("golden snapshot has no %s: the log no longer covers it", s)
		}
	}
	if bytes.Contains(snap, []byte(`"groups"`)) || bytes.Contains(snap, []byte(`"group"`)) {
		t.Errorf("a log without groups must snapshot no group fields")
	}
	r := New()
	if err := r.Restore(wantSnap); err != nil {
		t.Fatalf("restore the previous release's snapshot: %v", err)
	}
	again, err := r.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, wantSnap) {
		t.Fatalf("the previous release's snapshot does not restore to the same bytes")
	}
}
