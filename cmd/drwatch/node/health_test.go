package node

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/config"
	"github.com/drwatch/drwatch/failover/remediate"
	"github.com/drwatch/drwatch/failover/remediate/clusterhealth"
	"github.com/drwatch/drwatch/test/openstacksim"
)

// TestClusterHealthReadsTheConfiguredClustersOnly: the Cluster health
// monitor reaches a site only through remediations.kubernetes and
// remediations.openstack, and says why a route quota is unknown.
func TestClusterHealthReadsTheConfiguredClustersOnly(t *testing.T) {
	s := openstacksim.Start()
	t.Cleanup(s.Close)
	dir := t.TempDir()
	idf, secf := filepath.Join(dir, "id"), filepath.Join(dir, "secret")
	for f, v := range map[string]string{idf: openstacksim.AppCredID, secf: openstacksim.AppCredSecret} {
		if err := os.WriteFile(f, []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s.PutRouter(openstacksim.Router{ID: "r-backup", Routes: []openstacksim.Route{
		{Destination: "198.19.1.0/24", NextHop: "10.180.0.3"}, {Destination: "198.19.2.0/24", NextHop: "10.180.0.4"}}})
	auth := remediate.OpenStackAuth{AuthURL: s.AuthURL(), ApplicationCredentialIDFile: idf, ApplicationCredentialSecretFile: secf, Region: openstacksim.Region}

	for _, tt := range []struct {
		name        string
		os          remediate.OpenStackClusterConfig
		wantUnknown [2]string // primary, backup; "" means a quota source
	}{
		{"no openstack", remediate.OpenStackClusterConfig{},
			[2]string{"unknown: remediations.openstack is not configured", "unknown: remediations.openstack is not configured"}},
		{"no router", remediate.OpenStackClusterConfig{OpenStackAuth: auth, Site: "backup"},
			[2]string{"unknown: remediations.openstack is for the backup site", "unknown: remediations.openstack.router_id is not set"}},
		{"backup router", remediate.OpenStackClusterConfig{OpenStackAuth: auth, Site: "backup", RouterID: "r-backup"},
			[2]string{"unknown: remediations.openstack is for the backup site", ""}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &config.Config{Node: config.Node{ID: "a"}, Remediations: remediate.Config{OpenStack: tt.os}}
			m, err := ClusterHealth(c, time.Now)
			if err != nil {
				t.Fatal(err)
			}
			writes := s.Writes()
			m.ReadOnce(context.Background())
			sites := m.Sites()
			for i, site := range sites {
				if site.Configured {
					t.Errorf("%s: got configured with no kubeconfig", site.Site)
				}
				if site.RoutesUnknown != tt.wantUnknown[i] {
					t.Errorf("%s: got routes unknown %q, want %q", site.Site, site.RoutesUnknown, tt.wantUnknown[i])
				}
			}
			if tt.wantUnknown[1] == "" {
				if want := (&clusterhealth.Routes{RouterID: "r-backup", Used: 2, Limit: remediate.DefaultRouteLimit}); sites[1].Routes == nil || *sites[1].Routes != *want {
					t.Errorf("backup: got routes %+v, want %+v", sites[1].Routes, want)
				}
			}
			if s.Writes() != writes {
				t.Errorf("got %d cloud writes from reading the quota, want none", s.Writes()-writes)
			}
		})
	}
	t.Run("a bad kubeconfig names its field", func(t *testing.T) {
		c := &config.Config{Node: config.Node{ID: "a"}, Remediations: remediate.Config{Kubernetes: remediate.KubeSites{
			Backup: remediate.KubeCluster{Kubeconfig: filepath.Join(dir, "missing.kubeconfig")}}}}
		if _, err := ClusterHealth(c, time.Now); err == nil || !strings.HasPrefix(err.Error(), "remediations.kubernetes.backup: ") {
			t.Fatalf("got %v, want an error naming remediations.kubernetes.backup", err)
		}
	})
}
