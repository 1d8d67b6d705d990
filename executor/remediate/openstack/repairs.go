package openstack

import (
	"context"
	"fmt"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/kube"
	"github.com/drwatch/drwatch/executor/remediate/octavia"
	"github.com/drwatch/drwatch/executor/remediate/repair"
	corev1 "k8s.io/api/core/v1"
)

// Cloud is the cloud of remediations.openstack, for its site: what the
// repairs of that site's cluster are built with (repair.Env.Cloud). It is
// Nova's instance check for dead-node-out-of-service, its instance check
// and node rebooter for orphaned-pods, the pool reader of drain-trap, and
// the clients of this package's repairs. Nothing here touches the cloud:
// it authenticates on first use, and until the cloud answers every
// instance is UNKNOWN, so no node is tainted, no pod that may still run is
// force-deleted, no node is rebooted and no pod moves.
type Cloud struct {
	site    string
	auth    remediate.OpenStackAuth
	clients *lazyClients
}

// NewCloud returns o's cloud, or nil when o names none (neither cloud nor
// auth_url).
func NewCloud(o OpenStackClusterConfig) *Cloud {
	if o.AuthURL == "" && o.Cloud == "" {
		return nil
	}
	site := o.Site
	if site == "" {
		site = "primary"
	}
	return &Cloud{site: site, auth: o.OpenStackAuth, clients: &lazyClients{auth: o.OpenStackAuth}}
}

// For returns c when it is site's cloud, else nil (an untyped nil, so
// that a repair's interface assertion fails): repair.Env.Cloud.
func (c *Cloud) For(site string) any {
	if c == nil || c.site != site {
		return nil
	}
	return c
}

// RebootNode implements kube.NodeRebooter.
func (c *Cloud) RebootNode(ctx context.Context, node *corev1.Node) error {
	cl, err := c.clients.get(ctx)
	if err != nil {
		return err
	}
	return NewNovaInstances(cl).RebootNode(ctx, node)
}

// InstanceState implements kube.InstanceChecker; UNKNOWN until the cloud
// answers.
func (c *Cloud) InstanceState(ctx context.Context, node *corev1.Node) (kube.InstanceState, error) {
	cl, err := c.clients.get(ctx)
	if err != nil {
		return kube.InstanceUnknown, err
	}
	return NewNovaInstances(cl).InstanceState(ctx, node)
}

// FenceAdvice implements kube.HostFencing; "" until the cloud answers.
func (c *Cloud) FenceAdvice(ctx context.Context, node *corev1.Node) string {
	cl, err := c.clients.get(ctx)
	if err != nil {
		return ""
	}
	return NewNovaInstances(cl).FenceAdvice(ctx, node)
}

// Pools reads the pools of the load balancers the cloud provider named
// after cluster, for drain-trap. It authenticates afresh on every read:
// nothing to build lazily.
func (c *Cloud) Pools(cluster string) kube.LoadBalancerPools {
	return octavia.NewPools(c.auth, cluster)
}

var (
	_ kube.HostFencing = (*Cloud)(nil)
	_ kube.NodeCloud   = (*Cloud)(nil)
)

// The repairs of this package, for the list in executor/remediate/all.
// Each acts in the project of remediations.openstack, through its Cloud;
// neutron-route-gc and never-ready-instances also read the nodes of the
// site's Kubernetes cluster.
var (
	RouteGCRepair        = cloudRepair(RouteGCName, "neutron_route_gc", routeGCSettings, true)
	SecurityGroupsRepair = cloudRepair(SecurityGroupsName, "security_groups", securityGroupsSettings, false)
	NeverReadyRepair     = repair.Disrupting(cloudRepair(NeverReadyName, "never_ready_instances", neverReadySettings, true),
		func(c *OpenStackClusterConfig) string { return c.Site })
)

func routeGCSettings(c *OpenStackClusterConfig) *remediate.Settings {
	return &c.NeutronRouteGC.Settings
}

func securityGroupsSettings(c *OpenStackClusterConfig) *remediate.Settings {
	return &c.SecurityGroups.Settings
}

func neverReadySettings(c *OpenStackClusterConfig) *remediate.Settings {
	return &c.NeverReadyInstances.Settings
}

// cloudRepair declares the named repair, whose section is field under
// remediations.openstack. Build makes its entry now and its remediator on
// first use: a node must start while the primary's Keystone is down.
// readsNodes says it needs the site's Kubernetes nodes.
func cloudRepair(name, field string, settings func(*OpenStackClusterConfig) *remediate.Settings, readsNodes bool) repair.Repair {
	needs := []repair.Client{repair.OpenStack}
	if readsNodes {
		needs = append(needs, repair.Kubernetes)
	}
	build := func(env repair.Env, cfg remediate.Config, os OpenStackClusterConfig) (remediate.Entry, error) {
		cloud, _ := env.CloudFor(os.Site).(*Cloud)
		if cloud == nil {
			return remediate.Entry{}, fmt.Errorf("remediations.openstack.%s: enabled without OpenStack clients", field)
		}
		var nodes NodeReader
		if readsNodes {
			kc, err := env.KubeClient("remediations.openstack."+field, os.Site)
			if err != nil {
				return remediate.Entry{}, err
			}
			nodes = NewKubeReadiness(kc)
		}
		// Entries builds every enabled repair of the section: give it
		// this one alone, so that it needs only this one's clients.
		only := os
		for _, s := range []func(*OpenStackClusterConfig) *remediate.Settings{routeGCSettings, securityGroupsSettings, neverReadySettings} {
			if s(&only) != settings(&only) {
				s(&only).Mode = remediate.ModeOff
			}
		}
		e := remediate.Entry{Settings: *settings(&os)}
		if name == NeverReadyName {
			// Its reboots share the site's node disruption budget.
			e.Cluster, e.MaxDisruptedNodes = os.Site, cfg.Kubernetes.Site(os.Site).MaxDisrupted()
		}
		e.Remediator = &lazyRemediator{name: name, clients: cloud.clients,
			build: func(cl *Clients) (remediate.Remediator, error) {
				es, err := Entries(cfg, only, cl, nodes, env.Now)
				if err != nil {
					return nil, err
				}
				if len(es) != 1 {
					return nil, fmt.Errorf("%s not built", name)
				}
				return es[0].Remediator, nil
			}}
		return e, nil
	}
	return repair.For(name, "openstack."+field, needs, settings, build)
}
