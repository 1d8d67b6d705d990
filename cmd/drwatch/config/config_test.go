package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func loadString(t *testing.T, yaml string) (*Config, Problems) {
	t.Helper()
	c, err := Parse("test.yaml", []byte(yaml), Options{SkipFileChecks: true})
	if err == nil {
		return c, nil
	}
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("Parse error is %T, want Problems: %v", err, err)
	}
	return nil, ps
}

func validYAML(t *testing.T) string { return testdataYAML(t, "valid.yaml") }

// testdataYAML is the text of testdata/name.
func testdataYAML(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestValidConfig(t *testing.T) {
	c, ps := loadString(t, validYAML(t))
	if ps != nil {
		t.Fatalf("valid.yaml: got problems:\n%v", ps)
	}
	if c.Policy.Quorum != 2 || c.Policy.StaleAfter != 3*c.Policy.Interval {
		t.Errorf("got quorum %d stale_after %s, want 2 and 3×interval", c.Policy.Quorum, c.Policy.StaleAfter)
	}
	if c.Policy.MaxPause != 24*time.Hour {
		t.Errorf("got max_pause %s, want the default 24h", c.Policy.MaxPause)
	}
	p := c.Sites.Primary.Probes[0]
	if p.Timeout != c.Policy.Timeout || len(p.HTTP.ExpectStatus) != 1 || p.HTTP.ExpectStatus[0] != 200 {
		t.Errorf("probe defaults: got timeout %s expect %v", p.Timeout, p.HTTP.ExpectStatus)
	}
	if c.Sites.Primary.Probes[2].Critical == nil || *c.Sites.Primary.Probes[2].Critical {
		t.Errorf("explicit critical: false was not kept")
	}
	if c.Sites.Backup.Probes[0].Critical == nil || !*c.Sites.Backup.Probes[0].Critical {
		t.Errorf("critical default: got %v, want true", c.Sites.Backup.Probes[0].Critical)
	}
	if got := c.Sites.Primary.Probes[1].Kubernetes.Endpoint; got != "readyz" {
		t.Errorf("kubernetes endpoint default: got %q, want readyz", got)
	}
	if c.Sites.Primary.Probes[0].Kubernetes != nil {
		t.Errorf("kubernetes-only default applied to an http probe")
	}
}

// Each validation rule, one case: a replacement in valid.yaml, and the
// path and message the problem must carry, and its line.
func TestRules(t *testing.T) {
	tests := []struct {
		name, old, new string
		wantPath, want string
		wantLine       int
	}{
		{"quorum not a majority", "quorum: 2", "quorum: 1", "policy.quorum", "not a majority of the 3 peers", 8},
		{"quorum above peers", "quorum: 2", "quorum: 4", "policy.quorum", "not a majority", 8},
		{"timeout not below interval", "timeout: 1500ms", "timeout: 2s", "policy.timeout", "must be < interval", 8},
		{"fall zero", "fall: 3", "fall: 0", "policy.fall", "must be ≥ 1", 8},
		{"rise zero", "rise: 5", "rise: 0", "policy.rise", "must be ≥ 1", 8},
		{"record outside zone", "name: studio,", "name: studio.example.net.,", "dns.records[studio.example.net.].name", "not in zone example.org.", 26},
		{"record missing backup", "primary: [203.0.113.10], backup: [198.51.100.10] }\n    - { name: studio", "primary: [203.0.113.10] }\n    - { name: studio", "dns.records[lms].backup", "targets for both sites", 25},
		{"duplicate probe name", "name: kube-api", "name: lms", "sites.primary.probes[lms#2].name", `duplicate probe name "lms"`, 14},
		{"inline secret", "key_file: /etc/drwatch/tsig.key", "secret: c3VwZXJzZWNyZXRkb25vdGxlYWs=", "dns.rfc2136.secret", "not accepted inline", 22},
		{"secret pasted into key_file", "key_file: /etc/drwatch/tsig.key", "key_file: c3VwZXJzZWNyZXRkb25vdGxlYWs", "dns.rfc2136.key_file", "looks like the secret itself", 22},
		{"unknown key", "block_window: 1h", "block_windw: 1h", "policy.block_windw", "unknown key (did you mean block_window?)", 8},
		{"wrong type", "fall: 3", "fall: three", "policy.fall", `"three" is not a whole number`, 8},
		{"bad duration", "interval: 2s", "interval: 2", "policy.interval", "not a duration", 8},
		{"node not in peers", "id: a, data_dir", "id: z, data_dir", "node.id", `"z" is not in peers`, 1},
		{"foreign probe field", `connect_to: "198.51.100.10:443" }`, `connect_to: "198.51.100.10:443", loadbalancer: x }`, "sites.backup.probes[lms].loadbalancer", "not a field of a http probe", 19},
		{"octavia credential on a http probe", `connect_to: "198.51.100.10:443" }`, `connect_to: "198.51.100.10:443", cloud: x }`, "sites.backup.probes[lms].cloud", "not a field of a http probe (it applies to octavia)", 19},
		{"probe timeout not below interval", `expect_status: [200]`, `timeout: 5s, expect_status: [200]`, "sites.primary.probes[lms].timeout", "must be < policy.interval", 13},
		{"bad record value", "backup: [198.51.100.10] }\n    - { name: studio", "backup: [\"2001:db8::1\"] }\n    - { name: studio", "dns.records[lms].backup", "not an IPv4 address", 25},
		{"even peers", "  - { id: c, raft_addr: 10.3.0.5:7400, api_addr: 10.3.0.5:7480 }\n", "", "peers", "use an odd number", 3},
		{"failback auto without dwell", "failback: manual", "failback: auto", "policy.failback_after", "required > 0", 8},
		{"bad provider", "provider: rfc2136", "provider: bind", "dns.provider", "must be one of", 21},
		{"interval above an hour", "interval: 2s", "interval: 2h", "policy.interval", "must be ≤ 1h0m0s", 8},
		{"block_window above a year", "block_window: 1h", "block_window: 100000h", "policy.block_window", "must be ≤ 8784h0m0s", 8},
		{"stale_after above a year", "block_window: 1h", "block_window: 1h, stale_after: 100000h", "policy.stale_after", "must be ≤ 8784h0m0s", 8},
		{"failback_after above a year", "failback: manual", "failback: auto, failback_after: 100000h", "policy.failback_after", "must be ≤ 8784h0m0s", 8},
		{"max_pause above a year", "block_window: 1h", "block_window: 1h, max_pause: 100000h", "policy.max_pause", "must be ≤ 8784h0m0s", 8},
		{"fast_interval below 100ms", "block_window: 1h", "block_window: 1h, fast_interval: 50ms", "policy.fast_interval", "50ms must be ≥ 100ms", 8},
		{"fast_interval above interval", "block_window: 1h", "block_window: 1h, fast_interval: 3s", "policy.fast_interval", "3s must be ≤ interval (2s)", 8},
		{"max_pause zero", "block_window: 1h", "block_window: 1h, max_pause: 0s", "policy.max_pause", "must be > 0", 8},
		{"heartbeat_timeout raised alone above election_timeout", "api: { tokens_file", "raft: { heartbeat_timeout: 2s, leader_lease_timeout: 1s }\napi: { tokens_file", "raft.election_timeout", "must not be below heartbeat_timeout (2s)", 7},
		{"heartbeat_timeout above a minute", "api: { tokens_file", "raft: { heartbeat_timeout: 1h, leader_lease_timeout: 1s }\napi: { tokens_file", "raft.heartbeat_timeout", "must be ≤ 1m0s", 7},
		{"bad client_certs", "api: { tokens_file: /etc/drwatch/tokens }", "api: { tokens_file: /etc/drwatch/tokens, client_certs: always }", "api.client_certs", "must be optional or required", 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y := validYAML(t)
			if !strings.Contains(y, tt.old) {
				t.Fatalf("test bug: %q not in valid.yaml", tt.old)
			}
			_, ps := loadString(t, strings.Replace(y, tt.old, tt.new, 1))
			for _, p := range ps {
				if p.Path == tt.wantPath && strings.Contains(p.Msg, tt.want) {
					if p.Line != tt.wantLine || p.Column == 0 {
						t.Errorf("got position %d:%d, want line %d", p.Line, p.Column, tt.wantLine)
					}
					if !strings.HasPrefix(p.String(), "test.yaml:") {
						t.Errorf("got %q, want FILE:LINE:COL: prefix", p.String())
					}
					return
				}
			}
			t.Errorf("got problems:\n%v\nwant %s: ...%s", ps, tt.wantPath, tt.want)
		})
	}
}

