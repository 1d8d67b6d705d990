package failover

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/drwatch/drwatch/internal/dnsname"
)

// Machine is the replicated decision state. Step and Apply mutate it; the
// read methods return deep copies. It is safe for concurrent use: Raft
// applies on one goroutine while status pages read on others.
type Machine struct {
	mu sync.RWMutex
	st state
}

// New returns a machine with no policy, the primary active and no decision.
func New() *Machine {
	return &Machine{st: newState()}
}

// Apply decodes data and steps it at log index, returning the encoded
// Result or error (read it with DecodeResponse). It is deterministic: the
// same log gives the same state and the same responses on every replica.
func (m *Machine) Apply(index uint64, data []byte) []byte {
	resp, err := m.ApplyEntry(index, data)
	if err != nil {
		return encodeResponse(Result{Index: index}, err)
	}
	return resp
}

// ApplyEntry is Apply for a replica that must not skip what it cannot
// read: when data does not decode, it returns the error and applies
// nothing. Every entry a leader writes decoded on that leader (Stamp), so
// an entry that does not decode here needs a newer binary (or the log is
// damaged), and the replica must stop rather than diverge (invariant 15).
// Any other error is the command's and is in the response, as Apply's.
func (m *Machine) ApplyEntry(index uint64, data []byte) ([]byte, error) {
	c, err := Decode(data)
	if err != nil {
		return nil, err
	}
	r, err := m.Step(index, c)
	return encodeResponse(r, err), nil
}

