package promrules

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
)

const (
	root       = "../.."
	alertsFile = root + "/deploy/prometheus/alerts.yml"
	testsFile  = root + "/deploy/prometheus/alerts_test.yml"
	runbooks   = root + "/docs/runbooks.md"
	dashboard  = root + "/deploy/grafana/drwatch.json"
	promConfig = root + "/deploy/prometheus/prometheus.yml"
	runbookURL = "https://github.com/drwatch/drwatch/blob/main/docs/runbooks.md#"
)

// exported is every metric drwatch exports, by the name the code registers
// (cmd/drwatch/node/metrics.go, probes/metrics.go, cluster/metrics.go,
// cmd/drwatch/api/conns.go, executor/remediate).
// TestExportedNamesAreInTheCode keeps this list true; rules and dashboards
// may use only these (plus Prometheus's own "up").
var exported = []string{
	// cmd/drwatch/node
	"drwatch_site_down_votes", "drwatch_site_up_votes", "drwatch_quorum_required", "drwatch_site_verdict",
	"drwatch_active_site", "drwatch_paused", "drwatch_failover_blocked", "drwatch_failovers_total",
	"drwatch_last_failover_timestamp_seconds", "drwatch_watchers_fresh", "drwatch_watchers_disagree",
	"drwatch_build_info", "drwatch_desired_generation", "drwatch_desired_verified",
	"drwatch_dns_update_duration_seconds", "drwatch_dns_records_match_desired",
	"drwatch_tls_cert_expiry_timestamp_seconds", "drwatch_break_glass_rejected_timestamp_seconds",
	"drwatch_drill_last_success_timestamp_seconds", "drwatch_drill_rto_seconds", "drwatch_drill_failures_total",
	"drwatch_drill_schedule_seconds", "drwatch_log_format", "drwatch_replica_halted",
	// probes
	"drwatch_probe_success", "drwatch_probe_duration_seconds", "drwatch_probe_cert_expiry_timestamp_seconds",
	"drwatch_probe_failures_total", "drwatch_probe_rounds_total", "drwatch_probe_rounds_dropped_total",
	"drwatch_probe_ticks_skipped_total", "drwatch_probe_abandoned_total", "drwatch_probe_start_lateness_seconds",
	// cluster
	"drwatch_raft_is_leader", "drwatch_raft_has_leader", "drwatch_raft_term", "drwatch_raft_commit_index",
	"drwatch_raft_applied_index", "drwatch_raft_last_contact_seconds", "drwatch_raft_leader_changes_total",
	"drwatch_raft_refused_connections_total", "drwatch_raft_peers",
	"drwatch_raft_log_appended_entries_total", "drwatch_raft_log_appended_bytes_total",
	// cmd/drwatch/api (the listener's connection budget)
	"drwatch_api_refused_connections_total", "drwatch_api_idle_connections_closed_total",
	"drwatch_api_open_connections", "drwatch_api_connection_limit",
	// executor/remediate (const MetricActions, MetricBrake)
	"drwatch_remediation_actions_total", "drwatch_remediation_brake_engaged",
	// executor/drill (its Metric* constants; the drill executor registers them)
	"drwatch_drill_last_success_timestamp_seconds", "drwatch_drill_rto_seconds", "drwatch_drill_failures_total",
	"drwatch_drill_schedule_seconds",
	// monitor/clusterhealth
	"drwatch_cluster_health_read_ok", "drwatch_cluster_health_read_timestamp_seconds", "drwatch_cluster_nodes",
	"drwatch_cluster_node_condition", "drwatch_cluster_nodes_unknown", "drwatch_cluster_nodes_pleg_unhealthy",
	"drwatch_cluster_nodes_not_ready", "drwatch_cluster_pods", "drwatch_cluster_ccm_lease_renew_age_seconds",
	"drwatch_cluster_recent_events", "drwatch_cluster_lb_services_pending", "drwatch_cluster_router_routes",
	"drwatch_cluster_router_route_limit", "drwatch_cluster_version_info",
}

// declaredOnly are names the code declares but does not register or
// collect (yet): rules and dashboards must not rely on them.
var declaredOnly = []string{}

// histograms get _bucket, _sum and _count series.
var histograms = []string{"drwatch_dns_update_duration_seconds", "drwatch_probe_start_lateness_seconds"}

