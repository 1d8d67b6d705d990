package failover

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// What-if scenarios: which site's critical probes all fail.
const (
	// ScenarioPrimaryDown: every critical probe of the primary fails.
	ScenarioPrimaryDown = "primary-down"
	// ScenarioActiveDown: every critical probe of the active site fails
	// (the same as primary-down while the primary is active).
	ScenarioActiveDown = "active-down"
)

// Scenarios lists the scenarios WhatIf answers.
func Scenarios() []string { return []string{ScenarioPrimaryDown, ScenarioActiveDown} }

// ErrUnknownScenario means WhatIf was asked a scenario it does not know.
var ErrUnknownScenario = errors.New("unknown what-if scenario")

// What-if outcomes.
const (
	// WhatIfMoves: the core makes an automatic decision and traffic moves.
	WhatIfMoves = "moves"
	// WhatIfWithheld: the site goes DOWN at quorum but a rule withholds the move.
	WhatIfWithheld = "withheld"
	// WhatIfStays: nothing is decided (the site is not the active one, or
	// the quorum never sees it DOWN).
	WhatIfStays = "stays"
)

// whatIfActor is the actor of the commands a what-if steps on its copy.
const whatIfActor = "what-if"

// WhatIfInput is the question asked of WhatIf.
type WhatIfInput struct {
	// Scenario is one of Scenarios().
	Scenario string
	// Now is the asker's clock (unix ns). The simulated failure begins at
	// the later of Now and the state's own time, which never goes back.
	Now int64
	// ProbeTimeout is the longest timeout of the failing site's critical
	// probes: a blackholed probe fails only then. It is the node's
	// setting, which the replicated policy does not carry; it only widens
	// the time window, never changes a decision.
	ProbeTimeout time.Duration
}

// RecordChange is one RRset a decision writes: its values before and after.
type RecordChange struct {
	Name string   `json:"name"`
	Type string   `json:"type"`
	TTL  int      `json:"ttl"`
	From []string `json:"from"`
	To   []string `json:"to"`
}

// WithheldRule is a safety rule that would withhold the automatic move.
type WithheldRule struct {
	Rule    string `json:"rule"`
	Message string `json:"message"`
	// Lift is what a person does to lift it; "" when no command lifts it
	// (the target's health: only a forced manual move goes past it).
	Lift string `json:"lift,omitempty"`
}

// WhatIf is the decision core's answer to "what if every critical probe
// of a site failed now". The core itself computes it: WhatIf steps the
// real machine, on a copy of the state, with the rounds the watchers would
// report, so the answer cannot drift from the rules.
type WhatIf struct {
	Scenario string `json:"scenario"`
	// Index is the last log index of the state asked; At is when the
	// simulated failure begins (unix ns).
	Index uint64 `json:"index"`
	At    int64  `json:"at"`
	// Site is the site that fails, Probes its critical probes.
	Site   Site     `json:"site"`
	Probes []string `json:"probes"`
	Active Site     `json:"active"`
	// Reporting are the watchers with fresh reports, which keep reporting
	// every interval; Silent the stale and never-reported ones, which
	// stay silent.
	Reporting []string `json:"reporting"`
	Silent    []string `json:"silent"`
	// Outcome is WhatIfMoves, WhatIfWithheld or WhatIfStays.
	Outcome string `json:"outcome"`
	// Reason says in words why nothing moves (WhatIfStays).
	Reason string `json:"reason,omitempty"`
	// DownRounds is how many failing rounds until Site is DOWN at quorum;
	// 0 when it never is.
	DownRounds int `json:"down_rounds"`
	// Kind and To are the automatic decision, when traffic moves, at once
	// or once the Withheld rules are lifted.
	Kind string `json:"kind,omitempty"`
	To   Site   `json:"to,omitempty"`
	// Records are the RRsets that decision writes.
	Records []RecordChange `json:"records,omitempty"`
	// Withheld are the rules that withhold the move, in the order the core
	// meets them: each one is lifted on the copy (resume, ack, auto on) to
	// find the next, until traffic moves or a rule no command lifts holds.
	Withheld []WithheldRule `json:"withheld,omitempty"`
	// MovesOnceLifted is true when traffic moves after every Withheld rule
	// is lifted.
	MovesOnceLifted bool `json:"moves_once_lifted,omitempty"`
	// FlipMin and FlipMax bound the time from the failure to the automatic
	// decision, when Outcome is WhatIfMoves: the failure may begin just
	// before a round, the site then re-probed every fast interval
	// (DownRounds-1 fast intervals), or just after one, with a blackholed
	// probe that fails only at its timeout (DownRounds intervals plus
	// ProbeTimeout).
	FlipMin      time.Duration `json:"flip_min,omitempty"`
	FlipMax      time.Duration `json:"flip_max,omitempty"`
	Interval     time.Duration `json:"interval"`
	FastInterval time.Duration `json:"fast_interval"`
	ProbeTimeout time.Duration `json:"probe_timeout"`
}

