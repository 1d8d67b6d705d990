package failover

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// The lean golden files were written by the first binary with lean reports
// and are never rewritten (-rewrite-golden writes only files that do not
// exist yet): a later binary must read, stamp and replay lean entries as
// this one did.
const (
	leanEncodeGolden = "testdata/compat/encode_v1_lean.jsonl"
	leanDecodeGolden = "testdata/compat/decode_v1_lean.jsonl"
	leanLogGolden    = "testdata/compat/lean_v1.jsonl"
	leanReplayGolden = "testdata/compat/lean_v1.golden"
)

func leanWireCommands() []struct {
	name string
	cmd  Command
} {
	return []struct {
		name string
		cmd  Command
	}{
		{"observe lean", Command{At: 11, Payload: Observe{Node: "a", Seq: 8, PolicyHash: "4869e959ed66", Base: 7, Sites: []Site{Primary}, RoundAt: 1699999999000000009,
			Results: []ProbeResult{{Site: Primary, Probe: "web", OK: false, Class: "tls", Phase: "handshake", Reason: "x509: certificate has expired", LatencyMS: 3, CertExpiry: 1700000000, CompletedAt: 1699999999000000001}}}}},
		{"observe heartbeat", Command{At: 12, Payload: Observe{Node: "b", Seq: 9, PolicyHash: "4869e959ed66", Base: 8, Sites: []Site{Primary, Backup}, RoundAt: 1699999999000000010, Results: []ProbeResult{}}}},
	}
}

// leanDecodeInputs are lean entries, well formed or not.
var leanDecodeInputs = []string{
	`{"v":1,"type":"observe","observe":{"node":"a","at":3,"seq":2,"policy_hash":"h","results":[],"base":1,"sites":["primary","backup"],"round_at":5}}`,
	`{"v":1,"type":"observe","observe":{"node":"a","at":3,"seq":2,"policy_hash":"h","results":null,"base":1,"sites":["backup"]}}`,
	`{"v":1,"type":"observe","observe":{"node":"a","seq":2,"policy_hash":"h","results":[],"base":-1,"sites":["primary"]}}`,
	`{"v":1,"type":"observe","observe":{"node":"a","seq":2,"policy_hash":"h","results":[],"base":"1","sites":["primary"]}}`,
	`{"v":1,"type":"observe","observe":{"node":"a","seq":2,"policy_hash":"h","results":[],"base":1.5,"sites":["primary"]}}`,
	`{"v":1,"type":"observe","observe":{"node":"a","seq":2,"policy_hash":"h","results":[],"base":1,"sites":"primary"}}`,
	`{"v":1,"type":"observe","observe":{"node":"a","seq":2,"policy_hash":"h","results":[],"base":1,"sites":[1]}}`,
	`{"v":1,"type":"observe","observe":{"node":"a","seq":2,"policy_hash":"h","results":[],"base":1,"sites":["nowhere","primary","primary"]}}`,
	`{"v":1,"type":"observe","observe":{"node":"a","seq":2,"policy_hash":"h","results":[],"base":1,"sites":[],"round_at":"x"}}`,
	`{"v":1,"type":"observe","observe":{"node":"a","seq":2,"policy_hash":"h","results":[],"base":0,"sites":null,"round_at":0}}`,
	`{"v":1,"type":"observe","observe":{"node":"a","seq":2,"policy_hash":"h","results":[],"base":1,"sites":["primary"],"basis":1}}`,
}

