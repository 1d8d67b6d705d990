package sim

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestSimSchedules runs SIM_N seeded schedules (default 30), or the one
// schedule SIM_SEED names, each in its own synctest bubble, and fails with
// the replay command and the schedule when an invariant breaks.
func TestSimSchedules(t *testing.T) {
	first, n := uint64(1), 30
	if s := os.Getenv("SIM_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SIM_SEED=%q: %v", s, err)
		}
		first, n = v, 1
	}
	if s := os.Getenv("SIM_N"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("SIM_N=%q: want a count >= 1", s)
		}
		n = v
	}
	// SIM_ALL=1 runs every seed and reports how many broke an invariant
	// (for measuring how fast an injected bug is caught).
	all := os.Getenv("SIM_ALL") != ""
	var failed []uint64
	caught := map[string]int{}
	start := time.Now()
	var total Stats
	for seed := first; seed < first+uint64(n); seed++ {
		sched := Generate(seed)
		synctest.Test(t, func(t *testing.T) {
			// A run that never ends while raft's timers keep virtual time
			// moving would hang the test until its -timeout; fail it
			// with the stacks of the bubble instead.
			watchdog := time.AfterFunc(runBound, func() {
				buf := make([]byte, 1<<22)
				panic(fmt.Sprintf("seed %d: still running after %s of virtual time\nreplay: %s\n%s\n%s", seed, runBound, replay(seed), sched, buf[:runtime.Stack(buf, true)]))
			})
			defer watchdog.Stop()
			w, err := Run(sched)
			if err != nil {
				t.Fatalf("seed %d: %v\nreplay: %s\n%s", seed, err, replay(seed), sched)
			}
			if v := w.Violations(); len(v) > 0 {
				if all {
					caught[strings.SplitN(v[0], ":", 2)[0]]++
					failed = append(failed, seed)
					t.Logf("seed %d: %s", seed, v[0])
					return
				}
				t.Fatalf("seed %d: %s\nreplay: %s\n%s", seed, v[0], replay(seed), sched)
			}
			s := w.Stats()
			total.Reports += s.Reports
			total.ReportsCommitted += s.ReportsCommitted
			total.Commands += s.Commands
			total.CommandsAcked += s.CommandsAcked
			total.Faults += s.Faults
			total.AutoFlips += s.AutoFlips
			total.DNSFaults += s.DNSFaults
			total.DNSWrites += s.DNSWrites
			total.RemediationActions += s.RemediationActions
			total.Leaderships += s.Leaderships
			total.Virtual += s.Virtual
		})
		if t.Failed() {
			return
		}
	}
	if len(failed) > 0 {
		t.Fatalf("%d of %d schedules broke an invariant (first: seed %d; by first violation: %v)", len(failed), n, failed[0], caught)
	}
	wall := time.Since(start)
	t.Logf("%d schedules in %s wall (%.1f/s); per schedule: %s virtual, %.1f faults (%.1f DNS), %.1f operator commands (%.1f acknowledged), %.0f reports (%.0f committed), %.1f leaderships, %.1f DNS swaps, %.1f remediation actions; %d automatic flips in all",
		n, wall.Round(time.Millisecond), float64(n)/wall.Seconds(), total.Virtual/time.Duration(n),
		float64(total.Faults)/float64(n), float64(total.DNSFaults)/float64(n), float64(total.Commands)/float64(n), float64(total.CommandsAcked)/float64(n),
		float64(total.Reports)/float64(n), float64(total.ReportsCommitted)/float64(n), float64(total.Leaderships)/float64(n),
		float64(total.DNSWrites)/float64(n), float64(total.RemediationActions)/float64(n), total.AutoFlips)
}

// runBound is far more virtual time than a run takes (its length, the
// settling bound and raft's leftovers).
const runBound = 5 * time.Minute

func replay(seed uint64) string {
	return fmt.Sprintf("SIM_SEED=%d go test -race -count=1 -run TestSimSchedules ./test/sim/", seed)
}
