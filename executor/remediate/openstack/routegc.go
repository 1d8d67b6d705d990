package openstack

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/extraroutes"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

// RouteGCName is neutron-route-gc's name.
const RouteGCName = "neutron-route-gc"

// VerbWarn is the verb of an action that only warns: Apply does nothing,
// the Runner records it (once per Key) for the history and status page.
const VerbWarn = "warn"

// RouteGC is the neutron-route-gc remediator.
type RouteGC struct {
	c          *Clients
	routerID   string
	podCIDR    netip.Prefix
	sel        Selector
	nodes      NodePodCIDRs
	limit      int
	warnMargin int
}

// ClusterNode is one Kubernetes Node of the cluster, as neutron-route-gc
// reads it.
type ClusterNode struct {
	Name       string
	ProviderID string
	// PodCIDRs are spec.podCIDRs (spec.podCIDR when that is empty).
	PodCIDRs []netip.Prefix
	// Addresses are the node's InternalIP addresses.
	Addresses []netip.Addr
}

// NodePodCIDRs lists the cluster's Kubernetes nodes with their pod CIDRs.
type NodePodCIDRs interface {
	// ClusterNodes returns every Node of the cluster. An error means
	// "cannot tell": the caller then removes nothing. It only reads, is
	// idempotent and must be safe for concurrent use.
	ClusterNodes(ctx context.Context) ([]ClusterNode, error)
}

var _ remediate.Remediator = (*RouteGC)(nil)

// NewRouteGC returns the remediator for routerID's extra routes into
// podCIDR; limit is Neutron's max_routes and warnMargin how close to it
// the routes left may come before Plan warns.
func NewRouteGC(c *Clients, routerID string, podCIDR netip.Prefix, sel Selector, nodes NodePodCIDRs, limit, warnMargin int) *RouteGC {
	return &RouteGC{c: c, routerID: routerID, podCIDR: podCIDR.Masked(), sel: sel, nodes: nodes, limit: limit, warnMargin: warnMargin}
}

// Name implements remediate.Remediator.
func (g *RouteGC) Name() string { return RouteGCName }

type routeData struct {
	route routers.Route
}

// novaDownCellMicroversion is the compute microversion from which Nova
// lists a down cell's servers as records with status UNKNOWN rather than
// skipping them.
const novaDownCellMicroversion = "2.69"

// inPodCIDR reports whether destination lies within the pod CIDR.
func (g *RouteGC) inPodCIDR(dest netip.Prefix) bool {
	return dest.Bits() >= g.podCIDR.Bits() && g.podCIDR.Contains(dest.Addr())
}

// projectServers lists every server of the project, with no filter and at
// microversion 2.69. Nova shows a down cell's servers (status UNKNOWN) only
// to such a request, and only when it carries no paging parameter
// (nova/api/openstack/compute/servers.py, _is_cell_down_supported), so
// partial says why the listing may lack servers: a down-cell record, or a
// listing of more than one page, whose later pages skip down cells.
func (g *RouteGC) projectServers(ctx context.Context) (all []servers.Server, partial string, err error) {
	compute := *g.c.Compute
	compute.Microversion = novaDownCellMicroversion
	pages := 0
	err = servers.List(&compute, servers.ListOpts{}).EachPage(ctx, func(_ context.Context, p pagination.Page) (bool, error) {
		pages++
		vs, err := servers.ExtractServers(p)
		all = append(all, vs...)
		return err == nil, err
	})
	if err != nil {
		return nil, "", fmt.Errorf("list servers: %w", err)
	}
	var down []string
	for _, v := range all {
		if v.Status == "UNKNOWN" {
			down = append(down, v.ID)
		}
	}
	switch {
	case len(down) > 0:
		return all, fmt.Sprintf("Nova lists %d server(s) in a down cell (%s), so the listing may lack instances",
			len(down), strings.Join(down, ", ")), nil
	case pages > 1:
		return all, fmt.Sprintf("Nova listed the servers in %d pages, and it skips down cells' servers on paged requests", pages), nil
	}
	return all, "", nil
}

// staleRoute is a route neutron-route-gc has proven stale, and why.
type staleRoute struct {
	route  routers.Route
	reason string
}

