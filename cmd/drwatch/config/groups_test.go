package config

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/probes"
)

func groupsYAML(t *testing.T) string { return testdataYAML(t, "groups.yaml") }

// A config without groups builds the very policy it built before groups
// existed: the hashes below are those of the release before groups, so a
// trio that upgrades without enabling groups replicates nothing new.
func TestConfigWithoutGroupsKeepsItsPolicyHash(t *testing.T) {
	for _, tc := range []struct{ file, hash string }{
		{"../../../deploy/examples/node-a.yaml", "63703dea6e8bed2434c8a61a04d61c406cd640a1945381e64d376f60de17be14"},
		{"testdata/valid.yaml", "d2fa9fa4fcd36c59e08dda7478345d88a1c632e9b63af80229caa1f551062f3c"},
	} {
		cfg, err := Load(tc.file, Options{SkipFileChecks: true})
		if err != nil {
			t.Fatal(err)
		}
		p := cfg.ReplicatedPolicy()
		if got := p.Hash(); got != tc.hash {
			t.Errorf("%s: got policy hash %s, want %s", tc.file, got, tc.hash)
		}
		if got := p.GroupNames(); !slices.Equal(got, []string{failover.DefaultGroup}) {
			t.Errorf("%s: got groups %v, want only the default group", tc.file, got)
		}
	}
}

// Groups load into the replicated policy with their own records, zone,
// fence and policy fields, the policy's where they set none; with no
// dns.records there is no default group.
func TestGroupsLoadIntoThePolicy(t *testing.T) {
	c, ps := loadString(t, groupsYAML(t))
	if ps != nil {
		t.Fatalf("groups.yaml: got problems:\n%v", ps)
	}
	p := c.ReplicatedPolicy()
	if err := p.Validate(); err != nil {
		t.Fatalf("policy: %v", err)
	}
	if got := p.GroupNames(); !slices.Equal(got, []string{"lms", "wiki"}) {
		t.Fatalf("got groups %v, want [lms wiki] and no default group", got)
	}
	lms, _ := p.ForGroup("lms")
	if lms.Zone != "example.org." || !lms.AutoFailover || lms.BlockWindow != time.Hour || lms.Failback.Mode != failover.FailbackManual {
		t.Errorf("lms: got zone %s auto %v block %s failback %+v, want the dns section's zone and the policy's values",
			lms.Zone, lms.AutoFailover, lms.BlockWindow, lms.Failback)
	}
	wiki, _ := p.ForGroup("wiki")
	if wiki.Zone != "example.com." || wiki.BlockWindow != 30*time.Minute || wiki.Failback != (failover.FailbackPolicy{Mode: failover.FailbackAuto, After: 10 * time.Minute}) {
		t.Errorf("wiki: got zone %s block %s failback %+v, want its own", wiki.Zone, wiki.BlockWindow, wiki.Failback)
	}
	for _, tc := range []struct {
		group, zone, fence string
	}{{"lms", "example.org.", "_drwatch-lms"}, {"wiki", "example.com.", "_drwatch-wiki"}} {
		dc, ok := c.GroupDNS(tc.group)
		if !ok || dc.Zone != tc.zone || dc.FenceName != tc.fence || dc.Provider != "rfc2136" || dc.RFC2136 == nil {
			t.Errorf("GroupDNS(%s): got ok %v zone %s fence %s provider %s, want zone %s fence %s through the dns section's provider",
				tc.group, ok, dc.Zone, dc.FenceName, dc.Provider, tc.zone, tc.fence)
		}
	}
	if _, ok := c.GroupDNS(failover.DefaultGroup); ok {
		t.Errorf("GroupDNS(default): got ok, want no default group")
	}
}

