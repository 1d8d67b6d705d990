package node

import (
	"context"
	"fmt"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/config"
	"github.com/drwatch/drwatch/failover/remediate"
	"github.com/drwatch/drwatch/failover/remediate/clusterhealth"
	"github.com/drwatch/drwatch/failover/remediate/openstack"
)

// ClusterHealth builds the read-only monitor of both sites' clusters for
// the Cluster health section: the clusters of remediations.kubernetes, and
// the route quota of remediations.openstack's router for its site. Nothing
// is contacted here; every watcher runs its own monitor (nothing of it is
// replicated: it is evidence for a human, never input to a decision).
func ClusterHealth(c *config.Config, now func() time.Time) (*clusterhealth.Monitor, error) {
	r := c.Remediations.WithDefaults()
	var targets []clusterhealth.Target
	for _, site := range []struct {
		name string
		kc   remediate.KubeCluster
	}{{"primary", r.Kubernetes.Primary}, {"backup", r.Kubernetes.Backup}} {
		t := clusterhealth.Target{Site: site.name}
		if site.kc.Kubeconfig != "" {
			var err error
			if t.Client, err = clusterhealth.NewClient(site.kc); err != nil {
				return nil, fmt.Errorf("remediations.kubernetes.%s: %w", site.name, err)
			}
		}
		t.Routes, t.RoutesUnknown = routeQuota(r.OpenStack, site.name)
		targets = append(targets, t)
	}
	return clusterhealth.NewMonitor(c.ClusterHealth.WithDefaults(), c.Node.ID, targets, now), nil
}

// routeQuota reads the router neutron-route-gc is configured with, when
// remediations.openstack names one for site; otherwise it says why the
// quota is unknown.
func routeQuota(os remediate.OpenStackClusterConfig, site string) (clusterhealth.RouteQuotaFunc, string) {
	switch {
	case os.AuthURL == "" && os.Cloud == "":
		return nil, "unknown: remediations.openstack is not configured"
	case os.Site != site:
		return nil, "unknown: remediations.openstack is for the " + os.Site + " site"
	case os.RouterID == "":
		return nil, "unknown: remediations.openstack.router_id is not set"
	}
	clients := &lazyClients{auth: os.OpenStackAuth}
	return func(ctx context.Context) (clusterhealth.Routes, error) {
		c, err := clients.get(ctx)
		if err != nil {
			return clusterhealth.Routes{}, err
		}
		q, err := openstack.ReadRouteQuota(ctx, c, os.RouterID, os.NeutronRouteGC.RouteLimit)
		if err != nil {
			return clusterhealth.Routes{}, err
		}
		return clusterhealth.Routes{RouterID: q.RouterID, Used: q.Used, Limit: q.Limit}, nil
	}, ""
}
