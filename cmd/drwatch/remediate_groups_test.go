package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/kubetest"
)

// `drwatch remediate records --group NAME` prints that group's runner's
// records only; without --group every runner's are printed, each with
// its group; an unknown group is refused naming the groups there are.
func TestRemediateRecordsOfOneGroup(t *testing.T) {
	p, url := newPlatforms(t)
	for _, r := range []failover.Remediation{
		{Name: "orphaned-pods", Target: "pod/top", Verb: "delete", Result: failover.RemediationDryRun, Key: "k"},
		{Name: "orphaned-pods", Group: "lms", Target: "pod/lms", Verb: "delete", Result: failover.RemediationDryRun, Key: "k"},
		{Name: "orphaned-pods", Group: "apps", Target: "pod/apps", Verb: "delete", Result: failover.RemediationDryRun, Key: "k"},
	} {
		p.commit(t, r)
	}
	for _, tc := range []struct {
		group, want string
		notWant     []string
	}{
		{"lms", "pod/lms", []string{"pod/top", "pod/apps", "GROUP"}},
		{"apps", "pod/apps", []string{"pod/top", "pod/lms"}},
		{"default", "pod/top", []string{"pod/lms", "pod/apps"}},
	} {
		out, stderr, code := run(t, "remediate", "records", "--group", tc.group, "--endpoint", url)
		if code != 0 || !strings.Contains(out, tc.want) {
			t.Errorf("--group %s: exit %d (%s), want %s in:\n%s", tc.group, code, stderr, tc.want, out)
		}
		for _, n := range tc.notWant {
			if strings.Contains(out, n) {
				t.Errorf("--group %s: got %q in:\n%s", tc.group, n, out)
			}
		}
	}
	out, _, code := run(t, "remediate", "records", "--endpoint", url)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 4 || !strings.HasPrefix(lines[0], "GROUP") || !strings.HasPrefix(lines[1], "apps ") ||
		!strings.HasPrefix(lines[2], "lms ") || !strings.HasPrefix(lines[3], "default ") {
		t.Errorf("every runner's records: exit %d, want a GROUP column and apps, lms, default newest first:\n%s", code, out)
	}
	_, stderr, code := run(t, "remediate", "records", "--group", "wiki", "--endpoint", url)
	if code == 0 || !strings.Contains(stderr, `"wiki"`) || !strings.Contains(stderr, "apps") || !strings.Contains(stderr, "lms") {
		t.Errorf("--group wiki: exit %d %q, want an unknown group naming the groups there are", code, stderr)
	}
}

// `drwatch remediate plan --group NAME` plans that group's own section,
// not the top-level one, and the top-level one without --group; an
// unknown group is a usage error naming the file's groups.
func TestRemediatePlanOfOneGroup(t *testing.T) {
	dir := t.TempDir()
	kc := kubetest.UnreachableKubeconfig(t)
	cfg := filepath.Join(dir, "node.yaml")
	if err := os.WriteFile(cfg, []byte(`
remediations:
  kubernetes: {primary: {kubeconfig_file: `+kc+`}}
  drain_trap: {mode: dry-run}
groups:
  - name: lms
    remediations:
      kubernetes: {primary: {kubeconfig_file: `+kc+`}}
      orphaned_pods: {mode: dry-run}
  - name: wiki
`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DRWATCH_CONFIG", "")
	for _, tc := range []struct {
		args          []string
		want, notWant string
	}{
		{[]string{"--group", "lms"}, "planned by orphaned-pods", "drain-trap"},
		{nil, "planned by drain-trap", "orphaned-pods"},
		{[]string{"--group", "default"}, "planned by drain-trap", "orphaned-pods"},
	} {
		out, stderr, _ := run(t, append([]string{"remediate", "plan", "--config", cfg, "--active", "primary"}, tc.args...)...)
		if all := out + stderr; !strings.Contains(all, tc.want) || strings.Contains(all, tc.notWant) {
			t.Errorf("plan %v: got\n%s\nwant %q and no %q", tc.args, all, tc.want, tc.notWant)
		}
	}
	out, stderr, _ := run(t, "remediate", "plan", "--config", cfg, "--active", "primary", "--group", "wiki")
	if !strings.Contains(out, "no remediation is enabled") {
		t.Errorf("plan --group wiki: got %s%s, want none enabled in wiki's section", out, stderr)
	}
	_, stderr, code := run(t, "remediate", "plan", "--config", cfg, "--group", "lsm")
	if code != 2 || !strings.Contains(stderr, `unknown failover group "lsm"`) || !strings.Contains(stderr, "default, lms, wiki") {
		t.Errorf("plan --group lsm: exit %d %q, want a usage error naming the groups", code, stderr)
	}
}
