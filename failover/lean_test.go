package failover

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// leanPair replays one schedule of commands into two machines: full gets
// every report as the watcher built it, lean gets what the watcher's
// LeanEncoder makes of it, and after every command both must hold the same
// state, decisions, verdicts and Timings included; only the latency and
// completion time a repeated result keeps may differ.
type leanPair struct {
	t          *testing.T
	full, lean *Machine
	enc        map[string]*LeanEncoder
	index      uint64
	// refusals allows the lean machine to refuse a report the full one
	// would apply (faults make the encoder's view wrong); the round is then
	// lost to both, as it is to the watcher.
	refusals bool
	// policies are the lean machine's recent policies, for a watcher whose
	// replica lags.
	policies []leanPolicy
	stats    leanStats
	// every compares the machines' whole states after every every-th
	// command (and after every refusal); responses are compared always.
	every, steps int
	// log is every command the lean machine was given, in order.
	log [][]byte
	// streaks, when set, stamps each watcher's failure streaks on its
	// full report first (StreakCounter), under the lean replica's policy
	// and format, as the watcher does.
	streaks map[string]*StreakCounter
}

type leanPolicy struct {
	p    *Policy
	hash string
}

type leanStats struct {
	lean, full, refused    int
	leanBytes, fullBytes   int
	heartbeats, decisions  int
	lostAcks, notSent, dup int
}

// leanFault is what happens to one report on its way, as the watcher sees it.
type leanFault int

const (
	leanDelivered leanFault = iota
	leanLostAck             // applied, but the watcher hears an error
	leanNotSent             // never reached the log
	leanDuplicate           // applied twice (a retried proposal)
)

func newLeanPair(t *testing.T) *leanPair {
	return &leanPair{t: t, full: New(), lean: New(), enc: map[string]*LeanEncoder{}, every: 1}
}

// other applies a command that is not a watcher's report to both machines.
func (lp *leanPair) other(b []byte) {
	lp.t.Helper()
	lp.index++
	lp.log = append(lp.log, b)
	rf, rl := lp.full.Apply(lp.index, b), lp.lean.Apply(lp.index, b)
	if !bytes.Equal(rf, rl) {
		lp.t.Fatalf("index %d %s: full machine answered %s, lean machine %s", lp.index, b, rf, rl)
	}
	lp.compare(string(b))
}

// report sends the full report o (stamped at) through node's encoder; now
// is the watcher's clock; lag picks a policy the lean replica held lag
// commands ago.
func (lp *leanPair) report(at int64, o Observe, now int64, lag int, fault leanFault) {
	t := lp.t
	t.Helper()
	e := lp.enc[o.Node]
	if e == nil {
		e = &LeanEncoder{}
		lp.enc[o.Node] = e
	}
	p, h := lp.lean.Policy()
	if lp.streaks != nil {
		if lp.streaks[o.Node] == nil {
			lp.streaks[o.Node] = &StreakCounter{}
		}
		o = lp.streaks[o.Node].Stamp(o, p, lp.lean.Format())
	}
	if lag > 0 && len(lp.policies) > 0 {
		lag = min(lag, len(lp.policies))
		p, h = lp.policies[len(lp.policies)-lag].p, lp.policies[len(lp.policies)-lag].hash
	}
	lo := e.Encode(o, p, h, now)
	if fault == leanNotSent {
		e.NotSent()
		lp.stats.notSent++
		return
	}
	fb, lb := mustEncode(Command{At: at, Payload: o}), mustEncode(Command{At: at, Payload: lo})
	if lo.Base != 0 {
		if lo.PolicyHash != "" || bytes.Contains(lb, []byte(`"policy_hash"`)) {
			t.Fatalf("lean report %s carries a policy hash: it is its base's", lb)
		}
		lp.stats.lean++
		if len(lo.Results) == 0 && len(lo.Sites) == len(sites) {
			lp.stats.heartbeats++
		}
	} else {
		lp.stats.full++
	}
	lp.stats.leanBytes += len(lb)
	lp.stats.fullBytes += len(fb)
	lp.index++
	lp.log = append(lp.log, lb)
	rl := lp.lean.Apply(lp.index, lb)
	resL, errL := DecodeResponse(rl)
	if errL != nil {
		fs := mustSnapshot(t, lp.full)
		if _, errF := DecodeResponse(lp.full.Apply(lp.index, fb)); errF == nil {
			if !lp.refusals || lo.Base == 0 {
				t.Fatalf("index %d: lean machine refused %s (%v), full machine applied %s", lp.index, lb, errL, fb)
			}
			// The round is lost, to the log as to the watcher.
			if err := lp.full.Restore(fs); err != nil {
				t.Fatal(err)
			}
			lp.stats.refused++
		}
		// The lean machine must still hold what the full one held before.
		lp.steps = 0
		e.Refused(now)
		lp.compare(string(lb))
		return
	}
	if rf := lp.full.Apply(lp.index, fb); !bytes.Equal(rf, rl) {
		t.Fatalf("index %d: full report %s answered %s, lean report %s answered %s", lp.index, fb, rf, lb, rl)
	}
	switch {
	case fault == leanLostAck || resL.Noop == "duplicate":
		lp.stats.lostAcks++
		e.Lost()
	default:
		e.Applied(now)
	}
	lp.compare(string(lb))
	if fault == leanDuplicate {
		lp.stats.dup++
		lp.index++
		lp.log = append(lp.log, lb)
		rl, rf := lp.lean.Apply(lp.index, lb), lp.full.Apply(lp.index, fb)
		if r, err := DecodeResponse(rl); err != nil || r.Noop != "duplicate" || !bytes.Equal(rl, rf) {
			t.Fatalf("index %d: repeated report answered %s (full %s), want a duplicate no-op", lp.index, rl, rf)
		}
		lp.compare(string(lb))
	}
}

