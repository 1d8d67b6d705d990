package failover

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Reasons a node abstains.
const (
	abstainNever     = "never reported"
	abstainStale     = "stale"
	abstainSelfCheck = "self-check failed: it sees both sites DOWN, so its own network is the likely problem"
)

// vote is one node's verdict on both sites.
type vote struct {
	v       [2]Verdict // indexed like sites
	abstain string
}

func siteIdx(s Site) int {
	if s == Backup {
		return 1
	}
	return 0
}

// nodeVote judges both sites as node id sees them at now.
func (s *state) nodeVote(id string, now int64) vote {
	p := s.Policy
	ns := s.Nodes[id]
	cutoff := now - int64(p.stale())
	switch {
	case ns == nil || !ns.Reported:
		return vote{v: [2]Verdict{Abstain, Abstain}, abstain: abstainNever}
	case ns.LastAt < cutoff:
		return vote{v: [2]Verdict{Abstain, Abstain}, abstain: abstainStale}
	}
	var out vote
	for i, site := range sites {
		anyDown, allUp := false, true
		for _, ref := range p.Sites[site].Probes {
			if !ref.Critical {
				continue
			}
			st := s.probeVerdict(ns, site, ref.Name, cutoff)
			if st == Down {
				anyDown = true
			}
			if st != Up {
				allUp = false
			}
		}
		switch {
		case anyDown:
			out.v[i] = Down
		case allUp:
			out.v[i] = Up
		default:
			out.v[i] = Unknown
		}
	}
	if out.v[0] == Down && out.v[1] == Down {
		return vote{v: [2]Verdict{Abstain, Abstain}, abstain: abstainSelfCheck}
	}
	return out
}

// probeVerdict is a probe's hysteresis state, or UNKNOWN when its last
// result is older than cutoff (a watcher that stopped running a probe must
// not keep voting with its old state).
func (s *state) probeVerdict(ns *nodeState, site Site, probe string, cutoff int64) Verdict {
	ps := ns.probe(site, probe)
	if ps == nil || ps.LastAt < cutoff {
		return Unknown
	}
	return ps.State
}

// gate says whether the failback gate is open at now: every gate probe UP
// on at least quorum fresh, non-abstaining watchers. Stale or unknown counts
// as closed (fail closed). With no gate it is always open.
func (s *state) gate(now int64) (open bool, msg string) {
	p := s.Policy
	if len(p.FailbackGate) == 0 {
		return true, ""
	}
	cutoff := now - int64(p.stale())
	var passing []string
	var why []string
	for _, id := range p.Nodes {
		if v := s.nodeVote(id, now); v.abstain != "" {
			why = append(why, id+": abstains ("+v.abstain+")")
			continue
		}
		ns := s.Nodes[id]
		ok := true
		for _, name := range p.FailbackGate {
			if st := s.probeVerdict(ns, Primary, name, cutoff); st != Up {
				ok = false
				detail := string(st)
				if ps := ns.probe(Primary, name); ps != nil && !ps.Last.OK {
					detail += " " + strings.TrimSpace(ps.Last.Class+" "+ps.Last.Reason)
				}
				why = append(why, fmt.Sprintf("%s: %s %s", id, name, detail))
			}
		}
		if ok {
			passing = append(passing, id)
		}
	}
	if len(passing) >= p.Quorum {
		return true, ""
	}
	return false, fmt.Sprintf("failback needs the primary's %s UP at quorum: UP on %d of %d watchers (quorum %d); %s",
		strings.Join(p.FailbackGate, ", "), len(passing), len(p.Nodes), p.Quorum, strings.Join(why, "; "))
}

// quorumVerdicts are the Verdicts tallies gives both sites at now
// (indexed like sites), and whether any node abstains, without the lists
// of nodes: what the evaluation of a group whose active site is not DOWN
// needs, and what the suspicion read of every group needs.
func (s *state) quorumVerdicts(now int64) (v [2]Verdict, abstains bool) {
	p := s.Policy
	var up, down [2]int
	for _, id := range p.Nodes {
		nv := s.nodeVote(id, now)
		abstains = abstains || nv.abstain != ""
		for i := range sites {
			switch nv.v[i] {
			case Up:
				up[i]++
			case Down:
				down[i]++
			}
		}
	}
	for i := range sites {
		v[i] = quorumVerdict(up[i], down[i], p.Quorum)
	}
	return v, abstains
}

