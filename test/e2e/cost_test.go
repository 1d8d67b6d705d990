package e2e

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat
// (100 on every Linux architecture Go supports).
const clockTicks = 100

// procCPU returns the process's user+system CPU time.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// procRSS returns the resident set size in bytes.
func procRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS for %d", pid)
}

func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// BenchmarkCostPerNode measures what a watcher costs to run: each of the
// three nodes runs 100 probes per second (50 https probes per site, interval 1s, all
// against the real Caddys through the fault proxies) for E2E_COST_SECONDS
// (default 30). It reports each node's RSS and CPU share, the log entries
// per second, the raft data dir's growth per entry and its raw growth per
// hour without compaction (snapshots every snapshot_threshold entries,
// default 2048, bound it in practice), and writes
// test/bench/results/cost.json.
func BenchmarkCostPerNode(b *testing.B) {
	secs := 30
	if s := os.Getenv("E2E_COST_SECONDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("E2E_COST_SECONDS=%q", s)
		}
		secs = n
	}
	w := Start(b, Options{ProbesPerSite: 50})
	type sample struct {
		cpu     time.Duration
		size    int64
		applied uint64
	}
	take := func() map[string]sample {
		out := map[string]sample{}
		for _, n := range w.Nodes {
			cpu, err := procCPU(n.Pid())
			if err != nil {
				b.Fatal(err)
			}
			st, err := w.Status(n)
			if err != nil {
				b.Fatal(err)
			}
			out[n.ID] = sample{cpu: cpu, size: dirSize(n.DataDir), applied: st.Raft.AppliedIndex}
		}
		return out
	}
	b.ResetTimer()
	before, start := take(), time.Now()
	time.Sleep(time.Duration(secs) * time.Second) // the measuring window
	after, wall := take(), time.Since(start)
	b.StopTimer()

	type nodeCost struct {
		Node             string  `json:"node"`
		RSSMiB           float64 `json:"rss_mib"`
		CPUPercent       float64 `json:"cpu_percent_of_one_core"`
		EntriesPerSecond float64 `json:"log_entries_per_second"`
		BytesPerEntry    float64 `json:"data_dir_bytes_per_entry"`
		RawMiBPerHour    float64 `json:"raw_data_dir_growth_mib_per_hour"`
		DataDirMiB       float64 `json:"data_dir_mib_at_end"`
	}
	var rows []nodeCost
	fmt.Printf("\ncost per node, 100 probes/s (50 per site, interval 1s), %s window:\n", wall.Round(time.Second))
	fmt.Printf("  %-4s %8s %8s %10s %10s %14s %10s\n", "node", "RSS MiB", "CPU %", "entries/s", "B/entry", "raw MiB/hour", "dir MiB")
	for _, n := range w.Nodes {
		x, y := before[n.ID], after[n.ID]
		rss, err := procRSS(n.Pid())
		if err != nil {
			b.Fatal(err)
		}
		entries := float64(y.applied - x.applied)
		c := nodeCost{Node: n.ID, RSSMiB: float64(rss) / (1 << 20),
			CPUPercent:       100 * float64(y.cpu-x.cpu) / float64(wall),
			EntriesPerSecond: entries / wall.Seconds(),
			DataDirMiB:       float64(y.size) / (1 << 20)}
		if entries > 0 {
			c.BytesPerEntry = float64(y.size-x.size) / entries
			c.RawMiBPerHour = c.BytesPerEntry * c.EntriesPerSecond * 3600 / (1 << 20)
		}
		rows = append(rows, c)
		fmt.Printf("  %-4s %8.1f %8.1f %10.1f %10.0f %14.1f %10.2f\n", c.Node, c.RSSMiB, c.CPUPercent, c.EntriesPerSecond, c.BytesPerEntry, c.RawMiBPerHour, c.DataDirMiB)
		b.ReportMetric(c.RSSMiB, "rss-MiB-"+n.ID)
		b.ReportMetric(c.CPUPercent, "cpu%-"+n.ID)
	}
	res := map[string]any{
		"benchmark": "cost per node at 100 probes per second",
		"command":   "go test -run '^$' -bench BenchmarkCostPerNode -benchtime 1x ./test/e2e/",
		"when":      time.Now().UTC().Format(time.RFC3339),
		"window_s":  wall.Seconds(),
		"setup":     "3 watchers on one 2-core machine shared with other work, each 50 https probes per site at interval 1s against real Caddy; binaries built without -race",
		"note":      "raw growth ignores compaction: a snapshot every snapshot_threshold (2048) entries keeps trailing_logs (1024), so the data dir stays bounded",
		"nodes":     rows,
	}
	dir := filepath.Join(moduleRoot(), "test", "bench", "results")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	out, _ := json.MarshalIndent(res, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "cost.json"), append(out, '\n'), 0o644); err != nil {
		b.Fatal(err)
	}
}