// compare requires the same state in both machines, but for what a
// repeated result keeps of its previous round (latency, completion time).
func (lp *leanPair) compare(after string) {
	lp.t.Helper()
	if lp.steps%lp.every == 0 {
		f, l := leanComparable(lp.t, lp.full), leanComparable(lp.t, lp.lean)
		if !bytes.Equal(f, l) {
			lp.t.Fatalf("after index %d (%s) the machines differ:\n%s", lp.index, after, jsonDiff(f, l))
		}
	}
	lp.steps++
	p, h := lp.lean.Policy()
	lp.policies = append(lp.policies, leanPolicy{p, h})
	if len(lp.policies) > 16 {
		lp.policies = lp.policies[1:]
	}
}

// restoreLean replaces the lean machine by one restored from its snapshot,
// as a follower that installs a snapshot: the repeat must work from it.
func (lp *leanPair) restoreLean() {
	m := New()
	if err := m.Restore(mustSnapshot(lp.t, lp.lean)); err != nil {
		lp.t.Fatal(err)
	}
	lp.lean = m
}

// jsonDiff lists where the JSON documents full and lean differ.
func jsonDiff(full, lean []byte) string {
	var a, b any
	_ = json.Unmarshal(full, &a)
	_ = json.Unmarshal(lean, &b)
	var out []string
	var walk func(path string, x, y any)
	walk = func(path string, x, y any) {
		if len(out) > 20 {
			return
		}
		xm, ok1 := x.(map[string]any)
		ym, ok2 := y.(map[string]any)
		if ok1 && ok2 {
			keys := map[string]bool{}
			for k := range xm {
				keys[k] = true
			}
			for k := range ym {
				keys[k] = true
			}
			for _, k := range slices.Sorted(maps.Keys(keys)) {
				walk(path+"."+k, xm[k], ym[k])
			}
			return
		}
		xs, ok1 := x.([]any)
		ys, ok2 := y.([]any)
		if ok1 && ok2 && len(xs) == len(ys) {
			for i := range xs {
				walk(fmt.Sprintf("%s[%d]", path, i), xs[i], ys[i])
			}
			return
		}
		xb, _ := json.Marshal(x)
		yb, _ := json.Marshal(y)
		if !bytes.Equal(xb, yb) {
			out = append(out, fmt.Sprintf("%s: full %s, lean %s", path, xb, yb))
		}
	}
	walk("", a, b)
	return strings.Join(out, "\n")
}

func mustSnapshot(t *testing.T, m *Machine) []byte {
	t.Helper()
	b, err := m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// leanComparable is m's snapshot without the latency and completion time
// of each probe's last result.
func leanComparable(t *testing.T, m *Machine) []byte {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	type kept struct{ latency, completed int64 }
	saved := map[*probeState]kept{}
	for _, ns := range m.st.Nodes {
		for _, ps := range ns.Probes {
			saved[ps] = kept{ps.Last.LatencyMS, ps.Last.CompletedAt}
			ps.Last.LatencyMS, ps.Last.CompletedAt = 0, 0
		}
	}
	b, err := json.Marshal(m.st)
	for ps, k := range saved {
		ps.Last.LatencyMS, ps.Last.CompletedAt = k.latency, k.completed
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLeanReportsDecideAsFullReports replays the schedules of the
// datadriven scripts through both encodings. The scripts' rounds carry no
// Seq, so each gets one (the same in both machines): a lean report needs
// a base.
func TestLeanReportsDecideAsFullReports(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("got scripts %v (err %v), want some", files, err)
	}
	var total leanStats
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			lp := newLeanPair(t)
			seq := map[string]uint64{}
			for _, b := range scriptLog(t, f) {
				c, err := Decode(b)
				o, ok := c.Payload.(Observe)
				if err != nil || !ok {
					lp.other(b)
					continue
				}
				if o.Seq == 0 {
					seq[o.Node]++
					o.Seq = 1_000_000 + seq[o.Node]
				}
				lp.report(c.At, o, c.At, 0, leanDelivered)
			}
			for _, e := range lp.lean.History() {
				if e.Kind == KindAutoFailover || e.Kind == KindAutoFailback {
					total.decisions++
				}
			}
			total.lean += lp.stats.lean
			total.full += lp.stats.full
		})
	}
	if total.lean < total.full || total.decisions == 0 {
		t.Errorf("scripts sent %d lean and %d full reports with %d decisions: want mostly lean, and decisions", total.lean, total.full, total.decisions)
	}
}

