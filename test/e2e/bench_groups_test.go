package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/faultproxy"
	"github.com/drwatch/drwatch/test/poll"
)

// groupsBenchCaddies is how many Caddy processes per site serve the
// groups' host names in the many-group world: ten platforms on one Caddy,
// as on a shared ingress, and few enough processes that the 2-core machine
// spends its time on the watchers, not on idle web servers. Each group has
// fault proxies of its own in front of them, so one group fails alone
// (its probes see connections reset) while its Caddy serves the others.
const groupsBenchCaddies = 5

// groupsBenchProbes is how many critical https probes each group runs per
// site, besides the region probe that all share.
const groupsBenchProbes = 4

// regionTrial is one outage of the region's primary endpoint, which every
// group names.
type regionTrial struct {
	Kill      int64   `json:"kill"`
	KillPhase float64 `json:"kill_phase"`
	// Detected is the earliest decision's DetectedAt, LastDetected the
	// latest; LastDecided, LastWritten and LastVerified the latest group's
	// DecidedAt, WrittenAt and VerifiedAt, FirstWritten and FirstVerified
	// the earliest group's: so the result shows where the time goes,
	// detected -> decided -> written -> verified, and how far the groups
	// spread within each phase.
	Detected      int64 `json:"detected"`
	LastDetected  int64 `json:"last_detected"`
	LastDecided   int64 `json:"last_decided"`
	FirstWritten  int64 `json:"first_written"`
	LastWritten   int64 `json:"last_written"`
	FirstVerified int64 `json:"first_verified"`
	LastVerified  int64 `json:"last_verified"`
	// MaxWriteToVerify is the longest one group took from its write to
	// its verification.
	MaxWriteToVerify int64 `json:"max_written_to_verified_ns"`
	Groups           int   `json:"groups"`
	// Entries is how many log entries carried the groups' decisions.
	Entries int `json:"decision_entries"`
}

// nodeLoad is one node's cost over a window.
type nodeLoad struct {
	Node                  string  `json:"node"`
	Follower              bool    `json:"follower"`
	CPUPercent            float64 `json:"cpu_percent_of_one_core"`
	RSSMiB                float64 `json:"rss_mib"`
	PayloadBytesPerSecond float64 `json:"replicated_payload_bytes_per_second,omitempty"`
	WireInBytesPerSecond  float64 `json:"wire_bytes_per_second_from_leader,omitempty"`
	// SlowestProbe is the longest of the node's last probe durations at
	// the end of the window: a round, and the report that carries it,
	// ends with its slowest probe.
	SlowestProbeSeconds float64 `json:"slowest_probe_seconds"`
}

// groupsRun is what one world measured.
type groupsRun struct {
	Groups  int            `json:"groups"`
	Caddies int            `json:"caddy_processes"`
	Window  float64        `json:"cost_window_s"`
	Nodes   []nodeLoad     `json:"nodes"`
	Flips   []trial        `json:"single_group_flips"`
	Regions []regionTrial  `json:"region_outages"`
	Summary map[string]any `json:"summary"`
	// LoadStart and LoadEnd are /proc/loadavg when the world started and
	// when its last trial ended: the worlds run one after the other on a
	// machine shared with other work.
	LoadStart string `json:"load_average_at_start"`
	LoadEnd   string `json:"load_average_at_end"`
}

