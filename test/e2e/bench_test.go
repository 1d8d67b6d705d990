package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/poll"
)

// trial is one measured failover.
type trial struct {
	// Unix nanoseconds on the one clock every process here shares.
	Kill         int64   `json:"kill"`
	KillPhase    float64 `json:"kill_phase"`    // where in the probe interval of the wall-clock grid the kill fell, in [0,1)
	FirstFailure int64   `json:"first_failure"` // the decision's FirstFailureAt: the first failed probe completed, on any watcher
	Floor        int64   `json:"floor"`         // the decision's DetectedAt: the quorum-th watcher's fall-th failed probe completed
	Decided      int64   `json:"decided"`       // the decision entered the log (leader's stamp)
	Written      int64   `json:"written"`       // the leader's UPDATE was answered
	AtBIND       int64   `json:"at_bind"`       // BIND first answered the backup address (polled every 10 ms)
	Verified     int64   `json:"verified"`      // the leader verified every authoritative server
}

// BenchmarkFailoverOverFloor measures the failover latency over the floor,
// what drwatch adds to the earliest moment a decision is possible:
// E2E_BENCH_TRIALS (default 20) automatic failovers at interval 1s
// and fall 3, each started by killing the primary's Caddy at a phase of the
// probe interval stratified across the trials (killPhase). The floor is the
// moment the quorum-th watcher's fall-th failed probe completed, on that
// watcher's clock (the decision's DetectedAt): nothing can decide earlier.
// The end is the moment BIND answers the backup. It reports the overhead
// end-floor and its parts (probe → report → Raft commit, then the DNS
// write), total/(fall×interval), and writes every trial to
// test/bench/results/failover_floor.json.
func BenchmarkFailoverOverFloor(b *testing.B) {
	failoverBench(b, envCount(b, "E2E_BENCH_TRIALS", 20), Options{Interval: time.Second, Timeout: 700 * time.Millisecond, Fall: 3, Rise: 2},
		func(*World) benchRun {
			return benchRun{
				name:    "failover latency over the floor",
				command: "go test -run '^$' -bench BenchmarkFailoverOverFloor -benchtime 1x ./test/e2e/",
				file:    "failover_floor.json",
			}
		})
}

// BenchmarkFailoverDeploySettings measures an automatic failover with the
// policy of deploy/examples: interval 2s, timeout 1500ms, fall 3, rise 5,
// quorum 2, and fast_interval left at its default. E2E_DEPLOY_TRIALS
// (default 20) kills of the primary's Caddy at stratified phases of the
// interval; it reports kill → BIND answers the backup and kill → the
// leader's verified_at, median and p90, each over fall × interval (the time
// a detector probing only at interval needs at the latest), and writes
// test/bench/results/failover_deploy.json.
func BenchmarkFailoverDeploySettings(b *testing.B) {
	failoverBench(b, envCount(b, "E2E_DEPLOY_TRIALS", 20), Options{Interval: 2 * time.Second, Timeout: 1500 * time.Millisecond, Fall: 3, Rise: 5, Quorum: 2},
		func(w *World) benchRun {
			return benchRun{
				name:    "failover with the deploy/examples policy: kill -> verified at BIND",
				command: "go test -run '^$' -bench BenchmarkFailoverDeploySettings -benchtime 1x ./test/e2e/",
				file:    "failover_deploy.json",
				extra: map[string]any{
					"settings": "deploy/examples policy: interval 2s, timeout 1500ms, fall 3, rise 5, quorum 2, fast_interval not set (its default)",
					"target":   "median kill -> BIND answers backup <= 0.4 x fall x interval",
				},
			}
		})
}

// failoverBench starts a world with o, runs n failover trials on it and
// reports them as run(w) says.
func failoverBench(b *testing.B, n int, o Options, run func(w *World) benchRun) {
	w := Start(b, o)
	b.ResetTimer()
	got := failoverTrials(b, w, n)
	b.StopTimer()
	report(b, w, got, run(w))
}