// judge reads the router, every server of the project and the cluster's
// nodes, and returns the routes proven stale. partial, when set, says why
// the Nova listing may be incomplete; then no route is judged stale.
//
// A route is considered only when its destination lies in the pod CIDR and
// no instance outside the cluster holds its next hop. It is stale when:
//   - its destination is the pod CIDR of exactly one node whose addresses
//     are known, and the next hop is none of them; or
//   - its destination is no node's pod CIDR, and its next hop is a node's
//     address (that node's pod CIDRs known, the destination none of them)
//     or a cluster instance's address that no node has.
//
// Anything else (a next hop nobody holds toward a destination no node
// has, a pod CIDR two nodes claim, a node without pod CIDR or address) is
// not provably ours or not provably stale, and stays.
func (g *RouteGC) judge(ctx context.Context) (r *routers.Router, stale []staleRoute, partial string, err error) {
	// The router first: a route is created after its node got its pod
	// CIDR, so the nodes read below know every pod CIDR it can carry.
	r, err = routers.Get(ctx, g.c.Network, g.routerID).Extract()
	if err != nil {
		return nil, nil, "", fmt.Errorf("get router %s: %w", g.routerID, err)
	}
	all, partial, err := g.projectServers(ctx)
	if err != nil || partial != "" {
		return r, nil, partial, err
	}
	if g.nodes == nil {
		return r, nil, "", errors.New("no source of the cluster's node pod CIDRs; refusing to judge routes")
	}
	nodes, err := g.nodes.ClusterNodes(ctx)
	if err != nil {
		return r, nil, "", fmt.Errorf("read the cluster's node pod CIDRs: %w", err)
	}
	// Who holds each address: the cluster's instances, and any other.
	holders := map[netip.Addr][]addrHolder{}
	byID, byName := map[string]Instance{}, map[string]Instance{}
	live := 0
	for i := range all {
		in, ours := toInstance(&all[i]), g.sel.matches(&all[i])
		for _, a := range in.Addresses {
			holders[a] = append(holders[a], addrHolder{in, ours})
		}
		if ours {
			byID[in.ID], byName[in.Name] = in, in
			if !in.gone() {
				live++
			}
		}
	}
	if live == 0 {
		return r, nil, "", errors.New("no live cluster instance found; refusing to judge routes")
	}
	if len(nodes) == 0 {
		return r, nil, "", errors.New("no Kubernetes node of the cluster found; refusing to judge routes")
	}
	// Each node's addresses: its InternalIPs and its instance's.
	matched := 0
	addrs := make([][]netip.Addr, len(nodes))
	nodeAt := map[netip.Addr][]int{}
	owners := map[netip.Prefix][]int{}
	for i, n := range nodes {
		set := slices.Clone(n.Addresses)
		// By providerID (openstack:///<id>) when the node has one, as
		// NovaInstances does; by exact name only without one.
		in, ok := byName[n.Name]
		if n.ProviderID != "" {
			id, _ := strings.CutPrefix(n.ProviderID, "openstack://")
			in, ok = byID[id[strings.LastIndex(id, "/")+1:]]
		}
		if ok {
			matched++
			set = append(set, in.Addresses...)
		}
		slices.SortFunc(set, netip.Addr.Compare)
		addrs[i] = slices.Compact(set)
		for _, a := range addrs[i] {
			nodeAt[a] = append(nodeAt[a], i)
		}
		for _, p := range n.PodCIDRs {
			owners[p.Masked()] = append(owners[p.Masked()], i)
		}
	}
	if matched == 0 {
		// Nodes read from another cluster's API server would lend
		// their pod CIDRs to routes that are not ours.
		return r, nil, "", errors.New("no Kubernetes node matches a cluster instance (by providerID or name); refusing to judge routes")
	}
	for _, rt := range r.Routes {
		dest, err1 := netip.ParsePrefix(rt.DestinationCIDR)
		hop, err2 := netip.ParseAddr(rt.NextHop)
		if err1 != nil || err2 != nil || !g.inPodCIDR(dest) {
			continue
		}
		outside := false
		for _, h := range holders[hop] {
			outside = outside || !h.cluster
		}
		if outside {
			continue // never a route through an instance outside the cluster
		}
		head := fmt.Sprintf("route %s via %s: ", rt.DestinationCIDR, rt.NextHop)
		var reason string
		switch own, at := owners[dest.Masked()], nodeAt[hop]; {
		case len(own) == 1:
			n := nodes[own[0]]
			if len(addrs[own[0]]) == 0 || slices.Contains(addrs[own[0]], hop) {
				continue
			}
			reason = head + fmt.Sprintf("%s is the pod CIDR of node %s, reached via %s; %s", dest, n.Name,
				joinAddrs(addrs[own[0]]), holderText(hop, at, nodes, holders[hop]))
		case len(own) > 1:
			continue
		case len(at) == 1:
			y := nodes[at[0]]
			if len(y.PodCIDRs) == 0 {
				continue
			}
			reason = head + fmt.Sprintf("%s is no node's pod CIDR, and %s is the address of node %s, whose pod CIDR is %s (a duplicate left by a reused address)",
				dest, hop, y.Name, joinPrefixes(y.PodCIDRs))
		case len(at) == 0 && len(holders[hop]) > 0:
			reason = head + fmt.Sprintf("%s is no node's pod CIDR, and %s", dest, holderText(hop, at, nodes, holders[hop]))
		default:
			continue
		}
		stale = append(stale, staleRoute{route: rt, reason: reason})
	}
	return r, stale, "", nil
}