func TestEveryProblemAtOnce(t *testing.T) {
	_, err := Load("testdata/broken.yaml", Options{SkipFileChecks: true})
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("got %v, want Problems", err)
	}
	for _, want := range []string{
		"broken.yaml:10:3: policy.timeout:", "broken.yaml:11:3: policy.fall:", "broken.yaml:12:3: policy.rise:",
		"broken.yaml:13:3: policy.quorum:", "broken.yaml:14:3: policy.intervall: unknown key",
		"sites.primary.probes[lms].timeout: 0s must be > 0", "sites.primary.probes[lms#2].name: duplicate",
		"dns.rfc2136.secret: secrets are not accepted inline", "dns.records[lms].backup: required",
		`dns.records[www.elsewhere.net.].name: "www.elsewhere.net." is not in zone`,
	} {
		if !strings.Contains(ps.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, ps)
		}
	}
}

// A secret must never appear in any problem, whatever else is wrong.
func TestSecretsNeverInErrors(t *testing.T) {
	const secret = "c3VwZXJzZWNyZXRkb25vdGxlYWs="
	y := validYAML(t)
	for _, mut := range []struct{ old, new string }{
		{"key_file: /etc/drwatch/tsig.key", "secret: " + secret},
		{"key_file: /etc/drwatch/tsig.key", "key_file: " + secret},
		{"key_file: /etc/drwatch/tsig.key", "key_file: [" + secret + "]"},
		{"token_file: /etc/drwatch/kube-token", "token: " + secret},
		{"token_file: /etc/drwatch/kube-token", "token_file: {a: " + secret + "}"},
		{"tokens_file: /etc/drwatch/tokens", "tokens_file: /etc/drwatch/tokens, token: " + secret},
	} {
		_, ps := loadString(t, strings.Replace(y, mut.old, mut.new, 1))
		if ps == nil {
			t.Errorf("%s: got no problem", mut.new)
		}
		if strings.Contains(ps.Error(), secret) || strings.Contains(ps.Error(), "c3VwZXJz") {
			t.Errorf("%s: secret leaked:\n%v", mut.new, ps)
		}
	}
}