func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found in PATH: install Debian package prometheus (make install-test-deps)")
	}
	return p
}

func run(t *testing.T, dir, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestPromtoolCheckRules(t *testing.T) {
	out := run(t, ".", promtool(t), "check", "rules", alertsFile)
	if !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool check rules: got %s, want SUCCESS", out)
	}
}

func TestPromtoolTestRules(t *testing.T) {
	out := run(t, filepath.Dir(testsFile), promtool(t), "test", "rules", filepath.Base(testsFile))
	if !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool test rules: got %s, want SUCCESS", out)
	}
}

// TestPromtoolCheckConfig checks the example scrape configuration, with
// its rule file, in a scratch directory that holds a stand-in CA file
// (promtool checks that the file exists, not what it holds).
func TestPromtoolCheckConfig(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{promConfig, alertsFile} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "drwatch-ca.crt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out := run(t, dir, promtool(t), "check", "config", "prometheus.yml")
	rules, err := os.ReadFile(filepath.Join(dir, "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d rules found", strings.Count(string(rules), "- alert:"))
	if !strings.Contains(out, "valid prometheus config") || !strings.Contains(out, want) {
		t.Errorf("promtool check config: got %s, want a valid config that loads alerts.yml", out)
	}
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

type unitTests struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		Name          string `yaml:"name"`
		AlertRuleTest []struct {
			EvalTime  string           `yaml:"eval_time"`
			Alertname string           `yaml:"alertname"`
			ExpAlerts []map[string]any `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

func load(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestEveryAlertDocumentedAndTested: every alert has a severity, a summary,
// a description and a runbook link to an existing section of
// docs/runbooks.md; every alert has a promtool case where it fires and one
// where it stays silent; and every runbook section belongs to an alert.
func TestEveryAlertDocumentedAndTested(t *testing.T) {
	var rf ruleFile
	load(t, alertsFile, &rf)
	var ut unitTests
	load(t, testsFile, &ut)
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range ut.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				silent[a.Alertname] = true
			}
		}
	}
	rb, err := os.ReadFile(runbooks)
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^## (\S+)\s*$`).FindAllStringSubmatch(string(rb), -1) {
		sections[strings.ToLower(m[1])] = true
	}
	alerts := map[string]bool{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts[strings.ToLower(r.Alert)] = true
			t.Run(r.Alert, func(t *testing.T) {
				if s := r.Labels["severity"]; !slices.Contains([]string{"critical", "warning", "info"}, s) {
					t.Errorf("labels.severity: got %q, want critical, warning or info", s)
				}
				for _, k := range []string{"summary", "description", "runbook_url"} {
					if strings.TrimSpace(r.Annotations[k]) == "" {
						t.Errorf("annotations.%s is missing", k)
					}
				}
				u := r.Annotations["runbook_url"]
				anchor, ok := strings.CutPrefix(u, runbookURL)
				if !ok || anchor != strings.ToLower(r.Alert) {
					t.Errorf("runbook_url: got %q, want %s%s", u, runbookURL, strings.ToLower(r.Alert))
				}
				if !sections[anchor] {
					t.Errorf("docs/runbooks.md has no \"## %s\" section for the runbook link", r.Alert)
				}
				if !fires[r.Alert] {
					t.Errorf("alerts_test.yml has no case where %s fires", r.Alert)
				}
				if !silent[r.Alert] {
					t.Errorf("alerts_test.yml has no case where %s stays silent", r.Alert)
				}
			})
		}
	}
	if len(alerts) < 10 {
		t.Errorf("alerts.yml: got %d alerts, want at least 10", len(alerts))
	}
	for s := range sections {
		if !alerts[s] {
			t.Errorf("docs/runbooks.md section %q matches no alert", s)
		}
	}
	for _, want := range []string{
		"DrwatchFailoverExecuted", "DrwatchPrimaryDownAtQuorum", "DrwatchBackupSiteUnhealthy", "DrwatchWatchersBelowQuorum",
		"DrwatchNoLeader", "DrwatchFrequentLeaderChanges", "DrwatchWatchersDisagree", "DrwatchPausedTooLong",
		"DrwatchDNSDrift", "DrwatchCertificateExpiringSoon",
	} {
		if !alerts[strings.ToLower(want)] {
			t.Errorf("alerts.yml lacks %s", want)
		}
	}
}

