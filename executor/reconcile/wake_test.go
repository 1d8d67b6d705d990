package reconcile

import (
	"context"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
)

// movingState is a desired state the test changes between calls.
type movingState struct{ d failover.Desired }

func (s *movingState) Desired() failover.Desired { return s.d }

// A settled named group (its decision verified, or none yet) is woken by
// an applied command only when its decision is not the one its latest
// pass started from: a new generation, or its verification. While a
// decision is unwritten or unverified, every command wakes it, so a write
// a gate or a retry holds back meets each new command. The look-alike,
// the default group, is woken by every command, settled or not, as
// before groups.
func TestSettledGroupIsWokenOnlyByAChangeOfItsDecision(t *testing.T) {
	f := newFixture(t)
	st := &movingState{}
	rec, err := New(Config{Node: "a", Group: "alpha", State: st, Cluster: f.cluster, DNS: f.prov, Interval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	def, err := New(Config{Node: "a", State: st, Cluster: f.cluster, DNS: f.prov, Interval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// pass runs one pass of each for a settled state (it writes nothing).
	pass := func() {
		t.Helper()
		for _, r := range []*Reconciler{rec, def} {
			if _, err := r.Pass(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
	steps := []struct {
		what string
		d    failover.Desired
		pass bool // run a pass before asking
		want bool
	}{
		{"no decision, no pass yet", failover.Desired{}, false, false},
		{"no decision, after a pass", failover.Desired{}, true, false},
		{"a new decision", failover.Desired{Gen: 7}, false, true},
		{"the decision still unverified, another command", failover.Desired{Gen: 7}, false, true},
		{"its verification, not yet passed over", failover.Desired{Gen: 7, Done: true}, false, true},
		{"verified, after a pass", failover.Desired{Gen: 7, Done: true}, true, false},
		{"verified, another command", failover.Desired{Gen: 7, Done: true}, false, false},
		{"a newer verified decision, not yet passed over", failover.Desired{Gen: 12, Done: true}, false, true},
		{"settled on it after a pass", failover.Desired{Gen: 12, Done: true}, true, false},
	}
	for _, s := range steps {
		st.d = s.d
		if s.pass {
			pass()
		}
		if got := rec.Wants(); got != s.want {
			t.Fatalf("named group, %s (%+v): Wants() = %v, want %v", s.what, s.d, got, s.want)
		}
		if !def.Wants() {
			t.Fatalf("default group, %s: Wants() = false, want every command to wake it", s.what)
		}
	}
}
