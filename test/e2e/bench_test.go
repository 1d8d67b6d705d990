package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/poll"
)

// trial is one measured failover.
type trial struct {
	// Unix nanoseconds on the one clock every process here shares.
	Kill     int64 `json:"kill"`
	Floor    int64 `json:"floor"`    // the decision's DetectedAt: the quorum-th watcher's fall-th failed round reached the leader
	Decided  int64 `json:"decided"`  // the decision entered the log
	Written  int64 `json:"written"`  // the leader's UPDATE was answered
	AtBIND   int64 `json:"at_bind"`  // BIND first answered the backup address (polled every 10 ms)
	Verified int64 `json:"verified"` // the leader verified every authoritative server
}

// BenchmarkFailoverOverFloor is issue 9's "failover latency over the
// floor": E2E_BENCH_TRIALS (default 20) automatic failovers at interval 1s
// and fall 3, each started by killing the primary's Caddy. The floor is the
// moment the quorum-th watcher's fall-th failed probe round is in (the
// decision's DetectedAt, stamped by the leader); the end is the moment BIND
// answers the backup. It reports the overhead end-floor (p50, p99) and
// total/(fall×interval), and writes every trial to
// test/bench/results/failover_floor.json.
func BenchmarkFailoverOverFloor(b *testing.B) {
	trials := 20
	if s := os.Getenv("E2E_BENCH_TRIALS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("E2E_BENCH_TRIALS=%q", s)
		}
		trials = n
	}
	w := Start(b, Options{Interval: time.Second, Timeout: 700 * time.Millisecond, Fall: 3, Rise: 2})
	primary := w.Sites[failover.Primary]
	var got []trial
	b.ResetTimer()
	for i := range trials {
		if i > 0 {
			resetToPrimary(b, w)
		}
		var tr trial
		tr.Kill = time.Now().UnixNano()
		if err := primary.Caddy.Stop(); err != nil {
			b.Fatal(err)
		}
		if !poll.WithinEvery(60*time.Second, 10*time.Millisecond, func() bool { return w.Answer() == BackupIP }) {
			b.Fatalf("trial %d: BIND never answered the backup", i)
		}
		tr.AtBIND = time.Now().UnixNano()
		var d failover.Entry
		Eventually(b, 60*time.Second, func() bool {
			st, ok := w.LeaderView()
			if !ok || !st.State.Desired.Done || st.State.Desired.Active != failover.Backup {
				return false
			}
			for _, e := range st.State.History {
				if e.Index == st.State.Desired.Gen && e.Kind == failover.KindAutoFailover {
					d = e
					return e.Timings.VerifiedAt != 0
				}
			}
			return false
		}, "trial %d: the automatic flip is verified", i)
		tr.Floor, tr.Decided, tr.Written, tr.Verified = d.Timings.DetectedAt, d.Timings.DecidedAt, d.Timings.WrittenAt, d.Timings.VerifiedAt
		if tr.Floor == 0 {
			b.Fatalf("trial %d: decision gen %d has no DetectedAt", i, d.Gen)
		}
		got = append(got, tr)
		b.Logf("trial %2d: total %s, floor after kill %s, overhead %s", i,
			ms(tr.AtBIND-tr.Kill), ms(tr.Floor-tr.Kill), ms(tr.AtBIND-tr.Floor))
	}
	b.StopTimer()
	report(b, w, got)
}

func resetToPrimary(b *testing.B, w *World) {
	b.Helper()
	if err := w.Sites[failover.Primary].Caddy.Start(); err != nil {
		b.Fatal(err)
	}
	Eventually(b, 60*time.Second, func() bool {
		st, ok := w.LeaderView()
		return ok && st.State.Sites[failover.Primary].Verdict == failover.Up
	}, "the primary is UP at quorum again")
	f := w.Follower()
	if out, stderr, code := w.CLI(f, "failback", "--reason", "bench reset", "--yes", "--wait"); code != 0 {
		b.Fatalf("failback: exit %d\n%s\n%s", code, out, stderr)
	}
	// Lift the anti-flap block so the next outage flips automatically.
	if out, stderr, code := w.CLI(f, "ack", "--reason", "bench reset", "--yes"); code != 0 {
		b.Fatalf("ack: exit %d\n%s\n%s", code, out, stderr)
	}
	Eventually(b, 30*time.Second, func() bool {
		st, ok := w.LeaderView()
		return ok && !st.State.Blocked && st.State.Active == failover.Primary && st.State.Desired.Done
	}, "back on the primary, not blocked")
}

