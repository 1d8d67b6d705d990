package octavia

import (
	"context"
	"errors"
	"fmt"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/kube"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/pagination"
	corev1 "k8s.io/api/core/v1"
)

// AnnotationLoadBalancerID is the annotation the OpenStack cloud provider
// (cloud-provider-openstack) sets on a Service to its load balancer's ID.
const AnnotationLoadBalancerID = "loadbalancer.openstack.org/load-balancer-id"

// DefaultClusterName is the cloud provider's --cluster-name default.
const DefaultClusterName = "kubernetes"

// LoadBalancerName is the name the cloud provider gives a Service's load
// balancer: kube_service_<cluster>_<namespace>_<name>, cut to 255 bytes.
func LoadBalancerName(cluster, namespace, name string) string {
	n := "kube_service_" + cluster + "_" + namespace + "_" + name
	if len(n) > 255 {
		n = n[:255]
	}
	return n
}

// ErrPoolChanging means the load balancer is not ACTIVE: Octavia may be
// changing its pools, so what they list now proves nothing.
var ErrPoolChanging = errors.New("load balancer not ACTIVE: its pools may be changing")

// Pools reads the members of the Octavia pools behind a Kubernetes
// Service: a kube.LoadBalancerPools for drain-trap. Every call
// authenticates afresh, like the rest of the package.
type Pools struct {
	auth    remediate.OpenStackAuth
	cluster string
}

var _ kube.LoadBalancerPools = (*Pools)(nil)

// NewPools returns a reader with the credentials of the cluster's project;
// cluster is the cloud provider's --cluster-name (empty: "kubernetes").
func NewPools(auth remediate.OpenStackAuth, cluster string) *Pools {
	if cluster == "" {
		cluster = DefaultClusterName
	}
	return &Pools{auth: auth, cluster: cluster}
}

// PoolMembers finds the Service's load balancer, by the ID the cloud
// provider annotated it with, else by the provider's name within the
// credentials' own project (never another project's look-alike), and
// returns the members of all its pools. Members with admin_state_up false
// take no traffic and are left out. found is false when there is no such
// load balancer, or it is being deleted. A load balancer that is not
// ACTIVE is ErrPoolChanging; a name matching several is an error.
func (p *Pools) PoolMembers(ctx context.Context, svc *corev1.Service) ([]kube.PoolMember, bool, error) {
	// The same fresh Keystone session and load-balancer client as
	// octavia-stuck-lb's, with the cluster project's credentials.
	client, project, done, err := (&StuckLB{cfg: OctaviaStuckLBConfig{OpenStackAuth: p.auth}}).client(ctx)
	if err != nil {
		return nil, false, err
	}
	defer done()
	lb, err := p.find(ctx, client, project, svc)
	if err != nil || lb == nil {
		return nil, false, err
	}
	switch lb.ProvisioningStatus {
	case "ACTIVE":
	case "DELETED", "PENDING_DELETE":
		return nil, false, nil
	default:
		return nil, false, fmt.Errorf("load balancer %s is %s: %w", lb.ID, lb.ProvisioningStatus, ErrPoolChanging)
	}
	pages, err := pools.List(client, pools.ListOpts{LoadbalancerID: lb.ID}).AllPages(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("list pools of load balancer %s: %w", lb.ID, err)
	}
	ps, err := pools.ExtractPools(pages)
	if err != nil {
		return nil, false, fmt.Errorf("decode pools: %w", err)
	}
	var out []kube.PoolMember
	for _, pool := range ps {
		pages, err := pools.ListMembers(client, pool.ID, pools.ListMembersOpts{}).AllPages(ctx)
		if err != nil {
			return nil, false, fmt.Errorf("list members of pool %s: %w", pool.ID, err)
		}
		ms, err := pools.ExtractMembers(pages)
		if err != nil {
			return nil, false, fmt.Errorf("decode members: %w", err)
		}
		for _, m := range ms {
			if m.AdminStateUp {
				out = append(out, kube.PoolMember{Name: m.Name, Address: m.Address, OperatingStatus: m.OperatingStatus})
			}
		}
	}
	return out, true, nil
}

// find returns the Service's load balancer in project, or nil when there
// is none. With admin credentials a list spans every project: it is scoped
// to ours, where the cloud provider of this cluster creates its load
// balancers, so that another project's look-alike (another cluster with the
// same --cluster-name) is never taken for it.
func (p *Pools) find(ctx context.Context, client *gophercloud.ServiceClient, project string, svc *corev1.Service) (*loadbalancers.LoadBalancer, error) {
	if id := svc.Annotations[AnnotationLoadBalancerID]; id != "" {
		// The cluster's own cloud provider wrote the ID: it is this
		// Service's load balancer whichever project the reader is in.
		return find(ctx, client, id, project)
	}
	name := LoadBalancerName(p.cluster, svc.Namespace, svc.Name)
	var found []loadbalancers.LoadBalancer
	err := loadbalancers.List(client, loadbalancers.ListOpts{Name: name, ProjectID: project}).EachPage(ctx,
		func(_ context.Context, page pagination.Page) (bool, error) {
			lbs, err := loadbalancers.ExtractLoadBalancers(page)
			found = append(found, lbs...)
			return err == nil, err
		})
	switch {
	case err != nil:
		return nil, fmt.Errorf("find load balancer %q in project %s: %w", name, project, err)
	case len(found) > 1:
		return nil, fmt.Errorf("load balancer name %q is ambiguous in project %s (%d matches)", name, project, len(found))
	case len(found) == 0:
		return nil, nil
	}
	return &found[0], nil
}
