package failover

import (
	"fmt"
	"time"
)

// chooser is the randomness a command generator draws from: a seeded
// math/rand/v2 source for replay tests, the fuzzer's bytes for FuzzStep.
type chooser interface{ IntN(n int) int }

// byteChooser turns fuzz input into choices; once the bytes run out every
// choice is 0, which keeps sequences finite and deterministic.
type byteChooser struct {
	b []byte
	i int
}

func (c *byteChooser) IntN(n int) int {
	if n <= 1 || c.i >= len(c.b) {
		return 0
	}
	v := int(c.b[c.i])
	c.i++
	if n > 256 && c.i < len(c.b) {
		v = v<<8 | int(c.b[c.i])
		c.i++
	}
	return v % n
}

func (c *byteChooser) done() bool { return c.i >= len(c.b) }

// cmdGen produces plausible command sequences: a world where each site is
// healthy or not and each watcher's network is fine or broken, probed in
// rounds with some noise, interleaved with operator commands, reconciler
// reports, odd timestamps and garbage.
type cmdGen struct {
	r                 chooser
	now               int64
	policy            Policy
	hash              string
	siteOK            [2]bool
	netBroken         map[string]bool
	seq               map[string]uint64
	gens              []uint64 // decision generations seen, newest last
	allowPolicyChange bool
	// moves counts manual moves; every fourth is logged as before moves
	// acknowledged blocks (a counter, so the random stream stays as it was).
	moves int
}

func newCmdGen(r chooser, allowPolicyChange bool) *cmdGen {
	g := &cmdGen{
		r: r, now: base, siteOK: [2]bool{true, true},
		netBroken: map[string]bool{}, seq: map[string]uint64{}, allowPolicyChange: allowPolicyChange,
	}
	g.policy = g.randomPolicy()
	g.hash = g.policy.Hash()
	return g
}

func (g *cmdGen) randomPolicy() Policy {
	r := g.r
	nodes := []string{"a", "b", "c"}
	if r.IntN(4) == 0 {
		nodes = []string{"a", "b", "c", "d", "e"}
	}
	quorum := len(nodes)/2 + 1 + r.IntN(2)
	quorum = min(quorum, len(nodes))
	probes := []ProbeRef{{Name: "web", Critical: true}, {Name: "cdn"}}
	if r.IntN(2) == 0 {
		probes = append(probes, ProbeRef{Name: "api", Critical: true})
	}
	p := Policy{
		Nodes: nodes, Quorum: quorum, Fall: 1 + r.IntN(4), Rise: 1 + r.IntN(3),
		Interval:     time.Second,
		AutoFailover: r.IntN(8) != 0,
		BlockWindow:  []time.Duration{0, 10 * time.Second, time.Hour}[r.IntN(3)],
		Failback:     FailbackPolicy{Mode: FailbackManual},
		Sites:        map[Site]SitePolicy{Primary: {Probes: probes}, Backup: {Probes: probes}},
		Zone:         "example.org.",
		Records:      []Record{{Name: "lms", Type: "A", TTL: 60, Primary: []string{"203.0.113.10"}, Backup: []string{"198.51.100.10"}}},
	}
	if r.IntN(3) == 0 {
		p.StaleAfter = 5 * time.Second
	}
	if r.IntN(2) == 0 {
		p.Failback = FailbackPolicy{Mode: FailbackAuto, After: time.Duration(2+r.IntN(10)) * time.Second}
	}
	return p
}

// first is the SetPolicy every sequence starts with.
func (g *cmdGen) first() []byte {
	return mustEncode(Command{At: g.now, Payload: SetPolicy{Policy: g.policy, Actor: "ops"}})
}

func mustEncode(c Command) []byte {
	b, err := Encode(c)
	if err != nil {
		panic(fmt.Sprintf("encode %s: %v", c.Type(), err))
	}
	return b
}

// seen feeds a response back so later reports can name real generations.
func (g *cmdGen) seen(r Result) {
	if r.Gen != 0 {
		g.gens = append(g.gens, r.Gen)
	}
}

func (g *cmdGen) pickGen() uint64 {
	if len(g.gens) == 0 || g.r.IntN(10) == 0 {
		return uint64(g.r.IntN(5))
	}
	return g.gens[len(g.gens)-1-g.r.IntN(min(3, len(g.gens)))]
}

func (g *cmdGen) site() Site { return sites[g.r.IntN(2)] }

func (g *cmdGen) ackBlock() bool {
	g.moves++
	return g.moves%4 != 0
}