// BenchmarkFailoverGroups measures what 50 failover groups cost one trio
// and how fast they move, against a one-group trio measured in the same
// run, one world after the other (each torn down before the next starts,
// so they never share the machine). Every group runs 4 critical https
// probes per site against real Caddy plus the shared probe "region" (the
// region Caddy per site); the policy is interval 2 s, timeout 1500 ms,
// fall 3, rise 2, quorum 2. In each world:
//   - cost: over E2E_GROUPS_COST_SECONDS (default 60) with every group
//     healthy, each node's CPU, RSS, and on the followers the replicated
//     log payload and the leader's bytes on the wire to them;
//   - E2E_GROUPS_TRIALS (default 10) failovers of one group (its primary's
//     proxies reset every connection) while the others stay healthy, at
//     stratified phases of the interval: from the floor (the decision's
//     detected_at) to BIND answering the group's backup, and to verified;
//     each followed by a move back;
//   - E2E_GROUPS_REGION_TRIALS (default 10) kills of the region's primary
//     Caddy at stratified phases, which moves every group: from the
//     earliest group's detected_at to the last group's verified_at.
//
// It writes test/bench/results/groups.json. E2E_GROUPS (default 50) sets
// the number of groups of the many-group world.
func BenchmarkFailoverGroups(b *testing.B) {
	flips := envCount(b, "E2E_GROUPS_TRIALS", 10)
	regions := envCount(b, "E2E_GROUPS_REGION_TRIALS", 10)
	secs := envCount(b, "E2E_GROUPS_COST_SECONDS", 60)
	many := envCount(b, "E2E_GROUPS", 50)
	o := Options{Interval: 2 * time.Second, Timeout: 1500 * time.Millisecond, Fall: 3, Rise: 2, Quorum: 2}
	runs := map[int]*groupsRun{}
	for _, n := range []int{1, many} {
		b.Run(fmt.Sprintf("groups=%d", n), func(b *testing.B) {
			if runs[n] == nil {
				runs[n] = groupsBench(b, o, n, secs, flips, regions)
			}
		})
	}
	if runs[1] == nil || runs[many] == nil {
		b.Fatal("a world did not finish its measurements")
	}
	reportGroups(b, o, runs[1], runs[many], flips, regions)
}

// groupNames are n group names, g01 on.
func groupNames(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("g%02d", i+1))
	}
	return out
}

// groupsBench starts a world of n groups and measures it.
func groupsBench(b *testing.B, o Options, n, secs, flips, regions int) *groupsRun {
	caddies := min(groupsBenchCaddies, n)
	o.Groups = GroupOptions{Names: groupNames(n), Probes: groupsBenchProbes, CaddiesPerSite: caddies}
	run := &groupsRun{Groups: n, Caddies: 2 * (caddies + 1), LoadStart: loadAverage()}
	w := Start(b, o)
	run.Nodes, run.Window = costWindow(b, w, time.Duration(secs)*time.Second)
	g := w.Groups[len(w.Groups)/2]
	for i := range flips {
		tr := groupFlip(b, w, g, i, killPhase(i, flips))
		run.Flips = append(run.Flips, tr)
		b.Logf("%d groups, flip %2d of %s: phase %.3f, floor after kill %s, floor -> BIND %s, floor -> verified %s", n, i, g.Name, tr.KillPhase,
			ms(tr.Floor-tr.Kill), ms(tr.AtBIND-tr.Floor), ms(tr.Verified-tr.Floor))
		moveAllToPrimary(b, w, "--group", g.Name)
	}
	for i := range regions {
		rt := regionOutage(b, w, i, killPhase(i, regions))
		run.Regions = append(run.Regions, rt)
		b.Logf("%d groups, region outage %d: phase %.3f, detected -> last verified %s (last decided %s, written %s..%s, verified %s..%s; %d groups, %d decision entries)", n, i, rt.KillPhase,
			ms(rt.LastVerified-rt.Detected), ms(rt.LastDecided-rt.Detected), ms(rt.FirstWritten-rt.Detected), ms(rt.LastWritten-rt.Detected),
			ms(rt.FirstVerified-rt.Detected), ms(rt.LastVerified-rt.Detected), rt.Groups, rt.Entries)
		if err := w.Sites[failover.Primary].Caddy.Start(); err != nil {
			b.Fatal(err)
		}
		moveAllToPrimary(b, w, "--all-groups")
	}
	run.LoadEnd = loadAverage()
	return run
}

