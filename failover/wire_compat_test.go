package failover

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// The wire golden files were written by the binary that kept At inside
// each payload, before commands became one envelope. They are never
// rewritten: a replica of any version must read what another wrote, and a
// leader stamps entries that older followers decode during a rolling
// upgrade. If a test here fails, the fix is in the code.
const (
	wireEncodeGolden = "testdata/compat/encode_v1.jsonl"
	wireDecodeGolden = "testdata/compat/decode_v1.jsonl"
)

// wireStampAt is the leader clock the golden stamped bytes were made with.
const wireStampAt = 1700000000123456789

type wireEncodeCase struct {
	Name    string `json:"name"`
	Encoded string `json:"encoded"`
	Stamped string `json:"stamped"`
}

type wireDecodeCase struct {
	In string `json:"in"`
	// Encoded is Encode(Decode(In)) when Decode accepts In.
	Encoded string `json:"encoded,omitempty"`
	Err     string `json:"err,omitempty"`
}

// wireCommands covers every command type twice: each field set to a value
// that is not its zero, and the zero payload (what omitempty drops).
func wireCommands() []struct {
	name string
	cmd  Command
} {
	p := Policy{Nodes: []string{"a", "b", "c"}, Quorum: 2, Fall: 3, Rise: 2, Interval: 1e9, StaleAfter: 5e9, AutoFailover: true,
		BlockWindow: 3600e9, Failback: FailbackPolicy{Mode: FailbackAuto, After: 600e9},
		Sites: map[Site]SitePolicy{Primary: {Probes: []ProbeRef{{Name: "web", Critical: true}, {Name: "ping"}}}, Backup: {Probes: []ProbeRef{{Name: "web", Critical: true}}}},
		Zone:  "example.org.", Records: []Record{{Name: "lms", Type: "A", TTL: 60, Primary: []string{"192.0.2.1"}, Backup: []string{"192.0.2.2"}}}}
	return []struct {
		name string
		cmd  Command
	}{
		{"observe", Command{At: 11, Payload: Observe{Node: "a", Seq: 7, PolicyHash: "4869e959ed66", Results: []ProbeResult{
			{Site: Primary, Probe: "web", OK: false, Class: "tls", Phase: "handshake", Reason: "x509: certificate has expired", LatencyMS: 3, CertExpiry: 1700000000, CompletedAt: 1699999999000000001},
			{Site: Backup, Probe: "web", OK: true, LatencyMS: 4}}}}},
		{"observe zero", Command{Payload: Observe{}}},
		{"tick", Command{At: 12, Payload: Tick{}}},
		{"tick zero", Command{Payload: Tick{}}},
		{"failover", Command{At: 13, Payload: Failover{To: Backup, Reason: "drill", Actor: "alice", Force: true, Planned: true, AckBlock: true}}},
		{"failover zero", Command{Payload: Failover{}}},
		{"failback", Command{At: 14, Payload: Failback{Reason: "primary is back", Actor: "alice", Force: true, AckBlock: true}}},
		{"failback zero", Command{Payload: Failback{}}},
		{"pause", Command{At: 15, Payload: Pause{Reason: "maintenance", Actor: "bob", Until: 1700000360000000000}}},
		{"pause zero", Command{Payload: Pause{}}},
		{"resume", Command{At: 16, Payload: Resume{Reason: "done", Actor: "bob"}}},
		{"resume zero", Command{Payload: Resume{}}},
		{"ack", Command{At: 17, Payload: Ack{Reason: "seen", Actor: "carol"}}},
		{"ack zero", Command{Payload: Ack{}}},
		{"action_result", Command{At: 18, Payload: ActionResult{Gen: 3, Outcome: OutcomeVerified, Detail: "2 servers", Actor: "a", WrittenAt: 17, VerifiedAt: 18,
			Servers: []ServerVerification{{Server: "ns1:53", VerifiedAt: 18}, {Server: "ns2:53", VerifiedAt: 19}}}}},
		{"action_result zero", Command{Payload: ActionResult{}}},
		{"set_policy", Command{At: 19, Payload: SetPolicy{Policy: p, Actor: "ops"}}},
		{"set_policy zero", Command{Payload: SetPolicy{}}},
		{"break_glass", Command{At: 20, Payload: BreakGlass{Site: Backup, Reason: "no quorum", Actor: "carol", WrittenAt: 19}}},
		{"break_glass zero", Command{Payload: BreakGlass{}}},
		{"remediation", Command{At: 21, Payload: Remediation{Name: "octavia-stuck-lb", Gen: 3, Target: "loadbalancer/5f0c", Verb: "failover", Result: RemediationFailed,
			Reason: "stuck in PENDING_UPDATE", Detail: "403", Key: "octavia-stuck-lb/5f0c@t", Actor: "a", NeedsAdmin: true, Precondition: true}}},
		{"remediation zero", Command{Payload: Remediation{}}},
		{"membership", Command{At: 22, Payload: Membership{Op: MemberAdd, ID: "d", Addr: "10.4.0.5:7400", Reason: "new site", Actor: "alice"}}},
		{"membership zero", Command{Payload: Membership{}}},
		{"drill_start", Command{At: 23, Payload: DrillStart{Reason: "weekly", Actor: "alice", Scheduled: true, RequestedAt: 22,
			Canary: DrillCanary{Name: "_drwatch-drill.lms.example.org.", Type: "A", TTL: 60, Primary: []string{"192.0.2.1"}, Backup: []string{"192.0.2.2"}}}}},
		{"drill_start zero", Command{Payload: DrillStart{}}},
		{"drill_step", Command{At: 24, Payload: DrillStep{ID: 23, Step: DrillStepBackupVerified, StepAt: 24, Detail: "verified at ns1:53",
			Servers: []ServerVerification{{Server: "ns1:53", VerifiedAt: 24}}}}},
		{"drill_step zero", Command{Payload: DrillStep{}}},
		{"drill_end", Command{At: 25, Payload: DrillEnd{ID: 23, Outcome: DrillFailed, Rule: "certificates", Detail: "backup cert expires", Actor: "a",
			Steps:     []DrillStepRecord{{Step: DrillStepBackupWritten, At: 23, Detail: "written"}},
			Readiness: []DrillCheck{{Name: "certificates", Pass: false, Reason: "expires in 2h"}, {Name: "dns_credentials", Pass: true}}}}},
		{"drill_end zero", Command{Payload: DrillEnd{}}},
		{"break_glass_rejected", Command{At: 26, Payload: BreakGlassRejected{Marker: "3f2a9c0d1e4b5a69", Why: MarkerForged,
			Reason: "its MAC does not verify", Claim: "site=backup actor=alice", Actor: "a"}}},
		{"break_glass_rejected zero", Command{Payload: BreakGlassRejected{}}},
		{"set_format", Command{At: 27, Payload: SetFormat{Format: 1}}},
		{"set_format zero", Command{Payload: SetFormat{}}},
	}
}

