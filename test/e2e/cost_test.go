package e2e

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
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

// smapsRollup returns the process's resident memory in bytes: in all, and
// the part that is anonymous (heap, stacks: the process's own) rather than
// file-backed (the binary's pages and mapped files, shared with every
// process mapping the same file and reclaimable).
func smapsRollup(pid int) (rss, anon int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		kb, perr := strconv.ParseInt(f[1], 10, 64)
		if perr != nil {
			continue
		}
		switch f[0] {
		case "Rss:":
			rss = kb * 1024
		case "Anonymous:":
			anon = kb * 1024
		}
	}
	if rss == 0 {
		return 0, 0, fmt.Errorf("no Rss in /proc/%d/smaps_rollup", pid)
	}
	return rss, anon, nil
}

// metricValue returns the sum of every series of metric name on n's
// /metrics (the value itself for an unlabelled one), and an error when n
// shows no such metric, unless vector: a vector with no series yet shows
// nothing, and sums to 0.
func metricValue(w *World, n *Node, name string, vector bool) (float64, error) {
	vs, typed, err := metricSeries(w, n, name)
	if err != nil {
		return 0, err
	}
	if !typed && len(vs) == 0 && !vector {
		return 0, fmt.Errorf("%s /metrics: no %s", n.ID, name)
	}
	var sum float64
	for _, v := range vs {
		sum += v
	}
	return sum, nil
}

// metricSeries returns the value of every series of metric name on n's
// /metrics, and whether n declares its type.
func metricSeries(w *World, n *Node, name string) (vals []float64, typed bool, err error) {
	code, body, err := w.get(n, "/metrics")
	if err != nil {
		return nil, false, err
	}
	if code != http.StatusOK {
		return nil, false, fmt.Errorf("%s /metrics: http %d", n.ID, code)
	}
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "# TYPE "+name+" ") {
			typed = true
		}
		rest, ok := strings.CutPrefix(l, name)
		if !ok || (!strings.HasPrefix(rest, " ") && !strings.HasPrefix(rest, "{")) {
			continue
		}
		f := strings.Fields(rest[strings.LastIndexByte(rest, '}')+1:])
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return nil, false, fmt.Errorf("%s /metrics: %s: %w", n.ID, l, err)
		}
		vals = append(vals, v)
	}
	return vals, typed, nil
}