// loadAverage is the 1, 5 and 15 minute load averages.
func loadAverage() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// costWindow measures every node over d with all groups healthy.
func costWindow(b *testing.B, w *World, d time.Duration) ([]nodeLoad, float64) {
	b.Helper()
	type sample struct {
		cpu      time.Duration
		appended float64
		wireIn   uint64
	}
	// One node's sample: its process CPU, its log payload appended, and
	// the bytes its raft port heard from the others (the leader).
	one := func(n *Node) (sample, error) {
		cpu, err := procCPU(n.Pid())
		if err != nil {
			return sample{}, err
		}
		s := sample{cpu: cpu}
		if s.appended, err = metricValue(w, n, "drwatch_raft_log_appended_bytes_total", false); err != nil {
			return sample{}, err
		}
		for _, m := range w.Nodes {
			if m != n {
				x, _ := n.RaftProxy.BytesFrom(m.IP)
				s.wireIn += x
			}
		}
		return s, nil
	}
	take := func() map[string]sample {
		out := map[string]sample{}
		for _, n := range w.Nodes {
			s, err := one(n)
			if err != nil {
				b.Fatal(err)
			}
			out[n.ID] = s
		}
		return out
	}
	leader := w.Leader()
	before, start := take(), time.Now()
	// The window is the measurement itself, not a wait for a condition.
	time.Sleep(d)
	after, wall := take(), time.Since(start)
	leaderAtEnd := w.Leader()
	var rows []nodeLoad
	for _, n := range w.Nodes {
		x, y := before[n.ID], after[n.ID]
		rss, _, err := smapsRollup(n.Pid())
		if err != nil {
			b.Fatal(err)
		}
		durs, _, err := metricSeries(w, n, "drwatch_probe_duration_seconds")
		if err != nil {
			b.Fatal(err)
		}
		r := nodeLoad{Node: n.ID, CPUPercent: 100 * float64(y.cpu-x.cpu) / float64(wall), RSSMiB: float64(rss) / (1 << 20)}
		for _, d := range durs {
			r.SlowestProbeSeconds = max(r.SlowestProbeSeconds, d)
		}
		if n != leader && n != leaderAtEnd {
			r.Follower = true
			r.PayloadBytesPerSecond = (y.appended - x.appended) / wall.Seconds()
			r.WireInBytesPerSecond = float64(y.wireIn-x.wireIn) / wall.Seconds()
		}
		rows = append(rows, r)
	}
	return rows, wall.Seconds()
}

// groupFlip fails group g alone at phase of the probe interval (its
// primary's proxies reset every connection, as a dead Caddy's port does)
// and returns the trial once BIND answers g's backup and the leader has
// verified the flip; g's primary is back (UP at quorum) when it returns.
func groupFlip(b *testing.B, w *World, g *Group, i int, phase float64) trial {
	b.Helper()
	var tr trial
	kill := waitForPhase(w.Opts.Interval, phase)
	tr.Kill, tr.KillPhase = kill.UnixNano(), phaseOf(kill, w.Opts.Interval)
	g.Sites[failover.Primary].SetMode(faultproxy.Reset)
	// One query a millisecond: a flip takes a few milliseconds from its
	// floor, and a coarser poll would add up to its period to both worlds
	// alike, pulling their ratio towards 1.
	if !poll.WithinEvery(2*time.Minute, time.Millisecond, func() bool { return w.GroupAnswer(g) == g.IPs[failover.Backup] }) {
		b.Fatalf("flip %d: BIND never answered %s's backup", i, g.Name)
	}
	tr.AtBIND = time.Now().UnixNano()
	var d failover.Entry
	// BIND answers once the UPDATE lands, while the leader still verifies
	// the flip: the status reads (tens of milliseconds of the leader's CPU
	// with 50 groups) wait a poll period, so they are not measured with
	// its verification (see regionOutage).
	poll.UntilEveryQuiet(b, 2*time.Minute, 50*time.Millisecond, func() bool {
		l := w.Leader()
		if l == nil {
			return false
		}
		st, err := w.GroupStatus(l, g.Name)
		if err != nil || !st.State.Desired.Done || st.State.Desired.Active != failover.Backup {
			return false
		}
		for _, e := range st.State.History {
			if e.Index == st.State.Desired.Gen && e.Group == g.Name && e.Kind == failover.KindAutoFailover {
				d = e
				return e.Timings.VerifiedAt != 0
			}
		}
		return false
	}, "flip %d: the automatic flip of %s is verified", i, g.Name)
	tm := d.Timings
	tr.FirstFailure, tr.Floor, tr.Decided, tr.Written, tr.Verified = tm.FirstFailureAt, tm.DetectedAt, tm.DecidedAt, tm.WrittenAt, tm.VerifiedAt
	checkStamps(b, i, d.Gen, tr)
	g.Sites[failover.Primary].SetMode(faultproxy.Pass)
	return tr
}