// next returns the next encoded command.
func (g *cmdGen) next() []byte {
	r := g.r
	// Time mostly moves forward a fraction of a round; sometimes jumps; rarely goes back (a new leader's clock).
	switch k := r.IntN(100); {
	case k < 2:
		g.now -= int64(time.Duration(r.IntN(3)) * time.Second)
	case k < 5:
		g.now += int64(time.Duration(r.IntN(30)) * time.Second)
	default:
		g.now += int64(g.policy.Interval) / int64(len(g.policy.Nodes))
	}
	at := g.now
	switch k := r.IntN(100); {
	case k < 3:
		i := r.IntN(2)
		g.siteOK[i] = !g.siteOK[i]
		return g.observe(at)
	case k < 5:
		n := g.policy.Nodes[r.IntN(len(g.policy.Nodes))]
		g.netBroken[n] = !g.netBroken[n]
		return g.observe(at)
	case k < 70:
		return g.observe(at)
	case k < 74:
		return mustEncode(Command{At: at, Payload: Tick{}})
	case k < 77:
		return mustEncode(Command{At: at, Payload: Failover{To: g.site(), Actor: "alice", Reason: "fuzz", Force: r.IntN(3) == 0, Planned: r.IntN(4) == 0,
			AckBlock: g.ackBlock()}})
	case k < 79:
		return mustEncode(Command{At: at, Payload: Failback{Actor: "alice", Force: r.IntN(3) == 0, AckBlock: g.ackBlock()}})
	case k < 81:
		var until int64
		if r.IntN(2) == 0 {
			until = at + int64(time.Duration(r.IntN(20))*time.Second)
		}
		return mustEncode(Command{At: at, Payload: Pause{Actor: "bob", Until: until}})
	case k < 83:
		return mustEncode(Command{At: at, Payload: Resume{Actor: "bob"}})
	case k < 86:
		return mustEncode(Command{At: at, Payload: Ack{Actor: "bob"}})
	case k < 92:
		outcomes := []string{OutcomeWritten, OutcomeVerified, OutcomeFailed, OutcomeConflict, "bogus"}
		ar := ActionResult{Gen: g.pickGen(), Outcome: outcomes[r.IntN(len(outcomes))], Actor: "a", Detail: []string{"", "SERVFAIL"}[r.IntN(2)]}
		if r.IntN(2) == 0 {
			ar.Servers = []ServerVerification{{Server: "ns2:53", VerifiedAt: at - 1}, {Server: "ns1:53", VerifiedAt: at - 2}}
		}
		return mustEncode(Command{At: at, Payload: ar})
	case k < 93:
		return mustEncode(Command{At: at, Payload: BreakGlass{Site: g.site(), Actor: "carol", WrittenAt: at}})
	case k < 94 && g.allowPolicyChange:
		p := g.randomPolicy()
		if r.IntN(4) == 0 {
			p.Quorum = 0 // invalid: must be rejected without effect
		} else {
			g.policy, g.hash = p, p.Hash()
		}
		return mustEncode(Command{At: at, Payload: SetPolicy{Policy: p, Actor: "ops"}})
	case k < 96:
		return mustEncode(Command{At: at, Payload: Observe{Node: "zz", PolicyHash: g.hash}})
	case k < 98:
		garbage := [][]byte{
			[]byte(`{"v":1,"type":"tick"}`), []byte(`{"v":1}`), []byte(`null`), []byte(``), []byte(`{"v":1,"type":"tick","tick":{"at":"x"}}`),
			[]byte(`{"v":1,"type":"observe","observe":{"node":"a","results":[{"site":"primary","probe":"web","ok":true},{"site":"primary","probe":"web","ok":false}]}}`),
		}
		return garbage[r.IntN(len(garbage))]
	default:
		return g.observe(at)
	}
}

func (g *cmdGen) observe(at int64) []byte {
	r := g.r
	node := g.policy.Nodes[r.IntN(len(g.policy.Nodes))]
	g.seq[node]++
	o := Observe{Node: node, Seq: g.seq[node], PolicyHash: g.hash}
	if r.IntN(20) == 0 {
		o.Seq-- // a retried round
	}
	if r.IntN(30) == 0 {
		o.PolicyHash = "stale-hash"
	}
	for i, s := range sites {
		for _, p := range g.policy.Sites[s].Probes {
			if r.IntN(15) == 0 {
				continue // a probe missing from this round
			}
			ok := g.siteOK[i] && !g.netBroken[node]
			if r.IntN(12) == 0 {
				ok = !ok // noise
			}
			res := ProbeResult{Site: s, Probe: p.Name, OK: ok, LatencyMS: int64(r.IntN(500))}
			if r.IntN(5) != 0 {
				// the watcher's own clock: usually a little before the stamp, sometimes skewed
				res.CompletedAt = at - int64(time.Duration(r.IntN(3000)-500)*time.Millisecond)
			}
			if !ok {
				res.Class, res.Phase, res.Reason = "connect", "tcp connect", "connection refused"
			}
			o.Results = append(o.Results, res)
		}
	}
	if r.IntN(25) == 0 {
		o.Results = append(o.Results, ProbeResult{Site: g.site(), Probe: "ghost", OK: true})
	}
	return mustEncode(Command{At: at, Payload: o})
}
