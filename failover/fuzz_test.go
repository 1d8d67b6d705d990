package failover

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// FuzzDecode: Decode never panics, and whatever it accepts re-encodes to a
// fixed point: Encode(Decode(Encode(Decode(x)))) == Encode(Decode(x)),
// except free text CheckText refuses, which Decode takes (old entries must
// replay) and Encode refuses.
func FuzzDecode(f *testing.F) {
	for _, c := range sampleCommands() {
		f.Add(mustEncode(c))
	}
	f.Add([]byte(`{"v":1,"type":"tick","tick":{"at":1}} `))
	f.Add([]byte(`{"v":1,"type":"tick","tick":{"at":1},"ack":{}}`))
	f.Add([]byte(`{"V":1,"TYPE":"tick","Tick":{"AT":1}}`))
	for _, c := range leanWireCommands() {
		f.Add(mustEncode(c.cmd))
	}
	for _, in := range leanDecodeInputs {
		f.Add([]byte(in))
	}
	for _, c := range hashlessWireCommands() {
		f.Add(mustEncode(c.cmd))
	}
	for _, in := range hashlessDecodeInputs {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Decode(data)
		resp := New().Apply(1, data) // must not panic either
		if _, rerr := DecodeResponse(resp); (rerr == nil) != (err == nil) && !errors.Is(rerr, ErrNoPolicy) && !errors.Is(rerr, ErrUnknownGen) && !errors.Is(rerr, ErrRefused) && !errors.Is(rerr, ErrBadCommand) {
			t.Fatalf("Apply response %s disagrees with Decode error %v", resp, err)
		}
		if err != nil {
			if !errors.Is(err, ErrBadCommand) {
				t.Fatalf("Decode error %v does not wrap ErrBadCommand", err)
			}
			return
		}
		if terr := c.checkText(); terr != nil {
			// Free text older than the text rule: Decode takes it so that
			// old entries replay, Encode must refuse to propose it again.
			if _, err := Encode(c); err == nil || !errors.Is(err, ErrBadCommand) {
				t.Fatalf("Encode of text CheckText refuses (%v): got %v, want a bad command", terr, err)
			}
			return
		}
		b1, err := Encode(c)
		if err != nil {
			// Escaping can grow a string past the limit; nothing else may fail.
			if !strings.Contains(err.Error(), "limit") {
				t.Fatalf("Encode(Decode(x)): %v", err)
			}
			return
		}
		c2, err := Decode(b1)
		if err != nil {
			t.Fatalf("Decode(Encode(Decode(x))): %v", err)
		}
		b2, err := Encode(c2)
		if err != nil || !bytes.Equal(b1, b2) {
			t.Fatalf("re-encoding is not a fixed point:\n%s\n%s (%v)", b1, b2, err)
		}
		if _, err := Stamp(b1, 12345); err != nil && !strings.Contains(err.Error(), "limit") {
			t.Fatalf("Stamp of a valid command: %v", err)
		}
	})
}

func sampleCommands() []Command {
	p := Policy{Nodes: []string{"a", "b", "c"}, Quorum: 2, Fall: 3, Rise: 2, Interval: 1e9, AutoFailover: true,
		Sites: map[Site]SitePolicy{Primary: {Probes: []ProbeRef{{Name: "web", Critical: true}}}, Backup: {Probes: []ProbeRef{{Name: "web", Critical: true}}}},
		Zone:  "example.org.", Records: []Record{{Name: "lms", Type: "A", TTL: 60, Primary: []string{"192.0.2.1"}, Backup: []string{"192.0.2.2"}}}}
	return []Command{
		Command{At: 1, Payload: Observe{Node: "a", Seq: 1, PolicyHash: "x", Results: []ProbeResult{{Site: Primary, Probe: "web", OK: false, Class: "tls", Phase: "handshake", Reason: "x509: certificate has expired", LatencyMS: 3, CertExpiry: 1700000000}}}},
		Command{At: 2, Payload: Tick{}},
		Command{At: 3, Payload: Failover{To: Backup, Reason: "drill", Actor: "alice", Force: true, Planned: true}},
		Command{At: 4, Payload: Failback{Reason: "ok", Actor: "alice"}},
		Command{At: 5, Payload: Pause{Until: 9, Actor: "bob"}},
		Command{At: 6, Payload: Resume{}},
		Command{At: 7, Payload: Ack{}},
		Command{At: 8, Payload: ActionResult{Gen: 3, Outcome: OutcomeVerified, WrittenAt: 7, VerifiedAt: 8, Actor: "a"}},
		Command{At: 9, Payload: SetPolicy{Policy: p, Actor: "ops"}},
		Command{At: 10, Payload: BreakGlass{Site: Backup, Reason: "no quorum", Actor: "carol", WrittenAt: 9}},
		Command{At: 11, Payload: Remediation{Name: "orphaned-pods", Gen: 3, Target: "pod/lms/web-0", Verb: "force-delete",
			Result: RemediationApplied, Reason: "terminating for 20m", Key: "orphaned-pods/uid-1", Actor: "a"}},
		Command{At: 11, Payload: Remediation{Name: "octavia-stuck-lb", Target: "loadbalancer/5f0c", Verb: "failover", Result: RemediationFailed,
			Detail: "403", Key: "octavia-stuck-lb/5f0c@t", Actor: "a", NeedsAdmin: true}},
		Command{At: 11, Payload: Remediation{Name: "security-groups", Target: "port/p", Verb: "add-address-pair", Result: RemediationFailed,
			Detail: "412", Key: "security-groups/p/rev3", Actor: "a", Precondition: true}},
		Command{At: 12, Payload: Membership{Op: MemberAdd, ID: "d", Addr: "10.4.0.5:7400", Reason: "new site", Actor: "alice"}},
	}
}