// Step applies one command at log index. A decision's generation is its
// index. On error nothing changes, and every replica rejects the same way.
func (m *Machine) Step(index uint64, c Command) (Result, error) {
	if err := c.check(); err != nil {
		return Result{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.st.step(index, c, nil)
}

// step applies c; when checked is not nil it receives the safety rules the
// command faced, in the order they were checked.
func (s *state) step(index uint64, c Command, checked *[]Check) (Result, error) {
	if index == 0 || index <= s.LastIndex {
		return Result{}, fmt.Errorf("log index %d not after %d: %w", index, s.LastIndex, ErrBadCommand)
	}
	now := max(s.Now, c.At)
	res := Result{Index: index, Type: c.Type()}
	from, to := s.LeaderlessFrom, s.LeaderlessTo
	s.noteLeaderless(now)
	err := c.Payload.apply(s, applyArgs{index: index, now: now, res: &res, checked: checked})
	if err != nil {
		s.LeaderlessFrom, s.LeaderlessTo = from, to
		return Result{}, err
	}
	s.LastIndex = index
	res.Active = s.Active
	return res, nil
}

func (s *state) observe(index uint64, now int64, o *Observe, res *Result) error {
	p := s.Policy
	if p == nil {
		return fmt.Errorf("observe from %q: %w", o.Node, ErrNoPolicy)
	}
	if !p.hasNode(o.Node) {
		return fmt.Errorf("observe from %q (nodes %v): %w", o.Node, p.Nodes, ErrUnknownNode)
	}
	seen := make(map[string]bool, len(o.Results))
	for _, r := range o.Results {
		k := probeKey(r.Site, r.Probe)
		if seen[k] {
			return fmt.Errorf("observe from %q: result for %s twice: %w", o.Node, k, ErrBadCommand)
		}
		seen[k] = true
	}
	if err := o.checkLeanFields(); err != nil {
		return err
	}
	ns := s.Nodes[o.Node]
	dup := o.Seq != 0 && ns != nil && ns.Reported && o.Seq == ns.LastSeq
	if o.Base != 0 && !dup {
		if err := s.checkLeanBase(o, ns, seen); err != nil {
			return err
		}
	}
	if ns == nil {
		ns = &nodeState{}
		if s.Nodes == nil {
			s.Nodes = map[string]*nodeState{}
		}
		s.Nodes[o.Node] = ns
	}
	s.Now = now
	if dup {
		// A retried proposal of the same round: counting it twice would
		// shorten the fall/rise hysteresis.
		res.Noop = "duplicate"
		res.Message = fmt.Sprintf("round %d from %s already applied", o.Seq, o.Node)
		s.evaluate(index, res)
		return nil
	}
	ns.Reported = true
	ns.LastAt = now
	ns.LastSeq = o.Seq
	ns.PolicyHash = o.effectiveHash(ns)
	for _, r := range o.Results {
		if _, ok := p.probe(r.Site, r.Probe); !r.Site.Valid() || !ok {
			if ns.Unknown == nil {
				ns.Unknown = map[string]uint64{}
			}
			k := probeKey(r.Site, r.Probe)
			if _, known := ns.Unknown[k]; !known && len(ns.Unknown) >= maxUnknownProbes {
				k = otherUnknown
			}
			ns.Unknown[k]++
			continue
		}
		if ns.Probes == nil {
			ns.Probes = map[string]*probeState{}
		}
		k := probeKey(r.Site, r.Probe)
		ps := ns.Probes[k]
		if ps == nil {
			ps = &probeState{State: Unknown}
			ns.Probes[k] = ps
		}
		ps.record(r, now, now-int64(p.stale()), int64(p.stale()), p.Fall, p.Rise)
	}
	if o.Base != 0 {
		// checkLeanBase made sure every repeated probe has a state.
		for _, site := range o.Sites {
			for _, ref := range p.siteProbes(site) {
				k := probeKey(site, ref.Name)
				if seen[k] {
					continue
				}
				ps := ns.Probes[k]
				r := ps.Last
				r.CompletedAt = o.RoundAt
				if !r.OK && r.Streak > 0 {
					// The repeated failure is one more of its streak.
					r.Streak++
				}
				ps.record(r, now, now-int64(p.stale()), int64(p.stale()), p.Fall, p.Rise)
			}
		}
	}
	s.evaluate(index, res)
	return nil
}

// checkLeanFields checks what a lean report adds, whatever the state:
// Sites and RoundAt only with a Base, and each site named once.
func (o *Observe) checkLeanFields() error {
	if o.Base == 0 {
		if len(o.Sites) > 0 || o.RoundAt != 0 {
			return fmt.Errorf("observe from %q: sites or round_at without base: %w", o.Node, ErrBadCommand)
		}
		return nil
	}
	if len(o.Sites) == 0 {
		return fmt.Errorf("observe from %q: lean report (base %d) covers no site: %w", o.Node, o.Base, ErrBadCommand)
	}
	for i, site := range o.Sites {
		if !site.Valid() {
			return fmt.Errorf("observe from %q: sites[%d]: %q must be primary or backup: %w", o.Node, i, site, ErrBadCommand)
		}
		if slices.Contains(o.Sites[:i], site) {
			return fmt.Errorf("observe from %q: sites[%d]: %s twice: %w", o.Node, i, site, ErrBadCommand)
		}
	}
	return nil
}

// checkLeanBase refuses a lean report that the node's recorded state cannot
// complete as the watcher meant it: a base that is not the node's last
// applied round (a report lost or applied in between), a policy other than
// the one the base was reported and is replicated under, or a probe to
// repeat that has no recorded result. The watcher then sends full reports.
// A report without a policy hash is under its base's policy.
func (s *state) checkLeanBase(o *Observe, ns *nodeState, seen map[string]bool) error {
	switch {
	case ns == nil || !ns.Reported || ns.LastSeq != o.Base:
		last := uint64(0)
		if ns != nil {
			last = ns.LastSeq
		}
		return fmt.Errorf("observe from %q: lean report on round %d, but the last applied round is %d: %w", o.Node, o.Base, last, ErrBadCommand)
	case o.baseHash() && ns.PolicyHash != s.PolicyHash:
		return fmt.Errorf("observe from %q: lean report under the policy of round %d, %s, but the policy is %s: %w",
			o.Node, o.Base, cmp.Or(ShortHash(ns.PolicyHash), "none"), ShortHash(s.PolicyHash), ErrBadCommand)
	case !o.baseHash() && (o.PolicyHash != ns.PolicyHash || o.PolicyHash != s.PolicyHash):
		return fmt.Errorf("observe from %q: lean report under policy %s, but round %d was under %s and the policy is %s: %w",
			o.Node, ShortHash(o.PolicyHash), o.Base, ShortHash(ns.PolicyHash), ShortHash(s.PolicyHash), ErrBadCommand)
	}
	for _, site := range o.Sites {
		for _, ref := range s.Policy.siteProbes(site) {
			if k := probeKey(site, ref.Name); !seen[k] && ns.Probes[k] == nil {
				return fmt.Errorf("observe from %q: lean report repeats %s, which has no recorded result: %w", o.Node, k, ErrBadCommand)
			}
		}
	}
	return nil
}

// record applies one result to the hysteresis: UNKNOWN->UP on the first
// success, DOWN->UP after rise successes in a row, UNKNOWN or UP->DOWN after
// fall failures in a row. A probe whose previous result is older than
// cutoff starts again from UNKNOWN: a vote must rest on consecutive fresh
// rounds, not on counters left over from before a silence.
//
// A failure that carries the watcher's own streak (countsStreak) counts as
// that many failures in a row, not one more than the log recorded: the
// rounds a watcher saw while no report could commit (an election) are
// consecutive fresh rounds of its own, and the streak's latest is this
// fresh result. Its first failure and its fall-th then stamp FirstFailAt
// and FellAt. A success still resets, and the count is the watcher's even
// when it is lower than the log's (a success that never committed ended
// the old streak).
func (ps *probeState) record(r ProbeResult, now, cutoff, stale int64, fall, rise int) {
	if ps.LastAt < cutoff {
		ps.State, ps.OKs, ps.Fails, ps.FailSince = Unknown, 0, 0, 0
		ps.FirstFailAt, ps.FellAt = 0, 0
	}
	ps.LastAt = now
	ps.Last = r
	c := byte('-')
	if r.OK {
		c = '+'
		ps.OKs++
		ps.Fails = 0
		ps.FailSince = 0
		switch ps.State {
		case Unknown:
			ps.State = Up
		case Down:
			if ps.OKs >= rise {
				ps.State = Up
			}
		}
		if ps.State != Down {
			ps.FirstFailAt, ps.FellAt = 0, 0
		}
	} else {
		streak := r.countsStreak(now, stale)
		if ps.Fails == 0 || (streak && r.Streak <= ps.Fails) {
			ps.FailSince = now
			if ps.State != Down {
				// A new failure episode; a failure after a single success
				// while DOWN continues the old one.
				ps.FirstFailAt = r.CompletedAt
			}
		}
		if streak && ps.State != Down {
			ps.FirstFailAt = r.StreakAt
		}
		prev := ps.Fails
		ps.Fails++
		if streak {
			ps.Fails = r.Streak
		}
		ps.OKs = 0
		if ps.State != Down && ps.Fails >= fall {
			ps.State = Down
			ps.FellAt = r.CompletedAt
			if streak && prev+1 < fall && r.StreakFellAt != 0 && r.StreakFellAt <= r.CompletedAt {
				// The fall-th failure is one the log never saw.
				ps.FellAt = max(r.StreakFellAt, r.StreakAt)
			}
		}
	}
	ring := ps.Ring + string(c)
	if len(ring) > ringSize {
		ring = ring[len(ring)-ringSize:]
	}
	ps.Ring = ring
}

// countsStreak reports whether the machine counts r, stamped by the leader
// at now, as its watcher's streak: a failure that carries one, whose first
// failure completed no later than r, within stale of the one after for
// each round in between, and r itself completed within stale before now.
// A streak that spans more than that is not of consecutive fresh rounds
// (the watcher's clock jumped, or it lies), and one delivered later than
// that is not fresh data (invariant 1: a report that waited seconds in a
// wedged forward); either counts as one failure, as a result without a
// streak does. The last check compares the watcher's clock with the
// leader's: skew beyond stale costs the streak, never adds to it.
func (r ProbeResult) countsStreak(now, stale int64) bool {
	return !r.OK && r.Streak > 0 && r.StreakAt != 0 && r.StreakAt <= r.CompletedAt &&
		r.CompletedAt-r.StreakAt <= int64(r.Streak-1)*stale && now-r.CompletedAt <= stale
}

// move is a manual failover, failback or switchover, as its command asks.
type move struct {
	kind          string
	to            Site
	actor, reason string
	force         bool
	planned       bool
	ackBlock      bool
}

// move returns the manual move f asks for: a failover or a switchover.
func (f Failover) move() move {
	kind := KindManualFailover
	if f.Planned {
		kind = KindSwitchover
	}
	return move{kind: kind, to: f.To, actor: f.Actor, reason: f.Reason, force: f.Force, planned: f.Planned, ackBlock: f.AckBlock}
}

// move returns the manual move f asks for: back to the primary.
func (f Failback) move() move {
	return move{kind: KindManualFailback, to: Primary, actor: f.Actor, reason: f.Reason, force: f.Force, ackBlock: f.AckBlock}
}

func (s *state) manual(index uint64, now int64, mv move, res *Result, checked *[]Check) error {
	kind, to, force := mv.kind, mv.to, mv.force
	p := s.Policy
	if p == nil {
		return fmt.Errorf("%s: %w", kind, ErrNoPolicy)
	}
	if !to.Valid() {
		return fmt.Errorf("%s: target %q must be primary or backup: %w", kind, to, ErrBadCommand)
	}
	if to == s.Active {
		s.Now = now
		res.Noop = RuleAlreadyActive
		res.Message = fmt.Sprintf("%s is already active (gen %d); nothing to do", to, s.Desired.Gen)
		return nil
	}
	t := s.tallies(now)
	checks := s.moveChecks(now, mv, t)
	if checked != nil {
		for _, c := range checks {
			c.Overridden = !c.OK && force
			*checked = append(*checked, c.Check)
		}
	}
	refusal := firstFailed(checks)
	rule := ""
	if refusal != nil {
		if !force {
			return refusal
		}
		rule = refusal.Rule
	}
	s.Now = now
	why := mv.reason
	if force && rule != "" {
		why = fmt.Sprintf("%s (forced past %s: %s)", mv.reason, rule, refusal.Message)
	}
	// An operator who moves traffic by hand has seen the last automatic
	// flip: leaving the block would silently disarm automatic failover for
	// the rest of the window. Entries without AckBlock were applied before
	// this rule and keep the block, so old logs replay as they were. The
	// ack entry goes right before the decision, as when an ack lets an
	// automatic flip through: the last entry of an index is its decision.
	acked := mv.ackBlock && s.BlockedUntil > now
	if acked {
		s.appendHistory(Entry{Index: index, At: now, Kind: KindAck, Actor: mv.actor,
			Reason: fmt.Sprintf("block acknowledged by %s, gen %d", kind, index),
			Detail: "block until " + fmtTime(s.BlockedUntil) + " lifted"})
		s.BlockedUntil = 0
	}
	e := s.decide(index, kind, to, mv.actor, why, force, rule, t)
	res.Gen, res.Kind, res.From, res.To = e.Gen, e.Kind, e.From, e.To
	res.Message = oneLine(e)
	if acked {
		res.Message += "; the block on automatic flips is acknowledged and lifted"
	}
	return nil
}

// Check is one safety rule a command faces and whether it holds. A dry
// run lists them; the first that fails refuses the command unless forced.
type Check struct {
	Rule string `json:"rule"`
	OK   bool   `json:"ok"`
	// Detail is the evidence in words; for a failing rule, the refusal's message.
	Detail string `json:"detail"`
	// Overridden is set when the rule fails but --force moves past it (recorded as forced).
	Overridden bool `json:"overridden,omitempty"`
}

// check is a Check with the way to override it when it fails.
type check struct {
	Check
	override string
}

// moveChecks are the safety rules a manual move faces at now, in the order
// that decides which one a refusal names. Pause and the block stop
// automatic decisions only, so they are not among them.
func (s *state) moveChecks(now int64, mv move, t map[Site]Tally) []check {
	var out []check
	if mv.planned {
		c := check{Check: Check{Rule: RuleNotPlannedSafe, OK: t[Primary].Verdict == Up && t[Backup].Verdict == Up}}
		c.Detail = fmt.Sprintf("a planned switchover needs both sites UP at quorum; primary is %s, backup is %s",
			describeTally(t[Primary]), describeTally(t[Backup]))
		if !c.OK {
			c.override = "use --force, or an unplanned failover"
		}
		out = append(out, c)
	} else {
		out = append(out, s.targetChecks(mv.to, t[mv.to])...)
	}
	if mv.to == Primary && len(s.Policy.FailbackGate) > 0 {
		open, msg := s.gate(now)
		c := check{Check: Check{Rule: RuleFailbackGate, OK: open, Detail: msg}}
		if open {
			c.Detail = fmt.Sprintf("the primary's %s UP at quorum", strings.Join(s.Policy.FailbackGate, ", "))
		} else {
			c.override = "use --force after checking the primary's load balancers yourself"
		}
		out = append(out, c)
	}
	return out
}

// targetChecks are the rules on the site a move goes to: enough fresh nodes
// to judge it (no_quorum), and UP at quorum (target_unhealthy).
func (s *state) targetChecks(target Site, t Tally) []check {
	fresh := len(t.Up) + len(t.Down) + len(t.Unknown)
	q := check{Check: Check{Rule: RuleNoQuorum, OK: fresh >= t.Quorum,
		Detail: fmt.Sprintf("%d of %d nodes have fresh data (quorum %d) to judge %s", fresh, len(s.Policy.Nodes), t.Quorum, target)}}
	if !q.OK {
		q.Detail = fmt.Sprintf("only %d of %d nodes have fresh data (quorum %d), so %s cannot be judged",
			fresh, len(s.Policy.Nodes), t.Quorum, target)
		q.override = "use --force if you have checked " + string(target) + " yourself"
	}
	h := check{Check: Check{Rule: RuleTargetUnhealthy, OK: t.Verdict == Up,
		Detail: fmt.Sprintf("%s is UP at quorum: %s", target, describeTally(t))}}
	if !h.OK {
		h.Detail = fmt.Sprintf("%s is not UP at quorum: %s", target, describeTally(t))
		h.override = "use --force to move to an unhealthy site"
	}
	return []check{q, h}
}

// firstFailed is the refusal of the first failing check, nil when all hold.
func firstFailed(cs []check) *RefusedError {
	for _, c := range cs {
		if !c.OK {
			return &RefusedError{Rule: c.Rule, Message: c.Detail, Override: c.override}
		}
	}
	return nil
}

// targetRefusal explains why target (not UP at quorum) is refused.
func (s *state) targetRefusal(target Site, t Tally) *RefusedError {
	return firstFailed(s.targetChecks(target, t))
}

func (s *state) pause(index uint64, now int64, c *Pause, res *Result) error {
	if c.Until != 0 && c.Until <= now {
		return fmt.Errorf("pause until %s: already past (now %s): %w", fmtTime(c.Until), fmtTime(now), ErrBadCommand)
	}
	if p := s.Policy; p != nil && p.MaxPause > 0 && c.Until != 0 && c.Until-now > int64(p.MaxPause) {
		return fmt.Errorf("pause until %s: %s from now, longer than policy.max_pause %s (pause until resume instead, and resume by hand): %w",
			fmtTime(c.Until), time.Duration(c.Until-now).Round(time.Second), p.MaxPause, ErrBadCommand)
	}
	s.Now = now
	if s.Paused && s.PausedUntil == c.Until {
		res.Noop = "already_paused"
		res.Message = "automatic decisions are already paused"
		return nil
	}
	s.Paused, s.PausedUntil, s.PausedBy, s.PauseReason = true, c.Until, c.Actor, c.Reason
	e := Entry{Index: index, At: now, Kind: KindPause, Actor: c.Actor, Reason: c.Reason}
	if c.Until != 0 {
		e.Detail = "until " + fmtTime(c.Until)
	}
	s.appendHistory(e)
	res.Kind = KindPause
	res.Message = "automatic decisions paused"
	return nil
}

func (s *state) resume(index uint64, now int64, c *Resume, res *Result) {
	s.Now = now
	if !s.Paused {
		res.Noop = "not_paused"
		res.Message = "automatic decisions were not paused"
	} else {
		s.unpause()
		s.appendHistory(Entry{Index: index, At: now, Kind: KindResume, Actor: c.Actor, Reason: c.Reason})
		res.Kind = KindResume
		res.Message = "automatic decisions resumed"
	}
	s.evaluateOne(index, res)
}

func (s *state) unpause() {
	s.Paused, s.PausedUntil, s.PausedBy, s.PauseReason = false, 0, "", ""
}

func (s *state) ack(index uint64, now int64, c *Ack, res *Result) {
	s.Now = now
	if s.BlockedUntil <= now {
		res.Noop = "not_blocked"
		res.Message = "automatic flips were not blocked"
	} else {
		s.appendHistory(Entry{Index: index, At: now, Kind: KindAck, Actor: c.Actor, Reason: c.Reason,
			Detail: "block until " + fmtTime(s.BlockedUntil) + " lifted"})
		s.BlockedUntil = 0
		res.Kind = KindAck
		res.Message = "block on automatic flips lifted"
	}
	s.evaluateOne(index, res)
}

func (s *state) actionResult(index uint64, now int64, c *ActionResult, res *Result) error {
	switch c.Outcome {
	case OutcomeWritten, OutcomeVerified, OutcomeFailed, OutcomeConflict:
	default:
		return fmt.Errorf("action result outcome %q (want written, verified, failed or conflict): %w", c.Outcome, ErrBadCommand)
	}
	if c.Gen == 0 || c.Gen > s.Desired.Gen {
		return fmt.Errorf("action result for gen %d (latest %d): %w", c.Gen, s.Desired.Gen, ErrUnknownGen)
	}
	s.Now = now
	var e *Entry
	for i := len(s.History) - 1; i >= 0; i-- {
		if h := &s.History[i]; h.decision() && h.Gen == c.Gen && h.Group == s.scope {
			e = h
			break
		}
	}
	if c.Gen == s.Desired.Gen && c.Outcome == OutcomeVerified && !s.Desired.Done {
		s.Desired.Done = true
		res.Message = "desired state verified"
	}
	if e == nil {
		res.Noop = "gen_not_in_history"
		res.Message = fmt.Sprintf("no decision with gen %d in the history (latest %d); recorded nothing", c.Gen, s.Desired.Gen)
		return nil
	}
	changed := false
	setOnce := func(dst *int64, v int64) {
		if *dst == 0 && v != 0 {
			*dst, changed = v, true
		}
	}
	switch c.Outcome {
	case OutcomeWritten:
		setOnce(&e.Timings.WrittenAt, orNow(c.WrittenAt, now))
	case OutcomeVerified:
		setOnce(&e.Timings.WrittenAt, orNow(c.WrittenAt, now))
		setOnce(&e.Timings.VerifiedAt, orNow(c.VerifiedAt, now))
		if len(e.Timings.Servers) == 0 && len(c.Servers) > 0 {
			// The first verification is the one that counts, like VerifiedAt.
			e.Timings.Servers = slices.Clone(c.Servers)
			slices.SortFunc(e.Timings.Servers, func(a, b ServerVerification) int { return strings.Compare(a.Server, b.Server) })
			changed = true
		}
	}
	prev := e.Outcome
	// A late "written" must not hide an earlier "verified".
	if !(prev == OutcomeVerified && c.Outcome == OutcomeWritten) && (prev != c.Outcome || e.Detail != c.Detail) {
		e.Outcome, e.Detail = c.Outcome, c.Detail
		changed = true
	}
	if !changed {
		res.Noop = "duplicate"
		res.Message = fmt.Sprintf("%s for gen %d already recorded", c.Outcome, c.Gen)
		return nil
	}
	if prev != e.Outcome {
		s.appendHistory(Entry{Index: index, Gen: c.Gen, At: now, Kind: KindAction, Actor: c.Actor,
			Outcome: c.Outcome, Detail: c.Detail, Timings: Timings{WrittenAt: c.WrittenAt, VerifiedAt: c.VerifiedAt}})
		res.Kind = KindAction
	}
	return nil
}

func orNow(v, now int64) int64 {
	if v != 0 {
		return v
	}
	return now
}

func (s *state) setPolicy(index uint64, now int64, c *SetPolicy, res *Result) error {
	if err := c.Policy.Validate(); err != nil {
		return fmt.Errorf("set policy: %w: %w", ErrBadCommand, err)
	}
	p := c.Policy.normalize()
	h := p.Hash()
	s.Now = now
	if s.Policy != nil && h == s.PolicyHash {
		res.Noop = "policy_unchanged"
		res.Message = "policy " + ShortHash(h) + " already set"
		s.evaluate(index, res)
		return nil
	}
	old := s.PolicyHash
	s.Policy, s.PolicyHash = p.indexed(), h
	// Forget nodes and probes the policy no longer names: their votes must not count.
	for id, ns := range s.Nodes {
		if !p.hasNode(id) {
			delete(s.Nodes, id)
			continue
		}
		for k := range ns.Probes {
			site, name, _ := cutKey(k)
			if _, ok := p.probe(site, name); !ok {
				delete(ns.Probes, k)
			}
		}
	}
	e := Entry{Index: index, At: now, Kind: KindPolicy, Actor: c.Actor, Reason: "policy " + ShortHash(h)}
	if old != "" {
		e.Reason += " replaces " + ShortHash(old)
	}
	s.syncGroups()
	var groupEntries []Entry
	for _, name := range p.GroupNames() {
		s.inGroup(name, func() {
			switch recs := s.Policy.rrsets(s.Active); {
			case s.Desired.Gen == 0:
				// No decision yet: DNS stays as the operator left it (the reconciler
				// writes nothing for gen 0), so a first policy never resets it to
				// the primary.
				s.Desired.Active, s.Desired.Records = s.Active, recs
			case !equalRRsets(recs, s.Desired.Records):
				// New records for the active site are a new desired state and need a fenced write.
				s.Desired = Desired{Gen: index, Active: s.Active, Records: recs, Fence: fence(index)}
				detail := "records for " + string(s.Active) + " changed"
				if s.scope != "" {
					groupEntries = append(groupEntries, Entry{Index: index, Gen: index, At: now, Kind: KindPolicy,
						Actor: c.Actor, Reason: e.Reason, To: s.Active, Detail: detail, Group: s.scope})
					res.Groups = append(res.Groups, Result{Index: index, Type: CmdSetPolicy, Gen: index, Kind: KindPolicy,
						Active: s.Active, Group: s.scope, Message: detail})
					return
				}
				s.abortDrill(index)
				e.Gen = index
				e.To = s.Active
				e.Detail = detail
				res.Gen = index
			}
		})
	}
	s.appendHistory(e)
	for _, ge := range groupEntries {
		s.appendHistory(ge)
	}
	res.Kind = KindPolicy
	res.Message = e.Reason
	s.evaluate(index, res)
	return nil
}

// syncGroups gives each group of the policy a state (a new group starts on
// the primary with nothing desired, as a first policy does) and drops the
// state of a group the policy no longer has.
func (s *state) syncGroups() {
	if len(s.Policy.Groups) == 0 {
		s.Groups = nil
		return
	}
	keep := make(map[string]bool, len(s.Policy.Groups))
	for _, g := range s.Policy.Groups {
		keep[g.Name] = true
		if s.Groups == nil {
			s.Groups = map[string]*groupState{}
		}
		if s.Groups[g.Name] == nil {
			s.Groups[g.Name] = newGroupState()
		}
	}
	for name := range s.Groups {
		if !keep[name] {
			delete(s.Groups, name)
		}
	}
}

func cutKey(k string) (Site, string, bool) {
	for i := 0; i < len(k); i++ {
		if k[i] == '/' {
			return Site(k[:i]), k[i+1:], true
		}
	}
	return "", k, false
}

// equalRRsets reports whether a and b are the same RRsets, values compared
// as the providers and the reconciler compare them (dnsname.SameValues).
func equalRRsets(a, b []RRset) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Type != b[i].Type || a[i].TTL != b[i].TTL || !dnsname.SameValues(a[i].Type, a[i].Values, b[i].Values) {
			return false
		}
	}
	return true
}

