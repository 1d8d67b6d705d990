package failover

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// whatIf is the script command `whatif [scenario=primary-down] [timeout=500ms] [at=...]`:
// it prints the core's answer and fails the script if asking changed the
// machine by a single byte.
func (h *harness) whatIf(a args) string {
	t := h.t
	t.Helper()
	before, err := h.m.Snapshot()
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	w, err := h.m.WhatIf(WhatIfInput{Scenario: a.str("scenario", ScenarioPrimaryDown), Now: h.at(a, "at"), ProbeTimeout: a.dur(t, "timeout", 0)})
	after, serr := h.m.Snapshot()
	if serr != nil {
		t.Fatalf("snapshot: %v", serr)
	}
	if !bytes.Equal(before, after) {
		t.Fatalf("whatif changed the machine:\nbefore %s\nafter  %s", before, after)
	}
	if err != nil {
		return "error: " + err.Error()
	}
	return w.Text()
}

// An unknown scenario is refused naming the known ones, and nothing is
// stepped.
func TestWhatIfUnknownScenarioListsTheKnownOnes(t *testing.T) {
	m := New()
	_, err := m.WhatIf(WhatIfInput{Scenario: "dns-down"})
	if !errors.Is(err, ErrUnknownScenario) {
		t.Fatalf("got %v, want ErrUnknownScenario", err)
	}
	for _, s := range Scenarios() {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("got %q, want it to name scenario %q", err, s)
		}
	}
}

// Without a policy there is nothing to decide by: the answer is an error
// wrapping ErrNoPolicy, not a guess.
func TestWhatIfWithoutPolicyIsAnError(t *testing.T) {
	_, err := New().WhatIf(WhatIfInput{Scenario: ScenarioPrimaryDown})
	if !errors.Is(err, ErrNoPolicy) {
		t.Fatalf("got %v, want ErrNoPolicy", err)
	}
}

// The answer is what the machine then does: fed the same failing rounds
// for real, it flips in the round WhatIf named, to the records it named.
func TestWhatIfMatchesWhatTheMachineThenDoes(t *testing.T) {
	for _, fall := range []int{1, 2, 3, 5} {
		m := New()
		p := Policy{Nodes: []string{"a", "b", "c"}, Quorum: 2, Fall: fall, Rise: 2, Interval: time.Second, AutoFailover: true,
			BlockWindow: time.Hour, Sites: map[Site]SitePolicy{Primary: {Probes: []ProbeRef{{Name: "web", Critical: true}}}, Backup: {Probes: []ProbeRef{{Name: "web", Critical: true}}}},
			Zone: "example.org.", Records: []Record{{Name: "lms", Type: "A", TTL: 60, Primary: []string{"203.0.113.10"}, Backup: []string{"198.51.100.10"}}}}
		index := uint64(1)
		if _, err := m.Step(index, Command{At: base, Payload: SetPolicy{Policy: p}}); err != nil {
			t.Fatal(err)
		}
		round := func(at int64, primaryOK bool) {
			for _, n := range p.Nodes {
				index++
				o := Observe{Node: n, Results: []ProbeResult{{Site: Primary, Probe: "web", OK: primaryOK}, {Site: Backup, Probe: "web", OK: true}}}
				if _, err := m.Step(index, Command{At: at, Payload: o}); err != nil {
					t.Fatal(err)
				}
			}
		}
		at := base
		for range 2 {
			at += int64(time.Second)
			round(at, true)
		}
		w, err := m.WhatIf(WhatIfInput{Scenario: ScenarioPrimaryDown, Now: at + int64(time.Second), ProbeTimeout: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if w.Outcome != WhatIfMoves || w.DownRounds != fall {
			t.Fatalf("fall %d: got outcome %s after %d rounds, want moves after %d", fall, w.Outcome, w.DownRounds, fall)
		}
		if lo, hi := p.DetectionFloor(300 * time.Millisecond); w.FlipMin != lo || w.FlipMax != hi {
			t.Errorf("fall %d: got flip in %s..%s, want the policy's detection floor %s..%s", fall, w.FlipMin, w.FlipMax, lo, hi)
		}
		rounds := 0
		for m.Desired().Active == Primary && rounds < 10 {
			rounds++
			at += int64(time.Second)
			round(at, false)
		}
		if rounds != w.DownRounds {
			t.Errorf("fall %d: the machine flipped after %d failing rounds, WhatIf said %d", fall, rounds, w.DownRounds)
		}
		d := m.Desired()
		if len(w.Records) != 1 || !slices.Equal(w.Records[0].To, d.Records[0].Values) || w.To != d.Active {
			t.Errorf("fall %d: WhatIf said %v to %s, the machine wrote %v to %s", fall, w.Records, w.To, d.Records, d.Active)
		}
	}
}

// BenchmarkWhatIf: one answer on a three-watcher state (copy, fall+1 rounds at most).
func BenchmarkWhatIf(b *testing.B) {
	m := New()
	p := Policy{Nodes: []string{"a", "b", "c"}, Quorum: 2, Fall: 3, Rise: 2, Interval: time.Second, AutoFailover: true,
		Sites: map[Site]SitePolicy{Primary: {Probes: []ProbeRef{{Name: "web", Critical: true}}}, Backup: {Probes: []ProbeRef{{Name: "web", Critical: true}}}},
		Zone:  "example.org.", Records: []Record{{Name: "lms", Type: "A", TTL: 60, Primary: []string{"203.0.113.10"}, Backup: []string{"198.51.100.10"}}}}
	if _, err := m.Step(1, Command{At: base, Payload: SetPolicy{Policy: p}}); err != nil {
		b.Fatal(err)
	}
	for i, n := range p.Nodes {
		o := Observe{Node: n, Results: []ProbeResult{{Site: Primary, Probe: "web", OK: true}, {Site: Backup, Probe: "web", OK: true}}}
		if _, err := m.Step(uint64(i+2), Command{At: base, Payload: o}); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if w, err := m.WhatIf(WhatIfInput{Scenario: ScenarioPrimaryDown, Now: base}); err != nil || w.Outcome != WhatIfMoves {
			b.Fatalf("got %v %v", w.Outcome, err)
		}
	}
}