func TestFileChecks(t *testing.T) {
	dir := t.TempDir()
	y := strings.ReplaceAll(validYAML(t), "/etc/drwatch", dir)
	_, err := Parse("f.yaml", []byte(y), Options{})
	if err == nil || !strings.Contains(err.Error(), "tls.ca_file: no such file (value not shown") {
		t.Fatalf("got %v, want tls.ca_file missing", err)
	}
	if strings.Contains(err.Error(), dir) {
		t.Errorf("got %v, want no file's path (the value may be a pasted secret)", err)
	}
	for _, f := range []string{"ca.crt", "node.crt", "node.key", "tokens", "kube-ca.crt", "kube-token", "tsig.key"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Parse("f.yaml", []byte(y), Options{}); err != nil {
		t.Fatalf("with files present: %v", err)
	}
}

func TestBadDocuments(t *testing.T) {
	for _, y := range []string{"", "- a\n- b\n", "node: [\n", "a: 1\n---\nb: 2\n", "node: 5\n"} {
		_, err := Parse("x.yaml", []byte(y), Options{SkipFileChecks: true})
		if err == nil {
			t.Errorf("%q: got nil error", y)
		}
	}
	big := strings.Repeat("#", MaxFileSize+10)
	f := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(f, []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(f, Options{}); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("oversized file: got %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"testdata/valid.yaml", "testdata/broken.yaml", "testdata/groups.yaml"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("node: {id: a}\npeers: [{id: a}]\n"))
	// The small hostile files only: the fuzzer spends its time minimizing
	// large seeds. The deep-flow seed in testdata is 100 levels, refused by
	// the same check as the 40,000 in TestHostileFilesAreRefusedCheaply.
	for _, h := range hostileFiles {
		if len(h.yaml) < 4096 {
			f.Add([]byte(h.yaml))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz.yaml", data, Options{SkipFileChecks: true})
		if (c == nil) == (err == nil) {
			t.Fatalf("got config %v and error %v; want exactly one", c != nil, err)
		}
		if err != nil {
			var ps Problems
			if !errors.As(err, &ps) || len(ps) == 0 {
				t.Fatalf("got %T %v, want non-empty Problems", err, err)
			}
			// The panic safety net must never be what answers: a crasher
			// found here gets a specific problem, as the known ones did.
			for _, p := range ps {
				if strings.HasPrefix(p.Msg, "could not parse") {
					t.Fatalf("got %q, want a specific problem", p)
				}
			}
		}
	})
}

func TestRemediationsSection(t *testing.T) {
	y := validYAML(t) + `remediations:
  interval: 1m
  orphaned_pods: { mode: dry-run, max_per_hour: 5, terminating_for: 15m }
  drain_trap: { mode: on }
`
	c, ps := loadString(t, y)
	if ps != nil {
		t.Fatalf("got problems:\n%v", ps)
	}
	r := c.Remediations
	if r.OrphanedPods.Mode != "dry-run" || r.OrphanedPods.MaxPerHour != 5 || r.DrainTrap.Mode != "on" || r.DeadNodeOutOfService.Mode != "off" {
		t.Errorf("got %+v", r)
	}
	_, ps = loadString(t, validYAML(t)+"remediations:\n  drain_trap: { mode: sometimes, maxx: 1 }\n")
	for _, want := range []string{"remediations.drain_trap.mode: \"sometimes\" must be off, dry-run or on", "remediations.drain_trap.maxx: unknown key"} {
		if !strings.Contains(ps.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, ps)
		}
	}
}

// A negative cap, brake or timeout in the remediations section is a
// mistake to name, not a zero to replace with the default: a file saying
// max_per_pass: -1 must not run with 1.
func TestRemediationsNegativeValuesAreRefusedNotDefaulted(t *testing.T) {
	_, ps := loadString(t, validYAML(t)+`remediations:
  interval: -1m
  orphaned_pods: { mode: dry-run, max_per_pass: -1, terminating_for: -5m }
  drain_trap: { mode: on, brake_share: -0.5 }
  backup_warmup: { ready_timeout: -1s }
  octavia_stuck_lb: { pending_timeout: -1s }
  openstack: { neutron_route_gc: { route_limit: -3 } }
`)
	for _, want := range []string{
		"remediations.interval:",
		"remediations.orphaned_pods: caps must be >= 0",
		"remediations.orphaned_pods.terminating_for:",
		"remediations.drain_trap.brake_share:",
		"remediations.backup_warmup.ready_timeout:",
		"remediations.octavia_stuck_lb.pending_timeout: -1s must be >= 0",
		"remediations.openstack.neutron_route_gc.route_limit:",
	} {
		if !strings.Contains(ps.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, ps)
		}
	}
}

// A problem of a named list item carries the path the file's walker gives
// that item, so it is found in the file and printed with its line.
func TestBackupWarmupWorkloadProblemsHaveTheirLine(t *testing.T) {
	_, ps := loadString(t, validYAML(t)+`remediations:
  backup_warmup:
    workloads:
      - { kind: DaemonSet, namespace: openedx, name: lms, replicas: 2 }
`)
	for _, p := range ps {
		if p.Path == "remediations.backup_warmup.workloads[lms].kind" {
			if p.Line == 0 {
				t.Errorf("got %q without a line", p.String())
			}
			return
		}
	}
	t.Errorf("got problems:\n%v\nwant remediations.backup_warmup.workloads[lms].kind", ps)
}

func TestFailbackGateNamesPrimaryProbes(t *testing.T) {
	_, ps := loadString(t, strings.Replace(validYAML(t), "failback: manual }", "failback: manual, failback_gate: [ingress-lb, octavia] }", 1))
	if ps == nil || !strings.Contains(ps.Error(), `policy.failback_gate[1]: "octavia" is not a probe of the primary site`) {
		t.Errorf("got %v", ps)
	}
}

// A provider's section takes only the fields that provider uses: a PowerDNS
// url or server_id under a hosted provider would be silently ignored, so it
// is an unknown key.
func TestProviderSectionTakesOnlyItsOwnFields(t *testing.T) {
	const rfc2136 = `provider: rfc2136
  rfc2136: { server: "ns1.example.net:53", key_name: drwatch., key_file: /etc/drwatch/tsig.key, algorithm: hmac-sha256 }`
	tests := []struct {
		name, section, wantPath string // wantPath "": accepted
	}{
		{"powerdns url", "provider: powerdns\n  powerdns: { url: \"http://127.0.0.1:8081\", server_id: localhost, api_token_env: PDNS_KEY }", ""},
		{"cloudflare token", "provider: cloudflare\n  cloudflare: { api_token_env: CF_TOKEN }", ""},
		{"cloudflare url", "provider: cloudflare\n  cloudflare: { url: \"https://api.cloudflare.com\", api_token_env: CF_TOKEN }", "dns.cloudflare.url"},
		{"digitalocean server_id", "provider: digitalocean\n  digitalocean: { server_id: localhost, api_token_env: DO_TOKEN }", "dns.digitalocean.server_id"},
		{"hetzner url", "provider: hetzner\n  hetzner: { url: \"https://dns.hetzner.com\", api_token_env: H_TOKEN }", "dns.hetzner.url"},
		{"desec server_id", "provider: desec\n  desec: { server_id: x, api_token_env: DESEC_TOKEN }", "dns.desec.server_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y := validYAML(t)
			if !strings.Contains(y, rfc2136) {
				t.Fatalf("test bug: the rfc2136 section is not in valid.yaml")
			}
			_, ps := loadString(t, strings.Replace(y, rfc2136, tt.section, 1))
			if tt.wantPath == "" {
				if ps != nil {
					t.Fatalf("got problems:\n%v\nwant none", ps)
				}
				return
			}
			for _, p := range ps {
				if p.Path == tt.wantPath && strings.Contains(p.Msg, "unknown key") {
					return
				}
			}
			t.Errorf("got problems:\n%v\nwant %s: unknown key", ps, tt.wantPath)
		})
	}
}