func (s *state) breakGlass(index uint64, now int64, c *BreakGlass, res *Result) error {
	if s.Policy == nil {
		return fmt.Errorf("break glass: %w", ErrNoPolicy)
	}
	if !c.Site.Valid() {
		return fmt.Errorf("break glass: site %q must be primary or backup: %w", c.Site, ErrBadCommand)
	}
	s.Now = now
	e := s.decide(index, KindBreakGlass, c.Site, c.Actor, c.Reason, true, "", s.tallies(now))
	if c.WrittenAt != 0 {
		e.Timings.WrittenAt = c.WrittenAt
		e.Outcome = OutcomeWritten
		e.Detail = "written without quorum"
	}
	res.Gen, res.Kind, res.From, res.To = e.Gen, e.Kind, e.From, e.To
	res.Message = oneLine(e)
	return nil
}

// decide makes to the active site with a new generation and records why.
// It returns the new history entry (valid until the next append).
func (s *state) decide(index uint64, kind string, to Site, actor, reason string, forced bool, rule string, t map[Site]Tally) *Entry {
	from := s.Active
	e := Entry{
		Index: index, Gen: index, At: s.Now, Kind: kind, From: from, To: to,
		Actor: actor, Reason: reason, Rule: rule, Forced: forced,
		Evidence: s.evidence(s.Now), Tallies: cloneTallies(t),
		Timings: s.detection(from, s.Now),
	}
	e.Timings.DecidedAt = s.Now
	s.abortDrill(index)
	s.Active, s.ActiveSince = to, s.Now
	s.Desired = Desired{Gen: index, Active: to, Records: s.Policy.rrsets(to), Fence: fence(index)}
	s.Withheld = withheld{}
	s.appendHistory(e)
	return &s.History[len(s.History)-1]
}

