package openstack

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/drwatch/drwatch/failover/remediate"
	"github.com/drwatch/drwatch/failover/remediate/clusterhealth"
	"github.com/drwatch/drwatch/failover/remediate/debris"
	"github.com/drwatch/drwatch/failover/remediate/kube"
	"github.com/drwatch/drwatch/failover/remediate/octavia"
	corev1 "k8s.io/api/core/v1"
)

// lazyClients authenticates with OpenStack on first use and retries on the
// next use after a failure. In a meltdown the primary's Keystone is down;
// drwatch must still start, and its repairs begin once the cloud answers.
type lazyClients struct {
	auth remediate.OpenStackAuth

	mu sync.Mutex
	c  *Clients
}

func (l *lazyClients) get(ctx context.Context) (*Clients, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c != nil {
		return l.c, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := NewClients(ctx, l.auth)
	if err != nil {
		return nil, fmt.Errorf("openstack: %w", err)
	}
	l.c = c
	return c, nil
}

// lazyRemediator builds its remediator from the clients on first use.
type lazyRemediator struct {
	name    string
	clients *lazyClients
	build   func(*Clients) (remediate.Remediator, error)

	mu sync.Mutex
	r  remediate.Remediator
}

func (l *lazyRemediator) Name() string { return l.name }

func (l *lazyRemediator) resolve(ctx context.Context) (remediate.Remediator, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.r != nil {
		return l.r, nil
	}
	c, err := l.clients.get(ctx)
	if err != nil {
		return nil, err
	}
	if l.r, err = l.build(c); err != nil {
		return nil, err
	}
	return l.r, nil
}

// Plan implements remediate.Remediator.
func (l *lazyRemediator) Plan(ctx context.Context) ([]remediate.Action, error) {
	r, err := l.resolve(ctx)
	if err != nil {
		return nil, err
	}
	return r.Plan(ctx)
}

// Apply implements remediate.Remediator.
func (l *lazyRemediator) Apply(ctx context.Context, a remediate.Action) error {
	r, err := l.resolve(ctx)
	if err != nil {
		return err
	}
	return r.Apply(ctx, a)
}

// Census implements remediate.Census for the remediators that have one
// (all of this package's), so that the disruption brake holds for them as
// for an eagerly built one; one without counts nothing.
func (l *lazyRemediator) Census(ctx context.Context, acts []remediate.Action) (remediate.Population, error) {
	r, err := l.resolve(ctx)
	if err != nil {
		return remediate.Population{}, err
	}
	c, ok := r.(remediate.Census)
	if !ok {
		return remediate.Population{}, nil
	}
	return c.Census(ctx, acts)
}

// Disrupted implements remediate.Disruptor for never-ready-instances; any
// other remediator disrupts no node.
func (l *lazyRemediator) Disrupted(ctx context.Context, applied []remediate.Applied) ([]remediate.Disruption, error) {
	r, err := l.resolve(ctx)
	if err != nil {
		return nil, err
	}
	d, ok := r.(remediate.Disruptor)
	if !ok {
		return nil, nil
	}
	return d.Disrupted(ctx, applied)
}

var (
	_ remediate.Census    = (*lazyRemediator)(nil)
	_ remediate.Disruptor = (*lazyRemediator)(nil)
)

// lazyInstances is Nova's instance check for dead-node-out-of-service, and
// its instance check and node rebooter for orphaned-pods; until the cloud
// answers, every instance is UNKNOWN, so no node is tainted, no pod that may
// still run is force-deleted, and no node is rebooted.
type lazyInstances struct{ clients *lazyClients }

func (l lazyInstances) RebootNode(ctx context.Context, node *corev1.Node) error {
	c, err := l.clients.get(ctx)
	if err != nil {
		return err
	}
	return NewNovaInstances(c).RebootNode(ctx, node)
}

func (l lazyInstances) InstanceState(ctx context.Context, node *corev1.Node) (kube.InstanceState, error) {
	c, err := l.clients.get(ctx)
	if err != nil {
		return kube.InstanceUnknown, err
	}
	return NewNovaInstances(c).InstanceState(ctx, node)
}

// FenceAdvice implements kube.HostFencing; "" until the cloud answers.
func (l lazyInstances) FenceAdvice(ctx context.Context, node *corev1.Node) string {
	c, err := l.clients.get(ctx)
	if err != nil {
		return ""
	}
	return NewNovaInstances(c).FenceAdvice(ctx, node)
}

var _ kube.HostFencing = lazyInstances{}

// Cloud is what the OpenStack side gives the remediations.
type Cloud struct {
	Entries []remediate.Entry
	// Instances is Nova's instance check for dead-node (nil: no cloud for its site).
	Instances kube.InstanceChecker
	// Nodes confirms nodes down and reboots them for orphaned-pods (nil: no
	// cloud for its site).
	Nodes kube.NodeCloud
	// Pools reads load-balancer pools for drain-trap (nil: no cloud for its
	// site, so drain-trap moves nothing).
	Pools kube.LoadBalancerPools
}

// CloudRemediators builds the OpenStack repairs r enables (cloud-debris
// checks its site's Services and PersistentVolumes with kubeClients), the instance
// checks dead-node and orphaned-pods use and the pool reader drain-trap
// uses (nil when no cloud is configured for their site). Nothing here
// touches the cloud: clients authenticate on first use. kubeClients give
// never-ready-instances its node readiness and neutron-route-gc its node
// pod CIDRs (the site openstack.site names). debrisOpts tune cloud-debris
// (the node keeps its reclaim record in the data directory).
func CloudRemediators(r remediate.Config, kubeClients kube.Clients, log *slog.Logger, now func() time.Time, debrisOpts ...debris.Option) (Cloud, error) {
	r = r.WithDefaults()
	var out []remediate.Entry
	if o := r.OctaviaStuckLB; o.Mode.Enabled() {
		lb, err := octavia.New(o, log.With("remediation", octavia.Name))
		if err != nil {
			return Cloud{}, fmt.Errorf("remediations.octavia_stuck_lb: %w", err)
		}
		out = append(out, remediate.Entry{Remediator: lb, Settings: o.Settings})
	}
	if dc := r.CloudDebris; dc.Mode.Enabled() {
		kc := kubeClients.Primary
		if dc.Site == "backup" {
			kc = kubeClients.Backup
		}
		if dc.Decommissioned {
			// Nothing is asked of a decommissioned cluster's API.
			kc = nil
		}
		d, err := debris.New(dc, kc, log.With("remediation", debris.Name), debrisOpts...)
		if err != nil {
			return Cloud{}, fmt.Errorf("remediations.cloud_debris: %w", err)
		}
		out = append(out, remediate.Entry{Remediator: d, Settings: dc.Settings})
	}
	os := r.OpenStack
	if os.AuthURL == "" && os.Cloud == "" {
		return Cloud{Entries: out}, nil
	}
	clients := &lazyClients{auth: os.OpenStackAuth}
	res := Cloud{}
	if os.Site == r.DeadNodeOutOfService.Site {
		res.Instances = lazyInstances{clients: clients}
	}
	if os.Site == r.OrphanedPods.Site {
		res.Nodes = lazyInstances{clients: clients}
	}
	if os.Site == r.DrainTrap.Site {
		// Authenticates afresh on every read: nothing to build lazily.
		res.Pools = octavia.NewPools(os.OpenStackAuth, r.DrainTrap.ClusterName)
	}
	if !os.Enabled() {
		res.Entries = out
		return res, nil
	}
	// never-ready-instances reads node readiness, neutron-route-gc node
	// pod CIDRs, both from the site's own API server. Every lazy build
	// gets the reader: Entries builds all that is enabled.
	var nodes NodeReader
	for _, need := range []struct {
		on    bool
		field string
	}{{os.NeverReadyInstances.Mode.Enabled(), "never_ready_instances"}, {os.NeutronRouteGC.Mode.Enabled(), "neutron_route_gc"}} {
		if !need.on || nodes != nil {
			continue
		}
		kc := kubeClients.Primary
		if os.Site == "backup" {
			kc = kubeClients.Backup
		}
		if kc == nil {
			return Cloud{}, fmt.Errorf("remediations.openstack.%s needs the %s site's kubernetes client (remediations.kubernetes.%s)", need.field, os.Site, os.Site)
		}
		nodes = NewKubeReadiness(kc)
	}
	// Entries validates the section and picks what is enabled; build it
	// once with no clients to learn the names and settings, then defer the
	// real construction to first use.
	for _, name := range []string{RouteGCName, SecurityGroupsName, NeverReadyName} {
		settings, on := cloudSettings(os, name)
		if !on {
			continue
		}
		name := name
		e := remediate.Entry{Settings: settings}
		if name == NeverReadyName {
			// Its reboots share the site's node disruption budget.
			e.Cluster, e.MaxDisruptedNodes = os.Site, r.Kubernetes.Site(os.Site).MaxDisrupted()
		}
		e.Remediator = &lazyRemediator{name: name, clients: clients,
			build: func(cl *Clients) (remediate.Remediator, error) {
				es, err := Entries(r, cl, nodes, now)
				if err != nil {
					return nil, err
				}
				for _, e := range es {
					if e.Remediator.Name() == name {
						return e.Remediator, nil
					}
				}
				return nil, fmt.Errorf("%s not built", name)
			}}
		out = append(out, e)
	}
	res.Entries = out
	return res, nil
}

func cloudSettings(o remediate.OpenStackClusterConfig, name string) (remediate.Settings, bool) {
	var s remediate.Settings
	switch name {
	case RouteGCName:
		s = o.NeutronRouteGC.Settings
	case SecurityGroupsName:
		s = o.SecurityGroups.Settings
	case NeverReadyName:
		s = o.NeverReadyInstances.Settings
	}
	return s, s.Mode.Enabled()
}

// RouteQuotaReader reads the router neutron-route-gc is configured with, when
// remediations.openstack names one for site; otherwise it says why the
// quota is unknown.
func RouteQuotaReader(os remediate.OpenStackClusterConfig, site string) (clusterhealth.RouteQuotaFunc, string) {
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
		q, err := ReadRouteQuota(ctx, c, os.RouterID, os.NeutronRouteGC.RouteLimit)
		if err != nil {
			return clusterhealth.Routes{}, err
		}
		return clusterhealth.Routes{RouterID: q.RouterID, Used: q.Used, Limit: q.Limit}, nil
	}, ""
}
