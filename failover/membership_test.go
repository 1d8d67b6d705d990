package failover

import (
	"errors"
	"testing"
)

// A membership change is recorded in the history with its actor and
// reason, so the log says who changed the voters and why; a record
// without a reason, an id or a known op is refused.
func TestMembershipIsRecordedInTheHistory(t *testing.T) {
	m := New()
	res, err := m.Step(1, Command{At: 5, Payload: Membership{Op: MemberAdd, ID: "d", Addr: "10.4.0.5:7400", Actor: "alice", Reason: "new site"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind != KindMemberAdd {
		t.Errorf("got result kind %q, want %q", res.Kind, KindMemberAdd)
	}
	if _, err := m.Step(2, Command{At: 6, Payload: Membership{Op: MemberRemove, ID: "c", Actor: "bob", Reason: "site retired"}}); err != nil {
		t.Fatal(err)
	}
	h := m.History()
	if len(h) != 2 {
		t.Fatalf("got %d history entries, want 2: %+v", len(h), h)
	}
	for i, want := range []Entry{
		{Index: 1, At: 5, Kind: KindMemberAdd, Actor: "alice", Reason: "new site", Detail: "d at 10.4.0.5:7400"},
		{Index: 2, At: 6, Kind: KindMemberRemove, Actor: "bob", Reason: "site retired", Detail: "c"},
	} {
		got := h[i]
		if got.Index != want.Index || got.At != want.At || got.Kind != want.Kind || got.Actor != want.Actor || got.Reason != want.Reason || got.Detail != want.Detail {
			t.Errorf("entry %d: got %+v, want %+v", i, got, want)
		}
	}
	for name, c := range map[string]Membership{
		"no reason":  {Op: MemberAdd, ID: "e", Addr: "10.5.0.5:7400", Actor: "alice"},
		"no id":      {Op: MemberRemove, Actor: "alice", Reason: "x"},
		"unknown op": {Op: "promote", ID: "e", Actor: "alice", Reason: "x"},
		"no addr":    {Op: MemberAdd, ID: "e", Actor: "alice", Reason: "x"},
	} {
		if _, err := m.Step(3, Command{At: 7, Payload: c}); !errors.Is(err, ErrBadCommand) {
			t.Errorf("%s: got %v, want ErrBadCommand", name, err)
		}
	}
	if got := len(m.History()); got != 2 {
		t.Errorf("refused records changed the history: got %d entries, want 2", got)
	}
}
