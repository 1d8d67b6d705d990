package failover

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func testPolicy() Policy {
	return scriptPolicy(nil, args{kv: map[string]string{}})
}

func TestDecodeStrict(t *testing.T) {
	tick := `{"v":1,"type":"tick","tick":{"at":5}}`
	tests := []struct {
		name, in string
		ok       bool
	}{
		{"valid", tick, true},
		{"valid with trailing space", tick + " \n", true},
		{"unknown top-level field", `{"v":1,"type":"tick","tick":{"at":5},"x":1}`, false},
		{"unknown payload field", `{"v":1,"type":"tick","tick":{"at":5,"x":1}}`, false},
		{"wrong version", `{"v":2,"type":"tick","tick":{"at":5}}`, false},
		{"no version", `{"type":"tick","tick":{"at":5}}`, false},
		{"unknown type", `{"v":1,"type":"reboot","tick":{"at":5}}`, false},
		{"missing payload", `{"v":1,"type":"tick"}`, false},
		{"payload of another type", `{"v":1,"type":"tick","ack":{"at":5}}`, false},
		{"extra payload", `{"v":1,"type":"tick","tick":{"at":5},"ack":{"at":5}}`, false},
		{"trailing data", tick + `{}`, false},
		{"trailing garbage", tick + ` x`, false},
		{"empty", ``, false},
		{"null", `null`, false},
		{"array", `[]`, false},
		{"wrong field type", `{"v":1,"type":"tick","tick":{"at":"5"}}`, false},
		{"oversize", `{"v":1,"type":"tick","tick":{"at":5}}` + strings.Repeat(" ", MaxCommandSize), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Decode([]byte(tt.in))
			if tt.ok {
				if _, tick := c.Payload.(Tick); err != nil || !tick || c.At != 5 {
					t.Fatalf("Decode(%.60q): got %+v, %v, want tick at 5", tt.in, c, err)
				}
				return
			}
			if !errors.Is(err, ErrBadCommand) {
				t.Fatalf("Decode(%.60q): got err %v, want ErrBadCommand", tt.in, err)
			}
		})
	}
}

func TestEncodeDecodeStamp(t *testing.T) {
	for _, c := range sampleCommands() {
		t.Run(string(c.Type()), func(t *testing.T) {
			b, err := Encode(c)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			d, err := Decode(b)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			b2, _ := Encode(d)
			if !bytes.Equal(b, b2) {
				t.Fatalf("got %s after a round trip, want %s", b2, b)
			}
			s, err := Stamp(b, 777)
			if err != nil {
				t.Fatalf("Stamp: %v", err)
			}
			sc, _ := Decode(s)
			if got := sc.At; got != 777 {
				t.Fatalf("got At %d after Stamp, want 777", got)
			}
		})
	}
	if _, err := Stamp([]byte(`{"v":1}`), 1); !errors.Is(err, ErrBadCommand) {
		t.Errorf("Stamp(garbage): got %v, want ErrBadCommand", err)
	}
	if _, err := Encode(Command{At: 1}); !errors.Is(err, ErrBadCommand) {
		t.Errorf("Encode(no payload): got %v, want ErrBadCommand", err)
	}
}

// TestStampMarksManualMovesAsAcknowledging: the leader's Stamp is what puts
// the acknowledge-the-block rule into the log, on manual moves only, so
// entries written before it keep their meaning on replay.
func TestStampMarksManualMovesAsAcknowledging(t *testing.T) {
	for _, c := range sampleCommands() {
		t.Run(string(c.Type()), func(t *testing.T) {
			b, err := Stamp(mustEncode(c), 777)
			if err != nil {
				t.Fatalf("Stamp: %v", err)
			}
			d, err := Decode(b)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			switch p := d.Payload.(type) {
			case Failover:
				if !p.AckBlock {
					t.Errorf("got a stamped failover without ack_block, want it set: %s", b)
				}
			case Failback:
				if !p.AckBlock {
					t.Errorf("got a stamped failback without ack_block, want it set: %s", b)
				}
			default:
				d.At = c.At
				if want := mustEncode(c); !bytes.Equal(mustEncode(d), want) {
					t.Errorf("got %s after Stamp, want only At changed from %s", mustEncode(d), want)
				}
			}
		})
	}
}

