package config

import (
	"slices"

	"github.com/drwatch/drwatch/failover"
)

// ReplicatedPolicy is the policy every replica decides by: the decision
// core builds it from the policy section, with the peers that vote, each
// site's probes, and the zone and records of the dns section.
func (c *Config) ReplicatedPolicy() failover.Policy {
	var nodes []string
	for _, peer := range c.Peers {
		nodes = append(nodes, peer.ID)
	}
	sites := map[failover.Site]failover.SitePolicy{}
	for site, s := range map[failover.Site]Site{failover.Primary: c.Sites.Primary, failover.Backup: c.Sites.Backup} {
		var sp failover.SitePolicy
		for _, pr := range s.Probes {
			sp.Probes = append(sp.Probes, failover.ProbeRef{Name: pr.Name, Critical: pr.IsCritical()})
		}
		sites[site] = sp
	}
	return c.Policy.Build(nodes, sites, c.DNS.Zone, slices.Clone(c.DNS.Records))
}
