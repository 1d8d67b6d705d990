package failover

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// groupRem is remAt for failover group group.
func groupRem(at time.Duration, group, name, target, result, key string) Command {
	c := remAt(at, name, target, result, key)
	r := c.Payload.(Remediation)
	r.Group = group
	c.Payload = r
	return c
}

// Each failover group's runner has its own budget: what group lms's
// records say never counts in apps' budget nor in the top-level runner's,
// even for the same remediation, target and Key; a record equal to
// another group's latest is recorded, not dropped as a duplicate; and the
// history entry names the group.
func TestRemediationBudgetIsPerGroup(t *testing.T) {
	m := New()
	idx := stepAll(t, m, 0, Command{At: base, Payload: SetPolicy{Policy: twoGroupPolicy(), Actor: "ops"}})
	idx = stepAll(t, m, idx,
		groupRem(time.Minute, "lms", "fix", "node1", RemediationApplied, "fix/node1@0"),
		groupRem(time.Minute, "lms", "fix", "node2", RemediationApplied, "fix/node2@0"),
		groupRem(2*time.Minute, "lms", "fix", "node3", RemediationFailed, "fix/node3@0"),
	)
	lms := m.GroupRemediationBudget("lms", "fix")
	if got := lms.Hour(base); got != 3 {
		t.Fatalf("lms hour count %d, want 3: two applied, one failed target", got)
	}
	for _, g := range []string{"apps", "", DefaultGroup} {
		b := m.GroupRemediationBudget(g, "fix")
		if n := b.Hour(base); n != 0 || len(b.Targets) != 0 {
			t.Errorf("group %q budget: hour %d, targets %v; want none of lms's", g, n, b.Targets)
		}
	}
	if b := m.RemediationBudget("fix"); len(b.Targets) != 0 {
		t.Errorf("top-level budget holds %v, want none of lms's", b.Targets)
	}

	// The same record in apps is its own, not lms's duplicate.
	res, err := m.Step(idx+1, groupRem(time.Minute, "apps", "fix", "node1", RemediationApplied, "fix/node1@0"))
	if err != nil {
		t.Fatal(err)
	}
	idx++
	if res.Noop != "" {
		t.Fatalf("apps' record of a Key lms applied: noop %q, want recorded", res.Noop)
	}
	if apps := m.GroupRemediationBudget("apps", "fix"); !apps.WasApplied("node1", "fix/node1@0") {
		t.Fatalf("apps' budget does not hold its own applied Key")
	}
	// Its look-alike: the same record again in apps is a duplicate.
	if res, err := m.Step(idx+1, groupRem(time.Minute, "apps", "fix", "node1", RemediationApplied, "fix/node1@0")); err != nil || res.Noop != "duplicate" {
		t.Fatalf("apps' record repeated: noop %q, err %v; want a duplicate", res.Noop, err)
	}
	idx++
	h := m.History()
	if last := h[len(h)-1]; last.Kind != KindRemediation || last.Group != "apps" {
		t.Fatalf("latest history entry %+v, want apps' remediation", last)
	}
	for _, r := range m.Remediations() {
		if r.Group == "" {
			t.Fatalf("record %+v without a group", r)
		}
	}
	_ = idx
}

