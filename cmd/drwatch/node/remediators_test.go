package node

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/config"
	"github.com/drwatch/drwatch/executor/reconcile"
	"github.com/drwatch/drwatch/executor/remediate/hooks"
	"github.com/drwatch/drwatch/executor/remediate/kube"
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

// groupsNode is the config of groups.yaml, with a data directory of the
// test's, a fresh replica and a silent log.
func groupsNode(t *testing.T) (*config.Config, *failover.Machine, *slog.Logger) {
	t.Helper()
	cfg, err := config.Load("../config/testdata/groups.yaml", config.Options{SkipFileChecks: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Node.DataDir = t.TempDir()
	return cfg, failover.New(), slog.New(slog.DiscardHandler)
}

// Each failover group whose own section enables a repair gets its repairs,
// with a data directory of its own, acting on its own decision; a group
// whose section enables none gets none.
func TestGroupRemediatorsFromConfig(t *testing.T) {
	kc := kubetest.UnreachableKubeconfig(t)
	cfg, m, log := groupsNode(t)
	if got, _, err := groupRemediators(cfg, m, log, time.Now); err != nil || len(got) != 0 {
		t.Fatalf("groups without remediations: got %v, %v; want none", got, err)
	}
	cfg.Groups[0].Remediations.Kubernetes.Primary.Kubeconfig = kc
	cfg.Groups[0].Remediations.OrphanedPods.Mode = "dry-run"
	got, _, err := groupRemediators(cfg, m, log, time.Now)
	if err != nil || len(got) != 1 || got[0].Name != "lms" || len(got[0].Remediators) != 1 {
		t.Fatalf("got %+v, %v; want lms's orphaned-pods alone", got, err)
	}
	if fi, err := os.Stat(filepath.Join(cfg.Node.DataDir, "groups", "lms")); err != nil || !fi.IsDir() {
		t.Fatalf("lms's data directory: %v", err)
	}
	cfg.Groups[1].Remediations.BackupWarmup.Mode = "on"
	if _, _, err := groupRemediators(cfg, m, log, time.Now); err == nil || !strings.Contains(err.Error(), "groups[wiki]") {
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

// gateNames are the names of gs, in order.
func gateNames(gs []reconcile.Gate) []string {
	var out []string
	for _, g := range gs {
		out = append(out, g.Name())
	}
	return out
}

// Each failover group with a backup warm-up or hooks of its own gets its
// own gates for its DNS reconciler: its warm-up, then its pre-failover
// hooks; its post-failover hooks run told the group. A group with
// neither gets none, and the top-level hooks are nobody's group's.
func TestGroupGatesFromConfig(t *testing.T) {
	kc := kubetest.UnreachableKubeconfig(t)
	cfg, m, log := groupsNode(t)
	out := filepath.Join(t.TempDir(), "ran")
	record := []hooks.Hook{{Name: "record", Command: []string{"/bin/sh", "-c", `echo "$DRWATCH_PHASE $DRWATCH_GROUP" >> ` + out}}}
	cfg.Hooks.PostFailover = record
	if _, gates, err := groupRemediators(cfg, m, log, time.Now); err != nil || len(gates) != 0 {
		t.Fatalf("groups without warm-up or hooks of their own: got %+v, %v; want no gates", gates, err)
	}

	cfg.Groups[1].Hooks.PostFailover = record
	_, gates, err := groupRemediators(cfg, m, log, time.Now)
	if err != nil || len(gates) != 1 || gates[0].Name != "wiki" || len(gates[0].Gates) != 0 || gates[0].AfterVerified == nil {
		t.Fatalf("got %+v, %v; want wiki's post-failover hooks alone", gates, err)
	}
	gates[0].AfterVerified(context.Background(), reconcile.Decision{Gen: 3, From: failover.Primary, To: failover.Backup})
	if b, err := os.ReadFile(out); err != nil || string(b) != "post-failover wiki\n" {
		t.Errorf("wiki's post-failover hook: got %q (%v), want it told group wiki", b, err)
	}

	cfg.Groups[1].Remediations.Kubernetes.Backup.Kubeconfig = kc
	cfg.Groups[1].Remediations.BackupWarmup.Mode = "on"
	cfg.Groups[1].Remediations.BackupWarmup.Workloads = []kube.Workload{{Kind: "Deployment", Namespace: "wiki", Name: "web", Replicas: 2}}
	cfg.Groups[1].Hooks.PreFailover = record
	repairs, gates, err := groupRemediators(cfg, m, log, time.Now)
	if err != nil || len(repairs) != 1 || len(gates) != 1 || gates[0].Name != "wiki" {
		t.Fatalf("got repairs %+v, gates %+v, %v; want wiki's", repairs, gates, err)
	}
	if got, want := gateNames(gates[0].Gates), []string{"backup warm-up", "pre-failover hooks"}; !slices.Equal(got, want) {
		t.Errorf("wiki's gates: got %q, want %q", got, want)
	}
}
