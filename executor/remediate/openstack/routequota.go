package openstack

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
)

// RouteQuota is how full one Neutron router's extra routes are.
type RouteQuota struct {
	RouterID string
	// Used counts every extra route of the router: Neutron's max_routes
	// bounds them all, not only those into the pod CIDR.
	Used int
	// Limit is remediations.openstack.neutron_route_gc.route_limit, the
	// figure neutron-route-gc warns against.
	Limit int
}

// ReadRouteQuota reads routerID's extra routes with one GET; it writes
// nothing, so the cluster health page may call it on every watcher whether
// or not neutron-route-gc is enabled.
func ReadRouteQuota(ctx context.Context, c *Clients, routerID string, limit int) (RouteQuota, error) {
	r, err := routers.Get(ctx, c.Network, routerID).Extract()
	if err != nil {
		return RouteQuota{}, fmt.Errorf("get router %s: %w", routerID, err)
	}
	return RouteQuota{RouterID: routerID, Used: len(r.Routes), Limit: limit}, nil
}
