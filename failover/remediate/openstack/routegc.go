package openstack

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"

	"github.com/drwatch/drwatch/failover/remediate"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/extraroutes"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
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
	limit      int
	warnMargin int
}

var _ remediate.Remediator = (*RouteGC)(nil)

// NewRouteGC returns the remediator for routerID's extra routes into
// podCIDR; limit is Neutron's max_routes and warnMargin how close to it
// the routes left may come before Plan warns.
func NewRouteGC(c *Clients, routerID string, podCIDR netip.Prefix, sel Selector, limit, warnMargin int) *RouteGC {
	return &RouteGC{c: c, routerID: routerID, podCIDR: podCIDR.Masked(), sel: sel, limit: limit, warnMargin: warnMargin}
}

// Name implements remediate.Remediator.
func (g *RouteGC) Name() string { return RouteGCName }

type routeData struct {
	route routers.Route
}

// inPodCIDR reports whether destination lies within the pod CIDR.
func (g *RouteGC) inPodCIDR(dest string) bool {
	p, err := netip.ParsePrefix(dest)
	if err != nil {
		return false
	}
	return p.Bits() >= g.podCIDR.Bits() && g.podCIDR.Contains(p.Addr())
}

// liveHops returns the addresses of the cluster's live instances; it fails
// when there is none, because then every route would look orphaned (a
// wrong selector or an empty listing must not wipe the router).
func (g *RouteGC) liveHops(ctx context.Context) (map[netip.Addr]string, error) {
	insts, err := listInstances(ctx, g.c.Compute, g.sel)
	if err != nil {
		return nil, err
	}
	live := map[netip.Addr]string{}
	for _, in := range insts {
		if in.gone() {
			continue
		}
		for _, a := range in.Addresses {
			live[a] = in.Name
		}
	}
	if len(live) == 0 {
		return nil, errors.New("no live cluster instance found; refusing to judge routes")
	}
	return live, nil
}

// Plan reads the router and the cluster's instances. Each route into the
// pod CIDR whose next hop is no live instance's address gets a
// "remove-route" action, in the router's order; a duplicate destination's
// reason names the live next hop that stays. The key holds the router's
// revision_number, so a route that comes back after its removal is removed
// again. A final "warn" action reports routes near the limit.
func (g *RouteGC) Plan(ctx context.Context) ([]remediate.Action, error) {
	r, err := routers.Get(ctx, g.c.Network, g.routerID).Extract()
	if err != nil {
		return nil, fmt.Errorf("get router %s: %w", g.routerID, err)
	}
	live, err := g.liveHops(ctx)
	if err != nil {
		return nil, err
	}
	liveFor := map[string][]string{}
	for _, rt := range r.Routes {
		if a, err := netip.ParseAddr(rt.NextHop); err == nil && live[a] != "" && g.inPodCIDR(rt.DestinationCIDR) {
			liveFor[rt.DestinationCIDR] = append(liveFor[rt.DestinationCIDR], rt.NextHop)
		}
	}
	rev := strconv.Itoa(r.RevisionNumber)
	var out []remediate.Action
	for _, rt := range r.Routes {
		if !g.inPodCIDR(rt.DestinationCIDR) {
			continue
		}
		if a, err := netip.ParseAddr(rt.NextHop); err == nil && live[a] != "" {
			continue
		}
		reason := fmt.Sprintf("route %s via %s: the next hop is no live instance of the cluster", rt.DestinationCIDR, rt.NextHop)
		if keep := liveFor[rt.DestinationCIDR]; len(keep) > 0 {
			reason = fmt.Sprintf("duplicate route %s via %s: the live node is %s", rt.DestinationCIDR, rt.NextHop, keep[0])
		}
		out = append(out, remediate.Action{
			Target: "router/" + g.routerID + "/route/" + rt.DestinationCIDR + "/" + rt.NextHop,
			Verb:   "remove-route",
			Reason: reason,
			Key:    "remove-route/" + g.routerID + "/" + rt.DestinationCIDR + "/" + rt.NextHop + "/rev" + rev,
			Data:   routeData{route: rt},
		})
	}
	left := len(r.Routes) - len(out)
	if g.limit > 0 && left >= g.limit-g.warnMargin {
		out = append(out, remediate.Action{
			Target: "router/" + g.routerID,
			Verb:   VerbWarn,
			Reason: fmt.Sprintf("router %s keeps %d routes after clean-up, near Neutron's limit of %d: new nodes will get no route (409 in the route controller)", g.routerID, left, g.limit),
			Key:    "warn-routes/" + g.routerID + "/" + strconv.Itoa(left),
		})
	}
	return out, nil
}

// Apply removes one route with remove_extraroutes, after re-reading the
// router (gone route: done) and the instances (next hop live again:
// ErrPrecondition). A "warn" action does nothing.
func (g *RouteGC) Apply(ctx context.Context, a remediate.Action) error {
	if a.Verb == VerbWarn {
		return nil
	}
	d, ok := a.Data.(routeData)
	if !ok {
		return fmt.Errorf("%s: action without route data", a.Target)
	}
	r, err := routers.Get(ctx, g.c.Network, g.routerID).Extract()
	if err != nil {
		return fmt.Errorf("get router %s: %w", g.routerID, err)
	}
	present := false
	for _, rt := range r.Routes {
		if rt.DestinationCIDR == d.route.DestinationCIDR && rt.NextHop == d.route.NextHop {
			present = true
		}
	}
	if !present {
		return nil
	}
	live, err := g.liveHops(ctx)
	if err != nil {
		return fmt.Errorf("recheck instances: %w", errors.Join(err, remediate.ErrPrecondition))
	}
	if hop, err := netip.ParseAddr(d.route.NextHop); err == nil && live[hop] != "" {
		return fmt.Errorf("next hop %s is instance %s again: %w", d.route.NextHop, live[hop], remediate.ErrPrecondition)
	}
	routes := []routers.Route{d.route}
	if _, err := extraroutes.Remove(ctx, g.c.Network, g.routerID, extraroutes.Opts{Routes: &routes}).Extract(); err != nil {
		if gophercloud.ResponseCodeIs(err, 404) {
			return fmt.Errorf("router %s is gone: %w", g.routerID, remediate.ErrPrecondition)
		}
		return fmt.Errorf("remove route %s via %s: %w", d.route.DestinationCIDR, d.route.NextHop, precondition(err))
	}
	return nil
}
