package e2e

import (
	"math"
	"testing"
	"time"
)

// TestKillPhasesCoverTheIntervalEvenly: the benchmarks' n kills fall at the
// middles of n equal slices of the probe interval, each at the first
// instant after the given time that lies at its phase of the wall-clock
// grid.
func TestKillPhasesCoverTheIntervalEvenly(t *testing.T) {
	for _, n := range []int{1, 3, 20, 40} {
		for i := range n {
			p := killPhase(i, n)
			if want := (float64(i) + 0.5) / float64(n); math.Abs(p-want) > 1e-12 {
				t.Fatalf("killPhase(%d, %d) = %v, want %v", i, n, p, want)
			}
			if p <= 0 || p >= 1 {
				t.Fatalf("killPhase(%d, %d) = %v, want inside (0, 1)", i, n, p)
			}
		}
	}
	base := time.Date(2026, 11, 26, 15, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		after    time.Time
		interval time.Duration
		phase    float64
		want     time.Time
	}{
		{base, time.Second, 0.25, base.Add(250 * time.Millisecond)},
		{base.Add(300 * time.Millisecond), time.Second, 0.25, base.Add(1250 * time.Millisecond)},
		{base.Add(250 * time.Millisecond), time.Second, 0.25, base.Add(1250 * time.Millisecond)}, // strictly after
		{base.Add(time.Second), 2 * time.Second, 0.75, base.Add(1500 * time.Millisecond)},        // 15:00:00 is on the 2 s grid
		{base.Add(1600 * time.Millisecond), 2 * time.Second, 0.75, base.Add(3500 * time.Millisecond)},
	} {
		got := nextAtPhase(c.after, c.interval, c.phase)
		if !got.Equal(c.want) {
			t.Errorf("nextAtPhase(%s, %s, %v) = %s, want %s", c.after.Format(time.StampMilli), c.interval, c.phase, got.Format(time.StampMilli), c.want.Format(time.StampMilli))
		}
		if ph := phaseOf(got, c.interval); math.Abs(ph-c.phase) > 1e-9 {
			t.Errorf("phaseOf(%s, %s) = %v, want %v", got.Format(time.StampMilli), c.interval, ph, c.phase)
		}
	}
}

// TestLeaderPhasesCoverKillToDecisionEvenly: across n pairs the leader
// dies once in each of n equal slices of kill → decision, and not in step
// with the Caddy kill's slice.
func TestLeaderPhasesCoverKillToDecisionEvenly(t *testing.T) {
	for _, n := range []int{1, 2, 3, 20, 21, 40} {
		seen := map[int]bool{}
		inStep := 0
		for i := range n {
			s := leaderPhaseSlot(i, n)
			if s < 0 || s >= n || seen[s] {
				t.Fatalf("n=%d: pair %d got slot %d, want each of 0..%d once", n, i, s, n-1)
			}
			seen[s] = true
			if s == i {
				inStep++
			}
		}
		if inStep > 2 {
			t.Errorf("n=%d: %d pairs kill the leader in the same slice as the Caddy, want at most 2", n, inStep)
		}
	}
}
