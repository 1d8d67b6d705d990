package failover

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

// stepAll applies cs from index idx+1 on and returns the last index.
func stepAll(t *testing.T, m *Machine, idx uint64, cs ...Command) uint64 {
	t.Helper()
	for _, c := range cs {
		idx++
		if _, err := m.Step(idx, c); err != nil {
			t.Fatalf("index %d: %s: %v", idx, c.Type(), err)
		}
	}
	return idx
}

// flood applies n pause/resume writes by one operator from index idx+1 on.
func flood(t *testing.T, m *Machine, idx uint64, n int) uint64 {
	t.Helper()
	cs := make([]Command, n)
	for i := range cs {
		if i%2 == 0 {
			cs[i] = Command{At: base + int64(time.Minute), Payload: Pause{Actor: "mallory", Reason: fmt.Sprintf("flood %d", i)}}
		} else {
			cs[i] = Command{At: base + int64(time.Minute), Payload: Resume{Actor: "mallory", Reason: fmt.Sprintf("flood %d", i)}}
		}
	}
	return stepAll(t, m, idx, cs...)
}

func indexesOf(h []Entry, kinds ...string) []uint64 {
	var out []uint64
	for _, e := range h {
		if slices.Contains(kinds, e.Kind) {
			out = append(out, e.Index)
		}
	}
	return out
}

// An operate token that writes pause and resume a thousand times (the
// history's size) must not wipe the audit trail: the automatic failover,
// the manual failback, the break-glass write, the membership changes and
// the policy stay, in index order among the newest routine entries, and
// the history stays within MaxHistory.
func TestRoutineFloodKeepsAuditEntries(t *testing.T) {
	m, idx := flipped(t)
	at := base + int64(30*time.Second)
	idx = stepAll(t, m, idx,
		Command{At: at, Payload: Failback{Actor: "alice", Reason: "primary repaired", Force: true}},
		Command{At: at, Payload: Membership{Op: MemberAdd, ID: "d", Addr: "10.0.0.4:7400", Actor: "root", Reason: "new site"}},
		Command{At: at, Payload: Membership{Op: MemberRemove, ID: "d", Actor: "root", Reason: "site retired"}},
		Command{At: at, Payload: BreakGlass{Site: Backup, Actor: "bob", Reason: "no quorum"}},
	)
	auditKinds := []string{KindPolicy, KindAutoFailover, KindManualFailback, KindMemberAdd, KindMemberRemove, KindBreakGlass}
	before := indexesOf(m.History(), auditKinds...)
	if len(before) != 6 {
		t.Fatalf("got audit entries at %v, want six before the flood", before)
	}
	last := flood(t, m, idx, 1020)

	h := m.History()
	if got := indexesOf(h, auditKinds...); !slices.Equal(got, before) {
		t.Errorf("after 1020 pause/resume writes: audit entries at %v, want %v", got, before)
	}
	if len(h) != MaxHistory {
		t.Errorf("got %d entries, want %d", len(h), MaxHistory)
	}
	if !slices.IsSortedFunc(h, func(a, b Entry) int { return int(a.Index) - int(b.Index) }) {
		t.Errorf("history is not in index order")
	}
	routine := len(h) - len(before)
	if h[len(h)-1].Index != last || indexesOf(h, KindPause, KindResume)[0] != last-uint64(routine)+1 {
		t.Errorf("want the newest %d routine entries, up to index %d", routine, last)
	}
	// The status view's tail keeps the audit entries too, in index order.
	v := m.View()
	if got := indexesOf(v.History, auditKinds...); len(got) == 0 || got[len(got)-1] != before[len(before)-1] {
		t.Errorf("view history holds audit entries %v, want the newest of %v", got, before)
	}
	if !slices.IsSortedFunc(v.History, func(a, b Entry) int { return int(a.Index) - int(b.Index) }) {
		t.Errorf("view history is not in index order")
	}
}

// The reconciler's report on an automatic decision still finds it after a
// flood: the decision core records the DNS outcome on the decision's entry,
// where explain and the reconciler's gates look for it.
func TestDecisionOutlivesRoutineFlood(t *testing.T) {
	m, idx := flipped(t)
	gen := m.Desired().Gen
	idx = flood(t, m, idx, MaxHistory+20)
	decisionStillReported(t, m, idx, gen)
}