// FuzzStep drives random command sequences (chosen by the fuzzer's bytes)
// into a machine under a fixed policy. Nothing may panic, and every
// automatic flip must rest on quorum evidence (invariant 1) and a healthy
// target (invariant 2): checked both from the entry's own evidence and
// against an independent model of the hysteresis built from the commands
// the machine accepted.
func FuzzStep(f *testing.F) {
	f.Add([]byte{0})
	f.Add(bytes.Repeat([]byte{1, 50, 7}, 200))
	f.Add(bytes.Repeat([]byte{0, 10, 20, 30, 40, 50, 60, 70, 80, 90}, 100))
	f.Fuzz(func(t *testing.T, data []byte) { stepSequence(t, data) })
}

// TestStepInvariants runs the FuzzStep property over pseudo-random inputs,
// so that every plain `go test` checks invariants 1 and 2 on sequences that
// really do flip.
func TestStepInvariants(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	autos := 0
	for range 60 {
		data := make([]byte, 1200)
		for i := range data {
			data[i] = byte(r.IntN(256))
		}
		autos += stepSequence(t, data)
	}
	if autos == 0 {
		t.Fatalf("got no automatic flips in 60 random sequences, want some to check")
	}
	t.Logf("checked %d automatic flips", autos)
}

// stepSequence applies the command sequence data chooses and checks every
// automatic flip; it returns how many it checked.
func stepSequence(t *testing.T, data []byte) int {
	t.Helper()
	bc := &byteChooser{b: data}
	g := newCmdGen(bc, false)
	m := New()
	model := newHysteresisModel(g.policy)
	autos := 0
	for i := 1; i <= 400 && (i == 1 || !bc.done()); i++ {
		b := g.first()
		if i > 1 {
			b = g.next()
		}
		resp := m.Apply(uint64(i), b)
		r, err := DecodeResponse(resp)
		if err != nil {
			continue
		}
		g.seen(r)
		checkQuorumVerdicts(t, i, &m.st)
		c, derr := Decode(b)
		if derr != nil {
			t.Fatalf("entry %d: accepted a command Decode rejects: %v", i, derr)
		}
		model.apply(c, r)
		if r.Kind == KindAutoFailover || r.Kind == KindAutoFailback {
			autos++
			h := m.History()
			e := h[len(h)-1]
			if e.Gen != r.Gen || e.Kind != r.Kind {
				t.Fatalf("entry %d: last history entry %+v, want the %s just made", i, e, r.Kind)
			}
			checkAutoEvidence(t, g.policy, e)
			if msg := model.check(e); msg != "" {
				t.Fatalf("entry %d: %s %s->%s without model evidence: %s", i, e.Kind, e.From, e.To, msg)
			}
		}
	}
	return autos
}