// failoverTrials runs n automatic failovers on w. Trial i kills the
// primary's Caddy at phase killPhase(i, n) of the probe interval, so the
// kills sample the interval evenly instead of wherever the previous
// trial's reset happened to end.
func failoverTrials(b *testing.B, w *World, n int) []trial {
	b.Helper()
	var got []trial
	for i := range n {
		if i > 0 {
			resetToPrimary(b, w)
		}
		tr, gen := runFailover(b, w, i, killPhase(i, n), nil)
		checkStamps(b, i, gen, tr)
		got = append(got, tr)
		b.Logf("trial %2d: kill at phase %.3f, total %s, floor after kill %s, overhead %s (commit %s after the floor)", i, tr.KillPhase,
			ms(tr.AtBIND-tr.Kill), ms(tr.Floor-tr.Kill), ms(tr.AtBIND-tr.Floor), ms(tr.Decided-tr.Floor))
	}
	return got
}

// runFailover kills the primary's Caddy at phase of the probe interval,
// calls during (when set) right after the kill, and returns the trial
// once BIND answers the backup and the leader has verified the flip, with
// the flip's gen.
func runFailover(b *testing.B, w *World, i int, phase float64, during func(kill time.Time)) (trial, uint64) {
	b.Helper()
	var tr trial
	kill := waitForPhase(w.Opts.Interval, phase)
	tr.Kill = kill.UnixNano()
	tr.KillPhase = phaseOf(kill, w.Opts.Interval)
	if err := w.Sites[failover.Primary].Caddy.Stop(); err != nil {
		b.Fatal(err)
	}
	if during != nil {
		during(kill)
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
	tm := d.Timings
	tr.FirstFailure, tr.Floor, tr.Decided, tr.Written, tr.Verified = tm.FirstFailureAt, tm.DetectedAt, tm.DecidedAt, tm.WrittenAt, tm.VerifiedAt
	return tr, d.Gen
}

// checkStamps fails b unless trial i's decision stamps are in order. The
// floor is the watchers' evidence, which the commit must follow: a floor
// equal to the decision would measure nothing of probe → report → commit.
func checkStamps(b *testing.B, i int, gen uint64, tr trial) {
	b.Helper()
	if why := stampsOutOfOrder(tr); why != "" {
		b.Fatalf("trial %d: decision gen %d: %s", i, gen, why)
	}
}

// stampsOutOfOrder says how tr's stamps break kill <= first failure <=
// detected < decided, or "" when they do not.
func stampsOutOfOrder(tr trial) string {
	if tr.Floor == 0 || tr.Floor >= tr.Decided || tr.FirstFailure == 0 || tr.FirstFailure > tr.Floor || tr.FirstFailure < tr.Kill {
		return fmt.Sprintf("kill %d, first failure %d, detected %d, decided %d; want kill <= first failure <= detected < decided",
			tr.Kill, tr.FirstFailure, tr.Floor, tr.Decided)
	}
	return ""
}

// envCount reads a positive count from the environment variable name, or
// returns def when it is unset.
func envCount(b *testing.B, name string, def int) int {
	b.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}

// killPhase is where in the probe interval trial i of n kills: the middle
// of the i-th of n equal slices, (i+0.5)/n. Stratified, not random: n
// trials cover the interval evenly, so a median over them does not depend
// on where a few random draws happened to fall.
func killPhase(i, n int) float64 { return (float64(i) + 0.5) / float64(n) }

// nextAtPhase returns the first instant after t that lies phase (in [0,1))
// of the way into an interval of the wall-clock grid: the Unix epoch plus
// whole intervals, the grid the watchers' probe rounds are placed on.
func nextAtPhase(t time.Time, interval time.Duration, phase float64) time.Time {
	iv := int64(interval)
	ns := t.UnixNano()
	at := ns - ns%iv + int64(phase*float64(iv))
	for at <= ns {
		at += iv
	}
	return time.Unix(0, at)
}

// phaseOf is where in its interval of the wall-clock grid t lies, in [0,1).
func phaseOf(t time.Time, interval time.Duration) float64 {
	return float64(t.UnixNano()%int64(interval)) / float64(interval)
}

// waitForPhase sleeps until the next instant at phase of the interval grid
// (the kill is scheduled there, it does not wait for a condition) and
// returns that moment as measured.
func waitForPhase(interval time.Duration, phase float64) time.Time {
	time.Sleep(time.Until(nextAtPhase(time.Now(), interval, phase)))
	return time.Now()
}

// fastInterval says which fast_interval the watchers of w run with: the
// value the replicated policy holds, its default as the binary's config
// docs state it when the policy leaves it out, or that the binary has no
// such key (a build from before fast re-probing).
func fastInterval(b *testing.B, w *World) string {
	b.Helper()
	if v := policyField(b, w, "fast_interval"); v != nil {
		if ns, ok := v.(float64); ok {
			return time.Duration(ns).String()
		}
		return fmt.Sprint(v)
	}
	out, _, code := w.Run("config", "docs")
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "| `policy.fast_interval`") {
			if f := strings.Split(l, "|"); len(f) > 3 {
				return "default: " + strings.Trim(strings.TrimSpace(f[3]), "`")
			}
		}
	}
	if code != 0 {
		return "unknown: drwatch config docs failed"
	}
	return "none: this build has no policy.fast_interval"
}