func cloneTallies(t map[Site]Tally) map[Site]Tally {
	out := make(map[Site]Tally, len(t))
	for k, v := range t {
		out[k] = v.clone()
	}
	return out
}

// appendHistory adds e. An audit entry (AuditKind) beyond MaxAuditHistory
// drops the oldest audit entry; beyond MaxHistory the oldest routine entry
// goes, so routine entries never evict audit ones. The history stays one
// list in index order, the snapshot's shape as before: a snapshot from
// before the split restores as it is, and a log that never filled the
// history replays to the same bytes.
func (s *state) appendHistory(e Entry) {
	if e.Group == "" {
		e.Group = s.scope
	}
	audit := AuditKind(e.Kind)
	for {
		nAudit := 0
		if audit || len(s.History) >= MaxHistory {
			for i := range s.History {
				if AuditKind(s.History[i].Kind) {
					nAudit++
				}
			}
		}
		switch {
		case audit && nAudit >= MaxAuditHistory:
			s.dropOldest(true)
		case len(s.History) >= MaxHistory:
			// A snapshot from before the split may hold more audit
			// entries than MaxAuditHistory: those beyond it go first.
			s.dropOldest(nAudit > MaxAuditHistory)
		default:
			s.History = append(s.History, e)
			return
		}
	}
}

