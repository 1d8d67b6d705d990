package openstack

import (
	"context"
	"strings"

	"github.com/drwatch/drwatch/failover/remediate"
)

var _ remediate.Census = (*NeverReady)(nil)

// Census counts the cluster's instances (those the selector matches, not
// deleted) and the distinct ones acts would reboot; a warn changes nothing
// and is not counted. It only reads.
func (n *NeverReady) Census(ctx context.Context, acts []remediate.Action) (remediate.Population, error) {
	insts, err := listInstances(ctx, n.c.Compute, n.sel)
	if err != nil {
		return remediate.Population{}, err
	}
	pop := remediate.Population{Unit: "cluster instances"}
	for _, in := range insts {
		if !in.gone() {
			pop.Total++
		}
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