// addrHolder is an instance holding an address, and whether it is one of
// the cluster's.
type addrHolder struct {
	inst    Instance
	cluster bool
}

// holderText says who holds hop: nodes (at), cluster instances that are no
// node, or nobody.
func holderText(hop netip.Addr, at []int, nodes []ClusterNode, hs []addrHolder) string {
	if len(at) > 0 {
		names := make([]string, len(at))
		for i, n := range at {
			names[i] = nodes[n].Name
		}
		return fmt.Sprintf("%s is the address of node %s now", hop, strings.Join(names, ", "))
	}
	if len(hs) > 0 {
		names := make([]string, len(hs))
		for i, h := range hs {
			names[i] = fmt.Sprintf("%s (%s)", h.inst.Name, h.inst.Status)
		}
		return fmt.Sprintf("%s is held by cluster instance %s, which is no node of the cluster", hop, strings.Join(names, ", "))
	}
	return fmt.Sprintf("no instance holds %s", hop)
}

func joinAddrs(as []netip.Addr) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}

func joinPrefixes(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}

// Plan judges the router's routes (see judge) and returns a "remove-route"
// action for each stale one, in the router's order. The key holds the
// router's revision_number, so a route that comes back after its removal
// is removed again. A final "warn" action reports routes near the limit.
// When the Nova listing may be partial, Plan returns a single "warn"
// action saying why, and nothing to remove.
func (g *RouteGC) Plan(ctx context.Context) ([]remediate.Action, error) {
	r, stale, partial, err := g.judge(ctx)
	if err != nil {
		return nil, err
	}
	rev := strconv.Itoa(r.RevisionNumber)
	if partial != "" {
		return []remediate.Action{{
			Target: "router/" + g.routerID,
			Verb:   VerbWarn,
			Reason: "no route removed this pass: " + partial,
			Key:    "partial-listing/" + g.routerID + "/rev" + rev,
		}}, nil
	}
	var out []remediate.Action
	for _, s := range stale {
		rt := s.route
		out = append(out, remediate.Action{
			Target: "router/" + g.routerID + "/route/" + rt.DestinationCIDR + "/" + rt.NextHop,
			Verb:   "remove-route",
			Reason: s.reason,
			Key:    "remove-route/" + g.routerID + "/" + rt.DestinationCIDR + "/" + rt.NextHop + "/rev" + rev,
			Data:   routeData{route: rt},
		})
	}
	left := len(r.Routes) - len(out)
	if g.limit > 0 && left >= g.limit-g.warnMargin {
		out = append(out, remediate.Action{
			Target: "router/" + g.routerID,
			Verb:   VerbWarn,
			Reason: fmt.Sprintf("router %s keeps %d routes after clean-up, near Neutron's limit of %d: new nodes will get no route (Neutron answers 400 RoutesExhausted past max_routes)", g.routerID, left, g.limit),
			Key:    "warn-routes/" + g.routerID + "/" + strconv.Itoa(left),
		})
	}
	return out, nil
}

