package failover

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
)

func remediationCmd(result, key string) Remediation {
	return Remediation{Name: "orphaned-pods", Target: "ns/pod", Verb: "force-delete",
		Result: result, Reason: "terminating 10m", Key: key}
}

func TestRemediationStep(t *testing.T) {
	long := strings.Repeat("x", maxRemediationText+1)
	tests := []struct {
		name    string
		edit    func(*Remediation)
		wantErr error
	}{
		{"planned", func(r *Remediation) {}, nil},
		{"each result", func(r *Remediation) { r.Result = RemediationSkippedCap }, nil},
		{"unknown result", func(r *Remediation) { r.Result = "done" }, ErrBadCommand},
		{"no name", func(r *Remediation) { r.Name = "" }, ErrBadCommand},
		{"no key", func(r *Remediation) { r.Key = "" }, ErrBadCommand},
		{"no target", func(r *Remediation) { r.Target = "" }, ErrBadCommand},
		{"no verb", func(r *Remediation) { r.Verb = "" }, ErrBadCommand},
		{"reason too long", func(r *Remediation) { r.Reason = long }, ErrBadCommand},
		{"gen from the future", func(r *Remediation) { r.Gen = 7 }, ErrUnknownGen},
		{"needs admin on a failure", func(r *Remediation) { r.Result, r.NeedsAdmin = RemediationFailed, true }, nil},
		{"needs admin on a success", func(r *Remediation) { r.Result, r.NeedsAdmin = RemediationApplied, true }, ErrBadCommand},
		{"precondition on a failure", func(r *Remediation) { r.Result, r.Precondition = RemediationFailed, true }, nil},
		{"precondition on a skip", func(r *Remediation) { r.Result, r.Precondition = RemediationSkippedCap, true }, ErrBadCommand},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New()
			c := remediationCmd(RemediationPlanned, "k")
			tt.edit(&c)
			before, _ := m.Snapshot()
			res, err := m.Step(1, at100(c))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("got err %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				after, _ := m.Snapshot()
				if !bytes.Equal(before, after) {
					t.Fatalf("rejected command changed the state")
				}
				return
			}
			if res.Kind != KindRemediation {
				t.Fatalf("got kind %q, want %q", res.Kind, KindRemediation)
			}
			rs := m.Remediations()
			if len(rs) != 1 || rs[0].Index != 1 || rs[0].Key != "k" || rs[0].At != 100 {
				t.Fatalf("got records %+v, want one at index 1", rs)
			}
		})
	}
}

func TestRemediationHistoryAndDedup(t *testing.T) {
	m := New()
	steps := []struct {
		c        Remediation
		wantNoop string
		history  bool
	}{
		{remediationCmd(RemediationDryRun, "a"), "", false},
		{remediationCmd(RemediationDryRun, "a"), "duplicate", false},
		{remediationCmd(RemediationPlanned, "a"), "", false},
		{remediationCmd(RemediationApplied, "a"), "", true},
		{remediationCmd(RemediationApplied, "a"), "duplicate", false},
		{remediationCmd(RemediationFailed, "b"), "", true},
		{remediationCmd(RemediationSkippedCap, "c"), "", true},
	}
	hist := 0
	for i, s := range steps {
		res, err := m.Step(uint64(i+1), at100(s.c))
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if res.Noop != s.wantNoop {
			t.Fatalf("step %d (%s %s): got noop %q, want %q", i, s.c.Key, s.c.Result, res.Noop, s.wantNoop)
		}
		if s.history {
			hist++
		}
		if got := len(m.History()); got != hist {
			t.Fatalf("step %d: got %d history entries, want %d", i, got, hist)
		}
	}
	h := m.History()
	if h[0].Kind != KindRemediation || h[0].Outcome != RemediationApplied || h[0].Actor != "orphaned-pods" ||
		h[0].Detail != "force-delete ns/pod" || h[0].decision() {
		t.Fatalf("got history entry %+v, want an applied remediation, not a decision", h[0])
	}
	if got := len(m.Remediations()); got != 5 {
		t.Fatalf("got %d records, want 5", got)
	}
}

