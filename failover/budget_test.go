package failover

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

// remAt is a remediation command of remediation name at base+at.
func remAt(at time.Duration, name, target, result, key string) Command {
	return Command{At: base + int64(at), Payload: Remediation{Name: name, Target: target, Verb: "fix",
		Result: result, Reason: "broken for " + at.String(), Key: key}}
}

// churn applies n dry-run records of another remediation, each a new
// state of its target, at base+at, from index idx+1 on.
func churn(t *testing.T, m *Machine, idx uint64, at time.Duration, n int) uint64 {
	t.Helper()
	cs := make([]Command, n)
	for i := range cs {
		cs[i] = remAt(at, "churn", fmt.Sprintf("pod%d", i%50), RemediationDryRun, fmt.Sprintf("churn/%d@%d", i%50, idx+uint64(i)))
	}
	return stepAll(t, m, idx, cs...)
}

// What a remediation's records said about its caps, applied keys, backoff
// and parking outlives the records: another remediation's records evict
// them all, and the budget says the same as before, on this replica and on
// one restored from its snapshot.
func TestRemediationBudgetOutlivesEvictedRecords(t *testing.T) {
	m := New()
	parked := Command{At: base + int64(3*time.Minute), Payload: Remediation{Name: "fix", Target: "lb1", Verb: "fix",
		Result: RemediationFailed, Key: "fix/lb1@1", NeedsAdmin: true, Detail: "403"}}
	idx := stepAll(t, m, 0,
		remAt(time.Minute, "fix", "node1", RemediationPlanned, "fix/node1@1"),
		remAt(time.Minute, "fix", "node1", RemediationApplied, "fix/node1@1"),
		remAt(2*time.Minute, "fix", "node2", RemediationApplied, "fix/node2@1"),
		remAt(2*time.Minute, "fix", "node3", RemediationFailed, "fix/node3@1"),
		remAt(3*time.Minute, "fix", "node3", RemediationFailed, "fix/node3@1"),
		parked,
		remAt(4*time.Minute, "fix", "node4", RemediationSkippedCap, "fix/node4@1"),
	)
	want := m.RemediationBudget("fix")
	cutoff := base
	if got := want.Hour(cutoff); got != 4 {
		t.Fatalf("hour count %d, want 4: two applied, node3 once, lb1 once", got)
	}
	if !want.WasApplied("node1", "fix/node1@1") || want.WasApplied("node1", "fix/node1@2") {
		t.Fatalf("applied keys of node1: %v, want fix/node1@1 only", want.Targets["node1"].Applied)
	}
	if n3 := want.Targets["node3"]; n3.Failures != 2 || n3.LastFailure != base+int64(3*time.Minute) {
		t.Fatalf("node3: %+v, want two failures, the last at 3m", n3)
	}
	if want.Targets["lb1"].Parked != "fix/lb1@1" || want.Targets["lb1"].Failures != 0 {
		t.Fatalf("lb1: %+v, want parked without a failure for backoff", want.Targets["lb1"])
	}

	idx = churn(t, m, idx, 5*time.Minute, MaxRemediations+10)
	for _, r := range m.Remediations() {
		if r.Name == "fix" {
			t.Fatalf("record %+v of fix still kept: the churn was meant to evict them all", r)
		}
	}
	got := m.RemediationBudget("fix")
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("budget after its records were evicted:\n got %+v\nwant %+v", got, want)
	}
	r := restoredCopy(t, m)
	if got := r.RemediationBudget("fix"); !reflect.DeepEqual(got, want) {
		t.Fatalf("budget restored from a snapshot:\n got %+v\nwant %+v", got, want)
	}
	// The churning remediation's own budget is bounded like any other.
	if b := m.RemediationBudget("churn"); len(b.Targets) != 50 || len(b.Window) != 0 {
		t.Fatalf("churn budget: %d targets and %d window events, want 50 and none (it applied nothing)", len(b.Targets), len(b.Window))
	}
	_ = idx
}

// A budget forgets what the hourly cap no longer needs and stays bounded:
// window events older than BudgetRetention go, and beyond MaxBudgetTargets
// the least recently recorded target goes.
func TestRemediationBudgetBounded(t *testing.T) {
	m := New()
	idx := stepAll(t, m, 0, remAt(0, "fix", "old", RemediationApplied, "fix/old@1"))
	cs := make([]Command, 0, MaxBudgetTargets+MaxRemediations)
	for i := range MaxBudgetTargets + MaxRemediations {
		cs = append(cs, remAt(BudgetRetention+time.Minute+time.Duration(i)*time.Millisecond, "fix",
			fmt.Sprintf("node%d", i), RemediationSkippedCap, fmt.Sprintf("fix/node%d@1", i)))
	}
	stepAll(t, m, idx, cs...)
	b := m.RemediationBudget("fix")
	if len(b.Targets) != MaxBudgetTargets {
		t.Fatalf("%d targets, want the bound %d", len(b.Targets), MaxBudgetTargets)
	}
	if _, ok := b.Targets["old"]; ok {
		t.Fatalf("the least recently recorded target is still there")
	}
	if len(b.Window) != 0 {
		t.Fatalf("window %v, want the applied action older than the retention gone", b.Window)
	}
	if n := len(m.RemediationBudget("fix").Targets); n != MaxBudgetTargets {
		t.Fatalf("%d targets on a second read, want %d", n, MaxBudgetTargets)
	}
}

// Remediation records, however many, never evict a failover decision from
// the history: they are routine entries, and the reconciler can still
// report on the decision and explain can still find it.
func TestRemediationFloodKeepsDecisions(t *testing.T) {
	m, idx := flipped(t)
	gen := m.Desired().Gen
	cs := make([]Command, MaxHistory+20)
	for i := range cs {
		cs[i] = remAt(time.Minute, "fix", fmt.Sprintf("node%d", i), RemediationSkippedCap, fmt.Sprintf("fix/node%d@1", i))
	}
	idx = stepAll(t, m, idx, cs...)
	if got := indexesOf(m.History(), KindAutoFailover); len(got) != 1 || got[0] != gen {
		t.Fatalf("automatic failover entries %v after the flood, want the decision at %d", got, gen)
	}
	decisionStillReported(t, m, idx, gen)
}