// scriptLog runs a script as TestScripts does, without its expectations,
// and returns every command it applied.
func scriptLog(t *testing.T, path string) [][]byte {
	h := &harness{t: t, m: New(), now: base}
	for _, c := range parseScript(t, path) {
		for _, l := range c.lines {
			if !strings.HasPrefix(strings.TrimSpace(l), "#") {
				h.run(l)
			}
		}
	}
	return h.log
}

// TestLeanReportsDecideAsFullReportsOnRandomSchedules replays random
// schedules shaped like a watcher trio's life: flapping probes, outages of
// a site and partitions of a node, partial rounds of one site, rounds
// missing a probe or naming an unknown one, silences longer than
// stale_after, policy changes that reach the nodes' files late, manual
// moves, latency spikes and certificate renewals; and on the lean side
// lost acknowledgements, reports never sent, retried proposals, replicas
// whose policy lags, another process reporting as the same node (so a
// base no longer matches) and followers restored from a snapshot. A
// refused lean report loses its round, in both machines.
//
// LEAN_SEEDS=n runs n schedules instead of leanRandomSchedules.
func TestLeanReportsDecideAsFullReportsOnRandomSchedules(t *testing.T) {
	seeds := uint64(leanRandomSchedules)
	if s := os.Getenv("LEAN_SEEDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("LEAN_SEEDS=%q", s)
		}
		seeds = uint64(n)
	}
	var total leanStats
	for seed := range seeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			lp := newLeanPair(t)
			lp.refusals, lp.every = true, 10
			runLeanSchedule(t, lp, rand.New(rand.NewPCG(seed, seed*7919+1)), 500, true)
			lp.steps = 0
			lp.compare("the end")
			for _, e := range lp.lean.History() {
				if e.Kind == KindAutoFailover || e.Kind == KindAutoFailback {
					lp.stats.decisions++
				}
			}
			s := lp.stats
			t.Logf("lean %d (heartbeats %d) full %d refused %d lost acks %d not sent %d duplicates %d automatic decisions %d; bytes lean %d full %d",
				s.lean, s.heartbeats, s.full, s.refused, s.lostAcks, s.notSent, s.dup, s.decisions, s.leanBytes, s.fullBytes)
			total.lean += s.lean
			total.full += s.full
			total.heartbeats += s.heartbeats
			total.refused += s.refused
			total.decisions += s.decisions
		})
	}
	if total.lean <= total.full || total.heartbeats == 0 || total.refused == 0 || total.decisions == 0 {
		t.Errorf("schedules exercised too little: %+v", total)
	}
}

// With format 2 each failure carries its watcher's streak, and the machine
// repeats a lean report's failure as one more of it: lean and full reports
// still decide alike, on the same random schedules.
func TestLeanReportsWithStreaksDecideAsFullReports(t *testing.T) {
	var decisions, stamped int
	for seed := range uint64(leanRandomSchedules) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			lp := newLeanPair(t)
			lp.refusals, lp.every = true, 10
			lp.streaks = map[string]*StreakCounter{}
			lp.other(mustEncode(Command{At: base, Payload: SetFormat{Format: 2}}))
			runLeanSchedule(t, lp, rand.New(rand.NewPCG(seed, seed*7919+1)), 500, true)
			lp.steps = 0
			lp.compare("the end")
			for _, e := range lp.lean.History() {
				if e.Kind == KindAutoFailover || e.Kind == KindAutoFailback {
					decisions++
				}
			}
			for _, b := range lp.log {
				if bytes.Contains(b, []byte(`"streak":`)) {
					stamped++
				}
			}
		})
	}
	if decisions == 0 || stamped == 0 {
		t.Errorf("schedules exercised too little: %d automatic decisions, %d reports with a streak", decisions, stamped)
	}
}

// leanNode is one simulated watcher: its file's policy (what it probes and
// the hash it reports), its clock skew and what it sees.
type leanNode struct {
	id       string
	file     Policy
	hash     string
	skew     int64
	seq      uint64
	silentTo int64
	cut      bool // partitioned: sees both sites down
	probes   map[string]*leanTruth
}

type leanTruth struct {
	ok        bool
	reason    int
	latency   int64
	certEnd   int64
	spikeLeft int
}

func randomLeanPolicy(r *rand.Rand, extra bool) Policy {
	probes := []ProbeRef{{Name: "web", Critical: true}, {Name: "api", Critical: true}, {Name: "db"}, {Name: "lb"}}
	if extra {
		probes = append(probes, ProbeRef{Name: "extra", Critical: r.IntN(2) == 0})
	}
	p := scriptPolicyDefaults()
	p.Sites = map[Site]SitePolicy{Primary: {Probes: probes}, Backup: {Probes: slices.Clone(probes)}}
	p.Fall = 2 + r.IntN(3)
	p.Rise = 1 + r.IntN(3)
	if r.IntN(2) == 0 {
		p.StaleAfter = time.Duration(2+r.IntN(4)) * time.Second
	}
	p.Failback = FailbackPolicy{Mode: []string{FailbackManual, FailbackAuto}[r.IntN(2)], After: 20 * time.Second}
	p.BlockWindow = time.Duration(30+r.IntN(90)) * time.Second
	return p
}

