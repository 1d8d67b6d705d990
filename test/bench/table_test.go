package bench

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite README.md's benchmark table from results/*.json")

const (
	begin = "<!-- bench-results:begin (generated from test/bench/results by `make bench`; do not edit) -->"
	end   = "<!-- bench-results:end -->"
)

// result is one results/*.json file, read loosely: each row names the keys
// it needs and says so when one is missing.
type result struct {
	file string
	m    map[string]any
}

func load(t *testing.T, file string) result {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("results", file))
	if err != nil {
		t.Fatalf("read %s: %v (run make bench)", file, err)
	}
	r := result{file: file}
	if err := json.Unmarshal(b, &r.m); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return r
}

// num returns the number at a dotted path ("summary.max_rss_mib").
func (r result) num(t *testing.T, path string) float64 {
	t.Helper()
	var v any = r.m
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%s: %s: not an object at %q", r.file, path, k)
		}
		v = m[k]
	}
	f, ok := v.(float64)
	if !ok {
		t.Fatalf("%s: %s: got %v, want a number (rerun the benchmark that writes it)", r.file, path, v)
	}
	return f
}

func (r result) str(path string) string {
	s, _ := r.m[path].(string)
	return s
}

// failedNote says how many probes failed on each side, when the file
// records it: on a loaded machine some time out, on both sides alike.
func failedNote(cost result) string {
	summary, _ := cost.m["summary"].(map[string]any)
	bb, _ := cost.m["blackbox"].(map[string]any)
	d, ok1 := summary["max_failed_probe_fraction"].(float64)
	x, ok2 := bb["failed_fraction"].(float64)
	if !ok1 || !ok2 {
		return ""
	}
	return fmt.Sprintf(" (failed probes: drwatch at most %.1f %%, blackbox_exporter %.1f %%)", 100*d, 100*x)
}

// orUnknown is s, or "not recorded" for a result file from before the key.
func orUnknown(s string) string {
	if s == "" {
		return "not recorded"
	}
	return s
}

// verdict says whether got meets a target of at most limit.
func verdict(got, limit float64) string {
	if got <= limit {
		return "met"
	}
	return fmt.Sprintf("missed by %.2f×", got/limit)
}