func TestLeanEncodingIsStable(t *testing.T) {
	if *rewriteGolden {
		writeLeanGolden(t)
	}
	want := goldenCases(t, leanEncodeGolden, func(c wireEncodeCase) string { return c.Name })
	for _, tc := range leanWireCommands() {
		w, ok := want[tc.name]
		if !ok {
			t.Errorf("%s: not in %s", tc.name, leanEncodeGolden)
			continue
		}
		if b := mustEncode(tc.cmd); string(b) != w.Encoded {
			t.Errorf("%s: got %s, want %s", tc.name, b, w.Encoded)
		}
		if s, err := Stamp([]byte(w.Encoded), wireStampAt); err != nil || string(s) != w.Stamped {
			t.Errorf("%s: got %s (%v) after Stamp, want %s", tc.name, s, err, w.Stamped)
		}
	}
	got := goldenCases(t, leanDecodeGolden, func(c wireDecodeCase) string { return c.In })
	for _, in := range leanDecodeInputs {
		if w, ok := got[in]; !ok {
			t.Errorf("%q: not in %s", in, leanDecodeGolden)
		} else if g := decodeCase(in); g != w {
			t.Errorf("Decode(%q): got encoded %s err %q, want encoded %s err %q", in, g.Encoded, g.Err, w.Encoded, w.Err)
		}
	}
}

// TestLeanLogReplaysUnchanged replays a log of lean and full reports from
// a random trio schedule, as the first binary with lean reports wrote and
// applied it.
func TestLeanLogReplaysUnchanged(t *testing.T) {
	if *rewriteGolden {
		writeLeanGolden(t)
	}
	log := readFile(t, leanLogGolden)
	if got, want := replayForCompat(t, log), string(readFile(t, leanReplayGolden)); got != want {
		t.Errorf("replay of %s differs from what the first lean binary computed\ngot:\n%s\nwant:\n%s", leanLogGolden, got, want)
	}
	if !bytes.Contains(log, []byte(`"results":[{`)) || !bytes.Contains(log, []byte(`"results":[],"base"`)) || !bytes.Contains(readFile(t, leanReplayGolden), []byte(" auto_failover ")) {
		t.Errorf("%s has no lean report, heartbeat or automatic decision: it no longer covers them", leanLogGolden)
	}
}

// writeLeanGolden writes the lean golden files that do not exist yet.
func writeLeanGolden(t *testing.T) {
	t.Helper()
	write := func(path string, b []byte) {
		if _, err := os.Stat(path); err == nil {
			return // golden files are never rewritten
		}
		writeFile(t, path, b)
	}
	var enc, dec bytes.Buffer
	for _, tc := range leanWireCommands() {
		b := mustEncode(tc.cmd)
		s, err := Stamp(b, wireStampAt)
		if err != nil {
			t.Fatal(err)
		}
		l, _ := json.Marshal(wireEncodeCase{Name: tc.name, Encoded: string(b), Stamped: string(s)})
		enc.Write(append(l, '\n'))
	}
	for _, in := range leanDecodeInputs {
		l, _ := json.Marshal(decodeCase(in))
		dec.Write(append(l, '\n'))
	}
	write(leanEncodeGolden, enc.Bytes())
	write(leanDecodeGolden, dec.Bytes())
	// The first seed whose schedule flips automatically.
	for seed := uint64(1); ; seed++ {
		lp := newLeanPair(t)
		runLeanSchedule(t, lp, rand.New(rand.NewPCG(seed, seed)), 90, false)
		var log bytes.Buffer
		for _, b := range lp.log {
			log.Write(append(b, '\n'))
		}
		// Lean reports every replica refuses: a base that is not the
		// node's last round, a site twice.
		_, h := lp.lean.Policy()
		for _, o := range []Observe{
			{Node: "a", Seq: 999, Base: 1, PolicyHash: h, Sites: []Site{Primary, Backup}, Results: []ProbeResult{}},
			{Node: "b", Seq: 999, Base: 998, PolicyHash: h, Sites: []Site{Backup, Backup}, Results: []ProbeResult{}},
		} {
			log.Write(append(mustEncode(Command{At: base + 100e9, Payload: o}), '\n'))
		}
		if golden := replayForCompat(t, log.Bytes()); strings.Contains(golden, " auto_failover ") {
			write(leanLogGolden, log.Bytes())
			write(leanReplayGolden, []byte(golden))
			return
		}
	}
}