// quorumVerdict is a site's verdict from its UP and DOWN votes.
func quorumVerdict(up, down, quorum int) Verdict {
	switch {
	case down >= quorum:
		return Down
	case up >= quorum:
		return Up
	}
	return NoQuorum
}

// tallies counts the votes of every policy node for both sites at now.
func (s *state) tallies(now int64) map[Site]Tally {
	p := s.Policy
	out := make(map[Site]Tally, 2)
	if p == nil {
		return out
	}
	var ts [2]Tally
	for i := range ts {
		// Empty lists, not nil: they encode as [] for the status API.
		ts[i] = Tally{Up: []string{}, Down: []string{}, Abstain: []string{}, Unknown: []string{}}
	}
	for _, id := range p.Nodes { // sorted by normalize
		v := s.nodeVote(id, now)
		for i := range sites {
			t := &ts[i]
			switch v.v[i] {
			case Up:
				t.Up = append(t.Up, id)
			case Down:
				t.Down = append(t.Down, id)
			case Abstain:
				t.Abstain = append(t.Abstain, id)
			default:
				t.Unknown = append(t.Unknown, id)
			}
		}
	}
	for i, site := range sites {
		t := ts[i]
		t.Quorum = p.Quorum
		t.Verdict = quorumVerdict(len(t.Up), len(t.Down), p.Quorum)
		out[site] = t
	}
	return out
}

// evidence records every node's votes and failing critical probes at now.
func (s *state) evidence(now int64) []NodeEvidence {
	p := s.Policy
	out := make([]NodeEvidence, 0, len(p.Nodes))
	cutoff := now - int64(p.stale())
	for _, id := range p.Nodes {
		v := s.nodeVote(id, now)
		ev := NodeEvidence{Node: id, Abstain: v.abstain, Votes: map[Site]Verdict{Primary: v.v[0], Backup: v.v[1]}}
		if ns := s.Nodes[id]; ns != nil {
			ev.LastReport = ns.LastAt
			for _, site := range sites {
				for _, ref := range p.Sites[site].Probes {
					ps := ns.probe(site, ref.Name)
					if !ref.Critical || ps == nil || ps.LastAt < cutoff || (ps.State != Down && ps.Fails == 0) {
						continue
					}
					pf := ProbeFailure{
						Site: site, Probe: ref.Name, State: ps.State, Fails: ps.Fails, FailSince: ps.FailSince,
						Class: ps.Last.Class, Phase: ps.Last.Phase, Reason: ps.Last.Reason,
					}
					if !ps.Last.OK && ps.Last.countsStreak(ps.LastAt, int64(p.stale())) {
						pf.StreakAt = ps.Last.StreakAt
					}
					ev.Failing = append(ev.Failing, pf)
				}
			}
		}
		out = append(out, ev)
	}
	return out
}

// detection returns the evidence times of site being DOWN at quorum, on
// the watchers' clocks: the first failure of a critical probe of the site
// on any watcher that does not abstain, and the completion of the probe that
// gave the quorum-th DOWN voter its fall-th failure (a voter's own time is
// its earliest DOWN critical probe's). When a DOWN voter did not stamp its
// results, the detection time is the leader-stamped DownSince, as in logs
// written before watchers stamped them. Both are 0 when the site is not DOWN
// at quorum. They are evidence only: no rule reads them.
func (s *state) detection(site Site, now int64) Timings {
	since, down := s.DownSince[site]
	if !down {
		return Timings{}
	}
	p := s.Policy
	cutoff := now - int64(p.stale())
	var first int64
	var fell []int64
	stamped := true
	for _, id := range p.Nodes {
		v := s.nodeVote(id, now)
		if v.abstain != "" {
			continue
		}
		ns := s.Nodes[id]
		var nodeFell int64
		nodeStamped := true
		for _, ref := range p.Sites[site].Probes {
			ps := ns.probe(site, ref.Name)
			if !ref.Critical || ps == nil || ps.LastAt < cutoff || (ps.State != Down && ps.Fails == 0) {
				continue
			}
			if ps.FirstFailAt != 0 && (first == 0 || ps.FirstFailAt < first) {
				first = ps.FirstFailAt
			}
			if ps.State == Down {
				switch {
				case ps.FellAt == 0:
					nodeStamped = false
				case nodeFell == 0 || ps.FellAt < nodeFell:
					nodeFell = ps.FellAt
				}
			}
		}
		if v.v[siteIdx(site)] == Down {
			stamped = stamped && nodeStamped
			fell = append(fell, nodeFell)
		}
	}
	t := Timings{FirstFailureAt: first, DetectedAt: since}
	if stamped && len(fell) >= p.Quorum {
		slices.Sort(fell)
		t.DetectedAt = fell[p.Quorum-1]
	}
	if s.LeaderlessTo > cmp.Or(first, since) {
		// The episode waited for a leader: a gap of its own.
		t.LeaderlessFrom, t.LeaderlessTo = s.LeaderlessFrom, s.LeaderlessTo
	}
	return t
}