// TestExportedNamesAreInTheCode greps the repository's non-test Go files
// for each name in exported, as a string literal: a renamed metric breaks
// this test rather than silently breaking every alert that uses it.
func TestExportedNamesAreInTheCode(t *testing.T) {
	var src bytes.Buffer
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "testdata", "vendor", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			src.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	code := src.String()
	for _, name := range exported {
		if !strings.Contains(code, `"`+name+`"`) {
			t.Errorf("metric %s: no Go source registers it (as the literal %q); update the exported list", name, name)
		}
	}
	// The other way is only reported: other packages add metrics, and a new
	// metric no rule uses yet must not fail this package's tests.
	for _, m := range regexp.MustCompile(`"(drwatch_[a-z0-9_]+)"`).FindAllStringSubmatch(code, -1) {
		if !slices.Contains(exported, m[1]) && !slices.Contains(declaredOnly, m[1]) {
			t.Logf("the code names metric %s, which the exported list lacks: add it before a rule or panel uses it", m[1])
		}
	}
}

var (
	drwatchName = regexp.MustCompile(`\bdrwatch_[a-z0-9_]+\b`)
	// Something shaped like a metric from another exporter.
	foreignName = regexp.MustCompile(`\b[a-z][a-z0-9]*(?:_[a-z0-9]+)*_(?:total|seconds|bytes|info|bucket|ratio)\b`)
)

// unknownMetrics returns the metric names in a PromQL expression that
// drwatch does not export.
func unknownMetrics(expr string) []string {
	var bad []string
	for _, n := range drwatchName.FindAllString(expr, -1) {
		base := n
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(n, suf); ok && slices.Contains(histograms, b) {
				base = b
			}
		}
		if !slices.Contains(exported, base) {
			bad = append(bad, n)
		}
	}
	for _, n := range foreignName.FindAllString(expr, -1) {
		if !strings.HasPrefix(n, "drwatch_") {
			bad = append(bad, n)
		}
	}
	return bad
}

func TestRulesUseExportedMetrics(t *testing.T) {
	var rf ruleFile
	load(t, alertsFile, &rf)
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			for _, s := range append([]string{r.Expr}, r.Annotations["summary"], r.Annotations["description"]) {
				if bad := unknownMetrics(s); len(bad) > 0 {
					t.Errorf("%s uses metrics drwatch does not export: %v", r.Alert, bad)
				}
			}
		}
	}
}

// dashExprs collects every PromQL string of the dashboard: panel targets,
// annotation queries and template variable queries.
func dashExprs(v any, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if s, ok := val.(string); ok && (k == "expr" || k == "definition" || (k == "query" && strings.Contains(s, "("))) {
				*out = append(*out, s)
				continue
			}
			dashExprs(val, out)
		}
	case []any:
		for _, e := range x {
			dashExprs(e, out)
		}
	}
}

func TestGrafanaDashboard(t *testing.T) {
	b, err := os.ReadFile(dashboard)
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("deploy/grafana/drwatch.json is not valid JSON: %v", err)
	}
	if d["uid"] == "" || d["title"] == "" {
		t.Error("dashboard needs a uid and a title")
	}
	var exprs []string
	dashExprs(d, &exprs)
	if len(exprs) < 20 {
		t.Fatalf("dashboard: got %d queries, want the whole set (at least 20)", len(exprs))
	}
	for _, e := range exprs {
		if bad := unknownMetrics(e); len(bad) > 0 {
			t.Errorf("query %q uses metrics drwatch does not export: %v", e, bad)
		}
	}
	all := strings.Join(exprs, "\n")
	for _, want := range []string{"drwatch_active_site", "drwatch_site_verdict", "drwatch_quorum_required", "drwatch_raft_has_leader",
		"drwatch_probe_success", "drwatch_probe_duration_seconds", "drwatch_probe_cert_expiry_timestamp_seconds",
		"drwatch_last_failover_timestamp_seconds", "drwatch_desired_generation"} {
		if !strings.Contains(all, want) {
			t.Errorf("dashboard never queries %s", want)
		}
	}
	// Panel ids unique, every panel placed, the vantage matrix is a state
	// timeline, failovers are annotations.
	ids := map[float64]bool{}
	kinds := map[string]int{}
	for _, p := range d["panels"].([]any) {
		pm := p.(map[string]any)
		id, _ := pm["id"].(float64)
		if ids[id] {
			t.Errorf("panel id %v used twice", id)
		}
		ids[id] = true
		if _, ok := pm["gridPos"]; !ok {
			t.Errorf("panel %v %q has no gridPos", id, pm["title"])
		}
		kinds[pm["type"].(string)]++
	}
	if kinds["state-timeline"] == 0 || kinds["stat"] == 0 || kinds["timeseries"] == 0 {
		t.Errorf("panel types: got %v, want stat, timeseries and state-timeline", kinds)
	}
	ann, _ := json.Marshal(d["annotations"])
	if !bytes.Contains(ann, []byte("drwatch_last_failover_timestamp_seconds")) {
		t.Error("failovers are not shown as annotations")
	}
	checkGroupVariable(t, d, exprs)
}

