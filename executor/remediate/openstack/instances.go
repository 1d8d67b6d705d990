package openstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/kube"
	"github.com/drwatch/drwatch/internal/field"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/services"
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
// a server named exactly like the node, and says whether its guest is down:
//
//   - OS-EXT-STS:power_state SHUTDOWN, CRASHED or NOSTATE (NOSTATE not
//     while the server is still in BUILD): SHUTOFF, CRASHED, NOSTATE;
//   - the nova-compute service of its host (OS-EXT-SRV-ATTR:host) forced
//     down (forced_down, microversion 2.11): HOST_FORCED_DOWN. An operator
//     sets it once the host is fenced (openstack compute service set
//     --down), so the guest is off;
//   - Nova's own 404 (itemNotFound) for the providerID's server: GONE. A
//     404 without Nova's body (a proxy, a wrong endpoint) is an error, and
//     a name that matches no server proves nothing, since the node may be
//     named otherwise.
//
// A service that is only down (it missed its heartbeats: its message bus
// lost, its agent dead) is HOST_DOWN, which is not down: its guests may
// still run and write (invariant 14). Nova shows the host and the service
// list to admins only; without them (no host, or a 403 on os-services, so
// forced_down cannot be read) the host check is skipped, never guessed.
//
// A name lookup sees only the servers of the credentials' project: Nova
// scopes a server list to the token's project, an admin's too (without
// all_tenants, which would bring in other projects' look-alikes). Admin
// credentials for the host check belong in the cluster's project.
//
// Otherwise the server's status ERROR is ERROR (a failed operation, not a
// stopped guest), a running ACTIVE guest is ACTIVE, and everything else
// (paused, suspended, no power state, a name that matches several
// servers, any error) is UNKNOWN, with the error if any: none of them lets
// dead-node-out-of-service act. It only reads and is safe for concurrent
// use.
func (n *NovaInstances) InstanceState(ctx context.Context, node *corev1.Node) (kube.InstanceState, error) {
	v, st, err := n.server(ctx, node)
	if st != "" || err != nil {
		return st, err
	}
	if st := v.powerDown(); st != "" {
		return st, nil
	}
	svc, err := n.computeService(ctx, v.Host)
	switch {
	case err != nil:
		return kube.InstanceUnknown, err
	case svc == nil:
	case svc.ForcedDown:
		return kube.InstanceHostForcedDown, nil
	case svc.State == "down":
		return kube.InstanceHostDown, nil
	}
	switch {
	case v.Status == "ERROR":
		return kube.InstanceError, nil
	case v.Status == "ACTIVE" && v.PowerState != nil && *v.PowerState == servers.RUNNING:
		return kube.InstanceActive, nil
	}
	return kube.InstanceUnknown, nil
}

// server finds node's server as InstanceState says. A state returned
// (GONE, or UNKNOWN with or without an error) is the answer already.
func (n *NovaInstances) server(ctx context.Context, node *corev1.Node) (novaServer, kube.InstanceState, error) {
	var v novaServer
	if id, ok := strings.CutPrefix(node.Spec.ProviderID, "openstack://"); ok {
		id = id[strings.LastIndex(id, "/")+1:]
		if id == "" {
			return v, kube.InstanceUnknown, fmt.Errorf("node %s: providerID %q has no server ID", node.Name, node.Spec.ProviderID)
		}
		err := servers.Get(ctx, n.compute, id).ExtractInto(&v)
		if novaNotFound(err) {
			return v, kube.InstanceGone, nil
		}
		if err != nil {
			return v, kube.InstanceUnknown, fmt.Errorf("get server %s: %w", id, err)
		}
		return v, "", nil
	}
	if node.Spec.ProviderID != "" {
		return v, kube.InstanceUnknown, fmt.Errorf("node %s: providerID %q is not OpenStack's", node.Name, node.Spec.ProviderID)
	}
	pages, err := servers.List(n.compute, servers.ListOpts{Name: "^" + regexp.QuoteMeta(node.Name) + "$"}).AllPages(ctx)
	if err != nil {
		return v, kube.InstanceUnknown, fmt.Errorf("list servers named %s: %w", node.Name, err)
	}
	var all []novaServer
	if err := servers.ExtractServersInto(pages, &all); err != nil {
		return v, kube.InstanceUnknown, fmt.Errorf("decode servers: %w", err)
	}
	if len(all) != 1 {
		// None could mean gone or a naming mismatch, several a
		// look-alike: without a providerID we cannot tell.
		return v, kube.InstanceUnknown, nil
	}
	return all[0], "", nil
}

