package debris

import (
	"errors"
	"strings"
	"testing"

	"github.com/drwatch/drwatch/executor/remediate"
)

// A cloud-debris remediator without a cluster name, or without a
// Kubernetes client for a cluster that is not decommissioned, is refused.
// (The rules of its section are checked with the remediations config, in
// executor/remediate/all.)
func TestConfigNamesTheField(t *testing.T) {
	on := remediate.Settings{Mode: remediate.ModeDryRun}
	auth := remediate.OpenStackAuth{Cloud: "c"}
	cfg := CloudDebrisConfig{Settings: on, OpenStackAuth: auth, ClusterName: "k", Site: "backup"}
	if _, err := New(cfg, nil, nil); err == nil || !strings.Contains(err.Error(), "remediations.kubernetes.backup") {
		t.Fatalf("got %v, want an error naming remediations.kubernetes.backup", err)
	}
	cfg.Decommissioned = true
	if _, err := New(cfg, nil, nil); err != nil {
		t.Fatalf("decommissioned without a client: got %v, want nil", err)
	}
	cfg.ClusterName = DefaultCloudProviderCluster
	if _, err := New(cfg, nil, nil); err != nil {
		t.Fatalf("decommissioned cluster %q: got %v, want nil", cfg.ClusterName, err)
	}
	cfg.Decommissioned = false
	if _, err := New(cfg, nil, nil); !errors.Is(err, ErrDefaultCluster) || !strings.Contains(err.Error(), "cluster_name") {
		t.Fatalf("live cluster %q: got %v, want ErrDefaultCluster naming cluster_name", cfg.ClusterName, err)
	}
	cfg.ClusterName = ""
	if _, err := New(cfg, nil, nil); err == nil {
		t.Fatal("no cluster name: got nil, want an error")
	}
}