// wireDecodeInputs are entries a replica may meet in a log, well formed or
// not; the golden file holds what the old binary made of each.
var wireDecodeInputs = []string{
	`{"v":1,"type":"tick","tick":{"at":5}}`,
	`{"type":"tick","v":1,"tick":{"at":5}} ` + "\n",
	`{"V":1,"TYPE":"tick","Tick":{"AT":1}}`,
	`{"v":1,"type":"observe","observe":{"at":3,"node":"a","results":[{"site":"primary","probe":"web","ok":true}],"policy_hash":"h"}}`,
	`{"v":1,"type":"tick","tick":{"at":1},"tick":{"at":2}}`,
	`{"v":1,"type":"tick","tick":{"at":1},"tick":{}}`,
	`{"v":1,"type":"tick","tick":{"at":1,"at":2}}`,
	`{"v":1,"type":"tick","tick":{"at":null}}`,
	`{"v":1,"type":"tick","tick":{"at":7},"ack":null}`,
	`{"v":1,"type":"tick","tick":null}`,
	`{"v":null,"type":"tick","tick":{"at":7}}`,
	`{"v":1,"type":"pause","pause":{"at":5,"reason":"old\n\u001b[2Jentry","actor":"bob"}}`,
	`{"v":1,"type":"failover","failover":{"at":5,"to":"backup","force":true}}`,
	`{"v":1,"type":"set_policy","set_policy":{"at":5,"policy":{"nodes":["a"]}}}`,
	`{"v":1,"type":"tick","tick":{"at":5},"x":1}`,
	`{"v":1,"type":"tick","tick":{"at":5,"x":1}}`,
	`{"v":1,"type":"observe","observe":{"node":"a","at":1,"results":[{"site":"primary","probe":"web","ok":true,"x":1}]}}`,
	`{"v":2,"type":"tick","tick":{"at":5}}`,
	`{"type":"tick","tick":{"at":5}}`,
	`{"v":1,"type":"reboot","tick":{"at":5}}`,
	`{"v":1,"type":"tick"}`,
	`{"v":1}`,
	`{"v":1,"type":"tick","ack":{"at":5}}`,
	`{"v":1,"type":"tick","tick":{"at":5},"ack":{"at":5}}`,
	`{"v":1,"type":"tick","tick":{"at":5},"ack":{"at":5},"pause":{}}`,
	`{"v":1,"type":"tick","tick":{"at":5}}{}`,
	`{"v":1,"type":"tick","tick":{"at":5}} x`,
	``,
	`   `,
	`null`,
	`[]`,
	`"tick"`,
	`{"v":1,"type":"tick","tick":{"at":"5"}}`,
	`{"v":"1","type":"tick","tick":{"at":5}}`,
	`{"v":1,"type":5,"tick":{"at":5}}`,
	`{"v":1,"type":"tick","tick":[]}`,
	`{"v":1,"type":"observe","observe":{"node":5}}`,
	`{"v":1,"type":"observe","observe":{"node":"a","results":[{"site":"primary","probe":"web","ok":"yes"}]}}`,
	`{"v":1,"type":"set_policy","set_policy":{"at":5,"policy":{"quorum":"2"}}}`,
	`{"v":1,"type":"action_result","action_result":{"at":5,"servers":[{"server":1}]}}`,
	`{"v":1,"type":"tick","tick":{"at":1e3}}`,
	`{"v":1,"type":"tick","tick":{"at":9223372036854775808}}`,
	`{"v":1,"type":"tick","tick":{"at":5}`,
	`{"v":1,"type":"tick","tick":{"at":5}}}`,
	`{"v":1,"type":"membership","membership":{"at":5,"op":"add","id":"d","reason":"r"}}`,
	`{"v":1,"type":"remediation","remediation":{"at":5,"name":"n","gen":1,"target":"t","verb":"v","result":"applied","key":"k","needs_admin":true}}`,
	`{"v":1,"type":"drill_start","drill_start":{"at":5,"reason":"r","canary":{"name":"c.example.org.","type":"A","ttl":60,"primary":["192.0.2.1"],"backup":["192.0.2.2"]}}}`,
	`{"v":1,"type":"drill_step","drill_step":{"at":5,"id":4,"step":"backup_written","step_at":5,"x":1}}`,
	`{"v":1,"type":"drill_end","drill_end":{"at":5,"id":4,"outcome":"passed","readiness":[{"name":"certificates","pass":true}]}}`,
}