// evaluate makes the automatic decisions the policy allows at s.Now, in
// every failover group: DefaultGroup's go to res itself, each other
// group's that made a decision or withheld one to res.Groups. Each group
// is judged by its own probes, records and rules alone, so an outage, a
// pause or a refusal in one never changes another (invariant 10). It runs
// after every Observe, Tick and SetPolicy; inside a group's scope (a
// Resume, an Ack, a manual move for a group) it judges that group only.
func (s *state) evaluate(index uint64, res *Result) {
	if s.Policy == nil || s.scope != "" {
		s.evaluateGroup(index, res)
		return
	}
	if s.Policy.HasDefaultGroup() {
		s.evaluateGroup(index, res)
	}
	for _, g := range s.Policy.Groups {
		var gr Result
		s.inGroup(g.Name, func() { s.evaluateGroup(index, &gr) })
		if gr.Gen != 0 || gr.Withheld != "" || gr.Kind != "" {
			gr.Index, gr.Group = index, g.Name
			res.Groups = append(res.Groups, gr)
		}
	}
}

// evaluateOne makes the automatic decisions of the group in scope only:
// what a command for one group (Resume, Ack) may change.
func (s *state) evaluateOne(index uint64, res *Result) {
	if s.Policy != nil && s.scope == "" && !s.Policy.HasDefaultGroup() {
		return
	}
	s.evaluateGroup(index, res)
}

// evaluateGroup makes the automatic decisions of the group in scope (see
// inGroup), DefaultGroup's outside any.
func (s *state) evaluateGroup(index uint64, res *Result) {
	p := s.Policy
	if p == nil {
		return
	}
	now := s.Now
	if s.Paused && s.PausedUntil != 0 && now >= s.PausedUntil {
		s.appendHistory(Entry{Index: index, At: now, Kind: KindResume, Actor: SystemActor,
			Reason: "pause expired at " + fmtTime(s.PausedUntil)})
		s.unpause()
	}
	if s.BlockedUntil != 0 && now >= s.BlockedUntil {
		s.BlockedUntil = 0
	}
	// Only a move, or one withheld, needs the nodes behind the verdicts:
	// the tallies are taken below, where one may follow.
	v, _ := s.quorumVerdicts(now)
	for i, site := range sites {
		if v[i] == Down {
			if _, ok := s.DownSince[site]; !ok {
				if s.DownSince == nil {
					s.DownSince = map[Site]int64{}
				}
				s.DownSince[site] = now
			}
		} else {
			delete(s.DownSince, site)
		}
	}
	if v[siteIdx(Primary)] == Up {
		if !s.PrimaryUp {
			s.PrimaryUp, s.PrimaryUpAt = true, now
		}
	} else {
		s.PrimaryUp, s.PrimaryUpAt = false, 0
	}

	a := s.Active
	b := a.Other()
	if v[siteIdx(a)] != Down && (a == Primary || p.Failback.Mode != FailbackAuto) {
		s.Withheld = withheld{}
		return
	}
	t := s.tallies(now)
	if a == Primary {
		if rule, msg := s.downRule(now, t); rule != "" {
			s.withhold(index, rule, msg, t, res)
			return
		}
		reason := fmt.Sprintf("%s DOWN at quorum (%s); %s UP at quorum (%s)",
			a, strings.Join(t[a].Down, ", "), b, strings.Join(t[b].Up, ", "))
		s.autoDecide(index, KindAutoFailover, b, reason, t, res)
		return
	}

	// The backup is active: going back is a failback, never an automatic failover.
	if p.Failback.Mode == FailbackAuto {
		if rule, _ := s.autoBlocker(now); rule == "" && s.PrimaryUp && now-s.PrimaryUpAt >= int64(p.Failback.After) {
			if open, msg := s.gate(now); !open {
				s.withhold(index, RuleFailbackGate, msg, t, res)
				return
			}
			reason := fmt.Sprintf("primary UP at quorum (%s) continuously since %s, failback after %s",
				strings.Join(t[Primary].Up, ", "), fmtTime(s.PrimaryUpAt), p.Failback.After)
			s.autoDecide(index, KindAutoFailback, Primary, reason, t, res)
			return
		}
	}
	if t[a].Verdict != Down {
		s.Withheld = withheld{}
		return
	}
	rule, msg := s.downRule(now, t)
	s.withhold(index, rule, msg, t, res)
}