// checkAutoEvidence: an automatic failover needs >= quorum DOWN voters for
// the site it leaves and >= quorum UP voters for its target; an automatic
// failback needs >= quorum UP voters for the primary.
func checkAutoEvidence(t *testing.T, p Policy, e Entry) {
	t.Helper()
	count := func(site Site, v Verdict) (n int) {
		for _, ev := range e.Evidence {
			if ev.Votes[site] == v {
				n++
			}
		}
		return n
	}
	if e.Kind == KindAutoFailover {
		if got := count(e.From, Down); got < p.Quorum {
			t.Fatalf("auto failover gen %d: got %d DOWN voters for %s in evidence, want >= %d", e.Gen, got, e.From, p.Quorum)
		}
		if got := len(e.Tallies[e.From].Down); got < p.Quorum {
			t.Fatalf("auto failover gen %d: tally has %d DOWN, want >= %d", e.Gen, got, p.Quorum)
		}
	}
	if got := count(e.To, Up); got < p.Quorum {
		t.Fatalf("%s gen %d: got %d UP voters for target %s, want >= %d", e.Kind, e.Gen, got, e.To, p.Quorum)
	}
}

// hysteresisModel is a second, independent account of what each node's
// probes say, rebuilt from the accepted commands only.
type hysteresisModel struct {
	p     Policy
	now   int64
	last  map[string]int64 // node -> last accepted report
	probe map[string]*modelProbe
}

type modelProbe struct {
	fails, oks int
	down, up   bool
	at         int64
}

func newHysteresisModel(p Policy) *hysteresisModel {
	return &hysteresisModel{p: p, last: map[string]int64{}, probe: map[string]*modelProbe{}}
}

func (h *hysteresisModel) stale() int64 {
	if h.p.StaleAfter > 0 {
		return int64(h.p.StaleAfter)
	}
	return 3 * int64(h.p.Interval)
}

func (h *hysteresisModel) apply(c Command, r Result) {
	h.now = max(h.now, c.At)
	o, ok := c.Payload.(Observe)
	if !ok || r.Noop == "duplicate" {
		return
	}
	h.last[o.Node] = h.now
	for _, res := range o.Results {
		k := fmt.Sprintf("%s/%s/%s", o.Node, res.Site, res.Probe)
		mp := h.probe[k]
		if mp == nil || mp.at < h.now-h.stale() {
			mp = &modelProbe{}
			h.probe[k] = mp
		}
		mp.at = h.now
		if res.OK {
			mp.oks, mp.fails = mp.oks+1, 0
			if !mp.down || mp.oks >= h.p.Rise {
				mp.down, mp.up = false, true
			}
		} else {
			mp.fails, mp.oks = mp.fails+1, 0
			if mp.fails >= h.p.Fall {
				mp.down, mp.up = true, false
			}
		}
	}
}

// vote: the model's view of node on site: "down", "up" or "other".
func (h *hysteresisModel) vote(node string, site Site) string {
	anyDown, allUp := false, true
	for _, ref := range h.p.Sites[site].Probes {
		if !ref.Critical {
			continue
		}
		mp := h.probe[fmt.Sprintf("%s/%s/%s", node, site, ref.Name)]
		fresh := mp != nil && mp.at >= h.now-h.stale()
		if fresh && mp.down {
			anyDown = true
		}
		if !fresh || !mp.up {
			allUp = false
		}
	}
	switch {
	case anyDown:
		return "down"
	case allUp:
		return "up"
	}
	return "other"
}

func (h *hysteresisModel) check(e Entry) string {
	down, up := 0, 0
	for _, n := range h.p.Nodes {
		if last, ok := h.last[n]; !ok || last < h.now-h.stale() {
			continue
		}
		vp, vb := h.vote(n, Primary), h.vote(n, Backup)
		if vp == "down" && vb == "down" {
			continue // self-check: abstains
		}
		if map[Site]string{Primary: vp, Backup: vb}[e.From] == "down" {
			down++
		}
		if map[Site]string{Primary: vp, Backup: vb}[e.To] == "up" {
			up++
		}
	}
	if e.Kind == KindAutoFailover && down < h.p.Quorum {
		return fmt.Sprintf("model has %d fresh DOWN voters for %s, quorum %d", down, e.From, h.p.Quorum)
	}
	if up < h.p.Quorum {
		return fmt.Sprintf("model has %d fresh UP voters for %s, quorum %d", up, e.To, h.p.Quorum)
	}
	return ""
}

// checkQuorumVerdicts: the verdicts an evaluation reads without the
// tallies are the tallies' own, and so is whether any node abstains.
func checkQuorumVerdicts(t *testing.T, entry int, s *state) {
	t.Helper()
	if s.Policy == nil {
		return
	}
	v, abstains := s.quorumVerdicts(s.Now)
	tl := s.tallies(s.Now)
	for i, site := range sites {
		if v[i] != tl[site].Verdict || abstains != (len(tl[site].Abstain) > 0) {
			t.Fatalf("entry %d: %s: quorumVerdicts says %s (abstains %v), tallies %+v", entry, site, v[i], abstains, tl[site])
		}
	}
}