// decisionStillReported fails t unless the reconciler's report on decision
// gen, stepped at idx+1, is recorded on it and explain finds it.
func decisionStillReported(t *testing.T, m *Machine, idx, gen uint64) {
	t.Helper()
	res, err := m.Step(idx+1, Command{At: base + int64(2*time.Minute), Payload: ActionResult{Gen: gen, Outcome: OutcomeWritten}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Noop != "" {
		t.Errorf("action result for gen %d after the flood: got no-op %q, want it recorded on the decision", gen, res.Noop)
	}
	if _, err := m.Explain(gen); err != nil {
		t.Errorf("explain gen %d after the flood: %v", gen, err)
	}
}

// Audit entries are bounded too: beyond MaxAuditHistory the oldest audit
// entry goes, never a routine one.
func TestAuditEntriesEvictOnlyAuditEntries(t *testing.T) {
	m := New()
	idx := flood(t, m, 0, 10)
	var cs []Command
	for i := range MaxAuditHistory + 5 {
		cs = append(cs, Command{At: base + int64(time.Minute), Payload: Membership{Op: MemberRemove, ID: "d", Actor: "root", Reason: fmt.Sprintf("remove %d", i)}})
	}
	last := stepAll(t, m, idx, cs...)
	h := m.History()
	if got := indexesOf(h, KindPause, KindResume); len(got) != 10 {
		t.Errorf("got %d routine entries, want the 10 kept", len(got))
	}
	got := indexesOf(h, KindMemberRemove)
	if len(got) != MaxAuditHistory || got[0] != last-MaxAuditHistory+1 || got[len(got)-1] != last {
		t.Errorf("got %d audit entries %d..%d, want %d up to %d", len(got), got[0], got[len(got)-1], MaxAuditHistory, last)
	}
}

// A snapshot from before the split holds its history as one list; it
// restores as it is, and the first routine entry after it drops routine
// entries only.
func TestOldSnapshotHistoryRestoresAndKeepsAuditEntries(t *testing.T) {
	m, idx := flipped(t)
	idx = flood(t, m, idx, MaxHistory)
	snap, err := m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		State struct {
			History []json.RawMessage `json:"history"`
		} `json:"state"`
	}
	if err := json.Unmarshal(snap, &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw.State.History) != MaxHistory {
		t.Fatalf("snapshot holds %d entries, want %d", len(raw.State.History), MaxHistory)
	}
	r := New()
	if err := r.Restore(snap); err != nil {
		t.Fatal(err)
	}
	before := indexesOf(r.History(), KindPolicy, KindAutoFailover)
	flood(t, r, idx, 3)
	if got := indexesOf(r.History(), KindPolicy, KindAutoFailover); !slices.Equal(got, before) || len(got) != 2 {
		t.Errorf("after restore and three routine entries: audit entries %v, want %v (two)", got, before)
	}
}

func TestAuditKind(t *testing.T) {
	for _, k := range []string{KindAutoFailover, KindAutoFailback, KindManualFailover, KindManualFailback, KindSwitchover,
		KindPolicy, KindBreakGlass, "break_glass_rejected", KindMemberAdd, KindMemberRemove} {
		if !AuditKind(k) {
			t.Errorf("AuditKind(%q) = false, want true", k)
		}
	}
	for _, k := range []string{KindPause, KindResume, KindAck, KindWithheld, KindAction, KindRemediation, KindDrill, "", "Policy"} {
		if AuditKind(k) {
			t.Errorf("AuditKind(%q) = true, want false: routine", k)
		}
	}
}

// dropOldest removes exactly the oldest entry of the class asked for (or
// the oldest of all when the class has none) and keeps the others in
// order, wherever that entry is and whichever way the entries move.
func TestDropOldestRemovesTheOldestOfItsClassAndKeepsTheOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for trial := range 500 {
		n := 1 + r.IntN(40)
		var s state
		for i := range n {
			kind := KindAction
			if r.IntN(3) == 0 {
				kind = KindManualFailover
			}
			s.History = append(s.History, Entry{Index: uint64(i + 1), Kind: kind})
		}
		audit := r.IntN(2) == 0
		want := slices.Clone(s.History)
		i := max(0, slices.IndexFunc(want, func(e Entry) bool { return AuditKind(e.Kind) == audit }))
		want = slices.Delete(want, i, i+1)
		s.dropOldest(audit)
		if !slices.EqualFunc(s.History, want, func(a, b Entry) bool { return a.Index == b.Index && a.Kind == b.Kind }) {
			t.Fatalf("trial %d: dropOldest(%v) left %v, want %v", trial, audit, indexes(s.History), indexes(want))
		}
	}
}

func indexes(h []Entry) []uint64 {
	var out []uint64
	for _, e := range h {
		out = append(out, e.Index)
	}
	return out
}

// EntriesAt hands out the entries an index made as History has them,
// less what a history line does not carry, and shares nothing with them.
func TestEntriesAtAreHistorysEntriesWithoutTheirEvidence(t *testing.T) {
	m := New()
	c := Command{At: 1, Payload: SetPolicy{Policy: twoGroupPolicy(), Actor: "ops"}}
	if _, err := DecodeResponse(m.Apply(1, mustEncode(c))); err != nil {
		t.Fatal(err)
	}
	move := Command{At: 2, Payload: Failover{AllGroups: true, To: Backup, Force: true, Actor: "ops", Reason: "region"}}
	if _, err := DecodeResponse(m.Apply(2, mustEncode(move))); err != nil {
		t.Fatal(err)
	}
	got := m.EntriesAt(2)
	var want []Entry
	for _, e := range m.History() {
		if e.Index == 2 {
			if len(e.Tallies) == 0 {
				t.Fatalf("entry %+v has no tallies to leave out", e)
			}
			e.Evidence, e.Tallies, e.Timings.Servers = nil, nil, nil
			want = append(want, e)
		}
	}
	if len(want) != 2 || !reflect.DeepEqual(got, want) {
		t.Fatalf("EntriesAt(2) = %+v, want %+v", got, want)
	}
	if h := m.History(); h[len(h)-1].Tallies == nil {
		t.Fatal("EntriesAt changed the history's own entries")
	}
}