// regionPoll is how often regionOutage reads the leader's history.
const regionPoll = 250 * time.Millisecond

// regionOutage kills the region's primary Caddy at phase of the probe
// interval and returns the trial once every group is verified on its
// backup.
func regionOutage(b *testing.B, w *World, i int, phase float64) regionTrial {
	b.Helper()
	before := lastIndex(b, w)
	serial, err := w.Serial()
	if err != nil {
		b.Fatal(err)
	}
	kill := waitForPhase(w.Opts.Interval, phase)
	rt := regionTrial{Kill: kill.UnixNano(), KillPhase: phaseOf(kill, w.Opts.Interval)}
	if err := w.Sites[failover.Primary].Caddy.Stop(); err != nil {
		b.Fatal(err)
	}
	// The figures are the leader's own stamps, so how often this reads
	// does not change them, but when it does: a read of the whole history
	// (and of the status that finds the leader) costs the leader tens of
	// milliseconds with 50 groups, and one that falls while it writes and
	// verifies is measured with them, the more often the more groups. So
	// it waits on BIND (one SOA query, no node) until the outage's UPDATE
	// lands, and reads the history a poll period after that, by when the
	// groups are verified or verifying slowly enough not to matter.
	poll.UntilEvery(b, 3*time.Minute, 20*time.Millisecond, func() bool {
		s, err := w.Serial()
		return err == nil && s != serial
	}, "region outage %d: BIND's serial moves", i)
	var ds []failover.Entry
	poll.UntilEveryQuiet(b, 3*time.Minute, regionPoll, func() bool {
		h, ok := leaderHistory(w)
		if !ok {
			return false
		}
		ds = ds[:0]
		for _, e := range h {
			if e.Index > before && e.Kind == failover.KindAutoFailover && e.Gen == e.Index && e.Group != "" {
				ds = append(ds, e)
			}
		}
		if len(ds) < len(w.Groups) {
			return false
		}
		for _, e := range ds {
			if e.Timings.VerifiedAt == 0 {
				return false
			}
		}
		return true
	}, "region outage %d: every group's automatic failover is verified", i)
	entries := map[uint64]bool{}
	first := func(cur, t int64) int64 {
		if cur == 0 || t < cur {
			return t
		}
		return cur
	}
	for _, e := range ds {
		tm := e.Timings
		rt.Detected, rt.LastDetected = first(rt.Detected, tm.DetectedAt), max(rt.LastDetected, tm.DetectedAt)
		rt.LastDecided = max(rt.LastDecided, tm.DecidedAt)
		rt.FirstWritten, rt.LastWritten = first(rt.FirstWritten, tm.WrittenAt), max(rt.LastWritten, tm.WrittenAt)
		rt.FirstVerified, rt.LastVerified = first(rt.FirstVerified, tm.VerifiedAt), max(rt.LastVerified, tm.VerifiedAt)
		rt.MaxWriteToVerify = max(rt.MaxWriteToVerify, tm.VerifiedAt-tm.WrittenAt)
		entries[e.Index] = true
	}
	rt.Groups, rt.Entries = len(ds), len(entries)
	if rt.Detected < rt.Kill || rt.Detected >= rt.LastDecided {
		b.Fatalf("region outage %d: kill %d, earliest detected %d, last decided %d; want kill <= detected < decided", i, rt.Kill, rt.Detected, rt.LastDecided)
	}
	return rt
}

