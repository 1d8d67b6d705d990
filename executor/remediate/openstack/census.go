package openstack

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
)

var _ remediate.Census = (*NeverReady)(nil)

// Census counts the cluster's instances (those the selector matches, not
// deleted) and the distinct ones acts would reboot; a warn changes nothing
// and is not counted. It only reads.
func (n *NeverReady) Census(ctx context.Context, acts []remediate.Action) (remediate.Population, error) {
	pop, err := instancePopulation(ctx, n.c.Compute, n.sel)
	if err != nil {
		return pop, err
	}
	seen := map[string]bool{}
	for _, a := range acts {
		if strings.HasPrefix(a.Verb, "reboot") && !seen[a.Target] {
			seen[a.Target] = true
			pop.Affected++
		}
	}
	return pop, nil
}

var _ remediate.Census = (*SecurityGroups)(nil)

// Census counts the cluster's instances (those the selector matches, not
// deleted) and the distinct ones acts would change. Most of them missing
// the group or the pair at once means the group or the port layout
// changed under the cluster (a group recreated, a new network), which
// wants a human rather than a write to every instance. It only reads.
func (s *SecurityGroups) Census(ctx context.Context, acts []remediate.Action) (remediate.Population, error) {
	pop, err := instancePopulation(ctx, s.c.Compute, s.sel)
	if err != nil {
		return pop, err
	}
	seen := map[string]bool{}
	for _, a := range acts {
		server := ""
		switch d := a.Data.(type) {
		case sgData:
			server = d.server
		case pairData:
			server = d.server
		}
		if server != "" && !seen[server] {
			seen[server] = true
			pop.Affected++
		}
	}
	return pop, nil
}

var _ remediate.Census = (*RouteGC)(nil)

// Census counts the router's extra routes into the pod CIDR and the
// distinct ones acts would remove; a warning removes nothing. Most of the
// routes stale at once means drwatch's view of the nodes is wrong (a
// Kubernetes API that lost its nodes, pod CIDRs reassigned), not that the
// routes are. It only reads.
func (g *RouteGC) Census(ctx context.Context, acts []remediate.Action) (remediate.Population, error) {
	r, err := routers.Get(ctx, g.c.Network, g.routerID).Extract()
	if err != nil {
		return remediate.Population{}, fmt.Errorf("get router %s: %w", g.routerID, err)
	}
	pop := remediate.Population{Unit: "routes into the pod CIDR"}
	for _, rt := range r.Routes {
		if d, err := netip.ParsePrefix(rt.DestinationCIDR); err == nil && g.inPodCIDR(d) {
			pop.Total++
		}
	}
	seen := map[string]bool{}
	for _, a := range acts {
		if a.Verb == "remove-route" && !seen[a.Target] {
			seen[a.Target] = true
			pop.Affected++
		}
	}
	return pop, nil
}

// instancePopulation counts the cluster's instances that are not deleted:
// the population of the repairs that act on instances.
func instancePopulation(ctx context.Context, compute *gophercloud.ServiceClient, sel Selector) (remediate.Population, error) {
	insts, err := listInstances(ctx, compute, sel)
	if err != nil {
		return remediate.Population{}, err
	}
	pop := remediate.Population{Unit: "cluster instances"}
	for _, in := range insts {
		if !in.gone() {
			pop.Total++
		}
	}
	return pop, nil
}
