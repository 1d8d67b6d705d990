package octavia

import (
	"context"

	"github.com/drwatch/drwatch/executor/remediate"
)

var _ remediate.Census = (*StuckLB)(nil)

// Census counts the watched load balancers of the project (all but those
// already DELETED) and, of them, the ones acts fail over. It reads the list
// afresh and never writes.
func (s *StuckLB) Census(ctx context.Context, acts []remediate.Action) (remediate.Population, error) {
	client, project, done, err := s.client(ctx)
	if err != nil {
		return remediate.Population{}, err
	}
	defer done()
	lbs, err := s.watched(ctx, client, project)
	if err != nil {
		return remediate.Population{}, err
	}
	pop := remediate.Population{Unit: "load balancers"}
	for _, lb := range lbs {
		if lb.ProvisioningStatus != "DELETED" {
			pop.Total++
		}
	}
	seen := map[string]bool{}
	for _, a := range acts {
		if a.Verb == VerbFailover && !seen[a.Target] {
			seen[a.Target] = true
			pop.Affected++
		}
	}
	return pop, nil
}
