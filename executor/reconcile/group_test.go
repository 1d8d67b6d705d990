package reconcile

import (
	"context"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
)

// A group the replicated policy does not have (the leader's file names a
// group the log has not replicated yet) has no decision: its reconciler
// observes and writes nothing, while the default group's still flips.
func TestGroupNotInThePolicyIsNeverWritten(t *testing.T) {
	f := newFixture(t)
	f.failoverTo(t, failover.Backup)
	rec, err := New(Config{Node: "a", Group: "gamma", State: GroupState(f.cluster.m, "gamma"), Cluster: f.cluster, DNS: f.prov, Interval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rec.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := f.updates(); n != 0 {
		t.Fatalf("got %d dns updates for a group the policy lacks, want 0", n)
	}
	if rep := rec.Last(); rep.Action != "observe" || rep.Gen != 0 {
		t.Errorf("got action %q gen %d, want observe at gen 0", rep.Action, rep.Gen)
	}
	// The look-alike: the default group's decision, named or not, is written.
	def, err := New(Config{Node: "a", Group: failover.DefaultGroup, State: GroupState(f.cluster.m, failover.DefaultGroup), Cluster: f.cluster, DNS: f.prov, Interval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := def.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := f.lookup(t, "lms"); len(got) != 1 || got[0] != "198.51.100.1" {
		t.Errorf("default group: lms = %v, want the backup's 198.51.100.1", got)
	}
	if d := f.cluster.m.Desired(); !d.Done {
		t.Errorf("default group: got desired %+v, want its decision verified", d)
	}
}