// A probe that two groups name on one site runs once per round: the
// watcher's probe list has it once, and each group counts it with its own
// critical flag.
func TestSharedProbeRunsOnce(t *testing.T) {
	c, ps := loadString(t, groupsYAML(t))
	if ps != nil {
		t.Fatalf("groups.yaml: got problems:\n%v", ps)
	}
	var names []string
	for _, s := range c.ProbedSites().Primary.Probes {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"lms", "region-kube", "wiki"}) {
		t.Errorf("primary probes run: got %v, want [lms region-kube wiki]", names)
	}
	p := c.ReplicatedPolicy()
	for group, want := range map[string]bool{"lms": true, "wiki": false} {
		g, _ := p.ForGroup(group)
		i := slices.IndexFunc(g.Sites[failover.Primary].Probes, func(r failover.ProbeRef) bool { return r.Name == "region-kube" })
		if i < 0 || g.Sites[failover.Primary].Probes[i].Critical != want {
			t.Errorf("group %s: region-kube critical: got index %d in %v, want critical %v", group, i, g.Sites[failover.Primary].Probes, want)
		}
	}
	// The probe run is critical when any group counts it so, whichever
	// group names it first.
	first := strings.NewReplacer(`{ name: region-kube, type: tcp, address: "203.0.113.20:6443" }`,
		`{ name: region-kube, type: tcp, address: "203.0.113.20:6443", critical: false }`,
		`{ name: region-kube, type: tcp, address: "203.0.113.20:6443", critical: false }`,
		`{ name: region-kube, type: tcp, address: "203.0.113.20:6443" }`).Replace(groupsYAML(t))
	for name, yaml := range map[string]string{"critical in the second group": first, "critical in the first group": groupsYAML(t)} {
		c, ps := loadString(t, yaml)
		if ps != nil {
			t.Fatalf("%s: got problems:\n%v", name, ps)
		}
		run := c.ProbedSites().Primary.Probes
		if i := slices.IndexFunc(run, func(s probes.Spec) bool { return s.Name == "region-kube" }); i < 0 || !run[i].IsCritical() {
			t.Errorf("%s: region-kube run as critical: got %v, want true", name, i >= 0 && run[i].IsCritical())
		}
	}
	// Without groups, the probes run are the top-level sites', untouched.
	v, ps := loadString(t, validYAML(t))
	if ps != nil {
		t.Fatal(ps)
	}
	if got := v.ProbedSites(); len(got.Primary.Probes) != len(v.Sites.Primary.Probes) || len(got.Backup.Probes) != len(v.Sites.Backup.Probes) {
		t.Errorf("without groups: got %d+%d probes, want the sites' %d+%d", len(got.Primary.Probes), len(got.Backup.Probes),
			len(v.Sites.Primary.Probes), len(v.Sites.Backup.Probes))
	}
}

// Each rule a group breaks is reported at the group's own field path.
func TestGroupProblemsNameTheirField(t *testing.T) {
	base := groupsYAML(t)
	for _, tc := range []struct {
		name, old, new, path, msg string
	}{
		{"shared probe defined twice differently",
			`{ name: region-kube, type: tcp, address: "203.0.113.20:6443", critical: false }`,
			`{ name: region-kube, type: tcp, address: "203.0.113.21:6443", critical: false }`,
			"groups[wiki].sites.primary.probes[region-kube]", "differs from groups[lms].sites.primary.probes[region-kube]"},
		{"record of another group",
			`{ name: wiki, type: A, ttl: 60, primary: [203.0.113.30], backup: [198.51.100.30] }`,
			`{ name: lms.example.org., type: A, ttl: 60, primary: [203.0.113.30], backup: [198.51.100.30] }`,
			"groups[wiki].dns.records[lms.example.org.].name", "is groups[lms].dns.records[lms] too"},
		{"record outside the group's zone",
			`{ name: wiki, type: A, ttl: 60, primary: [203.0.113.30], backup: [198.51.100.30] }`,
			`{ name: wiki.example.org., type: A, ttl: 60, primary: [203.0.113.30], backup: [198.51.100.30] }`,
			"groups[wiki].dns.records[wiki.example.org.].name", "not in zone example.com."},
		{"bad record value", `primary: [203.0.113.30]`, `primary: [not-an-ip]`,
			"groups[wiki].dns.records[wiki].primary", "not an IP address"},
		{"no records", "      records:\n        - { name: lms, type: A, ttl: 60, primary: [203.0.113.10], backup: [198.51.100.10] }\n",
			"      records: []\n", "groups[lms].dns.records", "required"},
		{"two groups on one fence", "      zone: example.com.\n", "      zone: example.org.\n      fence: _drwatch-lms\n",
			"groups[wiki].dns.fence", "is groups[lms].dns.fence too"},
		{"zone not fully qualified", "      zone: example.com.\n", "      zone: example.com\n",
			"groups[wiki].dns.zone", "must be fully qualified"},
		{"bad name", "  - name: wiki\n", "  - name: Wiki\n", "groups[Wiki].name", "lower-case"},
		{"default name", "  - name: wiki\n", "  - name: default\n", "groups[default].name", "top-level"},
		{"duplicate name", "  - name: wiki\n", "  - name: lms\n", "groups[lms#2].name", "duplicate group"},
		{"failback auto without after", "    failback_after: 10m\n", "", "groups[wiki].failback_after", "required > 0"},
		{"negative block window", "    block_window: 30m\n", "    block_window: -1s\n", "groups[wiki].block_window", "≥ 0"},
		{"gate names no primary probe", "    block_window: 30m\n", "    block_window: 30m\n    failback_gate: [nope]\n",
			"groups[wiki].failback_gate[0]", "not a probe of the primary"},
		{"no critical probe", `{ name: wiki, type: http, url: "https://wiki.example.com/health", connect_to: "198.51.100.30:443" }`,
			`{ name: wiki, type: http, url: "https://wiki.example.com/health", connect_to: "198.51.100.30:443", critical: false }`,
			"groups[wiki].sites.backup.probes", "critical"},
		{"top-level probes without a default group", "drill: { record: drwatch-drill }\n",
			"drill: { record: drwatch-drill }\nsites: { primary: { probes: [ { name: x, type: tcp, address: \"192.0.2.1:1\" } ] } }\n",
			"sites", "no default group"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(base, tc.old) {
				t.Fatalf("groups.yaml lacks %q", tc.old)
			}
			_, ps := loadString(t, strings.Replace(base, tc.old, tc.new, 1))
			for _, p := range ps {
				if p.Path == tc.path && strings.Contains(p.Msg, tc.msg) {
					if p.Line == 0 {
						t.Errorf("%s: got no line, want the field's position", p)
					}
					return
				}
			}
			t.Errorf("got problems:\n%v\nwant %s: …%s…", ps, tc.path, tc.msg)
		})
	}
}