func scriptPolicyDefaults() Policy {
	return Policy{
		Nodes: []string{"a", "b", "c"}, Quorum: 2, Interval: time.Second, AutoFailover: true,
		Zone:    "example.org.",
		Records: []Record{{Name: "lms", Type: "A", TTL: 60, Primary: []string{"203.0.113.10"}, Backup: []string{"198.51.100.10"}}},
	}
}

var leanReasons = []struct{ class, phase, reason string }{
	{"connect", "tcp connect", "connection refused"},
	{"timeout", "tls handshake", "i/o timeout"},
	{"status", "http", "status 503"},
}

// runLeanSchedule drives lp through rounds seconds of a trio's life.
func runLeanSchedule(t *testing.T, lp *leanPair, r *rand.Rand, rounds int, faults bool) {
	t.Helper()
	at := base
	pol := randomLeanPolicy(r, false)
	lp.other(mustEncode(Command{At: at, Payload: SetPolicy{Policy: pol, Actor: "ops"}}))
	var nodes []*leanNode
	for _, id := range pol.Nodes {
		nodes = append(nodes, &leanNode{id: id, file: pol, hash: pol.Hash(), skew: r.Int64N(int64(time.Second)) - int64(time.Second)/2, probes: map[string]*leanTruth{}})
	}
	down := map[Site]int{} // rounds left of a site-wide outage
	for round := range rounds {
		at += int64(time.Second)
		for _, site := range sites {
			if down[site] > 0 {
				down[site]--
			} else if r.IntN(120) == 0 {
				down[site] = 2 + r.IntN(12)
			}
		}
		switch x := r.IntN(400); {
		case x < 3: // a policy change, which the files get later
			pol = randomLeanPolicy(r, r.IntN(2) == 0)
			lp.other(mustEncode(Command{At: at, Payload: SetPolicy{Policy: pol, Actor: "ops"}}))
		case x < 5:
			lp.other(mustEncode(Command{At: at, Payload: Failover{To: Backup, Actor: "alice", AckBlock: true, Force: r.IntN(2) == 0}}))
		case x < 7:
			lp.other(mustEncode(Command{At: at, Payload: Failback{Actor: "alice", AckBlock: true}}))
		case x < 9:
			lp.other(mustEncode(Command{At: at, Payload: Ack{Actor: "alice"}}))
		case x < 10:
			lp.other(mustEncode(Command{At: at, Payload: Pause{Actor: "alice", Until: at + int64(20*time.Second)}}))
		}
		if d := lp.lean.Desired(); d.Gen != 0 && !d.Done && r.IntN(3) == 0 {
			lp.other(mustEncode(Command{At: at, Payload: ActionResult{Gen: d.Gen, Outcome: OutcomeVerified, Actor: "a", WrittenAt: at, VerifiedAt: at}}))
		}
		for i, n := range nodes {
			if n.file.Hash() != pol.Hash() && r.IntN(4) == 0 {
				n.file, n.hash = pol, pol.Hash()
			}
			if r.IntN(150) == 0 {
				n.silentTo = at + int64(time.Duration(2+r.IntN(8))*time.Second)
			}
			if r.IntN(200) == 0 {
				n.cut = !n.cut
			}
			if at < n.silentTo {
				continue
			}
			stamp := at + int64(i)*int64(time.Second)/3 // the nodes' phases
			o := n.round(r, stamp, down)
			now := stamp + n.skew + int64(50*time.Millisecond)
			fault, lag := leanDelivered, 0
			if faults {
				switch x := r.IntN(1000); {
				case x < 5:
					fault = leanLostAck
				case x < 10:
					fault = leanNotSent
				case x < 20:
					fault = leanDuplicate
				case x < 40:
					lag = 1 + r.IntN(8)
				case x < 43:
					// Another process reports as this node: the encoder's
					// base is no longer the node's last round.
					imp := n.round(r, stamp, down)
					imp.Seq = 5_000_000 + uint64(round)
					lp.other(mustEncode(Command{At: stamp, Payload: imp}))
				}
			}
			lp.report(stamp, o, now, lag, fault)
		}
		lp.other(mustEncode(Command{At: at + int64(900*time.Millisecond), Payload: Tick{}}))
		if faults && r.IntN(50) == 0 {
			lp.restoreLean()
		}
	}
}

// round is what n reports at stamp: every probe of its file, or of one
// site (a partial round), sometimes without one probe or with one its
// policy does not name.
func (n *leanNode) round(r *rand.Rand, stamp int64, down map[Site]int) Observe {
	n.seq++
	o := Observe{Node: n.id, Seq: n.seq, PolicyHash: n.hash}
	if r.IntN(50) == 0 {
		o.PolicyHash = "0123456789ab" // a file nobody replicated
	}
	only := Site("")
	if r.IntN(10) == 0 {
		only = sites[r.IntN(2)]
	}
	for _, site := range sites {
		if only != "" && site != only {
			continue
		}
		for _, ref := range n.file.Sites[site].Probes {
			if r.IntN(60) == 0 {
				continue // not in this round
			}
			o.Results = append(o.Results, n.result(r, site, ref.Name, stamp, down[site] > 0))
		}
	}
	if r.IntN(80) == 0 {
		o.Results = append(o.Results, n.result(r, Primary, "ghost", stamp, false))
	}
	return o
}