// FenceAdvice implements kube.HostFencing: it names the host of node's
// server and the command that marks it fenced, to run once the host is
// really off. "" when the host cannot be read (no admin role, no server).
func (n *NovaInstances) FenceAdvice(ctx context.Context, node *corev1.Node) string {
	v, st, err := n.server(ctx, node)
	if st != "" || err != nil || v.Host == nil || *v.Host == "" {
		return ""
	}
	// Nova's forced_down (microversion 2.11) is the operator's word that
	// the host is off.
	return fmt.Sprintf("fence host %s (power it off, e.g. through its BMC), then run: openstack compute service set --down %s nova-compute", *v.Host, *v.Host)
}

var _ kube.HostFencing = (*NovaInstances)(nil)

// novaNotFound reports whether err is Nova's own 404 for the server (its
// body is {"itemNotFound": ...}): a 404 from a proxy in front of a Nova
// that is not back yet, or from a wrong endpoint, says nothing about it.
func novaNotFound(err error) bool {
	var e gophercloud.ErrUnexpectedResponseCode
	if !errors.As(err, &e) || e.Actual != 404 {
		return false
	}
	var body struct {
		ItemNotFound *json.RawMessage `json:"itemNotFound"`
	}
	return json.Unmarshal(e.Body, &body) == nil && body.ItemNotFound != nil
}

// novaServer is what InstanceState reads of a server. PowerState and Host
// are pointers: an absent power state is not NOSTATE (0), and an absent
// host (no admin role) is no host to check.
type novaServer struct {
	ID         string  `json:"id"`
	Status     string  `json:"status"`
	PowerState *int    `json:"OS-EXT-STS:power_state"`
	Host       *string `json:"OS-EXT-SRV-ATTR:host"`
}

// powerDown returns the state a down power state proves, or "".
func (v novaServer) powerDown() kube.InstanceState {
	if v.PowerState == nil {
		return ""
	}
	switch *v.PowerState {
	case servers.SHUTDOWN:
		return kube.InstanceShutoff
	case servers.CRASHED:
		return kube.InstanceCrashed
	case servers.NOSTATE:
		if v.Status != "BUILD" {
			// While building, no guest has run yet: not a dead one.
			return kube.InstanceNoState
		}
	}
	return ""
}

// computeService returns the one nova-compute service Nova lists on host,
// with its state and forced_down. No host (the attribute is admin only)
// or a 403 (no admin role, so forced_down cannot be read) means the check
// is unavailable: nil, without an error. Several services, or none, prove
// nothing: nil too.
func (n *NovaInstances) computeService(ctx context.Context, host *string) (*services.Service, error) {
	if host == nil || *host == "" {
		return nil, nil
	}
	c := *n.compute
	c.Microversion = "2.11" // forced_down
	pages, err := services.List(&c, services.ListOpts{Binary: "nova-compute", Host: *host}).AllPages(ctx)
	if gophercloud.ResponseCodeIs(err, 403) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list compute services on %s: %w", *host, err)
	}
	all, err := services.ExtractServices(pages)
	if err != nil {
		return nil, fmt.Errorf("decode compute services: %w", err)
	}
	if len(all) != 1 {
		return nil, nil
	}
	return &all[0], nil
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

// Entries builds the remediators o enables (mode dry-run or on), with
// their settings, for a remediate.Runner; cfg gives the site's node
// disruption budget. clients must not be
// nil when any is enabled; nodes (the cluster's Kubernetes nodes) feed
// never-ready-instances' readiness and neutron-route-gc's pod CIDRs: nil
// makes either fail to build when enabled; now may be nil.
func Entries(cfg remediate.Config, o OpenStackClusterConfig, clients *Clients, nodes NodeReader, now func() time.Time) ([]remediate.Entry, error) {
	cfg = cfg.Defaulted()
	field.SetDefaults(&o)
	o.DeriveDefaults()
	errs := cfg.Validate()
	errs.Append("openstack", o.Validate())
	if err := errs.Under(remediate.Section).Err(); err != nil {
		return nil, err
	}
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
		out = append(out, remediate.Entry{Remediator: NewNeverReady(clients, sel, nodes, s.ActiveFor, s.MaxAge, now), Settings: s.Settings,
			Cluster: o.Site, MaxDisruptedNodes: cfg.Kubernetes.Site(o.Site).MaxDisrupted()})
	}
	return out, nil
}