func TestEncodeWritesVersion1Bytes(t *testing.T) {
	want := goldenCases(t, wireEncodeGolden, func(c wireEncodeCase) string { return c.Name })
	types := map[CommandType]bool{}
	for _, tc := range wireCommands() {
		types[tc.cmd.Type()] = true
		w, ok := want[tc.name]
		if !ok {
			t.Errorf("%s: not in %s", tc.name, wireEncodeGolden)
			continue
		}
		b, err := Encode(tc.cmd)
		if err != nil {
			t.Errorf("%s: Encode: %v", tc.name, err)
			continue
		}
		if string(b) != w.Encoded {
			t.Errorf("%s: got %s, want %s", tc.name, b, w.Encoded)
		}
		s, err := Stamp([]byte(w.Encoded), wireStampAt)
		if err != nil {
			t.Errorf("%s: Stamp: %v", tc.name, err)
			continue
		}
		if string(s) != w.Stamped {
			t.Errorf("%s: got %s after Stamp, want %s", tc.name, s, w.Stamped)
		}
	}
	if len(types) != len(payloadTypes) {
		t.Errorf("got %d command types covered, want all %d", len(types), len(payloadTypes))
	}
}

func TestDecodeReadsAsVersion1Did(t *testing.T) {
	got := goldenCases(t, wireDecodeGolden, func(c wireDecodeCase) string { return c.In })
	for _, in := range wireDecodeInputs {
		w, ok := got[in]
		if !ok {
			t.Errorf("%q: not in %s", in, wireDecodeGolden)
			continue
		}
		if g := decodeCase(in); g != w {
			t.Errorf("Decode(%q): got encoded %s err %q, want encoded %s err %q", in, g.Encoded, g.Err, w.Encoded, w.Err)
		}
	}
}