func (n *leanNode) result(r *rand.Rand, site Site, probe string, stamp int64, siteDown bool) ProbeResult {
	k := probeKey(site, probe)
	tr := n.probes[k]
	if tr == nil {
		tr = &leanTruth{ok: true, latency: 2 + r.Int64N(30), certEnd: 1_800_000_000}
		n.probes[k] = tr
	}
	if r.IntN(300) == 0 || !tr.ok && r.IntN(8) == 0 {
		tr.ok = !tr.ok // a flap of this probe from this node
	}
	if r.IntN(100) == 0 {
		tr.reason = r.IntN(len(leanReasons))
	}
	if r.IntN(500) == 0 {
		tr.certEnd += 90 * 86400 // renewed
	}
	if r.IntN(30) == 0 {
		tr.spikeLeft = 1 + r.IntN(3)
	}
	res := ProbeResult{Site: site, Probe: probe, OK: tr.ok && !siteDown && !n.cut, CertExpiry: tr.certEnd,
		LatencyMS: max(1, tr.latency+r.Int64N(5)-2), CompletedAt: stamp + n.skew - r.Int64N(int64(200*time.Millisecond))}
	if tr.spikeLeft > 0 {
		tr.spikeLeft--
		res.LatencyMS += 40 + r.Int64N(200)
	}
	if !res.OK {
		x := leanReasons[tr.reason]
		res.Class, res.Phase, res.Reason = x.class, x.phase, x.reason
		if siteDown || n.cut {
			res.Class, res.Phase, res.Reason = "connect", "tcp connect", "connection refused"
		}
	}
	return res
}

// A lean report the recorded state cannot complete as the watcher meant it
// is refused with ErrBadCommand and changes nothing; a malformed one too.
func TestLeanReportRefusals(t *testing.T) {
	p := scriptPolicyDefaults()
	p.Fall, p.Rise = 3, 2
	p.Sites = map[Site]SitePolicy{Primary: {Probes: []ProbeRef{{Name: "web", Critical: true}, {Name: "api"}}}, Backup: {Probes: []ProbeRef{{Name: "web", Critical: true}}}}
	h := p.Hash()
	ok := func(site Site, probe string) ProbeResult {
		return ProbeResult{Site: site, Probe: probe, OK: true, LatencyMS: 7, CompletedAt: base + 1}
	}
	setup := func(t *testing.T, first []ProbeResult) *Machine {
		m := New()
		mustStep(t, m, 1, Command{At: base, Payload: SetPolicy{Policy: p}})
		mustStep(t, m, 2, Command{At: base + 1e9, Payload: Observe{Node: "a", Seq: 1, PolicyHash: h, Results: first}})
		return m
	}
	all := []ProbeResult{ok(Primary, "web"), ok(Primary, "api"), ok(Backup, "web")}
	both := []Site{Primary, Backup}
	for _, c := range []struct {
		name  string
		first []ProbeResult
		o     Observe
		want  string
	}{
		{"base is not the last round", all, Observe{Node: "a", Seq: 3, Base: 2, PolicyHash: h, Sites: both}, "lean report on round 2, but the last applied round is 1"},
		{"node never reported", all, Observe{Node: "b", Seq: 2, Base: 1, PolicyHash: h, Sites: both}, "last applied round is 0"},
		{"other policy than the base's", all, Observe{Node: "a", Seq: 2, Base: 1, PolicyHash: "0123456789ab", Sites: both}, "lean report under policy 0123456789ab"},
		{"repeat of a probe never recorded", all[:2], Observe{Node: "a", Seq: 2, Base: 1, PolicyHash: h, Sites: both}, "repeats backup/web, which has no recorded result"},
		{"no site covered", all, Observe{Node: "a", Seq: 2, Base: 1, PolicyHash: h}, "covers no site"},
		{"unknown site", all, Observe{Node: "a", Seq: 2, Base: 1, PolicyHash: h, Sites: []Site{"elsewhere"}}, `sites[0]: "elsewhere" must be primary or backup`},
		{"site twice", all, Observe{Node: "a", Seq: 2, Base: 1, PolicyHash: h, Sites: []Site{Backup, Backup}}, "sites[1]: backup twice"},
		{"sites without base", all, Observe{Node: "a", Seq: 2, PolicyHash: h, Sites: both, Results: all}, "sites or round_at without base"},
		{"round_at without base", all, Observe{Node: "a", Seq: 2, PolicyHash: h, RoundAt: base, Results: all}, "sites or round_at without base"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := setup(t, c.first)
			before := mustSnapshot(t, m)
			_, err := m.Step(3, Command{At: base + 2e9, Payload: c.o})
			if !errors.Is(err, ErrBadCommand) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrBadCommand saying %q", err, c.want)
			}
			if after := mustSnapshot(t, m); !bytes.Equal(before, after) {
				t.Errorf("the refused report changed the state:\n%s", jsonDiff(before, after))
			}
		})
	}
	t.Run("policy replaced since the base", func(t *testing.T) {
		m := setup(t, all)
		q := p.clone()
		q.Fall = 4
		mustStep(t, m, 3, Command{At: base + 2e9, Payload: SetPolicy{Policy: q}})
		if _, err := m.Step(4, Command{At: base + 3e9, Payload: Observe{Node: "a", Seq: 2, Base: 1, PolicyHash: h, Sites: both}}); !errors.Is(err, ErrBadCommand) {
			t.Fatalf("got %v, want ErrBadCommand", err)
		}
	})
	t.Run("a retried round is a duplicate before its base is checked", func(t *testing.T) {
		m := setup(t, all)
		r, err := m.Step(3, Command{At: base + 2e9, Payload: Observe{Node: "a", Seq: 1, Base: 9, PolicyHash: h, Sites: both}})
		if err != nil || r.Noop != "duplicate" {
			t.Fatalf("got %+v, %v, want a duplicate no-op", r, err)
		}
	})
	t.Run("heartbeat repeats every covered probe", func(t *testing.T) {
		m := setup(t, all)
		fail := ProbeResult{Site: Primary, Probe: "api", Class: "connect", Reason: "refused", CompletedAt: base + 2e9 - 5}
		mustStep(t, m, 3, Command{At: base + 2e9, Payload: Observe{Node: "a", Seq: 2, Base: 1, PolicyHash: h, Sites: []Site{Primary}, RoundAt: base + 2e9, Results: []ProbeResult{fail}}})
		mustStep(t, m, 4, Command{At: base + 3e9, Payload: Observe{Node: "a", Seq: 3, Base: 2, PolicyHash: h, Sites: both, RoundAt: base + 3e9, Results: []ProbeResult{}}})
		ps := m.st.Nodes["a"].Probes
		for k, want := range map[string]string{"primary/web": "+++", "primary/api": "+--", "backup/web": "++"} {
			if got := ps[k].Ring; got != want {
				t.Errorf("%s: ring %q, want %q", k, got, want)
			}
		}
		if got := ps["primary/api"]; got.Fails != 2 || got.FirstFailAt != fail.CompletedAt || got.Last.CompletedAt != base+3e9 || got.Last.Reason != "refused" {
			t.Errorf("primary/api: got %+v, want 2 failures from %d, the last one repeated at %d", got, fail.CompletedAt, base+3e9)
		}
		if got := ps["primary/web"].Last; got.LatencyMS != 7 || got.CompletedAt != base+3e9 {
			t.Errorf("primary/web: got %+v, want the latency of round 1, completed at the heartbeat's round_at", got)
		}
	})
}