// A group's budget outlives its evicted records as the top-level one
// does, in its group's state: another group's churn evicts them, and the
// budget, on this replica and on one restored from its snapshot, says the
// same as before.
func TestGroupRemediationBudgetOutlivesEvictedRecords(t *testing.T) {
	m := New()
	idx := stepAll(t, m, 0, Command{At: base, Payload: SetPolicy{Policy: twoGroupPolicy(), Actor: "ops"}})
	idx = stepAll(t, m, idx,
		groupRem(time.Minute, "lms", "fix", "node1", RemediationApplied, "fix/node1@0"),
		groupRem(2*time.Minute, "lms", "fix", "node3", RemediationFailed, "fix/node3@0"),
	)
	want := m.GroupRemediationBudget("lms", "fix")
	cs := make([]Command, MaxRemediations+5)
	for i := range cs {
		cs[i] = groupRem(3*time.Minute, "apps", "fix", fmt.Sprintf("pod%d", i%50), RemediationDryRun, fmt.Sprintf("fix/pod%d@%d", i%50, i))
	}
	stepAll(t, m, idx, cs...)
	for _, r := range m.Remediations() {
		if r.Group == "lms" {
			t.Fatalf("lms record %+v still kept: the churn was meant to evict it", r)
		}
	}
	if got := m.GroupRemediationBudget("lms", "fix"); !reflect.DeepEqual(got, want) {
		t.Fatalf("lms budget after eviction:\n got %+v\nwant %+v", got, want)
	}
	if b := m.RemediationBudget("fix"); len(b.Targets) != 0 {
		t.Fatalf("top-level budget took lms's or apps' records: %v", b.Targets)
	}
	r := restoredCopy(t, m)
	if got := r.GroupRemediationBudget("lms", "fix"); !reflect.DeepEqual(got, want) {
		t.Fatalf("lms budget restored from a snapshot:\n got %+v\nwant %+v", got, want)
	}
}

// A snapshot taken without groups (records and carried budgets without a
// group) restores with every budget the top-level runner's: the default
// group's, in a policy with it, or the lead group's runner's as before.
// No group's runner sees any of it once groups are set, and the snapshot
// of a replica that never had groups carries no group field.
func TestSnapshotWithoutGroupsKeepsBudgetsTopLevel(t *testing.T) {
	m := New()
	idx := stepAll(t, m, 0,
		remAt(time.Minute, "fix", "node1", RemediationApplied, "fix/node1@0"),
		remAt(2*time.Minute, "fix", "node3", RemediationFailed, "fix/node3@0"),
	)
	idx = churn(t, m, idx, 3*time.Minute, MaxRemediations+5)
	want := m.RemediationBudget("fix")
	if !want.WasApplied("node1", "fix/node1@0") {
		t.Fatalf("budget %+v lost node1's applied Key", want)
	}
	snap, err := m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(snap, []byte(`"remediation_budgets"`)) || bytes.Contains(snap, []byte(`"budgets"`)) || bytes.Contains(snap, []byte(`"group"`)) {
		t.Fatalf("snapshot without groups: want remediation_budgets and no group field, got %s", snap)
	}
	r := New()
	if err := r.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if got := r.GroupRemediationBudget(DefaultGroup, "fix"); !reflect.DeepEqual(got, want) {
		t.Fatalf("restored default budget:\n got %+v\nwant %+v", got, want)
	}
	stepAll(t, r, idx, Command{At: base + int64(4*time.Minute), Payload: SetPolicy{Policy: twoGroupPolicy(), Actor: "ops"}})
	if got := r.RemediationBudget("fix"); !reflect.DeepEqual(got, want) {
		t.Fatalf("top-level budget once groups are set:\n got %+v\nwant %+v", got, want)
	}
	for _, g := range []string{"lms", "apps"} {
		if b := r.GroupRemediationBudget(g, "fix"); len(b.Targets) != 0 || len(b.Window) != 0 {
			t.Errorf("group %s budget %+v, want empty: the old records are the top-level runner's", g, b)
		}
	}

	// The committed snapshot of the release before budgets were carried:
	// its records are the top-level runner's too.
	old := New()
	if err := old.Restore(bytes.TrimSuffix(readFile(t, "testdata/compat/remediations_v1.snapshot.json"), []byte("\n"))); err != nil {
		t.Fatal(err)
	}
	if b := old.GroupRemediationBudget("", "octavia-stuck-lb"); len(b.Targets) == 0 {
		t.Fatalf("old snapshot's records are in no top-level budget")
	}
}

