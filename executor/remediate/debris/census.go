package debris

import (
	"context"

	"github.com/drwatch/drwatch/executor/remediate"
)

var _ remediate.Census = (*Debris)(nil)

// Census counts the cluster's resources (load balancers, floating IPs and
// volumes with its naming or metadata) and, of them, the ones acts delete.
// A cluster rebuilt after a meltdown whose Services are not back yet makes
// every load balancer look orphaned at once: the disruption brake holds
// that, so its load balancers survive until the Services return. A
// decommissioned cluster qualifies whole: set brake_share 1 there, and let
// the caps pace the clean-up. It reads the world afresh and never writes to it (only the reclaim
// record of what it saw, as Plan).
func (d *Debris) Census(ctx context.Context, acts []remediate.Action) (remediate.Population, error) {
	inv, err := d.inventory(ctx)
	if err != nil {
		return remediate.Population{}, err
	}
	pop := remediate.Population{Total: inv.total, Unit: "cluster resources"}
	seen := map[string]bool{}
	for _, a := range acts {
		if a.ReportOnly == "" && !seen[a.Target] {
			seen[a.Target] = true
			pop.Affected++
		}
	}
	return pop, nil
}