// dropOldest removes the oldest audit entry (audit) or routine one, or the
// oldest entry when there is none of that class, so appendHistory always
// makes progress.
//
// A full history drops one entry for every one appended, and the oldest
// of a class is usually near the front: the entries before it move up one
// place and the slice starts one later, instead of all those after it
// moving down (a thousand entries copied per append, on every node).
func (s *state) dropOldest(audit bool) {
	h := s.History
	i := max(0, slices.IndexFunc(h, func(e Entry) bool { return AuditKind(e.Kind) == audit }))
	if i < len(h)/2 {
		copy(h[1:i+1], h[:i])
		h[0] = Entry{}
		s.History = h[1:]
		return
	}
	n := copy(h[i:], h[i+1:])
	clear(h[i+n:])
	s.History = h[:i+n]
}

// DryRun is what a command would do if it were the next log entry.
type DryRun struct {
	Result Result
	// Err is what Step would return; a refusal is a *RefusedError.
	Err error
	// Checks are the safety rules the command faces, in the order Step
	// checks them; none for a command that faces none (a move to the site
	// already active, pause, ack, ...).
	Checks []Check
	// Before and After are the desired state now and after the command.
	Before, After Desired
}

// DryRun steps c as the next log entry on a copy of the state, through the
// same code as Step, and reports what Step would return, the rules it
// checked and the desired state after it. The machine does not change.
func (m *Machine) DryRun(c Command) DryRun {
	if err := c.check(); err != nil {
		return DryRun{Err: err}
	}
	s, err := m.copyState()
	if err != nil {
		return DryRun{Err: fmt.Errorf("dry run: %w", err)}
	}
	group := commandGroup(c)
	d := DryRun{Before: s.desiredOf(group).clone()}
	d.Result, d.Err = s.step(s.LastIndex+1, c, &d.Checks)
	d.After = s.desiredOf(group)
	return d
}

