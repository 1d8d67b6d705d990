package failover

import (
	"errors"
	"testing"
)

// A refused break-glass marker is recorded in the history and changes
// nothing else: not the active site, not the desired records, not the gen.
// The same marker delivered twice is recorded once; another marker is
// recorded beside it.
func TestBreakGlassRejectedChangesOnlyTheHistory(t *testing.T) {
	m := New()
	mustStep(t, m, 1, Command{At: 1, Payload: SetPolicy{Policy: testPolicy()}})
	before := m.Desired()
	rej := BreakGlassRejected{Marker: "aa11", Why: MarkerForged, Reason: "its MAC does not verify", Claim: "site=backup actor=alice", Actor: "a"}
	res, err := m.Step(2, Command{At: 2, Payload: rej})
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind != KindBreakGlassRejected || res.Gen != 0 {
		t.Errorf("got result %+v, want kind %s and no gen", res, KindBreakGlassRejected)
	}
	mustStep(t, m, 3, Command{At: 3, Payload: rej})
	other := rej
	other.Marker, other.Why = "bb22", MarkerNotServed
	mustStep(t, m, 4, Command{At: 4, Payload: other})
	if after := m.Desired(); after.Gen != before.Gen || after.Active != before.Active || !equalRRsets(after.Records, before.Records) {
		t.Errorf("desired changed: before %+v, after %+v", before, after)
	}
	var got []Entry
	for _, e := range m.History() {
		if e.Kind == KindBreakGlassRejected {
			got = append(got, e)
		}
	}
	if len(got) != 2 {
		t.Fatalf("got %d rejected entries, want 2 (one per marker): %+v", len(got), got)
	}
	if e := got[0]; e.Actor != "a" || e.Rule != MarkerForged || e.Detail != RejectedMarkerDetail("aa11") || e.To != "" {
		t.Errorf("got entry %+v, want the finding node as actor, the why as rule, the marker in detail, no site", e)
	}
}

func TestBreakGlassRejectedRefusesUnknownWhyOrNoMarker(t *testing.T) {
	m := New()
	mustStep(t, m, 1, Command{At: 1, Payload: SetPolicy{Policy: testPolicy()}})
	for _, c := range []BreakGlassRejected{{Marker: "aa", Why: "bored"}, {Why: MarkerForged}} {
		if _, err := m.Step(2, Command{At: 2, Payload: c}); !errors.Is(err, ErrBadCommand) {
			t.Errorf("%+v: got %v, want ErrBadCommand", c, err)
		}
	}
}
