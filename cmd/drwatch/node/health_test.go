package node

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/config"
	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/all"
	"github.com/drwatch/drwatch/executor/remediate/openstack"
	"github.com/drwatch/drwatch/internal/kubeconfig"
	"github.com/drwatch/drwatch/monitor/clusterhealth"
	"github.com/drwatch/drwatch/test/openstacktest"
)

// TestClusterHealthReadsTheConfiguredClustersOnly: the Cluster health
// monitor reaches a site only through remediations.kubernetes and
// remediations.openstack, and says why a route quota is unknown. The
// cloud is a real one (openstacktest with Neutron, and Nova, whose compute
// endpoint the node's clients need in the catalog).
func TestClusterHealthReadsTheConfiguredClustersOnly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), openstacktest.StartTimeout)
	defer cancel()
	s, err := openstacktest.New(ctx, openstacktest.Options{Neutron: true, Nova: true})
	if err != nil {
		t.Fatalf("openstacktest: %v", err)
	}
	t.Cleanup(s.Close)
	dir := t.TempDir()
	idf, secf := filepath.Join(dir, "id"), filepath.Join(dir, "secret")
	for f, v := range map[string]string{idf: s.MemberAppCredID, secf: s.MemberAppCredSecret} {
		if err := os.WriteFile(f, []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The backup site's router, with two extra routes through its subnet.
	call := func(method, path string, in, out any) {
		t.Helper()
		if err := s.NeutronCall(ctx, s.Member, method, path, in, out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	type idOnly struct{ ID string }
	var net struct{ Network idOnly }
	var sub struct{ Subnet idOnly }
	var rt struct{ Router idOnly }
	call(http.MethodPost, "/v2.0/networks", map[string]any{"network": map[string]any{"name": "backup"}}, &net)
	call(http.MethodPost, "/v2.0/subnets", map[string]any{"subnet": map[string]any{"network_id": net.Network.ID,
		"cidr": "10.180.0.0/16", "ip_version": 4, "enable_dhcp": false, "gateway_ip": "10.180.255.254"}}, &sub)
	call(http.MethodPost, "/v2.0/routers", map[string]any{"router": map[string]any{"name": "r-backup"}}, &rt)
	call(http.MethodPut, "/v2.0/routers/"+rt.Router.ID+"/add_router_interface", map[string]any{"subnet_id": sub.Subnet.ID}, nil)
	call(http.MethodPut, "/v2.0/routers/"+rt.Router.ID+"/add_extraroutes", map[string]any{"router": map[string]any{"routes": []any{
		map[string]any{"destination": "198.19.1.0/24", "nexthop": "10.180.0.3"},
		map[string]any{"destination": "198.19.2.0/24", "nexthop": "10.180.0.4"}}}}, nil)
	router := rt.Router.ID
	auth := remediate.OpenStackAuth{AuthURL: s.AuthURL, ApplicationCredentialIDFile: idf, ApplicationCredentialSecretFile: secf, Region: s.Region}

	for _, tt := range []struct {
		name        string
		os          openstack.OpenStackClusterConfig
		wantUnknown [2]string // primary, backup; "" means a quota source
	}{
		{"no openstack", openstack.OpenStackClusterConfig{},
			[2]string{"unknown: remediations.openstack is not configured", "unknown: remediations.openstack is not configured"}},
		{"no router", openstack.OpenStackClusterConfig{OpenStackAuth: auth, Site: "backup"},
			[2]string{"unknown: remediations.openstack is for the backup site", "unknown: remediations.openstack.router_id is not set"}},
		{"backup router", openstack.OpenStackClusterConfig{OpenStackAuth: auth, Site: "backup", RouterID: router},
			[2]string{"unknown: remediations.openstack is for the backup site", ""}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &config.Config{Node: config.Node{ID: "a"}, Remediations: all.Config{OpenStack: tt.os}}
			m, err := ClusterHealth(c, time.Now)
			if err != nil {
				t.Fatal(err)
			}
			before, err := s.NeutronState(ctx)
			if err != nil {
				t.Fatal(err)
			}
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
				if want := (&clusterhealth.Routes{RouterID: router, Used: 2, Limit: openstack.DefaultRouteLimit}); sites[1].Routes == nil || *sites[1].Routes != *want {
					t.Errorf("backup: got routes %+v, want %+v", sites[1].Routes, want)
				}
			}
			// Reading the quota writes nothing: Neutron's resources
			// (count, revisions, last update) are as before.
			if after, err := s.NeutronState(ctx); err != nil || after != before {
				t.Errorf("neutron after reading the quota: got %q %v, want %q (no write)", after, err, before)
			}
		})
	}
	t.Run("a bad kubeconfig names its field", func(t *testing.T) {
		c := &config.Config{Node: config.Node{ID: "a"}, Remediations: all.Config{Config: remediate.Config{Kubernetes: kubeconfig.Sites{
			Backup: kubeconfig.Cluster{Kubeconfig: filepath.Join(dir, "missing.kubeconfig")}}}}}
		if _, err := ClusterHealth(c, time.Now); err == nil || !strings.HasPrefix(err.Error(), "remediations.kubernetes.backup: ") {
			t.Fatalf("got %v, want an error naming remediations.kubernetes.backup", err)
		}
	})
}