// table renders the README's end-to-end results from results/*.json.
func table(t *testing.T) string {
	t.Helper()
	peer := load(t, "peer_powerdns.json")
	deploy := load(t, "failover_deploy.json")
	floor := load(t, "failover_floor.json")
	cost := load(t, "cost.json")
	loss := load(t, "failover_leader_loss.json")
	groups := load(t, "groups.json")
	var b strings.Builder
	fmt.Fprintln(&b, "| what | measured | target | verdict | when, command |")
	fmt.Fprintln(&b, "|---|---|---|---|---|")
	row := func(what, measured, target, v string, r result) {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s, `%s` |\n", what, measured, target, v, r.str("when"), r.str("command"))
	}
	pm, pp := peer.num(t, "ratio_drwatch_over_powerdns"), peer.num(t, "ratio_p90_drwatch_over_powerdns")
	row(fmt.Sprintf("switch time vs PowerDNS 4.7 `ifurlup` (%.0f kills per side at stratified phases of its own schedule; interval 1 s, fall 1; drwatch quorum 2 of 3, read at BIND; `fast_interval` %s)", peer.num(t, "trials"), orUnknown(peer.str("fast_interval"))),
		fmt.Sprintf("drwatch median %.0f ms, p90 %.0f ms; PowerDNS median %.0f ms, p90 %.0f ms; ratio median **%.2f**, p90 **%.2f**",
			peer.num(t, "drwatch_median_ms"), peer.num(t, "drwatch_p90_ms"), peer.num(t, "powerdns_median_ms"), peer.num(t, "powerdns_p90_ms"), pm, pp),
		"median ≤ 0.5×, p90 ≤ 1.0×", verdict(pm, 0.5)+", "+verdict(pp, 1.0), peer)
	budget := deploy.num(t, "fall") * deploy.num(t, "interval_s")
	dr := deploy.num(t, "ratio_total_over_fall_x_interval_p50")
	row(fmt.Sprintf("failover with the deploy/examples policy (%.0f kills at stratified phases; interval %.0f s, fall %.0f, quorum %.0f; `fast_interval` %s): kill → BIND answers the backup",
		deploy.num(t, "trials"), deploy.num(t, "interval_s"), deploy.num(t, "fall"), deploy.num(t, "quorum"), orUnknown(deploy.str("fast_interval"))),
		fmt.Sprintf("median %.0f ms, p90 %.0f ms; ÷ fall × interval (%.0f s): median **%.2f**, p90 %.2f; kill → leader verified median %.0f ms",
			deploy.num(t, "total_ms_p50"), deploy.num(t, "total_ms_p90"), budget, dr, deploy.num(t, "ratio_total_over_fall_x_interval_p90"), deploy.num(t, "verified_after_kill_ms_p50")),
		"median ≤ 0.4 × fall × interval", verdict(dr, 0.4), deploy)
	row(fmt.Sprintf("failover over the floor (%.0f kills; interval %.0f s, fall %.0f): overhead from `detected_at` to BIND answering", floor.num(t, "trials"), floor.num(t, "interval_s"), floor.num(t, "fall")),
		fmt.Sprintf("p50 %.0f ms, p90 %.0f ms, of which probe → report → the leader's stamp of the deciding command (not its commit) p50 %.0f ms; total ÷ fall × interval p50 %.2f",
			floor.num(t, "overhead_ms_p50"), floor.num(t, "overhead_ms_p90"), floor.num(t, "commit_after_floor_ms_p50"), floor.num(t, "ratio_total_over_fall_x_interval_p50")),
		"—", "—", floor)
	lr := loss.num(t, "added_over_heartbeat_timeout_p50")
	row(fmt.Sprintf("leader SIGKILLed during the outage, at stratified phases between the fault and the expected decision (%.0f pairs with and without, alternating; interval %.0f s, fall %.0f, `heartbeat_timeout` %.1f s; load %s → %s): added kill → BIND answers the backup",
		loss.num(t, "trials"), loss.num(t, "interval_s"), loss.num(t, "fall"), loss.num(t, "heartbeat_timeout_s"), orUnknown(loss.str("load_average_at_start")), orUnknown(loss.str("load_average_at_end"))),
		fmt.Sprintf("added p50 %.0f ms, p90 %.0f ms; ÷ heartbeat_timeout p50 **%.2f**, p90 %.2f (without loss p50 %.0f ms, with %.0f ms)",
			loss.num(t, "added_ms_p50"), loss.num(t, "added_ms_p90"), lr, loss.num(t, "added_over_heartbeat_timeout_p90"), loss.num(t, "base_total_ms_p50"), loss.num(t, "loss_total_ms_p50")),
		"added p50 ≤ 1.5 × heartbeat_timeout", verdict(lr, 1.5), loss)
	summary, _ := cost.m["summary"].(map[string]any)
	cr := cost.num(t, "summary.ratio_cpu_per_probe_drwatch_over_blackbox")
	row("all-in CPU per probe per node (probes, reports, Raft, FSM, status) vs blackbox_exporter probing the same Caddy at the same rate (100/s)",
		fmt.Sprintf("drwatch %.0f µs, blackbox_exporter %.0f µs: **%.2f×**%s", cost.num(t, "summary.mean_cpu_per_probe_us"), cost.num(t, "blackbox.cpu_per_probe_us"), cr, failedNote(cost)),
		"≤ 0.5×", verdict(cr, 0.5), cost)
	rss := cost.num(t, "summary.max_rss_mib")
	anon := "not recorded"
	if a, ok := summary["max_rss_anon_mib"].(float64); ok {
		anon = fmt.Sprintf("%.1f MiB", a)
	}
	row("RSS per node at 100 probes/s; its anonymous part (the rest is the binary's shared, file-backed pages); blackbox_exporter's",
		fmt.Sprintf("**%.1f MiB**; anonymous %s; blackbox_exporter %.1f MiB", rss, anon, cost.num(t, "blackbox.rss_mib")),
		"≤ 40 MiB", verdict(rss, 40), cost)
	rep := cost.num(t, "summary.max_replicated_payload_bytes_per_s")
	row("bytes replicated per follower at 100 probes/s: log payload (wire, TLS and heartbeats included)",
		fmt.Sprintf("**%.0f B/s** (wire %.0f B/s)", rep, cost.num(t, "summary.max_wire_bytes_per_s_leader_to_follower")),
		"≤ 2 KB/s", verdict(rep, 2000), cost)
	dir := cost.num(t, "summary.max_data_dir_mib")
	if compacted, _ := summary["every_node_took_a_snapshot"].(bool); compacted {
		row(fmt.Sprintf("largest data dir in the %.0f s cost window, every node compacted", cost.num(t, "window_s")),
			fmt.Sprintf("**%.2f MiB**", dir), "≤ 10 MiB", verdict(dir, 10), cost)
	} else {
		row(fmt.Sprintf("largest data dir in the %.0f s cost window, before every node compacted (not the plateau)", cost.num(t, "window_s")),
			fmt.Sprintf("%.2f MiB", dir), "≤ 10 MiB", "not measured at the plateau", cost)
	}
	groupRows(t, groups, row)
	return b.String()
}