// perGroup are the series that carry a group label in a cluster with
// failover groups (watcher/metrics.go, newGroupDesc, and the DNS check's).
var perGroup = []string{"drwatch_site_down_votes", "drwatch_site_up_votes", "drwatch_site_verdict", "drwatch_active_site",
	"drwatch_paused", "drwatch_failover_blocked", "drwatch_failovers_total", "drwatch_last_failover_timestamp_seconds",
	"drwatch_watchers_disagree", "drwatch_desired_generation", "drwatch_desired_verified", "drwatch_dns_records_match_desired"}

// checkGroupVariable: the dashboard has a group variable whose All also
// matches a cluster without groups (allValue .*: a series without the
// label matches it), and every query of a per-group series selects
// $group and keeps the group apart (never max over groups).
func checkGroupVariable(t *testing.T, d map[string]any, exprs []string) {
	t.Helper()
	var group map[string]any
	for _, v := range d["templating"].(map[string]any)["list"].([]any) {
		if vm := v.(map[string]any); vm["name"] == "group" {
			group = vm
		}
	}
	if group == nil {
		t.Fatal("dashboard has no group variable")
	}
	if group["includeAll"] != true || group["allValue"] != ".*" || !strings.Contains(fmt.Sprint(group["definition"]), ", group)") {
		t.Errorf("group variable: got %v, want label_values(…, group) with All as .*", group)
	}
	sel := regexp.MustCompile(`(drwatch_[a-z_]+)\{([^}]*)\}`)
	for _, e := range exprs {
		if strings.HasPrefix(e, "label_values(") {
			continue // the variable's own query
		}
		for _, m := range sel.FindAllStringSubmatch(e, -1) {
			if !slices.Contains(perGroup, m[1]) {
				continue
			}
			if !strings.Contains(m[2], `group=~"$group"`) {
				t.Errorf("query %q: %s does not select group=~\"$group\"", e, m[1])
			}
			if !strings.Contains(e, "by (group") {
				t.Errorf("query %q aggregates %s over every group: keep the group label", e, m[1])
			}
		}
	}
}

// TestGrafanaQueriesParse feeds every dashboard query, with Grafana's
// variables replaced, to promtool as recording rules: promtool parses the
// PromQL, so a typo in a panel fails here, not in front of an operator.
func TestGrafanaQueriesParse(t *testing.T) {
	bin := promtool(t)
	b, err := os.ReadFile(dashboard)
	if err != nil {
		t.Fatal(err)
	}
	var d any
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var exprs []string
	dashExprs(d, &exprs)
	r := strings.NewReplacer("$__rate_interval", "1m", "$__interval", "1m", "$job", "drwatch", "${job}", "drwatch", "$group", "lms")
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, e := range exprs {
		if strings.HasPrefix(e, "label_values(") {
			continue
		}
		q, _ := json.Marshal(r.Replace(e))
		rules.WriteString("      - record: dashboard:q" + strconv.Itoa(i) + "\n        expr: " + string(q) + "\n")
	}
	f := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(f, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := run(t, ".", bin, "check", "rules", f)
	if !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool check rules on the dashboard's queries: %s", out)
	}
}
