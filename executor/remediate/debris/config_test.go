package debris

import (
	"errors"
	"strings"
	"testing"

	"github.com/drwatch/drwatch/executor/remediate"
)

// The cloud_debris rules of remediate.Config each name their field; a
// remediator without a cluster name, or without a Kubernetes client for a
// cluster that is not decommissioned, is refused.
func TestConfigNamesTheField(t *testing.T) {
	on := remediate.Settings{Mode: remediate.ModeDryRun}
	auth := remediate.OpenStackAuth{Cloud: "c"}
	for _, tc := range []struct {
		name string
		cfg  remediate.CloudDebrisConfig
		want string // substring of the problems as the config file shows them; empty means valid
	}{
		{"off needs nothing", remediate.CloudDebrisConfig{}, ""},
		{"enabled", remediate.CloudDebrisConfig{Settings: on, OpenStackAuth: auth, ClusterName: "k"}, ""},
		{"no cluster name", remediate.CloudDebrisConfig{Settings: on, OpenStackAuth: auth}, "remediations.cloud_debris.cluster_name: required when enabled"},
		{"no credentials", remediate.CloudDebrisConfig{Settings: on, ClusterName: "k"}, "remediations.cloud_debris.cloud: cloud or auth_url must be set"},
		{"cluster name with a slash", remediate.CloudDebrisConfig{OpenStackAuth: auth, ClusterName: "a/b"}, "remediations.cloud_debris.cluster_name: \"a/b\" must be"},
		{"csi cluster with a space", remediate.CloudDebrisConfig{OpenStackAuth: auth, ClusterName: "k", CSICluster: "a b"}, "remediations.cloud_debris.csi_cluster"},
		{"bad site", remediate.CloudDebrisConfig{Site: "moon"}, "remediations.cloud_debris.site: \"moon\" must be primary or backup"},
		{"negative timeout", remediate.CloudDebrisConfig{DeleteTimeout: -1}, "remediations.cloud_debris.delete_timeout"},
		{"bad mode", remediate.CloudDebrisConfig{Settings: remediate.Settings{Mode: "maybe"}}, "remediations.cloud_debris.mode"},
		{"default cluster name", remediate.CloudDebrisConfig{Settings: on, OpenStackAuth: auth, ClusterName: "kubernetes"}, "remediations.cloud_debris.cluster_name: \"kubernetes\" is cloud-provider-openstack's default"},
		{"default csi cluster", remediate.CloudDebrisConfig{Settings: on, OpenStackAuth: auth, ClusterName: "k", CSICluster: "kubernetes"}, "remediations.cloud_debris.csi_cluster: \"kubernetes\" is cloud-provider-openstack's default"},
		{"default cluster name, decommissioned", remediate.CloudDebrisConfig{Settings: on, OpenStackAuth: auth, ClusterName: "kubernetes", Decommissioned: true}, ""},
		{"a name that only contains the default", remediate.CloudDebrisConfig{Settings: on, OpenStackAuth: auth, ClusterName: "kubernetes-eu1"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shown := remediate.Config{CloudDebris: tc.cfg}.Defaulted().Validate().Under(remediate.Section).Err()
			switch {
			case tc.want == "" && shown != nil:
				t.Fatalf("got %v, want valid", shown)
			case tc.want != "" && (shown == nil || !strings.Contains(shown.Error(), tc.want)):
				t.Fatalf("got %v, want an error containing %q", shown, tc.want)
			}
		})
	}
	cfg := remediate.CloudDebrisConfig{Settings: on, OpenStackAuth: auth, ClusterName: "k", Site: "backup"}
	if _, err := New(cfg, nil, nil); err == nil || !strings.Contains(err.Error(), "remediations.kubernetes.backup") {
		t.Fatalf("got %v, want an error naming remediations.kubernetes.backup", err)
	}
	cfg.Decommissioned = true
	if _, err := New(cfg, nil, nil); err != nil {
		t.Fatalf("decommissioned without a client: got %v, want nil", err)
	}
	cfg.ClusterName = remediate.DefaultCloudProviderCluster
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