// allGroups applies f to every failover group in the policy's order, each
// as if f named it alone, and lists each group's result (a refusal as
// Result.Refused) in a.res.Groups. It fails, changing nothing, when no
// group moved and one was refused, with the first refusal.
func (s *state) allGroups(f Failover, a applyArgs) error {
	if f.Group != "" {
		return fmt.Errorf("failover: all groups and group %q at once: %w", f.Group, ErrBadCommand)
	}
	if s.Policy == nil {
		return fmt.Errorf("failover: %w", ErrNoPolicy)
	}
	var firstRefusal error
	moved, now := false, s.Now
	var results []Result
	for _, name := range s.Policy.GroupNames() {
		g := f
		g.AllGroups, g.Group = false, name
		gr := Result{Index: a.index, Type: CmdFailover}
		var checked *[]Check
		if a.checked != nil {
			checked = new([]Check)
		}
		err := g.apply(s, applyArgs{index: a.index, now: a.now, res: &gr, checked: checked})
		gr.Group = name
		if checked != nil {
			*a.checked = append(*a.checked, *checked...)
		}
		var re *RefusedError
		switch {
		case errors.As(err, &re):
			gr.Refused = re.Rule + ": " + re.Message
			if firstRefusal == nil {
				firstRefusal = err
			}
		case err != nil:
			return err
		case gr.Gen != 0:
			moved = true
		}
		gr.Active = s.desiredOf(name).Active
		results = append(results, gr)
	}
	if !moved && firstRefusal != nil {
		s.Now = now // a group already there moved the clock: on error nothing changes
		return firstRefusal
	}
	a.res.Groups = append(a.res.Groups, results...)
	a.res.Message = fmt.Sprintf("%d of %d groups moved", countMoved(results), len(results))
	return nil
}

