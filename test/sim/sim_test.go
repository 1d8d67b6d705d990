package sim

import (
	"fmt"
	"testing"
	"time"
)

// TestSimSchedules runs SIM_N seeded schedules (default 30) from seed
// SIM_SEED (default 1), SIM_PARALLEL at a time (default GOMAXPROCS), each
// in its own synctest bubble. When an invariant breaks it fails with the
// lowest failing seed's replay command and schedule, then shrinks that
// schedule to one still failing the same way and prints it with its own
// replay command (SIM_DROP names the events it leaves out).
func TestSimSchedules(t *testing.T) {
	env, err := readSimEnv()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	b := runSchedules(t, 0, env.n*env.repeat, env.parallel, env.all, func(j uint64) outcome {
		seed := seedOfRun(env.first, env.repeat, j)
		return runOne(t, schedule(seed, env.drop), env.drop)
	})
	t.Log(summary(b, time.Since(start), env.parallel))
	if b.first == nil {
		for _, gap := range coverageGaps(b.total) {
			t.Error(gap)
		}
		return
	}
	f := *b.first
	if env.all {
		// SIM_ALL=1 measures how fast an injected bug is caught: how
		// many seeds broke an invariant, and which first.
		t.Fatalf("%d of %d schedules broke an invariant (first: seed %d: %s; by first violation: %v)",
			b.failed, b.ran, f.seed, f.failure, b.caught)
	}
	sched := schedule(f.seed, env.drop)
	t.Errorf("seed %d: %s\nreplay: %s\n%s", f.seed, f.failure, replayLine(f.seed, env.drop), sched)
	if !env.shrink {
		return
	}
	class := failureClass(f.failure)
	same := func(o outcome) bool { return o.failure != "" && failureClass(o.failure) == class }
	r := shrink(sched, env.drop, func(cand Schedule, drop []int) bool {
		return anyRun(t, cand, drop, same, min(env.parallel, shrinkAttempts), shrinkAttempts)
	}, defaultShrinkBudget)
	note := "1-minimal"
	if r.spent {
		note = "budget spent, maybe not minimal"
	}
	t.Errorf("shrunk to %d of %d events (%s: %d candidates, %s), still failing %q\nreplay: %s\n%s",
		len(r.sched.Events), len(sched.Events), note, r.candidates, r.wall.Round(time.Millisecond), class,
		replayLine(f.seed, r.drop), r.sched)
}

// TestSimRepairCapHoldsUnderRecordChurn runs one schedule with a dry-run
// repair whose 43 targets change state every pass from 9.9 s: its records
// push the scripted repair's out of the bounded records, and invariant 7
// still holds, per remediation per hour. A runner that read its caps from
// the records breaks the hourly cap in this schedule.
func TestSimRepairCapHoldsUnderRecordChurn(t *testing.T) {
	sched := Generate(16).withChurn(9900*time.Millisecond, 43)
	if o := runOne(t, sched, nil); o.failure != "" {
		t.Fatalf("%s\n%s", o.failure, sched)
	}
}

// minGroupRunsForBatches is how many runs with failover groups make a
// batched write certain enough to require one: a batch needs several
// groups' decisions to meet (a region outage, a failover of every
// group), and seeds 31-430 made 33 batches in their 100 group runs, so
// 40 group runs without any would be far out of line; make test's 30
// schedules under -race (about 8 group runs) are below it, its 1000
// without -race (about 250) far above.
const minGroupRunsForBatches = 40

// coverageGaps lists the paths a passing soak of these totals should
// have taken and did not: a soak that stops covering one must fail, not
// pass on the rest.
func coverageGaps(s Stats) []string {
	var gaps []string
	if s.ReportsCommitted > 100 && s.ReportsLean == 0 {
		gaps = append(gaps, fmt.Sprintf("%d reports committed, none lean: the watchers' Reporter never sent a lean report", s.ReportsCommitted))
	}
	if s.GroupRuns >= minGroupRunsForBatches && s.BatchWrites == 0 {
		gaps = append(gaps, fmt.Sprintf("%d runs with failover groups, no batched DNS write: the leader's reconcilers no longer share their writes (reconcile.BatchWrites), so the soak does not cover the batch path", s.GroupRuns))
	}
	return gaps
}
