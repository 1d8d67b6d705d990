package openstack

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"time"

	"github.com/drwatch/drwatch/failover/remediate"
	"github.com/drwatch/drwatch/failover/remediate/kube"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	corev1 "k8s.io/api/core/v1"
)

// NovaInstances is a kube.InstanceChecker backed by Nova.
type NovaInstances struct {
	compute *gophercloud.ServiceClient
}

var _ kube.InstanceChecker = (*NovaInstances)(nil)

// NewNovaInstances returns the checker over c's compute client.
func NewNovaInstances(c *Clients) *NovaInstances { return &NovaInstances{compute: c.Compute} }

// InstanceState finds the node's server by its providerID
// (openstack:///<server-id>, cloud-provider-openstack's format), or else by
// a server named exactly like the node. SHUTOFF and ERROR map directly,
// ACTIVE is active, a 404 for the providerID's server is GONE; every other
// state, a name that matches no or several servers, and any error are
// UNKNOWN (with the error), so dead-node-out-of-service fails closed. It
// only reads and is safe for concurrent use.
func (n *NovaInstances) InstanceState(ctx context.Context, node *corev1.Node) (kube.InstanceState, error) {
	if id, ok := strings.CutPrefix(node.Spec.ProviderID, "openstack://"); ok {
		id = id[strings.LastIndex(id, "/")+1:]
		if id == "" {
			return kube.InstanceUnknown, fmt.Errorf("node %s: providerID %q has no server ID", node.Name, node.Spec.ProviderID)
		}
		v, err := servers.Get(ctx, n.compute, id).Extract()
		if gophercloud.ResponseCodeIs(err, 404) {
			return kube.InstanceGone, nil
		}
		if err != nil {
			return kube.InstanceUnknown, fmt.Errorf("get server %s: %w", id, err)
		}
		return stateOf(v.Status), nil
	}
	if node.Spec.ProviderID != "" {
		return kube.InstanceUnknown, fmt.Errorf("node %s: providerID %q is not OpenStack's", node.Name, node.Spec.ProviderID)
	}
	pages, err := servers.List(n.compute, servers.ListOpts{Name: "^" + regexp.QuoteMeta(node.Name) + "$"}).AllPages(ctx)
	if err != nil {
		return kube.InstanceUnknown, fmt.Errorf("list servers named %s: %w", node.Name, err)
	}
	all, err := servers.ExtractServers(pages)
	if err != nil {
		return kube.InstanceUnknown, fmt.Errorf("decode servers: %w", err)
	}
	if len(all) != 1 {
		// None could mean gone or a naming mismatch: without a
		// providerID we cannot tell.
		return kube.InstanceUnknown, nil
	}
	return stateOf(all[0].Status), nil
}

// RebootNode implements kube.NodeRebooter: a soft reboot of the node's
// server, found by providerID (openstack:///<id>) or, without one, by its
// exact name. Anything ambiguous is an error; nothing is rebooted then.
func (n *NovaInstances) RebootNode(ctx context.Context, node *corev1.Node) error {
	id := ""
	if rest, ok := strings.CutPrefix(node.Spec.ProviderID, "openstack://"); ok {
		id = rest[strings.LastIndex(rest, "/")+1:]
	} else if node.Spec.ProviderID != "" {
		return fmt.Errorf("node %s: providerID %q is not OpenStack's", node.Name, node.Spec.ProviderID)
	} else {
		pages, err := servers.List(n.compute, servers.ListOpts{Name: "^" + regexp.QuoteMeta(node.Name) + "$"}).AllPages(ctx)
		if err != nil {
			return fmt.Errorf("list servers named %s: %w", node.Name, err)
		}
		all, err := servers.ExtractServers(pages)
		if err != nil {
			return fmt.Errorf("decode servers: %w", err)
		}
		if len(all) != 1 {
			return fmt.Errorf("node %s: %d servers carry its name; not rebooting", node.Name, len(all))
		}
		id = all[0].ID
	}
	if id == "" {
		return fmt.Errorf("node %s: providerID %q has no server ID", node.Name, node.Spec.ProviderID)
	}
	if err := servers.Reboot(ctx, n.compute, id, servers.RebootOpts{Type: servers.SoftReboot}).ExtractErr(); err != nil {
		return fmt.Errorf("soft reboot of server %s: %w", id, err)
	}
	return nil
}

var _ kube.NodeRebooter = (*NovaInstances)(nil)

func stateOf(status string) kube.InstanceState {
	switch status {
	case "ACTIVE":
		return kube.InstanceActive
	case "SHUTOFF":
		return kube.InstanceShutoff
	case "ERROR":
		return kube.InstanceError
	}
	return kube.InstanceUnknown
}

// Entries builds the remediators cfg.OpenStack enables (mode dry-run or
// on), with their settings, for a remediate.Runner. clients must not be
// nil when any is enabled; nodes (the cluster's Kubernetes nodes) feed
// never-ready-instances' readiness and neutron-route-gc's pod CIDRs: nil
// makes either fail to build when enabled; now may be nil.
func Entries(cfg remediate.Config, clients *Clients, nodes NodeReader, now func() time.Time) ([]remediate.Entry, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := cfg.OpenStack
	if !o.Enabled() {
		return nil, nil
	}
	if clients == nil {
		return nil, errors.New("remediations.openstack: enabled without OpenStack clients")
	}
	sel := Selector{NamePrefix: o.InstanceNamePrefix, MetadataKey: o.InstanceMetadataKey, MetadataValue: o.InstanceMetadataValue}
	var pod netip.Prefix
	if o.PodCIDR != "" {
		pod = netip.MustParsePrefix(o.PodCIDR) // validated above
	}
	var out []remediate.Entry
	if s := o.NeutronRouteGC; s.Mode.Enabled() {
		if nodes == nil {
			return nil, errors.New("remediations.openstack.neutron_route_gc: enabled without the cluster's nodes to read pod CIDRs from")
		}
		out = append(out, remediate.Entry{Remediator: NewRouteGC(clients, o.RouterID, pod, sel, nodes, s.RouteLimit, s.WarnMargin), Settings: s.Settings})
	}
	if s := o.SecurityGroups; s.Mode.Enabled() {
		out = append(out, remediate.Entry{Remediator: NewSecurityGroups(clients, sel, s.RequiredGroup, pod), Settings: s.Settings})
	}
	if s := o.NeverReadyInstances; s.Mode.Enabled() {
		if nodes == nil {
			return nil, errors.New("remediations.openstack.never_ready_instances: enabled without a node readiness source")
		}
		out = append(out, remediate.Entry{Remediator: NewNeverReady(clients, sel, nodes, s.ActiveFor, now), Settings: s.Settings})
	}
	return out, nil
}