// Apply removes one route with remove_extraroutes, after judging the
// router afresh: a route already gone is done; a route no longer proven
// stale (a partial listing, a next hop now held outside the cluster, a
// node that took the pod CIDR) is remediate.ErrPrecondition. A "warn"
// action does nothing.
func (g *RouteGC) Apply(ctx context.Context, a remediate.Action) error {
	if a.Verb == VerbWarn {
		return nil
	}
	d, ok := a.Data.(routeData)
	if !ok {
		return fmt.Errorf("%s: action without route data", a.Target)
	}
	r, stale, partial, err := g.judge(ctx)
	switch {
	case r == nil:
		return fmt.Errorf("recheck route %s via %s: %w", d.route.DestinationCIDR, d.route.NextHop, errors.Join(err, remediate.ErrPrecondition))
	case !slices.Contains(r.Routes, d.route):
		return nil
	case err != nil:
		return fmt.Errorf("recheck route %s via %s: %w", d.route.DestinationCIDR, d.route.NextHop, errors.Join(err, remediate.ErrPrecondition))
	case partial != "":
		return fmt.Errorf("route %s via %s: %s: %w", d.route.DestinationCIDR, d.route.NextHop, partial, remediate.ErrPrecondition)
	case !slices.ContainsFunc(stale, func(s staleRoute) bool { return s.route == d.route }):
		return fmt.Errorf("route %s via %s is no longer proven stale: %w", d.route.DestinationCIDR, d.route.NextHop, remediate.ErrPrecondition)
	}
	routes := []routers.Route{d.route}
	if _, err := extraroutes.Remove(ctx, g.c.Network, g.routerID, extraroutes.Opts{Routes: &routes}).Extract(); err != nil {
		if gophercloud.ResponseCodeIs(err, 404) {
			return fmt.Errorf("router %s is gone: %w", g.routerID, remediate.ErrPrecondition)
		}
		head := fmt.Sprintf("remove route %s via %s", d.route.DestinationCIDR, d.route.NextHop)
		// remove_extraroutes re-validates every route the router keeps
		// (neutron/db/extraroute_db.py), not only the one removed.
		switch typ, msg := neutronFault(err); typ {
		case "RoutesExhausted":
			return fmt.Errorf("%s: Neutron refused (%s): router %s holds %d routes, and Neutron refuses any change that leaves more than its max_routes, removals too; no route can be removed one at a time until the router holds at most max_routes + 1 (remove routes by hand or raise max_routes): %w",
				head, msg, g.routerID, len(r.Routes), err)
		case "InvalidRoutes":
			return fmt.Errorf("%s: Neutron refused, because it re-validates every route left on router %s and %s; fix or remove that route by hand (Neutron: %s): %w",
				head, g.routerID, g.invalidLeft(ctx, r.Routes, d.route), msg, err)
		}
		return fmt.Errorf("%s: %w", head, precondition(err))
	}
	return nil
}

// invalidLeft says which routes other than removed Neutron's extraroute
// validation refuses: a next hop outside every subnet of the router's
// ports, or one of the router's own addresses.
func (g *RouteGC) invalidLeft(ctx context.Context, all []routers.Route, removed routers.Route) string {
	ps, err := serverPorts(ctx, g.c.Network, g.routerID)
	if err != nil {
		return "a route it keeps is invalid (its interfaces could not be read: " + err.Error() + ")"
	}
	var own []netip.Addr
	var cidrs []netip.Prefix
	for _, p := range ps {
		for _, ip := range p.FixedIPs {
			if a, err := netip.ParseAddr(ip.IPAddress); err == nil {
				own = append(own, a)
			}
			sn, err := subnets.Get(ctx, g.c.Network, ip.SubnetID).Extract()
			if err != nil {
				return "a route it keeps is invalid (subnet " + ip.SubnetID + " could not be read: " + err.Error() + ")"
			}
			if c, err := netip.ParsePrefix(sn.CIDR); err == nil {
				cidrs = append(cidrs, c)
			}
		}
	}
	var bad []string
	for _, rt := range all {
		hop, err := netip.ParseAddr(rt.NextHop)
		switch {
		case rt == removed:
		case err != nil:
			bad = append(bad, fmt.Sprintf("%s via %s (no address)", rt.DestinationCIDR, rt.NextHop))
		case slices.Contains(own, hop):
			bad = append(bad, fmt.Sprintf("%s via %s (the router's own address)", rt.DestinationCIDR, rt.NextHop))
		case !slices.ContainsFunc(cidrs, func(c netip.Prefix) bool { return c.Contains(hop) }):
			bad = append(bad, fmt.Sprintf("%s via %s (next hop outside the router's subnets %s)", rt.DestinationCIDR, rt.NextHop, joinPrefixes(cidrs)))
		}
	}
	if len(bad) == 0 {
		return "a route it keeps is invalid"
	}
	return "these routes it keeps are invalid: " + strings.Join(bad, "; ")
}