// TestErrorsAcrossTheWire: each failure comes back from Apply's bytes as an
// error that still matches its sentinel (a follower forwarding to the
// leader relies on it).
func TestErrorsAcrossTheWire(t *testing.T) {
	m := New()
	p := testPolicy()
	tests := []struct {
		name string
		cmd  []byte
		want error
	}{
		{"no policy", mustEncode(Command{Payload: Failover{To: Backup}}), ErrNoPolicy},
		{"set policy", mustEncode(Command{At: base, Payload: SetPolicy{Policy: p}}), nil},
		{"garbled", []byte(`{"v":1,"type":"tick"`), ErrBadCommand},
		{"unknown node", mustEncode(Command{At: base, Payload: Observe{Node: "mallory"}}), ErrUnknownNode},
		{"refused", mustEncode(Command{At: base, Payload: Failover{To: Backup}}), ErrRefused},
		{"unknown gen", mustEncode(Command{At: base, Payload: ActionResult{Gen: 99, Outcome: OutcomeVerified}}), ErrUnknownGen},
		{"bad policy", mustEncode(Command{At: base, Payload: SetPolicy{}}), ErrBadCommand},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := m.Snapshot()
			resp := m.Apply(uint64(i+1), tt.cmd)
			_, err := DecodeResponse(resp)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("got %v, want success", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want errors.Is %v", err, tt.want)
			}
			if after, _ := m.Snapshot(); !bytes.Equal(before, after) {
				t.Fatalf("rejected command changed the state")
			}
			// The direct Step error matches the same sentinel.
			if c, derr := Decode(tt.cmd); derr == nil {
				if _, serr := m.Step(uint64(100+i), c); !errors.Is(serr, tt.want) {
					t.Fatalf("Step: got %v, want errors.Is %v", serr, tt.want)
				}
			}
		})
	}
	_, err := DecodeResponse(m.Apply(50, mustEncode(Command{At: base, Payload: Failover{To: Backup}})))
	var re *RefusedError
	if !errors.As(err, &re) || re.Rule != RuleNoQuorum || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("got %v, want a *RefusedError with rule no_quorum naming --force", err)
	}
	if _, err := DecodeResponse([]byte("x")); err == nil {
		t.Fatalf("DecodeResponse(garbage): got nil error, want one")
	}
}

func TestValidateNamesEveryField(t *testing.T) {
	if err := testPolicy().Validate(); err != nil {
		t.Fatalf("valid policy: got %v, want nil", err)
	}
	bad := Policy{
		Nodes: []string{"a", "a", ""}, Quorum: 1, Fall: 0, Rise: 0, Interval: 0, StaleAfter: -1, BlockWindow: -1,
		Failback: FailbackPolicy{Mode: "sometimes"}, Zone: "example.org.",
		Sites: map[Site]SitePolicy{Primary: {Probes: []ProbeRef{{Name: "web"}, {Name: "web"}}}, "mars": {}},
		Records: []Record{
			{Name: "lms", Type: "MX", TTL: 0, Primary: []string{"x"}},
			{Name: "www.other.net.", Type: "A", TTL: 60, Primary: []string{"::1"}, Backup: []string{"192.0.2.1"}},
			{Name: "c", Type: "CNAME", TTL: 60, Primary: []string{"a.example.", "b.example."}, Backup: []string{"relative"}},
		},
	}
	err := bad.Validate()
	if err == nil {
		t.Fatalf("got nil, want errors")
	}
	for _, field := range []string{"nodes[1]", "nodes[2]", "quorum", "fall", "rise", "interval", "stale_after", "block_window",
		"failback.mode", "sites.mars", "sites.backup", "sites.primary.probes[1].name", "sites.primary.probes:",
		"records[0].type", "records[0].ttl", "records[0].backup", "records[1].name", "records[1].primary[0]",
		"records[2].primary", "records[2].backup[0]"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("got %q, want it to name %s", err, field)
		}
	}
	if again := bad.Validate(); again.Error() != err.Error() {
		t.Errorf("Validate is not deterministic:\n%v\n%v", err, again)
	}
}

