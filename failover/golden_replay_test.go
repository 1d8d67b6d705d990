package failover

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// The golden compatibility log is a command log written by an older build
// (testdata/compat/v1.log, one JSON string per entry, garbage included),
// with the responses and the final snapshot that build produced. Fields
// added to commands or state since must be optional with zero meaning the
// old behaviour, so the old log must still replay to the same bytes.
var rewriteGolden = flag.Bool("rewrite-golden", false,
	"write testdata/compat from the current build (only to add a new golden log, never to update an old one)")

const (
	goldenLog       = "testdata/compat/v1.log"
	goldenResponses = "testdata/compat/v1.responses"
	goldenSnapshot  = "testdata/compat/v1.snapshot.json"
)

func TestOldLogReplaysToGoldenBytes(t *testing.T) {
	if *rewriteGolden {
		writeGoldenLog(t)
	}
	entries := readGoldenLog(t)
	m := New()
	var resps bytes.Buffer
	for i, b := range entries {
		resps.Write(m.Apply(uint64(i+1), b))
		resps.WriteByte('\n')
	}
	snap, err := m.Snapshot()
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if *rewriteGolden {
		writeFile(t, goldenResponses, resps.Bytes())
		writeFile(t, goldenSnapshot, append(snap, '\n'))
	}
	wantResps := readFile(t, goldenResponses)
	gotLines, wantLines := strings.Split(resps.String(), "\n"), strings.Split(string(wantResps), "\n")
	for i := range min(len(gotLines), len(wantLines)) {
		if gotLines[i] != wantLines[i] {
			t.Fatalf("entry %d: response %s, want %s", i+1, gotLines[i], wantLines[i])
		}
	}
	if len(gotLines) != len(wantLines) {
		t.Fatalf("got %d responses, want %d", len(gotLines), len(wantLines))
	}
	if want := bytes.TrimSuffix(readFile(t, goldenSnapshot), []byte("\n")); !bytes.Equal(snap, want) {
		t.Fatalf("snapshot after replaying the old log differs:\ngot  %s\nwant %s", snap, want)
	}
	// The log must exercise what compatibility is about: decisions with
	// timings, and reconciler reports.
	for _, kind := range []string{`"kind":"auto_failover"`, `"kind":"action"`, `"detected_at"`, `"verified_at"`} {
		if !bytes.Contains(snap, []byte(kind)) {
			t.Errorf("golden snapshot has no %s: the log no longer covers it", kind)
		}
	}
}

func readGoldenLog(t *testing.T) [][]byte {
	t.Helper()
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(readFile(t, goldenLog)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var s string
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("%s: line %d: %v", goldenLog, len(out)+1, err)
		}
		out = append(out, []byte(s))
	}
	return out
}

// writeGoldenLog records a seeded generator log. It runs only on request:
// the generator changes as commands grow, the golden log must not.
func writeGoldenLog(t *testing.T) {
	t.Helper()
	g := newCmdGen(rand.New(rand.NewPCG(11, 11*7919)), true)
	m := New()
	var buf bytes.Buffer
	for i := 1; i <= 600; i++ {
		b := g.next()
		if i == 1 {
			b = g.first()
		}
		r, _ := DecodeResponse(m.Apply(uint64(i), b))
		g.seen(r)
		line, err := json.Marshal(string(b))
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	writeFile(t, goldenLog, buf.Bytes())
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file: %v", err)
	}
	return b
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatalf("write golden file: %v", err)
	}
}
