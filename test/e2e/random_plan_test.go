package e2e

import (
	"strings"
	"testing"
)

// TestChaosConsecutiveSeedsCoverEveryStratum: the schedules make test runs
// (three consecutive seeds from any start) open with three different
// faults, not three draws that may coincide.
func TestChaosConsecutiveSeedsCoverEveryStratum(t *testing.T) {
	for _, start := range []uint64{0, 1, 2, 1795474678510055200, ^uint64(0) - 2} {
		seen := map[stratum]uint64{}
		for i := range uint64(strata) {
			s := start + i
			st := stratumOf(s)
			if prev, ok := seen[st]; ok {
				t.Errorf("seeds %d and %d both open with %q, want a different stratum each", prev, s, st)
			}
			seen[st] = s
		}
		if len(seen) != int(strata) {
			t.Errorf("seeds %d..%d cover %d strata, want %d", start, start+uint64(strata)-1, len(seen), strata)
		}
	}
}

// TestChaosFailureReportReplays: what a failed schedule prints names its
// stratum, lists every step in order, and ends with one command line that
// sets the seed, one schedule and the step count.
func TestChaosFailureReportReplays(t *testing.T) {
	c := newChaos(t, 1795474678510055200, 7)
	c.note("open: partition leader a from the others")
	c.note("step 0: BIND down")
	r := c.report()
	lines := strings.Split(r, "\n")
	if !strings.Contains(lines[0], "seed=1795474678510055200") || !strings.Contains(lines[0], leaderPartitioned.String()) {
		t.Errorf("first line %q, want the seed and the stratum %q", lines[0], leaderPartitioned)
	}
	if !strings.HasSuffix(lines[1], "open: partition leader a from the others") || !strings.HasSuffix(lines[2], "step 0: BIND down") {
		t.Errorf("steps %q, want the opening then step 0, in order", lines[1:3])
	}
	want := "replay with: E2E_CHAOS_SEED=1795474678510055200 E2E_CHAOS_N=1 E2E_CHAOS_STEPS=7 go test -race -count=1 -run TestChaos12Randomized -v ./test/e2e/"
	if last := lines[len(lines)-1]; last != want {
		t.Errorf("last line %q, want %q", last, want)
	}
}
