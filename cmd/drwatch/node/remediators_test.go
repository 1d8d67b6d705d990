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
	"github.com/drwatch/drwatch/test/kubetest"
)

func TestRemediatorsFromConfig(t *testing.T) {
	kc := kubetest.UnreachableKubeconfig(t)
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

// Each failover group whose own section enables a repair gets its repairs,
// with a data directory of its own, acting on its own decision; a group
// whose section enables none gets none.
func TestGroupRemediatorsFromConfig(t *testing.T) {
	kc := kubetest.UnreachableKubeconfig(t)
	cfg, err := config.Load("../config/testdata/groups.yaml", config.Options{SkipFileChecks: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Node.DataDir = t.TempDir()
	m, log := failover.New(), slog.New(slog.DiscardHandler)
	if got, err := groupRemediators(cfg, m, log, time.Now); err != nil || len(got) != 0 {
		t.Fatalf("groups without remediations: got %v, %v; want none", got, err)
	}
	cfg.Groups[0].Remediations.Kubernetes.Primary.Kubeconfig = kc
	cfg.Groups[0].Remediations.OrphanedPods.Mode = "dry-run"
	got, err := groupRemediators(cfg, m, log, time.Now)
	if err != nil || len(got) != 1 || got[0].Name != "lms" || len(got[0].Remediators) != 1 {
		t.Fatalf("got %+v, %v; want lms's orphaned-pods alone", got, err)
	}
	if fi, err := os.Stat(filepath.Join(cfg.Node.DataDir, "groups", "lms")); err != nil || !fi.IsDir() {
		t.Fatalf("lms's data directory: %v", err)
	}
	cfg.Groups[1].Remediations.BackupWarmup.Mode = "on"
	if _, err := groupRemediators(cfg, m, log, time.Now); err == nil || !strings.Contains(err.Error(), "groups[wiki]") {
		t.Errorf("wiki's backup-warmup without a backup kubeconfig: got %v, want an error naming groups[wiki]", err)
	}

	if _, err := m.Step(1, failover.Command{At: 1, Payload: failover.SetPolicy{Policy: cfg.ReplicatedPolicy()}}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Step(2, failover.Command{At: 2, Payload: failover.Failover{Group: "wiki", To: failover.Backup, Force: true, Actor: "alice"}}); err != nil {
		t.Fatal(err)
	}
	if d := groupDecision(m, "wiki")(); d.Active != failover.Backup || d.Gen != 2 {
		t.Errorf("wiki's decision: %+v, want the backup at gen 2", d)
	}
	if d := groupDecision(m, "lms")(); d.Active != failover.Primary || d.Gen != 0 {
		t.Errorf("lms's decision: %+v, want the primary, none made", d)
	}
}