func countMoved(rs []Result) int {
	n := 0
	for _, r := range rs {
		if r.Gen != 0 {
			n++
		}
	}
	return n
}

// commandGroup is the failover group a command is for: "" for
// DefaultGroup and for a command of no group.
func commandGroup(c Command) string {
	var g string
	switch p := c.Payload.(type) {
	case Failover:
		g = p.Group
	case Failback:
		g = p.Group
	case Pause:
		g = p.Group
	case Resume:
		g = p.Group
	case Ack:
		g = p.Group
	case ActionResult:
		g = p.Group
	}
	if g == DefaultGroup {
		return ""
	}
	return g
}

// desiredOf is the desired state of group ("" for DefaultGroup); the zero
// Desired for a group that does not exist.
func (s *state) desiredOf(group string) Desired {
	if group == "" || group == DefaultGroup {
		return s.Desired
	}
	if gs := s.Groups[group]; gs != nil {
		return gs.Desired
	}
	return Desired{}
}

// copyState returns a deep copy of the state, for the read-only questions
// (DryRun, WhatIf) that step the real code on it.
func (m *Machine) copyState() (state, error) {
	m.mu.RLock()
	snap, err := json.Marshal(m.st)
	m.mu.RUnlock()
	if err != nil {
		return state{}, fmt.Errorf("copy state: %w", err)
	}
	// A deep copy: the snapshot encoding round-trips the state exactly.
	var s state
	if err := json.Unmarshal(snap, &s); err != nil {
		return state{}, fmt.Errorf("copy state: %w", err)
	}
	return s, nil
}

// GroupDesired returns the DNS state the reconciler must bring about for
// failover group (DefaultGroup for ""); ok is false for a group the
// policy does not have.
func (m *Machine) GroupDesired(group string) (d Desired, ok bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if group == "" || group == DefaultGroup {
		return m.st.Desired.clone(), m.st.Policy == nil || m.st.Policy.HasDefaultGroup()
	}
	gs := m.st.Groups[group]
	if gs == nil {
		return Desired{}, false
	}
	return gs.Desired.clone(), true
}