// A lean report without a policy hash is under its base's policy: applied
// exactly as the same report with the hash while that is the replicated
// policy, refused with nothing changed once it is not, and the node's
// recorded hash stays the policy's. A full report without a hash is
// recorded as it came, a node running some other policy.
func TestLeanReportWithoutPolicyHash(t *testing.T) {
	p := scriptPolicyDefaults()
	p.Fall, p.Rise = 3, 2
	p.Sites = map[Site]SitePolicy{Primary: {Probes: []ProbeRef{{Name: "web", Critical: true}, {Name: "api"}}}, Backup: {Probes: []ProbeRef{{Name: "web", Critical: true}}}}
	h := p.Hash()
	all := []ProbeResult{
		{Site: Primary, Probe: "web", OK: true, LatencyMS: 7, CompletedAt: base + 1},
		{Site: Primary, Probe: "api", OK: true, LatencyMS: 7, CompletedAt: base + 1},
		{Site: Backup, Probe: "web", OK: true, LatencyMS: 7, CompletedAt: base + 1},
	}
	both := []Site{Primary, Backup}
	fail := ProbeResult{Site: Primary, Probe: "api", Class: "connect", Reason: "refused", CompletedAt: base + 2e9 - 5}
	setup := func(t *testing.T) *Machine {
		m := New()
		mustStep(t, m, 1, Command{At: base, Payload: SetPolicy{Policy: p}})
		mustStep(t, m, 2, Command{At: base + 1e9, Payload: Observe{Node: "a", Seq: 1, PolicyHash: h, Results: all}})
		return m
	}
	lean := func(hash string) []Observe {
		return []Observe{
			{Node: "a", Seq: 2, Base: 1, PolicyHash: hash, Sites: []Site{Primary}, RoundAt: base + 2e9, Results: []ProbeResult{fail}},
			{Node: "a", Seq: 3, Base: 2, PolicyHash: hash, Sites: both, RoundAt: base + 3e9, Results: []ProbeResult{}},
		}
	}
	t.Run("applied as with the hash", func(t *testing.T) {
		with, without := setup(t), setup(t)
		for i := range 2 {
			c := Command{At: base + int64(i+2)*1e9, Payload: lean(h)[i]}
			rw, err := with.Step(uint64(i+3), c)
			if err != nil {
				t.Fatalf("report %d with the hash: %v", i, err)
			}
			c.Payload = lean("")[i]
			rn, err := without.Step(uint64(i+3), c)
			if err != nil {
				t.Fatalf("report %d without the hash: %v", i, err)
			}
			if !reflect.DeepEqual(rw, rn) {
				t.Errorf("report %d: with the hash %+v, without %+v", i, rw, rn)
			}
			if a, b := mustSnapshot(t, with), mustSnapshot(t, without); !bytes.Equal(a, b) {
				t.Fatalf("report %d: the states differ:\n%s", i, jsonDiff(a, b))
			}
		}
		if got := without.st.Nodes["a"].Probes["primary/api"].Fails; got != 2 {
			t.Errorf("primary/api: %d failures, want 2 (one sent, one repeated)", got)
		}
		v := without.View()
		if n := v.Nodes[0]; n.Node != "a" || n.PolicyHash != h || n.HashMismatch {
			t.Errorf("node view %s: policy hash %q (mismatch %v), want %q", n.Node, n.PolicyHash, n.HashMismatch, h)
		}
		for _, w := range v.Warnings {
			if strings.Contains(w, "runs policy") {
				t.Errorf("warning %q for a node that runs the replicated policy", w)
			}
		}
		b, err := json.Marshal(v.Nodes[0])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(`"policy_hash":"`+h+`"`)) {
			t.Errorf("node a's status %s: want its policy hash %s", b, ShortHash(h))
		}
	})
	t.Run("refused after a policy change", func(t *testing.T) {
		m := setup(t)
		q := p.clone()
		q.Fall = 4
		mustStep(t, m, 3, Command{At: base + 2e9, Payload: SetPolicy{Policy: q}})
		before := mustSnapshot(t, m)
		_, err := m.Step(4, Command{At: base + 3e9, Payload: lean("")[0]})
		if want := "lean report under the policy of round 1, " + ShortHash(h) + ", but the policy is " + ShortHash(q.Hash()); !errors.Is(err, ErrBadCommand) || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v, want ErrBadCommand saying %q", err, want)
		}
		if after := mustSnapshot(t, m); !bytes.Equal(before, after) {
			t.Errorf("the refused report changed the state:\n%s", jsonDiff(before, after))
		}
	})
	t.Run("refused when its entry writes the hash empty", func(t *testing.T) {
		// What a leader from before hashless lean reports stamps: its
		// replicas refuse it, and so must every other.
		for _, hash := range []string{`"policy_hash":"",`, `"policy_hash":null,`} {
			m := setup(t)
			before := mustSnapshot(t, m)
			entry := `{"v":1,"type":"observe","observe":{"node":"a","at":` + strconv.FormatInt(base+2e9, 10) + `,"seq":2,` + hash + `"results":[],"base":1,"sites":["primary","backup"]}}`
			_, err := DecodeResponse(m.Apply(3, []byte(entry)))
			if !errors.Is(err, ErrBadCommand) || !strings.Contains(err.Error(), "lean report under policy ,") {
				t.Fatalf("%s: got %v, want ErrBadCommand for a report under no policy", entry, err)
			}
			if after := mustSnapshot(t, m); !bytes.Equal(before, after) {
				t.Errorf("%s: the refused report changed the state:\n%s", entry, jsonDiff(before, after))
			}
			without := strings.Replace(entry, hash, "", 1)
			if _, err := DecodeResponse(m.Apply(3, []byte(without))); err != nil {
				t.Errorf("%s: %v, want it applied", without, err)
			}
		}
	})
	t.Run("a full report without the hash is recorded as before", func(t *testing.T) {
		m := setup(t)
		mustStep(t, m, 3, Command{At: base + 2e9, Payload: Observe{Node: "a", Seq: 2, Results: all}})
		if got := m.st.Nodes["a"].PolicyHash; got != "" {
			t.Errorf("recorded policy hash %q, want none, as the report said", got)
		}
		if n := m.View().Nodes[0]; !n.HashMismatch {
			t.Errorf("node view %+v: want a policy mismatch", n)
		}
		// Its policy is none: a lean report on it, with or without a
		// hash, is refused.
		for _, hash := range []string{"", h} {
			o := lean(hash)[0]
			o.Base, o.Seq = 2, 3
			if _, err := m.Step(4, Command{At: base + 3e9, Payload: o}); !errors.Is(err, ErrBadCommand) {
				t.Errorf("lean report with hash %q on a report without one: got %v, want ErrBadCommand", hash, err)
			}
		}
	})
}

