package remediate

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// The dry-run plan says what the runner would do: when the disruption brake
// would hold, every action that changes something is listed as held, with
// the brake's reason, and a report-only action stays report-only; a
// remediator under its share is listed as it plans. Nothing is applied.
func TestPlanAllShowsTheDisruptionBrake(t *testing.T) {
	braked := &censusRemediator{fakeRemediator: &fakeRemediator{name: "braked", actions: actions(6, "node")}, total: 10}
	braked.actions = append(braked.actions, Action{Target: "node9", Verb: "warn", Reason: "odd", ReportOnly: "needs an admin"})
	fine := &censusRemediator{fakeRemediator: &fakeRemediator{name: "fine", actions: actions(2, "lb")}, total: 10}
	planned, err := PlanAll(context.Background(), []Entry{
		{Remediator: braked, Settings: Settings{Mode: ModeOn, BrakeShare: DefaultBrakeShare}},
		{Remediator: fine, Settings: Settings{Mode: ModeDryRun, BrakeShare: DefaultBrakeShare}},
	})
	if err != nil {
		t.Fatalf("PlanAll: %v", err)
	}
	if len(planned) != 9 {
		t.Fatalf("got %d planned actions, want 9: %+v", len(planned), planned)
	}
	for _, p := range planned {
		switch {
		case p.Remediation == "braked" && p.ReportOnly == "":
			if !strings.Contains(p.Held, "disruption brake: 6 of 10 nodes qualify at once") {
				t.Errorf("%s/%s: got held %q, want the brake's reason", p.Remediation, p.Target, p.Held)
			}
		case p.Held != "":
			t.Errorf("%s/%s: got held %q, want it listed as planned", p.Remediation, p.Target, p.Held)
		}
	}
	if len(braked.applied)+len(fine.applied) != 0 {
		t.Fatalf("applied %v %v during a plan", braked.applied, fine.applied)
	}
}

// A census that fails holds every action, as the runner fails closed, and
// the failure is returned.
func TestPlanAllHoldsWhenTheCensusFails(t *testing.T) {
	r := &censusRemediator{fakeRemediator: &fakeRemediator{name: "blind", actions: actions(1, "node")}, total: 10, err: errors.New("list nodes: 503")}
	planned, err := PlanAll(context.Background(), []Entry{{Remediator: r, Settings: Settings{Mode: ModeOn, BrakeShare: DefaultBrakeShare}}})
	if err == nil || !strings.Contains(err.Error(), "blind: census: list nodes: 503") {
		t.Fatalf("got error %v, want the census failure named", err)
	}
	if len(planned) != 1 || !strings.Contains(planned[0].Held, "census") {
		t.Fatalf("got %+v, want the action held for want of a census", planned)
	}
}