// Desired returns the DNS state the reconciler must bring about.
//
// With failover groups it is the lead group's (state.leadGroup): what the
// repairs, the DNS check and the gen gauge follow. The reconciler reads
// each group's through GroupDesired.
func (m *Machine) Desired() Desired {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.st.desiredOf(m.st.leadGroup()).clone()
}

// leadGroup is the group that stands for the cluster where one decision is
// needed (the repairs' generation, the status page's detail): DefaultGroup
// when it exists, else the first group in name order; "" for DefaultGroup.
func (s *state) leadGroup() string {
	if s.Policy == nil || s.Policy.HasDefaultGroup() {
		return ""
	}
	return s.Policy.Groups[0].Name
}

// History returns a copy of the audit history, oldest first.
func (m *Machine) History() []Entry {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]Entry, len(m.st.History))
	for i, e := range m.st.History {
		out[i] = e.clone()
	}
	return out
}

// EntriesAt returns copies of the history entries that the log entry at
// index made, oldest first; none when it made none. It costs only those
// entries, so a runtime can call it after every Apply. The copies leave
// out each entry's evidence, tallies and per-server times, which a
// history line does not carry (History has them): a region outage's
// entry made 50 decisions, whose deep copies cost every node a tenth of
// a millisecond on the way to its reconcilers.
func (m *Machine) EntriesAt(index uint64) []Entry {
	m.mu.RLock()
	defer m.mu.RUnlock()
	h := m.st.History
	i := len(h)
	for i > 0 && h[i-1].Index >= index {
		i--
	}
	var out []Entry
	for _, e := range h[i:] {
		if e.Index == index {
			e.Evidence, e.Tallies, e.Timings.Servers = nil, nil, nil
			out = append(out, e)
		}
	}
	return out
}

// snapshotVersion is the Snapshot encoding version.
const snapshotVersion = 1

type snapshot struct {
	V     int   `json:"v"`
	State state `json:"state"`
}

// Snapshot returns the canonical JSON encoding of the whole state. Two
// replicas that applied the same log return the same bytes.
func (m *Machine) Snapshot() ([]byte, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	b, err := json.Marshal(snapshot{V: snapshotVersion, State: m.st})
	if err != nil {
		return nil, fmt.Errorf("encode snapshot: %w", err)
	}
	return b, nil
}

// Restore replaces all state with a snapshot taken by Snapshot. On error the
// machine is unchanged; a snapshot of a newer log format than Format is
// refused with an error wrapping ErrUnreadable.
func (m *Machine) Restore(b []byte) error {
	if f := snapshotFormat(b); f > Format {
		return fmt.Errorf("decode snapshot: it records log format %d, newer than this binary's %d (a downgrade below the format in use): %w", f, Format, ErrUnreadable)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var snap snapshot
	if err := dec.Decode(&snap); err != nil {
		return fmt.Errorf("decode snapshot: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("decode snapshot: trailing data")
	}
	if snap.V != snapshotVersion {
		return fmt.Errorf("decode snapshot: version %d, want %d", snap.V, snapshotVersion)
	}
	st := snap.State
	if !st.Active.Valid() {
		return fmt.Errorf("decode snapshot: active site %q", st.Active)
	}
	if st.Policy != nil {
		if err := st.Policy.Validate(); err != nil {
			return fmt.Errorf("decode snapshot: policy: %w", err)
		}
		if h := st.Policy.Hash(); h != st.PolicyHash {
			return fmt.Errorf("decode snapshot: policy hash %s, recorded %s", ShortHash(h), ShortHash(st.PolicyHash))
		}
		st.Policy.indexed()
	}
	for id, ns := range st.Nodes {
		if ns == nil {
			return fmt.Errorf("decode snapshot: node %q is null", id)
		}
		for k, ps := range ns.Probes {
			if ps == nil {
				return fmt.Errorf("decode snapshot: node %q probe %q is null", id, k)
			}
		}
	}
	for name, b := range st.RemediationBudgets {
		if b == nil {
			return fmt.Errorf("decode snapshot: remediation budget %q is null", name)
		}
		for k, t := range b.Targets {
			if t == nil {
				return fmt.Errorf("decode snapshot: remediation budget %q target %q is null", name, k)
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.st = st
	return nil
}

// fmtTime renders unix nanoseconds for humans, in UTC.
func fmtTime(ns int64) string {
	if ns == 0 {
		return "never"
	}
	return time.Unix(0, ns).UTC().Format(time.RFC3339Nano)
}

// Policy returns a copy of the replicated policy and its hash; nil and ""
// before SetPolicy. It is View's policy without the cost of the rest.
func (m *Machine) Policy() (*Policy, string) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.st.Policy == nil {
		return nil, ""
	}
	p := m.st.Policy.clone()
	return &p, m.st.PolicyHash
}

// PolicyHash returns the replicated policy's hash, "" before SetPolicy:
// View's PolicyHash without the rest, which with many failover groups is
// every group's summary (milliseconds and megabytes for 50 groups).
func (m *Machine) PolicyHash() string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.st.PolicyHash
}

// LastIndex returns the index of the last log entry applied to this
// replica (View's Index, without the rest).
func (m *Machine) LastIndex() uint64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.st.LastIndex
}

// LastSeq returns the Seq of node's last applied report on this replica;
// ok is false before its first one.
func (m *Machine) LastSeq(node string) (seq uint64, ok bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ns := m.st.Nodes[node]
	if ns == nil || !ns.Reported {
		return 0, false
	}
	return ns.LastSeq, true
}