func mustStep(t testing.TB, m *Machine, index uint64, c Command) {
	t.Helper()
	if _, err := m.Step(index, c); err != nil {
		t.Fatalf("step %d %s: %v", index, c.Type(), err)
	}
}

// The encoder sends what the log does not know: changes at once, material
// changes of the latency level at most every LeanLatencyEvery (a one-round
// blip is none), small moves at most every LeanRefreshEvery, and every
// result of a site the round does not cover.
func TestLeanEncoderSendsWhatTheLogDoesNotKnow(t *testing.T) {
	p := scriptPolicyDefaults()
	p.Fall, p.Rise = 3, 2
	p.Sites = map[Site]SitePolicy{Primary: {Probes: []ProbeRef{{Name: "web", Critical: true}, {Name: "api"}}}, Backup: {Probes: []ProbeRef{{Name: "web", Critical: true}}}}
	m := New()
	mustStep(t, m, 1, Command{At: base, Payload: SetPolicy{Policy: p}})
	pol, h := m.Policy()
	var e LeanEncoder
	seq, idx := uint64(0), uint64(1)
	lat := map[string]int64{"primary/web": 5, "primary/api": 5, "backup/web": 5}
	cert := int64(1_800_000_000)
	send := func(at time.Duration, extra ...ProbeResult) []string {
		t.Helper()
		seq++
		now := base + int64(at)
		o := Observe{Node: "a", Seq: seq, PolicyHash: h}
		for _, k := range []string{"primary/web", "primary/api", "backup/web"} {
			if lat[k] < 0 {
				continue // not in this round
			}
			site, name, _ := cutKey(k)
			o.Results = append(o.Results, ProbeResult{Site: site, Probe: name, OK: true, LatencyMS: lat[k], CertExpiry: cert, CompletedAt: now})
		}
		o.Results = append(o.Results, extra...)
		idx++
		return leanSend(t, m, &e, idx, o, pol, h, now)
	}
	check := func(step string, got []string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s: sent %v, want %v", step, got, want)
		}
	}
	check("first round", send(0), "full", "primary/web", "primary/api", "backup/web")
	lat["primary/web"] = 6
	check("a small move", send(time.Second))
	lat["primary/web"] = 40
	for at := 2; at < 10; at++ {
		check(fmt.Sprintf("a material change, %ds after the last send", at), send(time.Duration(at)*time.Second))
	}
	check("the same, 10s after", send(10*time.Second), "primary/web")
	lat["primary/web"] = 5
	for at := 11; at < 20; at++ {
		check(fmt.Sprintf("back to normal, %ds after the last send", at-10), send(time.Duration(at)*time.Second))
	}
	check("back to normal 10s later", send(20*time.Second), "primary/web")
	lat["primary/api"] = 6
	check("a small move before the refresh", send(29*time.Second))
	lat["primary/web"] = 90
	check("a one-round blip", send(40*time.Second))
	lat["primary/web"] = 5
	check("gone the next round", send(41*time.Second))
	check("a small move after the refresh period", send(61*time.Second), "primary/api")
	lat["primary/api"] = -1
	check("a round without primary/api", send(62*time.Second), "primary/web")
	lat["primary/api"] = 6
	check("an unknown probe", send(63*time.Second, ProbeResult{Site: Backup, Probe: "ghost", OK: true}), "backup/ghost")
	cert += 90 * 86400
	check("certificates renewed", send(64*time.Second), "primary/web", "primary/api", "backup/web")
	check("nothing new", send(65*time.Second))
	if got := m.st.Nodes["a"].Probes["primary/web"].Last.LatencyMS; got != 5 {
		t.Errorf("primary/web: recorded latency %d, want 5", got)
	}
}