// lastIndex is the index of the newest history entry the leader holds.
func lastIndex(b *testing.B, w *World) uint64 {
	b.Helper()
	var last uint64
	Eventually(b, time.Minute, func() bool {
		h, ok := leaderHistory(w)
		if !ok {
			return false
		}
		for _, e := range h {
			last = max(last, e.Index)
		}
		return true
	}, "the leader's history")
	return last
}

// leaderHistory is the whole history, every group's, as the leader holds
// it (ok false when there is no leader or it did not answer).
func leaderHistory(w *World) ([]failover.Entry, bool) {
	l := w.Leader()
	if l == nil {
		return nil, false
	}
	h, err := w.GroupHistory(l, "")
	return h, err == nil
}

// moveAllToPrimary waits until every watcher sees every group's primary UP,
// then moves the groups that args name (--group NAME or --all-groups) back
// with `drwatch failover --to primary --wait`, asking the nodes in turn
// (each lets one actor make 10 moves at once, then one a minute), and
// waits until every group is active on the primary, verified and not
// blocked: the applied move acknowledges the block.
func moveAllToPrimary(b *testing.B, w *World, args ...string) {
	b.Helper()
	all := func(f func(failover.GroupSummary) bool) bool {
		l := w.Leader()
		if l == nil {
			return false
		}
		ov, err := w.Overview(l)
		if err != nil || len(ov) != len(w.Groups) {
			return false
		}
		for _, g := range ov {
			if !f(g) {
				return false
			}
		}
		return true
	}
	// Every watcher, not a quorum: a watcher whose probe is still DOWN
	// (fewer than rise successes since the heal) keeps the failed run's
	// first failure, and the next kill's decision would report it.
	Eventually(b, 2*time.Minute, func() bool {
		return all(func(g failover.GroupSummary) bool {
			t := g.Sites[failover.Primary]
			return t.Verdict == failover.Up && len(t.Up) == len(w.Nodes)
		})
	}, "every watcher sees every group's primary UP again")
	// A group that never moved has no decision (gen 0) to verify.
	back := func(g failover.GroupSummary) bool {
		return g.Desired.Active == failover.Primary && (g.Desired.Done || g.Desired.Gen == 0) && !g.Blocked
	}
	var k int
	var last string
	if !Within(3*time.Minute, func() bool {
		if all(back) {
			return true
		}
		run := w.Running()
		n := run[k%len(run)]
		k++
		cmd := append([]string{"failover", "--to", "primary", "--reason", "bench reset", "--yes", "--wait"}, args...)
		out, stderr, code := w.CLI(n, cmd...)
		last = fmt.Sprintf("%s via %s: exit %d\n%s\n%s", strings.Join(cmd, " "), n.ID, code, out, stderr)
		if code != 0 {
			b.Log(last)
		}
		return code == 0
	}) {
		b.Fatalf("no node took the move back to the primary within 3m; last attempt %s", last)
	}
	Eventually(b, time.Minute, func() bool { return all(back) }, "every group is back on the primary, verified and not blocked")
}