func TestHashIsCanonical(t *testing.T) {
	p := testPolicy()
	q := p.clone()
	q.Nodes = []string{"c", "a", "b"}
	q.Zone = "Example.ORG"
	q.Records[0], q.Records[1] = q.Records[1], q.Records[0]
	q.Records[1].Name = "LMS.example.org."
	q.Records[1].Primary = []string{"203.0.113.10", "203.0.113.11"}
	q.Records[0].Backup = []string{"2001:DB8:1:0::10"}
	if p.Hash() != q.Hash() {
		t.Fatalf("got different hashes for equivalent policies, want equal")
	}
	q.Fall++
	if p.Hash() == q.Hash() {
		t.Fatalf("got equal hashes after changing fall, want different")
	}
	if h := p.Hash(); len(h) != 64 {
		t.Fatalf("got hash %q, want 64 hex digits", h)
	}
}

// ShortHash names a policy by its first 12 hex digits and leaves a shorter
// (or empty) hash as it is, so a node that never reported prints nothing.
func TestShortHash(t *testing.T) {
	h := testPolicy().Hash()
	for _, tc := range []struct{ in, want string }{
		{h, h[:12]},
		{"0123456789abc", "0123456789ab"},
		{"0123456789ab", "0123456789ab"},
		{"abc", "abc"},
		{"", ""},
	} {
		if got := ShortHash(tc.in); got != tc.want {
			t.Errorf("ShortHash(%q): got %q, want %q", tc.in, got, tc.want)
		}
	}
}

// flipped returns a machine that has just failed over automatically to the backup.
func flipped(t *testing.T) (*Machine, uint64) {
	t.Helper()
	m := New()
	p := testPolicy()
	idx := uint64(1)
	if _, err := m.Step(idx, Command{At: base, Payload: SetPolicy{Policy: p}}); err != nil {
		t.Fatal(err)
	}
	h := p.Hash()
	for round := range 3 {
		for _, n := range []string{"a", "b", "c"} {
			idx++
			at := base + int64(round+1)*int64(time.Second)
			ok := n == "c"
			o := Observe{Node: n, PolicyHash: h, Results: []ProbeResult{
				{Site: Primary, Probe: "web", OK: ok, Class: "tls", Phase: "handshake", Reason: "x509: certificate has expired"},
				{Site: Backup, Probe: "web", OK: true},
			}}
			if _, err := m.Step(idx, Command{At: at, Payload: o}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if d := m.Desired(); d.Active != Backup {
		t.Fatalf("got active %s, want backup after two of three failed three rounds", d.Active)
	}
	return m, idx
}

func TestExplainNamesNodesAndProbes(t *testing.T) {
	m, _ := flipped(t)
	s, err := m.Explain(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"automatic failover from primary to backup", "node a: primary DOWN", "node b: primary DOWN",
		"node c: primary UP", "primary probe web is DOWN", "x509: certificate has expired", "quorum 2"} {
		if !strings.Contains(s, want) {
			t.Errorf("Explain: got\n%s\nwant it to contain %q", s, want)
		}
	}
	if _, err := m.Explain(12345); !errors.Is(err, ErrUnknownGen) {
		t.Errorf("Explain(unknown): got %v, want ErrUnknownGen", err)
	}
}

func TestActionResultIdempotent(t *testing.T) {
	m, idx := flipped(t)
	gen := m.Desired().Gen
	ar := Command{At: base + 10*int64(time.Second), Payload: ActionResult{Gen: gen, Outcome: OutcomeVerified, WrittenAt: base + 9*int64(time.Second), Actor: "a"}}
	idx++
	if _, err := m.Step(idx, ar); err != nil {
		t.Fatal(err)
	}
	snap, _ := m.Snapshot()
	for range 3 {
		idx++
		r, err := m.Step(idx, ar)
		if err != nil || r.Noop != "duplicate" {
			t.Fatalf("repeat: got %+v, %v, want a duplicate no-op", r, err)
		}
	}
	after, _ := m.Snapshot()
	// Only the last applied index moves.
	if strings.Replace(string(after), fmt.Sprintf(`"last_index":%d`, idx), fmt.Sprintf(`"last_index":%d`, idx-3), 1) != string(snap) {
		t.Fatalf("duplicate action results changed state beyond the log index")
	}
	if d := m.Desired(); !d.Done {
		t.Fatalf("got Done=false after verified, want true")
	}
}

func TestHistoryIsBounded(t *testing.T) {
	m := New()
	idx := uint64(0)
	for i := range MaxHistory + 300 {
		idx++
		var c Command
		if i%2 == 0 {
			c = Command{At: base, Payload: Pause{Actor: "x"}}
		} else {
			c = Command{At: base, Payload: Resume{}}
		}
		if _, err := m.Step(idx, c); err != nil {
			t.Fatal(err)
		}
	}
	h := m.History()
	if len(h) != MaxHistory {
		t.Fatalf("got %d entries, want %d", len(h), MaxHistory)
	}
	if h[0].Index != 301 || h[len(h)-1].Index != idx {
		t.Fatalf("got entries %d..%d, want 301..%d (oldest dropped)", h[0].Index, h[len(h)-1].Index, idx)
	}
}

func TestReadsAreDeepCopies(t *testing.T) {
	m, _ := flipped(t)
	before, _ := m.Snapshot()
	v := m.View()
	v.Policy.Nodes[0] = "zzz"
	v.Sites[Primary].Down[0] = "zzz"
	v.Nodes[0].Verdicts[Primary] = "zzz"
	v.Desired.Records[0].Values[0] = "zzz"
	v.History[len(v.History)-1].Evidence[0].Votes[Primary] = "zzz"
	h := m.History()
	h[len(h)-1].Tallies[Primary].Up[0] = "zzz"
	d := m.Desired()
	d.Records[0].Values[0] = "zzz"
	if after, _ := m.Snapshot(); !bytes.Equal(before, after) {
		t.Fatalf("changing returned values changed the machine")
	}
}

// TestConcurrentReadsDuringApply is for the race detector: status readers
// run while Raft applies.
func TestConcurrentReadsDuringApply(t *testing.T) {
	m := New()
	p := testPolicy()
	m.Apply(1, mustEncode(Command{At: base, Payload: SetPolicy{Policy: p}}))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = m.View()
				_ = m.Desired()
				_ = m.History()
				_, _ = m.Snapshot()
				_, _ = m.Explain(0)
			}
		}()
	}
	h := p.Hash()
	for i := uint64(2); i < 300; i++ {
		n := []string{"a", "b", "c"}[i%3]
		o := Command{At: base + int64(i)*int64(time.Second)/3, Payload: Observe{Node: n, PolicyHash: h,
			Results: []ProbeResult{{Site: Primary, Probe: "web", OK: i > 150}, {Site: Backup, Probe: "web", OK: true}}}}
		m.Apply(i, mustEncode(o))
	}
	close(stop)
	wg.Wait()
	if got := m.Desired().Active; got != Backup {
		t.Fatalf("got active %s, want backup", got)
	}
}