// leanSend encodes the round o with e at now, applies it to m at index
// idx, tells e it was applied, and lists what went out: "full" first for
// a full report, then each result's site/probe.
func leanSend(t *testing.T, m *Machine, e *LeanEncoder, idx uint64, o Observe, pol *Policy, h string, now int64) []string {
	t.Helper()
	lo := e.Encode(o, pol, h, now)
	if _, err := m.Step(idx, Command{At: now, Payload: lo}); err != nil {
		t.Fatalf("at %s: %v", time.Duration(now-base), err)
	}
	e.Applied(now)
	var out []string
	if lo.Base == 0 {
		out = append(out, "full")
	}
	for _, r := range lo.Results {
		out = append(out, probeKey(r.Site, r.Probe))
	}
	return out
}

// A probe whose latency scatters round to round around a steady level, as
// an https probe does on a busy host, sends no latency until its refresh
// is due; the old comparison with the last sent sample sent it every
// LeanLatencyEvery.
func TestLeanEncoderIgnoresLatencyJitter(t *testing.T) {
	p := scriptPolicyDefaults()
	p.Fall, p.Rise = 3, 2
	p.Sites = map[Site]SitePolicy{Primary: {Probes: []ProbeRef{{Name: "web", Critical: true}}}, Backup: {Probes: []ProbeRef{{Name: "web", Critical: true}}}}
	m := New()
	mustStep(t, m, 1, Command{At: base, Payload: SetPolicy{Policy: p}})
	pol, h := m.Policy()
	var e LeanEncoder
	// Around 30 ms, by up to 3x either way (the level stays put).
	scatter := []int64{30, 90, 70, 10, 15, 60, 75, 12, 45, 30, 20, 80, 65, 11, 12}
	for i := range int(LeanRefreshEvery/time.Second) / 2 {
		now := base + int64(i)*int64(time.Second)
		lat := scatter[i%len(scatter)]
		o := Observe{Node: "a", Seq: uint64(i + 1), PolicyHash: h, Results: []ProbeResult{
			{Site: Primary, Probe: "web", OK: true, LatencyMS: lat, CompletedAt: now},
			{Site: Backup, Probe: "web", OK: true, LatencyMS: 30, CompletedAt: now}}}
		lo := e.Encode(o, pol, h, now)
		if _, err := m.Step(uint64(i+2), Command{At: now, Payload: lo}); err != nil {
			t.Fatalf("second %d: %v", i, err)
		}
		e.Applied(now)
		if i > 0 && (lo.Base == 0 || len(lo.Results) != 0) {
			t.Fatalf("second %d (latency %d ms): sent %+v, want a heartbeat", i, lat, lo)
		}
	}
}