// A hook's timeout defaults to a minute and on_timeout to proceed; both are
// bounded, and a problem names the hook's field.
func TestHookTimeoutSettings(t *testing.T) {
	c, ps := loadString(t, validYAML(t)+"hooks:\n  pre_failover:\n    - { name: check-db, command: [/usr/local/bin/check-db] }\n")
	if ps != nil {
		t.Fatalf("got problems:\n%v", ps)
	}
	if h := c.Hooks.PreFailover[0]; h.Timeout != time.Minute || h.OnTimeout != "" {
		t.Errorf("got timeout %s on_timeout %q, want 1m0s and empty (proceed)", h.Timeout, h.OnTimeout)
	}
	_, ps = loadString(t, validYAML(t)+`hooks:
  pre_failover:
    - { name: check-db, command: [x], timeout: 2h, on_timeout: wait }
  post_failover:
    - { name: notify, command: [x], on_timeout: block }
`)
	for _, want := range []string{
		"hooks.pre_failover[check-db].timeout: 2h0m0s must be at most 10m0s",
		`hooks.pre_failover[check-db].on_timeout: "wait" must be proceed or block`,
		"hooks.post_failover[notify].on_timeout: only pre_failover hooks hold a flip",
	} {
		if !strings.Contains(ps.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, ps)
		}
	}
}

