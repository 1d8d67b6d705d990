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
)

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
