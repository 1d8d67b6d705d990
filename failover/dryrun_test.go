package failover

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestDryRunIsTheStep: before each entry of a long random log, a dry run
// must predict exactly what Step then does (result or error, desired
// state), leave the machine untouched, and list checks that agree with the
// outcome: a refusal names the first failing check, an unforced success has
// none failing, and pause and the block, which stop automatic decisions
// only, are never among them.
func TestDryRunIsTheStep(t *testing.T) {
	g := newCmdGen(rand.New(rand.NewPCG(7, 7*7919)), true)
	m := New()
	last := uint64(0)
	moves, refused, forced := 0, 0, 0
	for i := range 600 {
		b := g.next()
		if i == 0 {
			b = g.first()
		}
		c, err := Decode(b)
		if err != nil {
			continue // the generator's malformed entries: Apply rejects them unread
		}
		before, _ := m.Snapshot()
		d := m.DryRun(c)
		if after, _ := m.Snapshot(); !bytes.Equal(before, after) {
			t.Fatalf("entry %d (%s): the dry run changed the machine", i, c.Type())
		}
		res, err := m.Step(last+1, c)
		if got, want := encodeResponse(d.Result, d.Err), encodeResponse(res, err); !bytes.Equal(got, want) {
			t.Fatalf("entry %d (%s): dry run predicted %s, Step returned %s", i, c.Type(), got, want)
		}
		if got, want := d.After, m.Desired(); !equalRRsets(got.Records, want.Records) || got.Gen != want.Gen || got.Active != want.Active || got.Fence != want.Fence || got.Done != want.Done {
			t.Fatalf("entry %d (%s): dry run predicted desired %+v, Step left %+v", i, c.Type(), got, want)
		}
		if err == nil {
			last++
			g.seen(res)
		}
		if c.Type() != CmdFailover && c.Type() != CmdFailback {
			if len(d.Checks) != 0 {
				t.Fatalf("entry %d (%s): got checks %+v, want none", i, c.Type(), d.Checks)
			}
			continue
		}
		moves++
		mv := c.Payload.(interface{ move() move }).move()
		var failing []Check
		for _, ch := range d.Checks {
			if ch.Rule == RulePaused || ch.Rule == RuleBlocked || ch.Rule == RuleAutoDisabled {
				t.Fatalf("entry %d: a manual move lists rule %s, which stops automatic decisions only", i, ch.Rule)
			}
			if !ch.OK {
				failing = append(failing, ch)
			}
			if ch.Overridden != (!ch.OK && mv.force) {
				t.Fatalf("entry %d: check %+v with force=%v: overridden must mean failing and forced", i, ch, mv.force)
			}
		}
		var ref *RefusedError
		switch {
		case errors.As(err, &ref):
			refused++
			if len(failing) == 0 || failing[0].Rule != ref.Rule || failing[0].Detail != ref.Message {
				t.Fatalf("entry %d: refused by %s (%s), but the first failing check is %+v", i, ref.Rule, ref.Message, failing)
			}
		case err != nil:
		case res.Noop == RuleAlreadyActive:
			if len(d.Checks) != 0 {
				t.Fatalf("entry %d: a move to the active site checks nothing, got %+v", i, d.Checks)
			}
		case len(failing) > 0 && !mv.force:
			t.Fatalf("entry %d: applied unforced with failing checks %+v", i, failing)
		case len(failing) > 0:
			forced++
		}
	}
	t.Logf("%d manual moves: %d refused, %d forced past a failing rule", moves, refused, forced)
	if refused == 0 || forced == 0 {
		t.Errorf("got %d refused and %d forced moves, want the generator to exercise both", refused, forced)
	}
}

// TestDryRunChecksWhileBlockedAndPaused: the case operators met: a failback
// while the block and a pause stand lists only the rules that apply to it
// (the primary's health and its gate), all passing, and would be applied.
func TestDryRunChecksWhileBlockedAndPaused(t *testing.T) {
	m, _, step := gateMachine(t, FailbackManual)
	report(t, step, 1, map[string]bool{"a": true, "b": true})
	if _, err := step(Command{Payload: Pause{Reason: "hold", Actor: "ops"}}); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	m.st.BlockedUntil = m.st.Now + int64(1e12) // as after an automatic flip
	m.mu.Unlock()
	d := m.DryRun(Command{At: m.View().Now, Payload: Failback{Reason: "primary fixed", Actor: "ops", AckBlock: true}})
	var rules []string
	for _, c := range d.Checks {
		rules = append(rules, c.Rule)
		if !c.OK {
			t.Errorf("check %+v fails, want it to hold", c)
		}
	}
	if want := []string{RuleNoQuorum, RuleTargetUnhealthy, RuleFailbackGate}; !slices.Equal(rules, want) {
		t.Errorf("got rules %v, want %v", rules, want)
	}
	if d.Err != nil || d.Result.Gen == 0 || d.After.Active != Primary || d.Before.Active != Backup {
		t.Errorf("got %+v, %v; want a failback to the primary", d.Result, d.Err)
	}
	if !m.View().Blocked {
		t.Errorf("the dry run lifted the block on the machine itself")
	}
}

// TestDryRunChecksOfASwitchoverAndAClosedGate: a planned switchover faces
// both-sites-UP instead of the target rules; a closed failback gate fails
// its check and is the rule the refusal names.
func TestDryRunChecksOfASwitchoverAndAClosedGate(t *testing.T) {
	m, _, step := gateMachine(t, FailbackManual)
	report(t, step, 1, map[string]bool{"a": true})
	d := m.DryRun(Command{At: m.View().Now, Payload: Failover{To: Primary, Planned: true, Reason: "back", Actor: "ops"}})
	var rules []string
	for _, c := range d.Checks {
		rules = append(rules, c.Rule)
	}
	if want := []string{RuleNotPlannedSafe, RuleFailbackGate}; !slices.Equal(rules, want) {
		t.Errorf("switchover: got rules %v, want %v", rules, want)
	}
	var ref *RefusedError
	if !d.Checks[0].OK || d.Checks[1].OK || !errors.As(d.Err, &ref) || ref.Rule != RuleFailbackGate || ref.Message != d.Checks[1].Detail {
		t.Errorf("switchover with the gate closed: got checks %+v and %v, want the gate failing and named", d.Checks, d.Err)
	}
	_, err := step(Command{Payload: Failover{To: Primary, Planned: true, Reason: "back", Actor: "ops"}})
	if !errors.As(err, &ref) || ref.Rule != RuleFailbackGate {
		t.Errorf("the real switchover: got %v, want the gate", err)
	}
}
