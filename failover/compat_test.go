package failover

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestOldLogReplaysUnchanged replays command logs exactly as leaders wrote
// them (testdata/compat): manual_moves_v1 from before manual moves
// acknowledged a standing block, remediations_v1 from before failures could
// be marked needs_admin, drills_v1 from the first binary with drills. It requires the responses, the desired state, the
// block and the history that those leaders' replicas computed. Each golden
// file was written by the binary of its time and is never rewritten: if this test fails, the change breaks
// the replay of existing Raft logs, and the fix is in the code, not here.
func TestOldLogReplaysUnchanged(t *testing.T) {
	for _, name := range []string{"manual_moves_v1", "remediations_v1", "drills_v1"} {
		t.Run(name, func(t *testing.T) {
			log, err := os.ReadFile("testdata/compat/" + name + ".jsonl")
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile("testdata/compat/" + name + ".golden")
			if err != nil {
				t.Fatal(err)
			}
			got := replayForCompat(t, log)
			if got != string(want) {
				t.Errorf("replay of %s.jsonl differs from what the old binary computed\ngot:\n%s\nwant:\n%s", name, got, want)
			}
		})
	}
}

// replayForCompat applies each line of log and renders what must not
// change: every response, then the desired state, the block and the
// history (without timings, which later versions may add to).
func replayForCompat(t *testing.T, log []byte) string {
	t.Helper()
	m := New()
	var b strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, MaxCommandSize), MaxCommandSize)
	i := uint64(0)
	for sc.Scan() {
		i++
		fmt.Fprintf(&b, "%d %s\n", i, m.Apply(i, sc.Bytes()))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	v := m.View()
	d := v.Desired
	fmt.Fprintf(&b, "desired gen=%d active=%s done=%v fence=%s\n", d.Gen, d.Active, d.Done, d.Fence)
	fmt.Fprintf(&b, "blocked=%v until=%d withheld=%q\n", v.Blocked, v.BlockedUntil, v.WithheldRule)
	for _, e := range m.History() {
		fmt.Fprintf(&b, "#%d gen=%d %s %s->%s actor=%s rule=%s forced=%v outcome=%s reason=%q detail=%q\n",
			e.Index, e.Gen, e.Kind, e.From, e.To, e.Actor, e.Rule, e.Forced, e.Outcome, e.Reason, e.Detail)
	}
	return b.String()
}

// TestDrillLogReplaysToGoldenSnapshot: the drills the first binary with
// drills recorded (started, stepped, ended once, skipped, failed by a
// rule, aborted by a decision) replay to the snapshot it wrote, and that
// snapshot restores to the same bytes.
func TestDrillLogReplaysToGoldenSnapshot(t *testing.T) {
	want := bytes.TrimSuffix(readFile(t, "testdata/compat/drills_v1.snapshot.json"), []byte("\n"))
	m := New()
	for i, l := range goldenLines(t, "testdata/compat/drills_v1.jsonl") {
		m.Apply(uint64(i+1), l)
	}
	got, err := m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("snapshot after replaying drills_v1.jsonl:\ngot  %s\nwant %s", got, want)
	}
	for _, s := range []string{`"outcome":"passed"`, `"outcome":"skipped"`, `"outcome":"rolled_back"`, `"aborted_by":76`} {
		if !bytes.Contains(want, []byte(s)) {
			t.Errorf("golden drill snapshot has no %s: the log no longer covers it", s)
		}
	}
	r := New()
	if err := r.Restore(want); err != nil {
		t.Fatal(err)
	}
	if again, _ := r.Snapshot(); !bytes.Equal(again, want) {
		t.Errorf("snapshot after restoring the drill snapshot:\ngot  %s\nwant %s", again, want)
	}
}