// DetectionWindow bounds how long after a failure begins the quorum sees
// it when rounds failing rounds are needed, with suspect sites re-probed
// every fast interval: from rounds-1 fast intervals (the failure just
// before a round, failing at once, the other rounds re-probes) to rounds
// intervals plus the probe timeout (just after a round, blackholed, and
// no faster re-probe: a fast round never starts while a round of the same
// probes runs).
func DetectionWindow(rounds int, interval, fast, timeout time.Duration) (lo, hi time.Duration) {
	if rounds < 1 {
		return 0, 0
	}
	return time.Duration(rounds-1) * min(fast, interval), time.Duration(rounds)*interval + timeout
}

// DetectionFloor is the policy's detection window from a healthy state:
// fall failing rounds, (fall-1)×fast_interval to fall×interval plus
// timeout.
func (p Policy) DetectionFloor(timeout time.Duration) (lo, hi time.Duration) {
	return DetectionWindow(p.Fall, p.Interval, p.FastProbeInterval(), timeout)
}

// WhatIf answers what would happen if every critical probe of the
// scenario's site failed from now on: it copies the state and steps the
// machine's own code on the copy with the rounds the fresh watchers would
// report (the failing probes failed, every other probe repeating its last
// result), one round per policy interval, until a decision is made or the
// site is DOWN at quorum and a rule withholds the move. The machine does
// not change.
func (m *Machine) WhatIf(in WhatIfInput) (WhatIf, error) {
	if !slices.Contains(Scenarios(), in.Scenario) {
		return WhatIf{}, fmt.Errorf("what-if %q (known: %s): %w", in.Scenario, strings.Join(Scenarios(), ", "), ErrUnknownScenario)
	}
	s, err := m.copyState()
	if err != nil {
		return WhatIf{}, fmt.Errorf("what-if: %w", err)
	}
	return s.whatIf(in)
}

func (s *state) whatIf(in WhatIfInput) (WhatIf, error) {
	p := s.Policy
	if p == nil {
		return WhatIf{}, fmt.Errorf("what-if: %w", ErrNoPolicy)
	}
	site := Primary
	if in.Scenario == ScenarioActiveDown {
		site = s.Active
	}
	start := max(in.Now, s.Now)
	w := WhatIf{
		Scenario: in.Scenario, Index: s.LastIndex, At: start, Site: site, Active: s.Active,
		Probes: []string{}, Reporting: []string{}, Silent: []string{},
		Interval: p.Interval, FastInterval: p.FastProbeInterval(), ProbeTimeout: in.ProbeTimeout,
	}
	for _, r := range p.Sites[site].Probes {
		if r.Critical {
			w.Probes = append(w.Probes, r.Name)
		}
	}
	cutoff := start - int64(p.stale())
	for _, id := range p.Nodes {
		if ns := s.Nodes[id]; ns != nil && ns.Reported && ns.LastAt >= cutoff {
			w.Reporting = append(w.Reporting, id)
		} else {
			w.Silent = append(w.Silent, id)
		}
	}
	active := s.Active
	before := cloneRRsets(s.Desired.Records)
	index := s.LastIndex
	step := func(at int64, pl Payload) error {
		index++
		_, err := s.step(index, Command{At: at, Payload: pl}, nil)
		return err
	}
	moved := func() bool { return s.Active != active }
	// From a healthy start fall rounds take a watcher DOWN; one more shows
	// that the quorum never will.
	at := start
rounds:
	for round := 1; round <= p.Fall+1; round++ {
		at = start + int64(round-1)*int64(p.Interval)
		for _, id := range w.Reporting {
			if err := step(at, s.whatIfRound(id, site, at, cutoff)); err != nil {
				return WhatIf{}, fmt.Errorf("what-if: round %d from %s: %w", round, id, err)
			}
			if moved() {
				w.DownRounds = round
				break rounds
			}
		}
		if s.tallies(at)[site].Verdict == Down {
			w.DownRounds = round
			break
		}
	}
	switch {
	case moved():
		w.Outcome = WhatIfMoves
		w.FlipMin, w.FlipMax = DetectionWindow(w.DownRounds, p.Interval, p.FastProbeInterval(), in.ProbeTimeout)
	case site != active:
		w.Outcome = WhatIfStays
		w.Reason = fmt.Sprintf("%s is not the active site (%s is): its failure moves no traffic", site, active)
	case w.DownRounds == 0:
		w.Outcome = WhatIfStays
		w.Reason = fmt.Sprintf("%s is never DOWN at quorum: after %d failing rounds it is %s", site, p.Fall+1, describeTally(s.tallies(at)[site]))
	default:
		w.Outcome = WhatIfWithheld
		if err := s.liftWithheld(&w, at, step); err != nil {
			return WhatIf{}, err
		}
		w.MovesOnceLifted = moved()
	}
	if moved() {
		e := s.History[len(s.History)-1]
		w.Kind, w.To = e.Kind, s.Active
		w.Records = recordChanges(before, s.Desired.Records)
	}
	return w, nil
}