func decodeCase(in string) wireDecodeCase {
	c, err := Decode([]byte(in))
	if err != nil {
		return wireDecodeCase{In: in, Err: err.Error()}
	}
	b, err := json.Marshal(c)
	if err != nil {
		return wireDecodeCase{In: in, Err: "re-encode: " + err.Error()}
	}
	return wireDecodeCase{In: in, Encoded: string(b)}
}

// goldenCases reads the JSON lines of path, keyed by key.
func goldenCases[T any](t *testing.T, path string, key func(T) string) map[string]T {
	t.Helper()
	out := map[string]T{}
	for _, l := range goldenLines(t, path) {
		var c T
		if err := json.Unmarshal(l, &c); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out[key(c)] = c
	}
	return out
}

func goldenLines(t *testing.T, path string) [][]byte {
	t.Helper()
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(readFile(t, path)))
	for sc.Scan() {
		out = append(out, bytes.Clone(sc.Bytes()))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRemediationRecordsSnapshotAsVersion1Did: a remediation record keeps
// its at (now the record's own field, once the payload's) in the snapshot
// where version 1 wrote it, and a version 1 snapshot restores to the same
// bytes.
func TestRemediationRecordsSnapshotAsVersion1Did(t *testing.T) {
	want := bytes.TrimSuffix(readFile(t, "testdata/compat/remediations_v1.snapshot.json"), []byte("\n"))
	m := New()
	for i, l := range goldenLines(t, "testdata/compat/remediations_v1.jsonl") {
		m.Apply(uint64(i+1), l)
	}
	got, err := m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("snapshot after replaying remediations_v1.jsonl:\ngot  %s\nwant %s", got, want)
	}
	r := New()
	if err := r.Restore(want); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.Snapshot(); !bytes.Equal(got, want) {
		t.Errorf("snapshot after restoring the version 1 snapshot:\ngot  %s\nwant %s", got, want)
	}
}

// A Command inside other JSON reads and writes as Decode and Encode do.
func TestCommandJSONIsTheWireFormat(t *testing.T) {
	for _, tc := range wireCommands() {
		b := mustEncode(tc.cmd)
		var c Command
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("%s: json.Unmarshal: %v", tc.name, err)
		}
		if got, err := json.Marshal(c); err != nil || !bytes.Equal(got, b) {
			t.Errorf("%s: json.Marshal: got %s (%v), want %s", tc.name, got, err, b)
		}
	}
	var c Command
	if err := json.Unmarshal([]byte(`{"v":1,"type":"tick","tick":{"at":1,"x":1}}`), &c); !errors.Is(err, ErrBadCommand) {
		t.Errorf("json.Unmarshal of an unknown field: got %v, want ErrBadCommand", err)
	}
}
