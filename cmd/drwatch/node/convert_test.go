package node

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/config"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/probes"
)

// Every probe of the example configs converts into a spec its prober accepts.
func TestExampleProbeSpecsValidate(t *testing.T) {
	cfg, err := config.Load("../../../deploy/examples/node-a.yaml", config.Options{SkipFileChecks: true})
	if err != nil {
		t.Fatal(err)
	}
	type validator interface{ Validate() error }
	n := 0
	for _, site := range ProbeSpecs(cfg) {
		for _, s := range site.Probes {
			var v validator
			switch {
			case s.HTTP != nil:
				v = s.HTTP
			case s.TCP != nil:
				v = s.TCP
			case s.Kubernetes != nil:
				v = s.Kubernetes
			case s.Octavia != nil:
				v = s.Octavia
			}
			if v == nil {
				t.Errorf("%s/%s: no type-specific spec", site.Site, s.Name)
				continue
			}
			n++
			if err := v.Validate(); err != nil {
				t.Errorf("%s/%s (%s): %v", site.Site, s.Name, s.Type, err)
			}
		}
	}
	if n == 0 {
		t.Fatal("no probes converted")
	}
	if _, err := probes.NewScheduler(ProbeSpecs(cfg), probes.SchedulerOptions{Interval: cfg.Policy.Interval}); err != nil {
		t.Errorf("scheduler refuses the example's probes: %v", err)
	}
}

func TestRemediatorsFromConfig(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: p, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: not-a-real-token}}]
contexts: [{name: p, context: {cluster: p, user: u}}]
current-context: p
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load("../../../deploy/examples/node-a.yaml", config.Options{SkipFileChecks: true})
	if err != nil {
		t.Fatal(err)
	}
	m, log := failover.New(), slog.New(slog.DiscardHandler)
	if got, err := remediators(cfg, m, log, time.Now); err != nil || len(got) != 0 {
		t.Fatalf("default config: got %d remediators, %v; want none (all off by default)", len(got), err)
	}
	cfg.Remediations.Kubernetes.Primary.Kubeconfig = kc
	cfg.Remediations.OrphanedPods.Mode = "dry-run"
	cfg.Remediations.DrainTrap.Mode = "on"
	got, err := remediators(cfg, m, log, time.Now)
	if err != nil || len(got) != 2 {
		t.Fatalf("got %d remediators, %v; want orphaned-pods and drain-trap", len(got), err)
	}
	cfg.Remediations.BackupWarmup.Mode = "on"
	if _, err := remediators(cfg, m, log, time.Now); err == nil || !strings.Contains(err.Error(), "remediations.kubernetes.backup") {
		t.Errorf("backup-warmup without a backup kubeconfig: got %v, want an error naming remediations.kubernetes.backup", err)
	}
}