// reportGroups prints and writes both worlds' figures and their ratios.
func reportGroups(b *testing.B, o Options, one, many *groupsRun, flips, regions int) {
	b.Helper()
	flipSeries := []series[trial]{
		{"floor_after_kill_ms", "kill -> floor (detected_at)", func(t trial) float64 { return float64(t.Floor-t.Kill) / 1e6 }},
		{"commit_after_floor_ms", "floor -> deciding command stamped by the leader", func(t trial) float64 { return float64(t.Decided-t.Floor) / 1e6 }},
		{"bind_after_floor_ms", "floor -> BIND answers backup", func(t trial) float64 { return float64(t.AtBIND-t.Floor) / 1e6 }},
		{"verified_after_floor_ms", "floor -> leader verified", func(t trial) float64 { return float64(t.Verified-t.Floor) / 1e6 }},
	}
	regionSeries := []series[regionTrial]{
		{"region_detected_after_kill_ms", "kill -> earliest detected_at", func(t regionTrial) float64 { return float64(t.Detected-t.Kill) / 1e6 }},
		{"region_last_decided_after_detected_ms", "detected -> last group decided", func(t regionTrial) float64 { return float64(t.LastDecided-t.Detected) / 1e6 }},
		{"region_detected_spread_ms", "earliest -> latest group detected", func(t regionTrial) float64 { return float64(t.LastDetected-t.Detected) / 1e6 }},
		{"region_first_written_after_last_decided_ms", "last decided -> first group written", func(t regionTrial) float64 { return float64(t.FirstWritten-t.LastDecided) / 1e6 }},
		{"region_written_spread_ms", "first -> last group written", func(t regionTrial) float64 { return float64(t.LastWritten-t.FirstWritten) / 1e6 }},
		{"region_last_verified_after_last_written_ms", "last written -> last verified", func(t regionTrial) float64 { return float64(t.LastVerified-t.LastWritten) / 1e6 }},
		{"region_max_written_to_verified_ms", "longest one group's written -> verified", func(t regionTrial) float64 { return float64(t.MaxWriteToVerify) / 1e6 }},
		{"region_last_verified_after_detected_ms", "detected -> last group verified", func(t regionTrial) float64 { return float64(t.LastVerified-t.Detected) / 1e6 }},
	}
	for _, r := range []*groupsRun{one, many} {
		r.Summary = map[string]any{}
		fmt.Printf("\n%d group(s): one group's flips (%d):\n", r.Groups, len(r.Flips))
		printSeries(r.Summary, r.Flips, flipSeries)
		fmt.Printf("%d group(s): region outages (%d):\n", r.Groups, len(r.Regions))
		printSeries(r.Summary, r.Regions, regionSeries)
		var cpu, rss, payload, wire, slowest float64
		for _, n := range r.Nodes {
			cpu, rss = max(cpu, n.CPUPercent), max(rss, n.RSSMiB)
			payload, wire = max(payload, n.PayloadBytesPerSecond), max(wire, n.WireInBytesPerSecond)
			slowest = max(slowest, n.SlowestProbeSeconds)
		}
		r.Summary["max_cpu_percent"], r.Summary["max_rss_mib"], r.Summary["slowest_probe_s"] = cpu, rss, slowest
		r.Summary["max_replicated_payload_bytes_per_s"], r.Summary["max_wire_bytes_per_s_leader_to_follower"] = payload, wire
		fmt.Printf("%d group(s): cost over %.0f s: max CPU %.1f %% of a core, max RSS %.1f MiB, replicated payload %.0f B/s per follower (wire %.0f B/s), slowest probe %.2f s; load %s -> %s\n",
			r.Groups, r.Window, cpu, rss, payload, wire, slowest, r.LoadStart, r.LoadEnd)
	}
	ratio := func(key string) float64 { return many.Summary[key].(float64) / one.Summary[key].(float64) }
	ratios := map[string]any{
		"flip_bind_after_floor_p50":                      ratio("bind_after_floor_ms_p50"),
		"flip_bind_after_floor_p90":                      ratio("bind_after_floor_ms_p90"),
		"flip_verified_after_floor_p50":                  ratio("verified_after_floor_ms_p50"),
		"flip_verified_after_floor_p90":                  ratio("verified_after_floor_ms_p90"),
		"cpu":                                            ratio("max_cpu_percent"),
		"rss":                                            ratio("max_rss_mib"),
		"replicated_payload":                             ratio("max_replicated_payload_bytes_per_s"),
		"region_last_verified_over_one_group_p50":        ratio("region_last_verified_after_detected_ms_p50"),
		"region_last_verified_over_one_group_p90":        ratio("region_last_verified_after_detected_ms_p90"),
		"region_last_verified_over_single_flip_p50":      many.Summary["region_last_verified_after_detected_ms_p50"].(float64) / one.Summary["verified_after_floor_ms_p50"].(float64),
		"region_last_verified_over_many_single_flip_p50": many.Summary["region_last_verified_after_detected_ms_p50"].(float64) / many.Summary["verified_after_floor_ms_p50"].(float64),
	}
	fmt.Printf("\n%d groups over 1: floor -> BIND p50 %.2f×, p90 %.2f×; floor -> verified p50 %.2f×, p90 %.2f×; region detected -> last verified p50 %.2f×, p90 %.2f×; CPU %.2f×, RSS %.2f×, replicated %.2f×\n",
		many.Groups, ratios["flip_bind_after_floor_p50"], ratios["flip_bind_after_floor_p90"], ratios["flip_verified_after_floor_p50"], ratios["flip_verified_after_floor_p90"],
		ratios["region_last_verified_over_one_group_p50"], ratios["region_last_verified_over_one_group_p90"], ratios["cpu"], ratios["rss"], ratios["replicated_payload"])
	b.ReportMetric(ratios["flip_bind_after_floor_p50"].(float64), "flip-over-floor-p50-ratio")
	b.ReportMetric(ratios["region_last_verified_over_one_group_p50"].(float64), "region-last-verified-p50-ratio")
	writeResult(b, "groups.json", map[string]any{
		"benchmark": fmt.Sprintf("%d failover groups on one trio vs one group, in the same run", many.Groups),
		"command":   "go test -run '^$' -bench BenchmarkFailoverGroups -benchtime 1x ./test/e2e/",
		"when":      time.Now().UTC().Format(time.RFC3339),
		"settings": fmt.Sprintf("interval %s, timeout %s, fall %d, rise %d, quorum %d; per group %d critical https probes per site of its own host name plus the shared probe region; fault of one group: its primary's proxies reset every connection; region outage: the region's primary Caddy killed",
			o.Interval, o.Timeout, o.Fall, o.Rise, o.Quorum, groupsBenchProbes),
		"setup": fmt.Sprintf("3 watchers, real BIND, real Caddy on one 2-core machine shared with other work; the one-group world first, torn down before the %d-group world starts; %d Caddy processes per site serve the groups' host names (10 platforms each, as a shared ingress) plus one region Caddy per site",
			many.Groups, min(groupsBenchCaddies, many.Groups)),
		"settings_short":   fmt.Sprintf("interval %s, fall %d, quorum %d", o.Interval, o.Fall, o.Quorum),
		"trials":           flips,
		"region_trials":    regions,
		"kill_phases":      fmt.Sprintf("flip i of %d and region outage i of %d kill at phase (i+0.5)/n of the probe interval on the wall-clock grid (stratified)", flips, regions),
		"floor_definition": "decision Timings.DetectedAt (as BenchmarkFailoverOverFloor); a region outage's floor is the earliest group's",
		"load_one_group":   one.LoadStart + " → " + one.LoadEnd,
		"load_many_groups": many.LoadStart + " → " + many.LoadEnd,
		"one_group":        one,
		"many_groups":      many,
		"ratios":           ratios,
		"targets":          "flip floor -> BIND answers the backup, many over one: <= 1.2 (p50); region outage detected -> last group verified <= 2 x one group's (one-group world's region outage, p50)",
	})
}
