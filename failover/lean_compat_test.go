package failover

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// The lean golden files were written by the first binary with lean reports
// (leanGolden) and by the first whose lean reports leave the policy hash
// out (hashlessGolden). They are never rewritten (-rewrite-golden writes
// only files that do not exist yet): a later binary must read, stamp and
// replay lean entries as these did.
type leanGoldenSet struct {
	encode, decode, log, replay string
	commands                    []wireCommand
	inputs                      []string
	// tail appends to the log of a random trio schedule, run through lp,
	// entries that cover what the schedule may not; it is called only to
	// write the files.
	tail func(t *testing.T, lp *leanPair, log *bytes.Buffer)
	// nodes adds each node's recorded policy hash to the replay.
	nodes bool
}

var leanGolden = leanGoldenSet{
	encode:   "testdata/compat/encode_v1_lean.jsonl",
	decode:   "testdata/compat/decode_v1_lean.jsonl",
	log:      "testdata/compat/lean_v1.jsonl",
	replay:   "testdata/compat/lean_v1.golden",
	commands: leanWireCommands(),
	inputs:   leanDecodeInputs,
	tail: func(t *testing.T, lp *leanPair, log *bytes.Buffer) {
		// Lean reports every replica refuses: a base that is not the
		// node's last round, a site twice.
		_, h := lp.lean.Policy()
		for _, o := range []Observe{
			{Node: "a", Seq: 999, Base: 1, PolicyHash: h, Sites: []Site{Primary, Backup}, Results: []ProbeResult{}},
			{Node: "b", Seq: 999, Base: 998, PolicyHash: h, Sites: []Site{Backup, Backup}, Results: []ProbeResult{}},
		} {
			log.Write(append(mustEncode(Command{At: base + 100e9, Payload: o}), '\n'))
		}
	},
}

var hashlessGolden = leanGoldenSet{
	encode:   "testdata/compat/encode_v1_lean_hashless.jsonl",
	decode:   "testdata/compat/decode_v1_lean_hashless.jsonl",
	log:      "testdata/compat/lean_hashless_v1.jsonl",
	replay:   "testdata/compat/lean_hashless_v1.golden",
	commands: hashlessWireCommands(),
	inputs:   hashlessDecodeInputs,
	tail: func(t *testing.T, lp *leanPair, log *bytes.Buffer) {
		// A lean report without a hash on a base that is not the node's
		// last round; a policy change, then one on b's last round, which
		// was under the old policy; a full report without a hash, which
		// is recorded as it is.
		at := base + 100e9
		add := func(p Payload) {
			t.Helper()
			log.Write(append(mustEncode(Command{At: at, Payload: p}), '\n'))
			at += 1e9
		}
		add(Observe{Node: "a", Seq: 999, Base: 1, Sites: []Site{Primary, Backup}, Results: []ProbeResult{}})
		// A lean report without a hash as a leader from before such
		// reports stamps it, policy_hash written empty: refused on a
		// valid base, a duplicate when it repeats the last round.
		seq, ok := lp.lean.LastSeq("a")
		if !ok {
			t.Fatal("a never reported")
		}
		add(Observe{Node: "a", Seq: seq + 1, Base: seq, Sites: []Site{Primary, Backup}, Results: []ProbeResult{}, WrittenEmpty: true})
		add(Observe{Node: "a", Seq: seq, Base: seq - 1, Sites: []Site{Primary, Backup}, Results: []ProbeResult{}, WrittenEmpty: true})
		p, _ := lp.lean.Policy()
		q := p.clone()
		q.Fall++
		add(SetPolicy{Policy: q, Actor: "ops"})
		seq, ok = lp.lean.LastSeq("b")
		if !ok {
			t.Fatal("b never reported")
		}
		add(Observe{Node: "b", Seq: seq + 1, Base: seq, Sites: []Site{Primary, Backup}, Results: []ProbeResult{}})
		seq, _ = lp.lean.LastSeq("c")
		add(Observe{Node: "c", Seq: seq + 1, Results: []ProbeResult{}})
	},
	nodes: true,
}

type wireCommand struct {
	name string
	cmd  Command
}