func TestStepRejectsOldIndex(t *testing.T) {
	m := New()
	if _, err := m.Step(5, Command{At: base, Payload: Tick{}}); err != nil {
		t.Fatal(err)
	}
	for _, idx := range []uint64{0, 3, 5} {
		if _, err := m.Step(idx, Command{At: base, Payload: Tick{}}); !errors.Is(err, ErrBadCommand) {
			t.Errorf("Step(index %d after 5): got %v, want ErrBadCommand", idx, err)
		}
	}
	// Time never goes backwards.
	if _, err := m.Step(6, Command{At: base - int64(time.Hour), Payload: Tick{}}); err != nil {
		t.Fatal(err)
	}
	if got := m.View().Now; got != base {
		t.Errorf("got now %d after an older tick, want %d", got, base)
	}
}

// A command's payload is a value of one of the payload types: a pointer
// or no payload at all is refused before anything is written or applied,
// since the wire format and the machine know the values only.
func TestCommandNeedsAPayloadValue(t *testing.T) {
	for name, c := range map[string]Command{
		"no payload":      {At: 1},
		"pointer payload": {At: 1, Payload: &Tick{}},
	} {
		if _, err := Encode(c); !errors.Is(err, ErrBadCommand) {
			t.Errorf("Encode(%s): got %v, want ErrBadCommand", name, err)
		}
		if _, err := New().Step(1, c); !errors.Is(err, ErrBadCommand) {
			t.Errorf("Step(%s): got %v, want ErrBadCommand", name, err)
		}
		if d := New().DryRun(c); !errors.Is(d.Err, ErrBadCommand) {
			t.Errorf("DryRun(%s): got %v, want ErrBadCommand", name, d.Err)
		}
	}
}
