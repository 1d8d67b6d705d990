package node

import (
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
		t.Routes, t.RoutesUnknown = openstack.RouteQuotaReader(r.OpenStack, site.name)
		targets = append(targets, t)
	}
	return clusterhealth.NewMonitor(c.ClusterHealth.WithDefaults(), c.Node.ID, targets, now), nil
}
