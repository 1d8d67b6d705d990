package failover

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// gateMachine has a policy whose failback gate is the primary's
// non-critical load-balancer probe, and has failed over to the backup.
func gateMachine(t *testing.T, mode string) (*Machine, *uint64, func(c Command) (Result, error)) {
	t.Helper()
	m := New()
	idx := uint64(0)
	at := int64(0)
	step := func(c Command) (Result, error) {
		idx++
		at += int64(time.Second)
		b, err := Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		b, err = Stamp(b, at)
		if err != nil {
			t.Fatal(err)
		}
		d, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		return m.Step(idx, d)
	}
	p := Policy{Nodes: []string{"a", "b", "c"}, Quorum: 2, Fall: 1, Rise: 1, Interval: time.Second, AutoFailover: true,
		Failback: FailbackPolicy{Mode: mode, After: 2 * time.Second},
		Sites: map[Site]SitePolicy{
			Primary: {Probes: []ProbeRef{{Name: "lms", Critical: true}, {Name: "ingress-lb", Critical: false}}},
			Backup:  {Probes: []ProbeRef{{Name: "lms", Critical: true}}},
		},
		Zone: "example.org.", Records: []Record{{Name: "lms", Type: "A", TTL: 60, Primary: []string{"192.0.2.1"}, Backup: []string{"192.0.2.2"}}},
		FailbackGate: []string{"ingress-lb"},
	}
	if _, err := step(Command{Payload: SetPolicy{Policy: p, Actor: "ops"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := step(Command{Payload: Failover{To: Backup, Reason: "meltdown", Actor: "ops", Force: true}}); err != nil {
		t.Fatal(err)
	}
	return m, &idx, step
}

// report has the three watchers see the primary's heartbeat UP and its load
// balancer as lbOK says (per node).
func report(t *testing.T, step func(Command) (Result, error), seq uint64, lbOK map[string]bool) {
	t.Helper()
	for _, n := range []string{"a", "b", "c"} {
		lb := ProbeResult{Site: Primary, Probe: "ingress-lb", OK: lbOK[n]}
		if !lb.OK {
			lb.Class, lb.Reason = "lb_error", "provisioning_status ERROR"
		}
		if _, err := step(Command{Payload: Observe{Node: n, Seq: seq, Results: []ProbeResult{
			{Site: Primary, Probe: "lms", OK: true}, lb, {Site: Backup, Probe: "lms", OK: true},
		}}}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFailbackGate(t *testing.T) {
	m, _, step := gateMachine(t, FailbackManual)
	report(t, step, 1, map[string]bool{"a": true})
	_, err := step(Command{Payload: Failback{Reason: "primary is back", Actor: "ops"}})
	var ref *RefusedError
	if !errors.As(err, &ref) || ref.Rule != RuleFailbackGate {
		t.Fatalf("failback with the load balancer UP on 1 of 3: got %v, want rule %s", err, RuleFailbackGate)
	}
	for _, want := range []string{"ingress-lb UP at quorum", "UP on 1 of 3", "b: ingress-lb", "provisioning_status ERROR"} {
		if !strings.Contains(ref.Message, want) {
			t.Errorf("refusal %q lacks %q", ref.Message, want)
		}
	}
	if m.Desired().Active != Backup {
		t.Fatal("a refused failback moved traffic")
	}
	if _, err := step(Command{Payload: Failover{To: Primary, Reason: "switch back", Actor: "ops", Planned: true}}); !errors.As(err, &ref) || ref.Rule != RuleFailbackGate {
		t.Errorf("planned switchover to the primary: got %v, want the gate", err)
	}
	report(t, step, 2, map[string]bool{"a": true}) // fresh reports: only the gate stands in the way
	res, err := step(Command{Payload: Failback{Reason: "checked the LBs by hand", Actor: "ops", Force: true}})
	if err != nil || res.Gen == 0 {
		t.Fatalf("forced failback: %v %+v", err, res)
	}
	if h := m.History(); h[len(h)-1].Rule != RuleFailbackGate || !h[len(h)-1].Forced {
		t.Errorf("forced failback entry: rule %q forced %v, want the gate recorded", h[len(h)-1].Rule, h[len(h)-1].Forced)
	}

	m, _, step = gateMachine(t, FailbackManual)
	report(t, step, 1, map[string]bool{"a": true, "b": true})
	if res, err := step(Command{Payload: Failback{Reason: "LBs ACTIVE", Actor: "ops"}}); err != nil || res.Gen == 0 {
		t.Errorf("failback with the gate UP on 2 of 3: got %v %+v", err, res)
	}
}

func TestAutoFailbackWaitsForTheGate(t *testing.T) {
	m, _, step := gateMachine(t, FailbackAuto)
	for seq := uint64(1); seq <= 6; seq++ {
		report(t, step, seq, map[string]bool{"c": true})
	}
	v := m.View()
	if v.Active != Backup || v.WithheldRule != RuleFailbackGate {
		t.Fatalf("got active %s withheld %q, want backup held by %s", v.Active, v.WithheldRule, RuleFailbackGate)
	}
	for seq := uint64(7); seq <= 9; seq++ {
		report(t, step, seq, map[string]bool{"a": true, "b": true, "c": true})
	}
	if m.Desired().Active != Primary {
		t.Errorf("auto failback did not happen once the gate opened")
	}
}

func TestFailbackGateMustNamePrimaryProbes(t *testing.T) {
	p := Policy{Nodes: []string{"a"}, Quorum: 1, Fall: 1, Rise: 1, Interval: time.Second,
		Sites: map[Site]SitePolicy{Primary: {Probes: []ProbeRef{{Name: "lms", Critical: true}}}, Backup: {Probes: []ProbeRef{{Name: "lms", Critical: true}}}},
		Zone:  "example.org.", Records: []Record{{Name: "lms", Type: "A", TTL: 60, Primary: []string{"192.0.2.1"}, Backup: []string{"192.0.2.2"}}},
		FailbackGate: []string{"octavia"}}
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), `failback_gate[0]: "octavia" is not a probe of the primary site`) {
		t.Errorf("got %v", err)
	}
}