// liftWithheld records the rule withholding the move, then lifts it on the
// copy with the command a person would use, to find the next one, until
// traffic moves or a rule no command lifts holds.
func (s *state) liftWithheld(w *WhatIf, at int64, step func(int64, Payload) error) error {
	active := s.Active
	for s.Active == active && s.Withheld.Rule != "" {
		rule := s.Withheld.Rule
		wr := WithheldRule{Rule: rule, Message: s.Withheld.Message}
		var lift Payload
		switch rule {
		case RulePaused:
			wr.Lift, lift = "drwatch resume", Resume{Actor: whatIfActor}
		case RuleBlocked:
			wr.Lift, lift = "drwatch ack", Ack{Actor: whatIfActor}
		case RuleAutoDisabled:
			q := s.Policy.clone()
			q.AutoFailover = true
			wr.Lift, lift = "policy.auto_failover: true", SetPolicy{Policy: q, Actor: whatIfActor}
		}
		w.Withheld = append(w.Withheld, wr)
		if lift == nil {
			return nil
		}
		if err := step(at, lift); err != nil {
			return fmt.Errorf("what-if: lift %s: %w", rule, err)
		}
		if s.Withheld.Rule == rule {
			// Lifting did not help (it cannot happen with these rules, but a
			// loop must not depend on that).
			return nil
		}
	}
	return nil
}

// whatIfRound is the round watcher id would report at at: every critical
// probe of site failed, every other probe it ran recently (since cutoff)
// repeating its last result.
func (s *state) whatIfRound(id string, site Site, at, cutoff int64) Observe {
	p := s.Policy
	ns := s.Nodes[id]
	o := Observe{Node: id, PolicyHash: ns.PolicyHash}
	for _, st := range sites {
		for _, ref := range p.Sites[st].Probes {
			if st == site && ref.Critical {
				o.Results = append(o.Results, ProbeResult{Site: st, Probe: ref.Name, Class: "what-if", Phase: "what-if",
					Reason: "every critical probe of the site fails (what-if)", CompletedAt: at})
				continue
			}
			ps := ns.probe(st, ref.Name)
			if ps == nil || ps.LastAt < cutoff {
				continue
			}
			r := ps.Last
			r.Site, r.Probe, r.CompletedAt = st, ref.Name, at
			o.Results = append(o.Results, r)
		}
	}
	return o
}

// recordChanges pairs the records before a decision with those after it.
func recordChanges(before, after []RRset) []RecordChange {
	out := make([]RecordChange, 0, len(after))
	for _, a := range after {
		rc := RecordChange{Name: a.Name, Type: a.Type, TTL: a.TTL, From: []string{}, To: slices.Clone(a.Values)}
		for _, b := range before {
			if b.Name == a.Name && b.Type == a.Type {
				rc.From = slices.Clone(b.Values)
			}
		}
		out = append(out, rc)
	}
	return out
}

// Text renders the answer for people, one fact a line.
func (w WhatIf) Text() string {
	var b strings.Builder
	list := func(xs []string) string {
		if len(xs) == 0 {
			return "none"
		}
		return strings.Join(xs, ", ")
	}
	fmt.Fprintf(&b, "what if every critical probe of the %s (%s) failed now, from the state at index %d (%s active)\n",
		w.Site, list(w.Probes), w.Index, w.Active)
	fmt.Fprintf(&b, "watchers that keep reporting: %s; silent (stale or never reported): %s\n", list(w.Reporting), list(w.Silent))
	if w.DownRounds > 0 {
		fmt.Fprintf(&b, "%s DOWN at quorum after %d failing round(s) of %s\n", w.Site, w.DownRounds, w.Interval)
	}
	switch w.Outcome {
	case WhatIfMoves:
		fmt.Fprintf(&b, "traffic moves: %s %s -> %s\n", w.Kind, w.Active, w.To)
		fmt.Fprintf(&b, "expected time to the flip: %s to %s after the failure begins (%d round(s) of %s, a failing site re-probed every %s, probe timeout %s)\n",
			w.FlipMin, w.FlipMax, w.DownRounds, w.Interval, w.FastInterval, w.ProbeTimeout)
	case WhatIfStays:
		fmt.Fprintf(&b, "traffic does not move: %s\n", w.Reason)
	case WhatIfWithheld:
		b.WriteString("traffic does not move: withheld\n")
		for i, r := range w.Withheld {
			lead := "  by "
			if i > 0 {
				lead = "  then, once lifted, by "
			}
			fmt.Fprintf(&b, "%s%s: %s", lead, r.Rule, r.Message)
			if r.Lift != "" {
				fmt.Fprintf(&b, " (lift: %s)", r.Lift)
			}
			b.WriteString("\n")
		}
		if w.MovesOnceLifted {
			fmt.Fprintf(&b, "once those are lifted traffic moves: %s %s -> %s\n", w.Kind, w.Active, w.To)
		}
	}
	for _, r := range w.Records {
		fmt.Fprintf(&b, "  %s %d %s: %s -> %s\n", r.Name, r.TTL, r.Type, list(r.From), list(r.To))
	}
	return b.String()
}