func leanWireCommands() []wireCommand {
	return []wireCommand{
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

// hashlessWireCommands are lean reports that leave the policy hash out.
func hashlessWireCommands() []wireCommand {
	return []wireCommand{
		{"observe lean without hash", Command{At: 11, Payload: Observe{Node: "a", Seq: 8, Base: 7, Sites: []Site{Primary}, RoundAt: 1699999999000000009,
			Results: []ProbeResult{{Site: Primary, Probe: "web", OK: false, Class: "tls", Phase: "handshake", Reason: "x509: certificate has expired", LatencyMS: 3, CertExpiry: 1700000000, CompletedAt: 1699999999000000001}}}}},
		{"observe heartbeat without hash", Command{At: 12, Payload: Observe{Node: "b", Seq: 9, Base: 8, Sites: []Site{Primary, Backup}, RoundAt: 1699999999000000010, Results: []ProbeResult{}}}},
		{"observe full without hash", Command{At: 13, Payload: Observe{Node: "c", Seq: 10, Results: []ProbeResult{}}}},
	}
}

// hashlessDecodeInputs are reports without a policy hash, lean and full;
// a lean one that writes policy_hash empty or null keeps writing it.
var hashlessDecodeInputs = []string{
	`{"v":1,"type":"observe","observe":{"node":"a","at":3,"seq":2,"results":[],"base":1,"sites":["primary","backup"],"round_at":5}}`,
	`{"v":1,"type":"observe","observe":{"node":"a","at":3,"seq":2,"policy_hash":"","results":[],"base":1,"sites":["primary","backup"],"round_at":5}}`,
	`{"v":1,"type":"observe","observe":{"node":"a","at":3,"seq":2,"policy_hash":null,"results":[],"base":1,"sites":["primary"]}}`,
	`{"v":1,"type":"observe","observe":{"node":"a","at":3,"seq":2,"results":[]}}`,
	`{"v":1,"type":"observe","observe":{"node":"a","at":3,"seq":2,"results":[],"base":0}}`,
	`{"v":1,"type":"observe","observe":{"node":"a","seq":2,"results":[],"base":1,"sites":["primary"],"policy_hash":5}}`,
}

func TestLeanEncodingIsStable(t *testing.T) { testLeanEncoding(t, leanGolden) }

// Lean reports that leave the policy hash out omit policy_hash; full
// reports without a hash still write it empty, as version 1 did.
func TestHashlessLeanEncodingIsStable(t *testing.T) { testLeanEncoding(t, hashlessGolden) }

func testLeanEncoding(t *testing.T, g leanGoldenSet) {
	if *rewriteGolden {
		writeLeanGolden(t, g)
	}
	want := goldenCases(t, g.encode, func(c wireEncodeCase) string { return c.Name })
	for _, tc := range g.commands {
		w, ok := want[tc.name]
		if !ok {
			t.Errorf("%s: not in %s", tc.name, g.encode)
			continue
		}
		if b := mustEncode(tc.cmd); string(b) != w.Encoded {
			t.Errorf("%s: got %s, want %s", tc.name, b, w.Encoded)
		}
		if s, err := Stamp([]byte(w.Encoded), wireStampAt); err != nil || string(s) != w.Stamped {
			t.Errorf("%s: got %s (%v) after Stamp, want %s", tc.name, s, err, w.Stamped)
		}
	}
	got := goldenCases(t, g.decode, func(c wireDecodeCase) string { return c.In })
	for _, in := range g.inputs {
		if w, ok := got[in]; !ok {
			t.Errorf("%q: not in %s", in, g.decode)
		} else if g := decodeCase(in); g != w {
			t.Errorf("Decode(%q): got encoded %s err %q, want encoded %s err %q", in, g.Encoded, g.Err, w.Encoded, w.Err)
		}
	}
}

// TestLeanLogReplaysUnchanged replays a log of lean and full reports from
// a random trio schedule, as the first binary with lean reports wrote and
// applied it.
func TestLeanLogReplaysUnchanged(t *testing.T) {
	testLeanLog(t, leanGolden)
	if log := readFile(t, leanGolden.log); !bytes.Contains(log, []byte(`"results":[{`)) || !bytes.Contains(log, []byte(`"results":[],"base"`)) {
		t.Errorf("%s has no lean report or heartbeat: it no longer covers them", leanGolden.log)
	}
}

// TestHashlessLeanLogReplaysUnchanged replays a log of lean reports
// without a policy hash, full reports, a policy change and refused lean
// reports, as the first binary whose lean reports leave the hash out
// wrote and applied it, with each node's recorded policy hash.
func TestHashlessLeanLogReplaysUnchanged(t *testing.T) {
	testLeanLog(t, hashlessGolden)
	lean, hashless, written := 0, 0, 0
	for _, l := range goldenLines(t, hashlessGolden.log) {
		if c, err := Decode(l); err == nil {
			if o, ok := c.Payload.(Observe); ok && o.Base != 0 {
				lean++
				switch {
				case o.WrittenEmpty && bytes.Contains(l, []byte(`"policy_hash":""`)):
					written++
				case o.PolicyHash == "" && !bytes.Contains(l, []byte("policy_hash")):
					hashless++
				}
			}
		}
	}
	if hashless == 0 || written == 0 || hashless+written != lean {
		t.Errorf("%s: of %d lean reports, %d leave the policy hash out and %d write it empty; want all one or the other, and some of each", hashlessGolden.log, lean, hashless, written)
	}
}

func testLeanLog(t *testing.T, g leanGoldenSet) {
	if *rewriteGolden {
		writeLeanGolden(t, g)
	}
	log := readFile(t, g.log)
	if got, want := leanReplay(t, g, log), string(readFile(t, g.replay)); got != want {
		t.Errorf("replay of %s differs from what the binary that wrote it computed\ngot:\n%s\nwant:\n%s", g.log, got, want)
	}
	if !strings.Contains(string(readFile(t, g.replay)), " auto_failover ") {
		t.Errorf("%s has no automatic decision: it no longer covers them", g.replay)
	}
}

// leanReplay is replayForCompat of log, with each node's recorded policy
// hash when g asks for it.
func leanReplay(t *testing.T, g leanGoldenSet, log []byte) string {
	t.Helper()
	out := replayForCompat(t, log)
	if !g.nodes {
		return out
	}
	m := New()
	for i, l := range bytes.Split(bytes.TrimSuffix(log, []byte("\n")), []byte("\n")) {
		m.Apply(uint64(i+1), l)
	}
	for _, n := range m.View().Nodes {
		out += fmt.Sprintf("node %s policy_hash=%q\n", n.Node, n.PolicyHash)
	}
	return out
}

// writeLeanGolden writes the files of g that do not exist yet.
func writeLeanGolden(t *testing.T, g leanGoldenSet) {
	t.Helper()
	write := func(path string, b []byte) {
		if _, err := os.Stat(path); err == nil {
			return // golden files are never rewritten
		}
		writeFile(t, path, b)
	}
	var enc, dec bytes.Buffer
	for _, tc := range g.commands {
		b := mustEncode(tc.cmd)
		s, err := Stamp(b, wireStampAt)
		if err != nil {
			t.Fatal(err)
		}
		l, _ := json.Marshal(wireEncodeCase{Name: tc.name, Encoded: string(b), Stamped: string(s)})
		enc.Write(append(l, '\n'))
	}
	for _, in := range g.inputs {
		l, _ := json.Marshal(decodeCase(in))
		dec.Write(append(l, '\n'))
	}
	write(g.encode, enc.Bytes())
	write(g.decode, dec.Bytes())
	// The first seed whose schedule flips automatically.
	for seed := uint64(1); ; seed++ {
		lp := newLeanPair(t)
		runLeanSchedule(t, lp, rand.New(rand.NewPCG(seed, seed)), 90, false)
		var log bytes.Buffer
		for _, b := range lp.log {
			log.Write(append(b, '\n'))
		}
		g.tail(t, lp, &log)
		if golden := replayForCompat(t, log.Bytes()); strings.Contains(golden, " auto_failover ") {
			write(g.log, log.Bytes())
			write(g.replay, []byte(leanReplay(t, g, log.Bytes())))
			return
		}
	}
}