// BenchmarkCostPerNode measures what a watcher costs to run, against a
// peer measured in the same window: each of the three nodes runs 100
// probes per second (50 https probes per site, interval 1s, all against
// the real Caddys through the fault proxies) for E2E_COST_SECONDS (default
// 150: long enough for every node to take a snapshot and compact, so the
// data dir has reached its plateau), while prometheus-blackbox-exporter probes the primary's Caddy over
// HTTPS at the same rate, driven through its /probe endpoint. It reports
// each node's RSS (and its anonymous part), its all-in CPU per probe (the
// whole process: probes, reports, Raft, the FSM, the status API) against
// the exporter's CPU per probe, the log entries per second, the bytes
// replicated to each follower (the entries' payload, from
// drwatch_raft_log_appended_bytes_total, and the leader's bytes on the
// wire to it, TLS included, counted by its raft proxy), the largest data
// dir seen (sampled every 5 s) and whether every node compacted, and
// writes test/bench/results/cost.json. E2E_COST_RAFT adds keys to the
// nodes' raft: section, to measure other retention settings against the
// defaults; that run writes cost_raft_override.json instead, so the
// defaults' figures stay the ones the README shows.
func BenchmarkCostPerNode(b *testing.B) {
	secs := envCount(b, "E2E_COST_SECONDS", 150)
	const perSite = 50
	w := Start(b, Options{ProbesPerSite: perSite, RaftExtra: os.Getenv("E2E_COST_RAFT")})
	probesPerSecond := 2 * perSite * int(time.Second/w.Opts.Interval)
	bb := startBlackbox(b, w.Sites[failover.Primary].Caddy, w.Opts.Timeout)
	leader := w.Leader()
	if leader == nil {
		b.Fatal("no leader")
	}
	type sample struct {
		cpu           time.Duration
		size          int64
		applied       uint64
		snapshot      uint64 // raft's last snapshot index
		rounds        float64
		failures      float64 // failed probe runs
		appendedBytes float64
		wireIn        uint64 // bytes the other nodes sent to this node's raft port
		wireOut       uint64 // bytes this node sent to the other nodes' raft ports
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
			rounds, err := metricValue(w, n, "drwatch_probe_rounds_total", false)
			if err != nil {
				b.Fatal(err)
			}
			failures, err := metricValue(w, n, "drwatch_probe_failures_total", true)
			if err != nil {
				b.Fatal(err)
			}
			appended, err := metricValue(w, n, "drwatch_raft_log_appended_bytes_total", false)
			if err != nil {
				b.Fatal(err)
			}
			// A follower's raft port hears only from the leader (followers
			// send nothing to each other), so this is the leader's stream
			// to it even if leadership moved to the node's side.
			var win, wout uint64
			for _, m := range w.Nodes {
				if m != n {
					in, _ := n.RaftProxy.BytesFrom(m.IP)
					out, _ := m.RaftProxy.BytesFrom(n.IP)
					win, wout = win+in, wout+out
				}
			}
			out[n.ID] = sample{cpu: cpu, size: dirSize(n.DataDir), applied: st.Raft.AppliedIndex, snapshot: st.Raft.LastSnapshotIndex, rounds: rounds, failures: failures,
				appendedBytes: appended, wireIn: win, wireOut: wout}
		}
		return out
	}
	bbCPU0, err := procCPU(bb.cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	before, start := take(), time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs)*time.Second)
	bbDriven, bbWait := bb.drive(ctx, probesPerSecond)
	// The measuring window; the data dirs are sampled through it, since
	// bolt's file grows in steps and compaction comes every few hundred
	// entries: the largest size seen is the figure, not the last.
	maxSize := map[string]int64{}
	for tick := time.NewTicker(5 * time.Second); ctx.Err() == nil; {
		for _, n := range w.Nodes {
			maxSize[n.ID] = max(maxSize[n.ID], dirSize(n.DataDir))
		}
		select {
		case <-ctx.Done():
			tick.Stop()
		case <-tick.C:
		}
	}
	cancel()
	bbWait()
	after, wall := take(), time.Since(start)
	bbCPU1, err := procCPU(bb.cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	// On a loaded machine leadership may move during the window; a node
	// counts as a follower only if it followed at both ends.
	var leaderAtEnd *Node
	Eventually(b, 30*time.Second, func() bool { leaderAtEnd = w.Leader(); return leaderAtEnd != nil }, "a leader at the end of the window")
	bbRSS, bbAnon, err := smapsRollup(bb.cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	// A probe that failed (a timeout on an overloaded machine: both sides
	// probe the same Caddy) still did its work and counts; the failed
	// fractions are reported for both sides. Past half, the set-up is
	// broken rather than loaded, and the run fails.
	bbFailed := bbDriven.failed.Load()
	bbProbes := bbDriven.ok.Load() + bbFailed
	if bbProbes == 0 || bbFailed > bbProbes/2 {
		b.Fatalf("blackbox exporter: %d probes succeeded, %d failed (first: %s); want at least half to succeed", bbDriven.ok.Load(), bbFailed, bbDriven.firstFailure())
	}
	bbCPUPerProbe := float64(bbCPU1-bbCPU0) / float64(bbProbes)

	type nodeCost struct {
		Node                  string  `json:"node"`
		Role                  string  `json:"role"` // leader, follower, or leader for part of the window
		RSSMiB                float64 `json:"rss_mib"`
		RSSAnonMiB            float64 `json:"rss_anon_mib"`
		CPUPercent            float64 `json:"cpu_percent_of_one_core"`
		ProbesPerSecond       float64 `json:"probes_per_second"`
		FailedFraction        float64 `json:"failed_probe_fraction"`
		CPUPerProbeMicros     float64 `json:"cpu_per_probe_us"`
		EntriesPerSecond      float64 `json:"log_entries_per_second"`
		PayloadBytesPerSecond float64 `json:"replicated_payload_bytes_per_second,omitempty"`
		WireInBytesPerSecond  float64 `json:"wire_bytes_per_second_from_leader,omitempty"`
		WireOutBytesPerSecond float64 `json:"wire_bytes_per_second_to_leader,omitempty"`
		BytesPerEntry         float64 `json:"data_dir_bytes_per_entry"`
		RawMiBPerHour         float64 `json:"raw_data_dir_growth_mib_per_hour"`
		DataDirMiB            float64 `json:"data_dir_mib_at_end"`
		MaxDataDirMiB         float64 `json:"data_dir_mib_max"`
		Compacted             bool    `json:"snapshot_taken_in_window"`
	}
	var rows []nodeCost
	var maxRSS, maxAnon, maxDir, maxPayload, maxWire, maxFailed, sumCPUPerProbe float64
	compacted := true
	fmt.Printf("\ncost per node, %d probes/s (%d per site, interval %s), %s window:\n", probesPerSecond, perSite, w.Opts.Interval, wall.Round(time.Second))
	fmt.Printf("  %-4s %-8s %8s %8s %7s %10s %10s %12s %12s %10s\n", "node", "role", "RSS MiB", "anon MiB", "CPU %", "µs/probe", "entries/s", "payload B/s", "wire in B/s", "max dir MiB")
	for _, n := range w.Nodes {
		x, y := before[n.ID], after[n.ID]
		rss, anon, err := smapsRollup(n.Pid())
		if err != nil {
			b.Fatal(err)
		}
		entries := float64(y.applied - x.applied)
		probes := (y.rounds - x.rounds) * float64(2*perSite)
		if probes == 0 || (y.failures-x.failures) > probes/2 {
			b.Fatalf("node %s: %.0f of %.0f probes failed in the window; want at least half to succeed", n.ID, y.failures-x.failures, probes)
		}
		c := nodeCost{Node: n.ID, Role: "follower", RSSMiB: float64(rss) / (1 << 20), RSSAnonMiB: float64(anon) / (1 << 20),
			CPUPercent:        100 * float64(y.cpu-x.cpu) / float64(wall),
			ProbesPerSecond:   probes / wall.Seconds(),
			FailedFraction:    (y.failures - x.failures) / probes,
			CPUPerProbeMicros: float64(y.cpu-x.cpu) / probes / 1e3,
			EntriesPerSecond:  entries / wall.Seconds(),
			DataDirMiB:        float64(y.size) / (1 << 20),
			MaxDataDirMiB:     float64(max(maxSize[n.ID], y.size)) / (1 << 20),
			Compacted:         y.snapshot > x.snapshot}
		switch {
		case n == leader && n == leaderAtEnd:
			c.Role = "leader"
		case n == leader || n == leaderAtEnd:
			c.Role = "leader for part of the window"
		default:
			c.PayloadBytesPerSecond = (y.appendedBytes - x.appendedBytes) / wall.Seconds()
			c.WireInBytesPerSecond = float64(y.wireIn-x.wireIn) / wall.Seconds()
			c.WireOutBytesPerSecond = float64(y.wireOut-x.wireOut) / wall.Seconds()
			maxPayload, maxWire = max(maxPayload, c.PayloadBytesPerSecond), max(maxWire, c.WireInBytesPerSecond)
		}
		if entries > 0 {
			c.BytesPerEntry = float64(y.size-x.size) / entries
			c.RawMiBPerHour = c.BytesPerEntry * c.EntriesPerSecond * 3600 / (1 << 20)
		}
		maxRSS, maxAnon, maxDir = max(maxRSS, c.RSSMiB), max(maxAnon, c.RSSAnonMiB), max(maxDir, c.MaxDataDirMiB)
		compacted = compacted && c.Compacted
		sumCPUPerProbe += c.CPUPerProbeMicros
		maxFailed = max(maxFailed, c.FailedFraction)
		rows = append(rows, c)
		fmt.Printf("  %-4s %-8s %8.1f %8.1f %7.1f %10.0f %10.1f %12.0f %12.0f %10.2f\n", c.Node, c.Role, c.RSSMiB, c.RSSAnonMiB, c.CPUPercent,
			c.CPUPerProbeMicros, c.EntriesPerSecond, c.PayloadBytesPerSecond, c.WireInBytesPerSecond, c.MaxDataDirMiB)
		b.ReportMetric(c.RSSMiB, "rss-MiB-"+n.ID)
		b.ReportMetric(c.CPUPercent, "cpu%-"+n.ID)
	}
	meanCPUPerProbe := sumCPUPerProbe / float64(len(rows))
	ratio := meanCPUPerProbe / (bbCPUPerProbe / 1e3)
	fmt.Printf("  blackbox_exporter: %d probes (%.1f %% failed), RSS %.1f MiB (anon %.1f), %.0f µs CPU per probe; drwatch/blackbox CPU per probe %.2f (drwatch failed at most %.1f %%)\n",
		bbProbes, 100*float64(bbFailed)/float64(bbProbes), float64(bbRSS)/(1<<20), float64(bbAnon)/(1<<20), bbCPUPerProbe/1e3, ratio, 100*maxFailed)
	b.ReportMetric(ratio, "cpu-per-probe-drwatch/blackbox")
	b.ReportMetric(maxPayload, "replicated-B/s-per-follower")
	file := "cost.json"
	if w.Opts.RaftExtra != "" {
		file = "cost_raft_override.json"
	}
	writeResult(b, file, map[string]any{
		"benchmark": "cost per node at 100 probes per second, against blackbox_exporter at the same rate",
		"command":   "go test -run '^$' -bench BenchmarkCostPerNode -benchtime 1x ./test/e2e/",
		"when":      time.Now().UTC().Format(time.RFC3339),
		"window_s":  wall.Seconds(),
		"setup": "3 watchers on one 2-core machine shared with other work, each 50 https probes per site at interval 1s against real Caddy; " +
			"binaries built without -race; in the same window prometheus-blackbox-exporter probes the primary's Caddy over HTTPS at the same rate (one /probe request each)",
		"cpu_per_probe":    "a node's whole process CPU (probes, reports, Raft, FSM, status API) over the probes it ran (drwatch_probe_rounds_total x probes per round); blackbox's process CPU over the /probe requests it answered",
		"replicated_bytes": "payload: growth of drwatch_raft_log_appended_bytes_total on each follower (the command bytes of the entries the leader replicated to it); wire: bytes the other nodes (the leader) sent to the follower's raft port (TLS records, AppendEntries framing and heartbeats included), counted by the test's proxy in front of it",
		"note":             "raw growth ignores compaction: a snapshot every snapshot_threshold entries keeps trailing_logs, so the data dir stays bounded",
		"raft_settings":    raftSettings(w.Opts.RaftExtra),
		"nodes":            rows,
		"leader_changed":   leader != leaderAtEnd,
		"blackbox": map[string]any{
			"version":          blackboxVersion(),
			"probes":           bbProbes,
			"failed":           bbFailed,
			"failed_fraction":  float64(bbFailed) / float64(bbProbes),
			"first_failure":    bbDriven.firstFailure(),
			"cpu_per_probe_us": bbCPUPerProbe / 1e3,
			"rss_mib":          float64(bbRSS) / (1 << 20),
			"rss_anon_mib":     float64(bbAnon) / (1 << 20),
		},
		"summary": map[string]any{
			"max_rss_mib":                               maxRSS,
			"max_rss_anon_mib":                          maxAnon,
			"max_data_dir_mib":                          maxDir,
			"every_node_took_a_snapshot":                compacted,
			"max_replicated_payload_bytes_per_s":        maxPayload,
			"max_wire_bytes_per_s_leader_to_follower":   maxWire,
			"mean_cpu_per_probe_us":                     meanCPUPerProbe,
			"max_failed_probe_fraction":                 maxFailed,
			"ratio_cpu_per_probe_drwatch_over_blackbox": ratio,
			"ratio_rss_drwatch_over_blackbox":           maxRSS / (float64(bbRSS) / (1 << 20)),
		},
		"targets": "RSS <= 40 MiB per node; data dir <= 10 MiB; replicated <= 2 KB/s per follower; CPU per probe <= 0.5 x blackbox_exporter's",
	})
}

// raftSettings names the raft retention the nodes ran with.
func raftSettings(extra string) string {
	if extra == "" {
		return "defaults"
	}
	return extra + " (E2E_COST_RAFT), the rest defaults"
}

// blackboxVersion is the exporter's version line, for the result file.
func blackboxVersion() string {
	out, _ := exec.Command("prometheus-blackbox-exporter", "--version").CombinedOutput()
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line)
}