// downRule names the rule that withholds the automatic move away from the
// active site once it is DOWN at quorum, and says why; "" when an automatic
// failover would go ahead. Moving away from the backup is a failback, which
// a DOWN backup never triggers by itself, so there a rule always holds.
// evaluate acts on it; View's countdown announces it in advance.
func (s *state) downRule(now int64, t map[Site]Tally) (rule, msg string) {
	p := s.Policy
	target := s.Active.Other()
	if rule, msg := s.autoBlocker(now); rule != "" {
		return rule, msg
	}
	if s.Active == Backup && p.Failback.Mode != FailbackAuto {
		return RuleFailbackManual, "backup is DOWN at quorum but failback is manual: check the primary and run a failback"
	}
	if t[target].Verdict != Up {
		r := s.targetRefusal(target, t[target])
		return r.Rule, r.Message
	}
	if s.Active == Backup {
		return RuleFailbackDwell, fmt.Sprintf("backup is DOWN at quorum; primary UP for %s of the %s auto failback needs",
			time.Duration(now-s.PrimaryUpAt), p.Failback.After)
	}
	return "", ""
}

// autoBlocker names the rule, if any, that stops every automatic decision now.
func (s *state) autoBlocker(now int64) (rule, msg string) {
	switch {
	case !s.Policy.AutoFailover:
		return RuleAutoDisabled, "automatic failover is off in the policy (manual-only)"
	case s.Paused:
		m := "automatic decisions are paused"
		if s.PausedBy != "" {
			m += " by " + s.PausedBy
		}
		if s.PausedUntil != 0 {
			m += " until " + fmtTime(s.PausedUntil)
		}
		return RulePaused, m
	case s.BlockedUntil > now:
		return RuleBlocked, "an automatic flip happened recently; automatic flips are blocked until " +
			fmtTime(s.BlockedUntil) + " or an ack"
	}
	return "", ""
}

// withhold records why an automatic flip did not happen, once per episode
// and rule, so the history is not flooded every round.
func (s *state) withhold(index uint64, rule, msg string, t map[Site]Tally, res *Result) {
	if s.Withheld.Rule == rule {
		s.Withheld.Message = msg
		return
	}
	s.Withheld = withheld{Rule: rule, Message: msg, Since: s.Now}
	a := s.Active
	s.appendHistory(Entry{
		Index: index, At: s.Now, Kind: KindWithheld, From: a, To: a.Other(), Actor: SystemActor,
		Reason: msg, Rule: rule, Evidence: s.evidence(s.Now), Tallies: cloneTallies(t),
		Timings: s.detection(a, s.Now),
	})
	res.Withheld = rule + ": " + msg
}

func (s *state) autoDecide(index uint64, kind string, to Site, reason string, t map[Site]Tally, res *Result) {
	e := s.decide(index, kind, to, SystemActor, reason, false, "", t)
	if w := s.Policy.BlockWindow; w > 0 {
		s.BlockedUntil = satAdd(s.Now, int64(w))
	}
	res.Gen, res.Kind, res.From, res.To = e.Gen, e.Kind, e.From, e.To
	res.Message = oneLine(e)
}

// describeTally renders a tally for humans: "DOWN (down: a, b; up: c; abstain: none; quorum 2)".
func describeTally(t Tally) string {
	list := func(xs []string) string {
		if len(xs) == 0 {
			return "none"
		}
		return strings.Join(xs, ", ")
	}
	return fmt.Sprintf("%s (up: %s; down: %s; unknown: %s; abstain: %s; quorum %d)",
		t.Verdict, list(t.Up), list(t.Down), list(t.Unknown), list(t.Abstain), t.Quorum)
}

// oneLine summarises a decision entry.
func oneLine(e *Entry) string {
	s := fmt.Sprintf("gen %d: %s %s -> %s at %s by %s", e.Gen, e.Kind, e.From, e.To, fmtTime(e.At), cmp.Or(e.Actor, "-"))
	if e.Forced {
		s += " (forced)"
	}
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// satAdd adds a non-negative d to t without wrapping past the end of time:
// a leader clock near the int64 limit must not turn a block into none.
func satAdd(t, d int64) int64 {
	if t > math.MaxInt64-d {
		return math.MaxInt64
	}
	return t + d
}