// policyField returns the replicated policy's field key as the leader's
// status shows it, or nil when the policy has no such field.
func policyField(b *testing.B, w *World, key string) any {
	b.Helper()
	l := w.Leader()
	if l == nil {
		return nil
	}
	code, body, err := w.get(l, "/api/v1/status")
	if err != nil || code != http.StatusOK {
		b.Logf("policy field %s: status: http %d, %v", key, code, err)
		return nil
	}
	var st struct {
		State struct {
			Policy map[string]any `json:"policy"`
		} `json:"state"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		b.Logf("policy field %s: %v", key, err)
		return nil
	}
	return st.State.Policy[key]
}

// writeResult writes res as indented JSON to test/bench/results/file.
func writeResult(b *testing.B, file string, res map[string]any) {
	b.Helper()
	dir := filepath.Join(moduleRoot(), "test", "bench", "results")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	out, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, file), append(out, '\n'), 0o644); err != nil {
		b.Fatal(err)
	}
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
	// Each node's API lets one actor make 10 moves at once, then one a
	// minute (api.DefaultWriteLimits), and a benchmark of 20 pairs resets
	// 39 times: ask the nodes in turn until one takes the failback. A
	// failback that committed but whose wait failed is not asked again.
	var k int
	var last string
	if !Within(3*time.Minute, func() bool {
		if st, ok := w.LeaderView(); ok && st.State.Desired.Active == failover.Primary && st.State.Desired.Done {
			return true
		}
		run := w.Running()
		n := run[k%len(run)]
		k++
		out, stderr, code := w.CLI(n, "failback", "--reason", "bench reset", "--yes", "--wait")
		last = fmt.Sprintf("via %s: exit %d\n%s\n%s", n.ID, code, out, stderr)
		return code == 0
	}) {
		b.Fatalf("no node took the failback within 3m; last attempt %s", last)
	}
	f := w.Follower()
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

// quantiles are the percentiles the result file reports for each series.
var quantiles = []struct {
	name string
	p    float64
}{{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}}

// series is one figure a benchmark reports over its trials of type T: f
// gives its value in one trial, key names it in the result file.
type series[T any] struct {
	key, label string
	f          func(t T) float64
}

// printSeries prints the quantiles of each of ss over got, as a table
// under a header, and sets them in res as key_p50, key_p90, ...
func printSeries[T any](res map[string]any, got []T, ss []series[T]) {
	fmt.Printf("  %-42s %8s %8s %8s\n", "", "p50", "p90", "p99")
	for _, s := range ss {
		var xs []float64
		for _, t := range got {
			xs = append(xs, s.f(t))
		}
		fmt.Printf("  %-42s", s.label)
		for _, q := range quantiles {
			v := percentile(xs, q.p)
			res[s.key+"_"+q.name] = v
			fmt.Printf(" %8.2f", v)
		}
		fmt.Println()
	}
}

// benchRun names one failover benchmark's result file and what it adds.
type benchRun struct {
	name, command, file string
	extra               map[string]any
}

func report(b *testing.B, w *World, got []trial, run benchRun) {
	interval := w.Opts.Interval.Seconds()
	budget := float64(w.Opts.Fall) * interval
	lower := float64(w.Opts.Fall-1) * interval
	series := []series[trial]{
		{"floor_after_kill_ms", "kill -> floor (detected_at)", func(t trial) float64 { return float64(t.Floor-t.Kill) / 1e6 }},
		{"first_failure_after_kill_ms", "kill -> first failed probe", func(t trial) float64 { return float64(t.FirstFailure-t.Kill) / 1e6 }},
		{"commit_after_floor_ms", "floor -> deciding command stamped by the leader", func(t trial) float64 { return float64(t.Decided-t.Floor) / 1e6 }},
		{"bind_after_commit_ms", "decision -> BIND answers backup", func(t trial) float64 { return float64(t.AtBIND-t.Decided) / 1e6 }},
		{"overhead_ms", "floor -> BIND answers backup", func(t trial) float64 { return float64(t.AtBIND-t.Floor) / 1e6 }},
		{"total_ms", "kill -> BIND answers backup", func(t trial) float64 { return float64(t.AtBIND-t.Kill) / 1e6 }},
		{"verified_after_kill_ms", "kill -> leader verified (verified_at)", func(t trial) float64 { return float64(t.Verified-t.Kill) / 1e6 }},
		{"ratio_total_over_fall_x_interval", "total / (fall x interval)", func(t trial) float64 { return float64(t.AtBIND-t.Kill) / 1e9 / budget }},
		{"ratio_verified_over_fall_x_interval", "kill -> verified_at / (fall x interval)", func(t trial) float64 { return float64(t.Verified-t.Kill) / 1e9 / budget }},
		{"ratio_floor_after_kill_over_lower_bound", "(kill -> floor) / ((fall-1) x interval)", func(t trial) float64 { return float64(t.Floor-t.Kill) / 1e9 / lower }},
	}
	res := map[string]any{
		"benchmark":        run.name,
		"command":          run.command,
		"when":             time.Now().UTC().Format(time.RFC3339),
		"trials":           len(got),
		"interval_s":       w.Opts.Interval.Seconds(),
		"timeout_s":        w.Opts.Timeout.Seconds(),
		"fall":             w.Opts.Fall,
		"quorum":           w.Opts.Quorum,
		"fault":            "primary Caddy killed (SIGKILL); probes see connection refused",
		"kill_phases":      "trial i of n kills at phase (i+0.5)/n of the probe interval on the wall-clock grid (stratified)",
		"floor_definition": "decision Timings.DetectedAt: completion of the probe that gave the quorum-th watcher its fall-th failure, on that watcher's clock",
		"lower_bound":      "without fast re-probing the first failing probe can run right after the kill and the others follow at interval, so kill -> floor >= (fall-1) x interval plus one probe's duration; with it (fast_interval) the others follow at fast_interval, so the floor is about phase + (fall-1) x fast_interval, and ratio_floor_after_kill_over_lower_bound below 1 is what fast re-probing gains",
		"end_definition":   "first answer of the backup address by BIND, polled every 10 ms",
		"machine":          "2 shared cores: other engineers' builds and tests ran during the trials, so compare ratios and percentiles, not single absolute times",
		"trials_raw":       got,
	}
	res["fast_interval"] = fastInterval(b, w)
	for k, v := range run.extra {
		res[k] = v
	}
	fmt.Printf("\n%s, %d trials, interval %s, fall %d:\n", run.name, len(got), w.Opts.Interval, w.Opts.Fall)
	printSeries(res, got, series)
	b.ReportMetric(res["overhead_ms_p50"].(float64), "overhead-p50-ms")
	b.ReportMetric(res["overhead_ms_p90"].(float64), "overhead-p90-ms")
	b.ReportMetric(res["commit_after_floor_ms_p50"].(float64), "commit-after-floor-p50-ms")
	b.ReportMetric(res["ratio_total_over_fall_x_interval_p50"].(float64), "total/(fall×interval)")
	writeResult(b, run.file, res)
}