// A group that sets failback: manual under a policy with failback: auto
// does not inherit the policy's failback_after (it may not have one), and
// a group that sets nothing inherits both.
func TestGroupFailbackAfterFollowsItsFailback(t *testing.T) {
	base := strings.Replace(groupsYAML(t), "failback: manual }", "failback: auto, failback_after: 5m }", 1)
	base = strings.Replace(base, "    failback: auto\n    failback_after: 10m\n", "    failback: manual\n", 1)
	c, ps := loadString(t, base)
	if ps != nil {
		t.Fatalf("got problems:\n%v", ps)
	}
	got := map[string]failover.FailbackPolicy{}
	for _, g := range c.Groups {
		got[g.Name] = failover.FailbackPolicy{Mode: g.Failback, After: g.FailbackAfter}
	}
	if got["wiki"] != (failover.FailbackPolicy{Mode: failover.FailbackManual}) || got["lms"] != (failover.FailbackPolicy{Mode: failover.FailbackAuto, After: 5 * time.Minute}) {
		t.Errorf("got %v, want wiki manual with no after, lms the policy's auto after 5m", got)
	}
}

// A config with groups and top-level records keeps the default group
// beside them.
func TestGroupsBesideTheDefaultGroup(t *testing.T) {
	yaml := validYAML(t) + `groups:
  - name: wiki
    sites:
      primary: { probes: [ { name: wiki, type: tcp, address: "203.0.113.30:443" } ] }
      backup: { probes: [ { name: wiki, type: tcp, address: "198.51.100.30:443" } ] }
    dns:
      records: [ { name: wiki, type: A, ttl: 60, primary: [203.0.113.30], backup: [198.51.100.30] } ]
`
	c, ps := loadString(t, yaml)
	if ps != nil {
		t.Fatalf("got problems:\n%v", ps)
	}
	p := c.ReplicatedPolicy()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := p.GroupNames(); !slices.Equal(got, []string{failover.DefaultGroup, "wiki"}) {
		t.Errorf("got groups %v, want [default wiki]", got)
	}
	// The same record in the default group and a group is refused.
	bad := strings.Replace(yaml, "{ name: wiki, type: A", "{ name: lms, type: A", 1)
	_, ps = loadString(t, bad)
	found := false
	for _, p := range ps {
		found = found || p.Path == "groups[wiki].dns.records[lms].name" && strings.Contains(p.Msg, "dns.records[lms]")
	}
	if !found {
		t.Errorf("got problems:\n%v\nwant groups[wiki].dns.records[lms].name naming dns.records[lms]", ps)
	}
}

// The two-platform example loads into a valid policy of two groups, with
// no default group, and runs the region's shared probe once.
func TestTwoPlatformExampleHasTwoGroups(t *testing.T) {
	c, err := Load("../../../deploy/examples/platforms-node-a.yaml", Options{SkipFileChecks: true})
	if err != nil {
		t.Fatal(err)
	}
	p := c.ReplicatedPolicy()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := p.GroupNames(); !slices.Equal(got, []string{"learn", "wiki"}) {
		t.Errorf("got groups %v, want [learn wiki]", got)
	}
	n := 0
	for _, s := range c.ProbedSites().Primary.Probes {
		if s.Name == "kube-api" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("kube-api runs %d times per round on the primary, want once", n)
	}
	if learn := c.Groups[0].Remediations; learn.BackupWarmup.Mode != "dry-run" || c.Remediations.BackupWarmup.Mode != "off" {
		t.Errorf("learn's backup-warmup %q, top-level %q: want learn's own section in dry-run", learn.BackupWarmup.Mode, c.Remediations.BackupWarmup.Mode)
	}
	if wiki := c.Groups[1].Hooks; len(wiki.PostFailover) != 1 || len(c.Groups[0].Hooks.PostFailover)+len(c.Hooks.PostFailover) != 0 {
		t.Errorf("wiki's hooks %+v, learn's %+v, top-level %+v: want wiki's own post-failover hook alone", wiki, c.Groups[0].Hooks, c.Hooks)
	}
}