// A record for a group the policy does not have is refused as a bad
// command naming the group and the configured ones, as any group command
// is; a group's record is checked against its own generation. Look-alike:
// DefaultGroup by name is the top-level runner's.
func TestRemediationForUnknownGroupRefused(t *testing.T) {
	m := New()
	idx := stepAll(t, m, 0, Command{At: base, Payload: SetPolicy{Policy: twoGroupPolicy(), Actor: "ops"}})
	_, err := m.Step(idx+1, groupRem(time.Minute, "lsm", "fix", "node1", RemediationApplied, "fix/node1@0"))
	if !errors.Is(err, ErrBadCommand) || !strings.Contains(err.Error(), `"lsm"`) || !strings.Contains(err.Error(), "apps, lms") {
		t.Fatalf("record for unknown group: %v, want a bad command naming lsm and the groups", err)
	}
	c := groupRem(time.Minute, "apps", "fix", "node1", RemediationApplied, "fix/node1@1")
	r := c.Payload.(Remediation)
	r.Gen = 1
	c.Payload = r
	if _, err := m.Step(idx+1, c); !errors.Is(err, ErrUnknownGen) {
		t.Fatalf("apps record for gen 1 while apps has none: %v, want %v", err, ErrUnknownGen)
	}
	if _, err := m.Step(idx+1, groupRem(time.Minute, DefaultGroup, "fix", "node1", RemediationApplied, "fix/node1@0")); err != nil {
		t.Fatalf("record naming the default group: %v", err)
	}
	if top := m.RemediationBudget("fix"); !top.WasApplied("node1", "fix/node1@0") {
		t.Fatalf("a record naming the default group is not the top-level runner's")
	}
}

// Remediation.Group is a field of log format 3: a format-2 cluster's
// leader refuses a group's record, as it refuses every groups field, and
// a record without a group is written as before.
func TestGroupRemediationNeedsTheGroupsLogFormat(t *testing.T) {
	c := groupRem(time.Minute, "lms", "fix", "node1", RemediationApplied, "fix/node1@0")
	b, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	var re *RefusedError
	if _, err := StampFormat(b, 2, 2, 2); !errors.As(err, &re) || re.Rule != RuleLogFormat {
		t.Fatalf("stamp a group's record at format 2: %v, want refused by %s", err, RuleLogFormat)
	}
	if _, err := StampFormat(b, 2, 3, 3); err != nil {
		t.Fatalf("stamp a group's record at format 3: %v", err)
	}
	plain := remAt(time.Minute, "fix", "node1", RemediationApplied, "fix/node1@0")
	if n := plain.NeedsFormat(); n != LegacyFormat {
		t.Errorf("a record without a group needs format %d, want %d", n, LegacyFormat)
	}
	if pb, err := Encode(plain); err != nil || bytes.Contains(pb, []byte("group")) {
		t.Errorf("a record without a group encodes %s (%v), want no group field", pb, err)
	}
}

// A group's view holds its own runner's records only, the latest
// viewRemediationsTail of them however many another group's runner
// recorded since; the view outside any group holds every runner's, as
// before groups.
func TestGroupViewHoldsItsOwnRemediations(t *testing.T) {
	m := New()
	idx := stepAll(t, m, 0, Command{At: base, Payload: SetPolicy{Policy: twoGroupPolicy(), Actor: "ops"}})
	idx = stepAll(t, m, idx, groupRem(time.Minute, "lms", "fix", "node1", RemediationApplied, "fix/node1@0"))
	cs := make([]Command, viewRemediationsTail+5)
	for i := range cs {
		cs[i] = groupRem(2*time.Minute, "apps", "fix", fmt.Sprintf("pod%d", i), RemediationDryRun, fmt.Sprintf("fix/pod%d", i))
	}
	stepAll(t, m, idx, cs...)
	lms, ok := m.GroupView("lms")
	if !ok || len(lms.Remediations) != 1 || lms.Remediations[0].Target != "node1" {
		t.Fatalf("lms view records %+v, want its one record", lms.Remediations)
	}
	apps, _ := m.GroupView("apps")
	if len(apps.Remediations) != viewRemediationsTail || apps.Remediations[len(apps.Remediations)-1].Target != fmt.Sprintf("pod%d", len(cs)-1) {
		t.Fatalf("apps view: %d records, want its latest %d", len(apps.Remediations), viewRemediationsTail)
	}
	for _, r := range apps.Remediations {
		if r.Group != "apps" {
			t.Fatalf("apps view holds %+v", r)
		}
	}
	if all := m.View().Remediations; len(all) != viewRemediationsTail {
		t.Fatalf("view outside any group: %d records, want the tail of every runner's %d", len(all), viewRemediationsTail)
	}
}
