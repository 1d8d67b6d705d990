package kubeconfig

import (
	"fmt"
	"time"

	"github.com/drwatch/drwatch/internal/field"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Sites holds one Kubernetes API per site: the remediations.kubernetes
// list, through which the repairs act on the clusters and the cluster
// health monitor reads them.
type Sites struct {
	Primary Cluster `yaml:"primary" doc:"The primary site's cluster."`
	Backup  Cluster `yaml:"backup" doc:"The backup site's cluster."`
}

// Cluster says how to reach one Kubernetes API.
type Cluster struct {
	Kubeconfig string `yaml:"kubeconfig_file" doc:"kubeconfig file with the credentials drwatch uses."`
	Context    string `yaml:"context" doc:"kubeconfig context; empty means its current context."`
	// MaxDisruptedNodes is the cluster's one node disruption budget, shared
	// by every repair that reboots, taints or force-deletes on its nodes.
	MaxDisruptedNodes int `yaml:"max_disrupted_nodes" default:"1" doc:"Most nodes of this cluster the repairs together disrupt at a time: orphaned_pods' reboots and force-deletes from a node that is not Ready, dead_node_out_of_service's taints, never_ready_instances' reboots. The next node waits until the previous one is Ready again or gone (deleted, or its instance confirmed down), recorded as skipped_cap naming it."`
}

// DefaultMaxDisruptedNodes is how many nodes of a cluster the repairs may
// disrupt at once unless configured otherwise (the tag of
// Cluster.MaxDisruptedNodes says the same, for the generated docs).
const DefaultMaxDisruptedNodes = 1

// requestTimeout bounds each call to a cluster's API.
const requestTimeout = 30 * time.Second

// MaxDisrupted is the cluster's node disruption budget, defaulted.
func (k Cluster) MaxDisrupted() int {
	if k.MaxDisruptedNodes == 0 {
		return DefaultMaxDisruptedNodes
	}
	return k.MaxDisruptedNodes
}

// Site returns the site's cluster ("backup", else the primary's).
func (k Sites) Site(site string) Cluster {
	if site == "backup" {
		return k.Backup
	}
	return k.Primary
}

// Validate returns every problem at once, each naming its field by its
// path inside the list ("backup.max_disrupted_nodes"). Zero means the
// default; a negative budget is a mistake, not "unset".
func (k Sites) Validate() field.Errors {
	var errs field.Errors
	for _, s := range []struct {
		path string
		c    Cluster
	}{{"primary", k.Primary}, {"backup", k.Backup}} {
		if n := s.c.MaxDisruptedNodes; n < 0 {
			errs.Add(s.path+".max_disrupted_nodes", "%v must be >= 0 (0 or unset: the default)", n)
		}
	}
	return errs
}

// RESTConfig is the connection to the cluster, from its kubeconfig file
// and context, for the repairs' client and for the cluster health
// monitor, which wraps its transport. Its errors name the field, never the
// kubeconfig's path or content.
func (k Cluster) RESTConfig() (*rest.Config, error) {
	if k.Kubeconfig == "" {
		return nil, fmt.Errorf("kubeconfig_file is required")
	}
	rc, err := RESTConfig("kubeconfig_file", k.Kubeconfig, &clientcmd.ConfigOverrides{CurrentContext: k.Context})
	if err != nil {
		return nil, err
	}
	rc.Timeout = requestTimeout
	return rc, nil
}
