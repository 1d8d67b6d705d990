package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/watcher"
)

func checkWorld() *World {
	return &World{policy: simPolicy(), snaps: map[uint64]snapSeen{}, rounds: map[string][]round{}, flips: map[groupGen]bool{}, recorded: map[string]bool{}, decided: map[groupGen]failover.Site{}}
}

// The invariant 1 check must flag an automatic flip that the scripted
// truth cannot explain, and pass one it can.
func TestAutoFlipCheckNeedsQuorumScriptedEvidence(t *testing.T) {
	at := time.Unix(1000, 0)
	flip := failover.Entry{Index: 40, At: at.UnixNano(), Kind: failover.KindAutoFailover, From: failover.Primary, To: failover.Backup}
	rounds := func(primaryDown bool) []round {
		var rs []round
		for i := range 3 {
			r := round{at: at.Add(-time.Duration(i) * Interval), down: map[failover.Site][]string{}}
			if primaryDown {
				r.down[failover.Primary] = []string{"web"}
			}
			rs = append(rs, r)
		}
		return rs
	}
	for _, tc := range []struct {
		name    string
		failing []string
		want    bool
	}{
		{"one node failing", []string{"a"}, true},
		{"quorum failing", []string{"a", "b"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := checkWorld()
			for _, id := range []string{"a", "b", "c"} {
				w.rounds[id] = rounds(strings.Contains(strings.Join(tc.failing, ","), id))
			}
			g, _ := w.simGroup(failover.DefaultGroup)
			w.checkAutoFlip("a", g, flip)
			if got := len(w.violations) > 0; got != tc.want {
				t.Fatalf("violation: got %v (%v), want %v", got, w.violations, tc.want)
			}
		})
	}
}

// The invariant 6 check must flag two replicas whose states differ after
// applying the same index.
func TestSnapshotCheckFlagsDivergentReplicas(t *testing.T) {
	w := checkWorld()
	replica := func(node string) *replica {
		m := failover.New()
		return &replica{FSM: watcher.NewFSM(m, nil), machine: m, w: w, node: node}
	}
	policy, err := failover.Encode(failover.Command{Payload: failover.SetPolicy{Policy: simPolicy()}})
	if err != nil {
		t.Fatal(err)
	}
	tick, err := failover.Encode(failover.Command{At: 5, Payload: failover.Tick{}})
	if err != nil {
		t.Fatal(err)
	}
	replica("a").Apply(1, policy)
	replica("b").Apply(1, policy)
	if len(w.violations) > 0 {
		t.Fatalf("same command at index 1: got %v, want no violation", w.violations)
	}
	replica("c").Apply(1, tick)
	if len(w.violations) != 1 || !strings.Contains(w.violations[0], "invariant 6") {
		t.Fatalf("different command at index 1: got %v, want one invariant 6 violation", w.violations)
	}
}

// A routine entry evicted from a full history while an older audit entry
// is kept is not a lost acknowledged command; a routine entry missing from
// a history that is not full is.
func TestEvictedFollowsTheHistoryClasses(t *testing.T) {
	full := []failover.Entry{{Index: 1, Kind: failover.KindManualFailover}}
	for i := range failover.MaxHistory - 1 {
		full = append(full, failover.Entry{Index: uint64(i + 10), Kind: failover.KindPause})
	}
	if !evicted(full, 5) {
		t.Errorf("full history, routine entries from 10 on: got index 5 not evicted, want evicted")
	}
	if evicted(full, 12) {
		t.Errorf("full history: got index 12 evicted, want it kept (it is newer than the oldest routine entry)")
	}
	if evicted(full[:len(full)-1], 5) {
		t.Errorf("history not full: got index 5 evicted, want a missing entry flagged")
	}
}