// groupRows renders groups.json: one group's flip and a region outage in
// the many-group trio against the one-group trio of the same run, and
// what the many groups cost.
func groupRows(t *testing.T, g result, row func(what, measured, target, v string, r result)) {
	t.Helper()
	n := g.num(t, "many_groups.groups")
	setup := fmt.Sprintf("%.0f groups × 4 critical https probes per site against real Caddy, plus a shared region probe; %s; load one group %s, %.0f groups %s",
		n, g.str("settings_short"), orUnknown(g.str("load_one_group")), n, orUnknown(g.str("load_many_groups")))
	fr, fr90 := g.num(t, "ratios.flip_bind_after_floor_p50"), g.num(t, "ratios.flip_bind_after_floor_p90")
	row(fmt.Sprintf("one group fails while the other %.0f stay healthy (%.0f kills at stratified phases per trio; %s): `detected_at` → BIND answers its backup, vs a one-group trio in the same run", n-1, g.num(t, "trials"), setup),
		fmt.Sprintf("%.0f groups p50 %.0f ms, p90 %.0f ms; one group p50 %.0f ms, p90 %.0f ms; ratio p50 **%.2f**, p90 %.2f",
			n, g.num(t, "many_groups.summary.bind_after_floor_ms_p50"), g.num(t, "many_groups.summary.bind_after_floor_ms_p90"),
			g.num(t, "one_group.summary.bind_after_floor_ms_p50"), g.num(t, "one_group.summary.bind_after_floor_ms_p90"), fr, fr90),
		"≤ 1.2×", verdict(fr, 1.2), g)
	rr, rr90 := g.num(t, "ratios.region_last_verified_over_one_group_p50"), g.num(t, "ratios.region_last_verified_over_one_group_p90")
	row(fmt.Sprintf("region outage moving all %.0f groups (%.0f kills of the region probe's primary at stratified phases per trio): earliest `detected_at` → last group verified, vs the one group of a one-group trio in the same run", n, g.num(t, "region_trials")),
		fmt.Sprintf("%.0f groups p50 %.0f ms, p90 %.0f ms; one group p50 %.0f ms, p90 %.0f ms; ratio p50 **%.2f**, p90 %.2f",
			n, g.num(t, "many_groups.summary.region_last_verified_after_detected_ms_p50"), g.num(t, "many_groups.summary.region_last_verified_after_detected_ms_p90"),
			g.num(t, "one_group.summary.region_last_verified_after_detected_ms_p50"), g.num(t, "one_group.summary.region_last_verified_after_detected_ms_p90"), rr, rr90),
		"≤ 2×", verdict(rr, 2), g)
	row(fmt.Sprintf("cost per node of %.0f groups vs one group, each over a %.0f s window with every group healthy: CPU, RSS, log payload replicated per follower", n, g.num(t, "many_groups.cost_window_s")),
		fmt.Sprintf("CPU %.1f %% vs %.1f %% of a core (%.2f×); RSS %.1f vs %.1f MiB (%.2f×); replicated %.0f vs %.0f B/s (%.2f×)",
			g.num(t, "many_groups.summary.max_cpu_percent"), g.num(t, "one_group.summary.max_cpu_percent"), g.num(t, "ratios.cpu"),
			g.num(t, "many_groups.summary.max_rss_mib"), g.num(t, "one_group.summary.max_rss_mib"), g.num(t, "ratios.rss"),
			g.num(t, "many_groups.summary.max_replicated_payload_bytes_per_s"), g.num(t, "one_group.summary.max_replicated_payload_bytes_per_s"), g.num(t, "ratios.replicated_payload")),
		"—", "—", g)
}

// TestReadmeTableMatchesResults: the README shows the figures the last
// benchmark runs wrote, not older ones typed by hand.
func TestReadmeTableMatchesResults(t *testing.T) {
	readme := filepath.Join("..", "..", "README.md")
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.Index(b, []byte(begin)), bytes.Index(b, []byte(end))
	if i < 0 || j < i {
		t.Fatalf("README.md: no %q ... %q markers around the benchmark table", begin, end)
	}
	want := begin + "\n" + table(t) + end
	if got := string(b[i : j+len(end)]); got == want {
		return
	}
	if !*update {
		t.Fatalf("README.md's benchmark table differs from test/bench/results/*.json: run `go test ./test/bench -update` (make bench does)\nwant:\n%s", want)
	}
	out := append(append(append([]byte{}, b[:i]...), want...), b[j+len(end):]...)
	if err := os.WriteFile(readme, out, 0o644); err != nil {
		t.Fatal(err)
	}
}