// An octavia probe's ca_file is checked like every other *_file: a missing
// one is a problem naming the field and not its value, which may be a
// secret pasted there and would otherwise reach the probe's failure reason.
func TestOctaviaProbeCAFileIsChecked(t *testing.T) {
	dir := t.TempDir()
	y := strings.Replace(validYAML(t), "{ name: ingress-lb, type: octavia, cloud: region1, loadbalancer: ingress, critical: false }",
		`{ name: ingress-lb, type: octavia, auth_url: "https://keystone.example.org:5000/v3", loadbalancer: ingress, critical: false,
          application_credential_id_file: /etc/drwatch/tokens, application_credential_secret_file: /etc/drwatch/tokens, ca_file: /etc/drwatch/nope.crt }`, 1)
	y = strings.ReplaceAll(y, "/etc/drwatch", dir)
	for _, f := range []string{"ca.crt", "node.crt", "node.key", "tokens", "kube-ca.crt", "kube-token", "tsig.key"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Parse("f.yaml", []byte(y), Options{})
	if err == nil || !strings.Contains(err.Error(), "sites.primary.probes[ingress-lb].ca_file: no such file (value not shown") {
		t.Fatalf("got %v, want sites.primary.probes[ingress-lb].ca_file missing", err)
	}
	if strings.Contains(err.Error(), dir) {
		t.Errorf("got %v, want no file's path", err)
	}
}

// With Sections, a partial copy of a node's config is enough: the rules of
// the other sections are not checked, but the document's shape is, a
// pasted secret included, wherever it is.
func TestSectionsLimitTheRulesNotTheShape(t *testing.T) {
	only := Options{SkipFileChecks: true, Sections: []string{"remediations"}}
	partial := "remediations:\n  kubernetes:\n    primary: {kubeconfig_file: /etc/drwatch/kube}\n"
	c, err := Parse("p.yaml", []byte(partial), only)
	if err != nil {
		t.Fatalf("got %v, want the section accepted alone", err)
	}
	if c.Remediations.Kubernetes.Primary.Kubeconfig != "/etc/drwatch/kube" {
		t.Errorf("got %+v, want the section decoded", c.Remediations.Kubernetes)
	}
	for _, tt := range []struct{ yaml, want string }{
		{"remediations: {drain_trap: {mode: always}}\n", "remediations.drain_trap.mode"},
		{partial + "tls: {key_file: \"-----BEGIN PRIVATE KEY-----\\nAAAA\\n\"}\n", "tls.key_file: want the absolute path"},
		{partial + "nodes: {}\n", "nodes: unknown key"},
	} {
		_, err := Parse("p.yaml", []byte(tt.yaml), only)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want %q", tt.yaml, err, tt.want)
		}
	}
}