func ms(ns int64) string { return time.Duration(ns).Round(time.Millisecond).String() }

func percentile(xs []float64, p float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	i := int(p*float64(len(s)-1) + 0.5)
	return s[i]
}

func report(b *testing.B, w *World, got []trial) {
	var overhead, total, floorAfterKill, ratio []float64
	budget := float64(w.Opts.Fall) * w.Opts.Interval.Seconds()
	for _, t := range got {
		overhead = append(overhead, float64(t.AtBIND-t.Floor)/1e6)
		total = append(total, float64(t.AtBIND-t.Kill)/1e6)
		floorAfterKill = append(floorAfterKill, float64(t.Floor-t.Kill)/1e6)
		ratio = append(ratio, float64(t.AtBIND-t.Kill)/1e9/budget)
	}
	res := map[string]any{
		"benchmark":                            "failover latency over the floor",
		"command":                              "go test -run '^$' -bench BenchmarkFailoverOverFloor -benchtime 1x ./test/e2e/",
		"when":                                 time.Now().UTC().Format(time.RFC3339),
		"trials":                               len(got),
		"interval_s":                           w.Opts.Interval.Seconds(),
		"timeout_s":                            w.Opts.Timeout.Seconds(),
		"fall":                                 w.Opts.Fall,
		"quorum":                               w.Opts.Quorum,
		"fault":                                "primary Caddy killed (SIGKILL); probes see connection refused",
		"floor_definition":                     "decision Timings.DetectedAt: leader-stamped arrival of the quorum-th watcher's fall-th failed round",
		"end_definition":                       "first answer of the backup address by BIND, polled every 10 ms",
		"overhead_ms_p50":                      percentile(overhead, 0.5),
		"overhead_ms_p99":                      percentile(overhead, 0.99),
		"total_ms_p50":                         percentile(total, 0.5),
		"total_ms_p99":                         percentile(total, 0.99),
		"floor_after_kill_ms_p50":              percentile(floorAfterKill, 0.5),
		"ratio_total_over_fall_x_interval_p50": percentile(ratio, 0.5),
		"ratio_total_over_fall_x_interval_p99": percentile(ratio, 0.99),
		"trials_raw":                           got,
	}
	b.ReportMetric(percentile(overhead, 0.5), "overhead-p50-ms")
	b.ReportMetric(percentile(overhead, 0.99), "overhead-p99-ms")
	b.ReportMetric(percentile(total, 0.5), "total-p50-ms")
	b.ReportMetric(percentile(ratio, 0.5), "total/(fall×interval)")
	fmt.Printf("\nfailover over the floor, %d trials, interval %s, fall %d:\n", len(got), w.Opts.Interval, w.Opts.Fall)
	fmt.Printf("  %-34s %8s %8s\n", "", "p50", "p99")
	fmt.Printf("  %-34s %8.0f %8.0f\n", "kill -> floor (ms)", percentile(floorAfterKill, 0.5), percentile(floorAfterKill, 0.99))
	fmt.Printf("  %-34s %8.0f %8.0f\n", "floor -> BIND answers backup (ms)", percentile(overhead, 0.5), percentile(overhead, 0.99))
	fmt.Printf("  %-34s %8.0f %8.0f\n", "kill -> BIND answers backup (ms)", percentile(total, 0.5), percentile(total, 0.99))
	fmt.Printf("  %-34s %8.2f %8.2f\n", "total / (fall x interval)", percentile(ratio, 0.5), percentile(ratio, 0.99))
	dir := filepath.Join(moduleRoot(), "test", "bench", "results")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	out, _ := json.MarshalIndent(res, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "failover_floor.json"), append(out, '\n'), 0o644); err != nil {
		b.Fatal(err)
	}
}