func TestRemediationBounded(t *testing.T) {
	m := New()
	for i := range MaxRemediations + 10 {
		c := remediationCmd(RemediationDryRun, "k"+strconv.Itoa(i))
		if _, err := m.Step(uint64(i+1), at100(c)); err != nil {
			t.Fatal(err)
		}
	}
	rs := m.Remediations()
	if len(rs) != MaxRemediations || rs[0].Index != 11 {
		t.Fatalf("got %d records starting at index %d, want %d starting at 11", len(rs), rs[0].Index, MaxRemediations)
	}
}

// TestViewRemediationsTail: the view carries the newest records, oldest
// first, so the status page can show dry-run plans that never reach the
// history; an empty machine shows an empty list, not null.
func TestViewRemediationsTail(t *testing.T) {
	m := New()
	if v := m.View(); v.Remediations == nil || len(v.Remediations) != 0 {
		t.Fatalf("empty machine: got %#v, want an empty list", v.Remediations)
	}
	n := viewRemediationsTail + 5
	for i := range n {
		c := remediationCmd(RemediationDryRun, "k"+strconv.Itoa(i))
		if _, err := m.Step(uint64(i+1), at100(c)); err != nil {
			t.Fatal(err)
		}
	}
	rs := m.View().Remediations
	if len(rs) != viewRemediationsTail || rs[0].Key != "k5" || rs[len(rs)-1].Key != "k"+strconv.Itoa(n-1) {
		t.Fatalf("got %d records from %s to %s, want %d from k5 to k%d", len(rs), rs[0].Key, rs[len(rs)-1].Key, viewRemediationsTail, n-1)
	}
}

func TestRemediationEncodeStampSnapshot(t *testing.T) {
	c := at100(remediationCmd(RemediationApplied, "k"))
	b, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(append(b[:len(b)-1:len(b)-1], []byte(`,"bogus":1}`)...)); !errors.Is(err, ErrBadCommand) {
		t.Fatalf("got %v for an unknown field, want ErrBadCommand", err)
	}
	b, err = Stamp(b, 555)
	if err != nil {
		t.Fatal(err)
	}
	m := New()
	if _, err := DecodeResponse(m.Apply(1, b)); err != nil {
		t.Fatal(err)
	}
	if got := m.Remediations()[0].At; got != 555 {
		t.Fatalf("got At %d, want the stamped 555", got)
	}
	snap, err := m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	m2 := New()
	if err := m2.Restore(snap); err != nil {
		t.Fatal(err)
	}
	snap2, _ := m2.Snapshot()
	if !bytes.Equal(snap, snap2) {
		t.Fatalf("snapshot after restore differs")
	}
	if got := m2.Remediations(); len(got) != 1 || got[0].Key != "k" {
		t.Fatalf("got %+v after restore, want the record", got)
	}
}

// TestRemediationNeedsAdmin: a failure marked needs_admin is stored with
// the mark, says so in the history, and is not a duplicate of the same
// failure without it.
func TestRemediationNeedsAdmin(t *testing.T) {
	m := New()
	plain := remediationCmd(RemediationFailed, "a")
	parked := plain
	parked.NeedsAdmin = true
	for i, c := range []Remediation{plain, parked} {
		res, err := m.Step(uint64(i+1), at100(c))
		if err != nil || res.Noop != "" {
			t.Fatalf("step %d: got noop %q, err %v, want a new record", i, res.Noop, err)
		}
	}
	rs := m.Remediations()
	if len(rs) != 2 || rs[0].NeedsAdmin || !rs[1].NeedsAdmin {
		t.Fatalf("got records %+v, want a plain failure then one that needs an admin", rs)
	}
	h := m.History()
	if got := h[len(h)-1]; got.Outcome != RemediationFailed || got.Detail != "force-delete ns/pod: needs admin" {
		t.Fatalf("got history entry %+v, want a failure whose detail says it needs an admin", got)
	}
	b, err := Encode(at100(parked))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"needs_admin":true`)) {
		t.Fatalf("got encoding %s, want needs_admin", b)
	}
	b, err = Encode(at100(plain))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("needs_admin")) {
		t.Fatalf("got encoding %s, want no needs_admin when unset (old records unchanged)", b)
	}
}

// at100 is the command that records r, stamped at 100.
func at100(r Remediation) Command { return Command{At: 100, Payload: r} }
