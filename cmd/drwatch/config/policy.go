package config

import (
	"slices"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/probes"
)

// ReplicatedPolicy is the policy every replica decides by: the decision
// core builds it from the policy section, with the peers that vote, each
// site's probes, and the zone and records of the dns section, and one
// failover.Group per entry of groups. A config without groups builds the
// policy it built before groups existed, so its hash does not move.
func (c *Config) ReplicatedPolicy() failover.Policy {
	var nodes []string
	for _, peer := range c.Peers {
		nodes = append(nodes, peer.ID)
	}
	p := c.Policy.Build(nodes, c.Sites.policy(), c.DNS.Zone, slices.Clone(c.DNS.Records))
	for _, g := range c.Groups {
		p.Groups = append(p.Groups, failover.Group{
			Name:         g.Name,
			AutoFailover: g.AutoFailover == nil || *g.AutoFailover,
			BlockWindow:  g.BlockWindow,
			Failback:     failover.FailbackPolicy{Mode: g.Failback, After: g.FailbackAfter},
			Sites:        g.Sites.policy(),
			Zone:         g.DNS.Zone,
			Records:      slices.Clone(g.DNS.Records),
			FailbackGate: slices.Clone(g.FailbackGate),
		})
	}
	return p
}

// policy is what the decision core knows of the sites' probes: their
// names, and which decide.
func (s Sites) policy() map[failover.Site]failover.SitePolicy {
	sites := map[failover.Site]failover.SitePolicy{}
	for site, s := range map[failover.Site]Site{failover.Primary: s.Primary, failover.Backup: s.Backup} {
		var sp failover.SitePolicy
		for _, pr := range s.Probes {
			sp.Probes = append(sp.Probes, failover.ProbeRef{Name: pr.Name, Critical: pr.IsCritical()})
		}
		sites[site] = sp
	}
	return sites
}

// HasDefaultGroup reports whether the top-level sites and dns.records
// describe a failover group (failover.DefaultGroup): always without
// groups, and with groups when dns.records names a record.
func (c *Config) HasDefaultGroup() bool { return len(c.Groups) == 0 || len(c.DNS.Records) > 0 }

// ProbedSites is every probe this watcher runs: the default group's, in
// its order, then each group's not named yet on that site. A probe that
// several groups name (validated to be one definition) runs once per
// round, critical when any group counts it so (the scheduler re-probes a
// site on a failing critical probe); each group's decisions count it with
// the group's own flag.
func (c *Config) ProbedSites() Sites {
	if len(c.Groups) == 0 {
		return c.Sites
	}
	out := Sites{Primary: Site{Probes: slices.Clone(c.Sites.Primary.Probes)}, Backup: Site{Probes: slices.Clone(c.Sites.Backup.Probes)}}
	for _, g := range c.Groups {
		out.Primary.Probes = appendNew(out.Primary.Probes, g.Sites.Primary.Probes)
		out.Backup.Probes = appendNew(out.Backup.Probes, g.Sites.Backup.Probes)
	}
	return out
}

// appendNew appends to list the probes of more whose name it lacks, and
// makes critical those of list that more has critical.
func appendNew(list, more []probes.Spec) []probes.Spec {
	for _, p := range more {
		i := slices.IndexFunc(list, func(q probes.Spec) bool { return q.Name == p.Name })
		switch {
		case i < 0:
			list = append(list, p)
		case p.IsCritical() && !list[i].IsCritical():
			list[i].Critical = p.Critical
		}
	}
	return list
}

// GroupDNS is the provider configuration group writes through: the dns
// section with the group's zone and fence, or the group's own provider
// when it names one (GroupDNS.ProviderConfig), whose errors then name the
// group's fields (Path groups[NAME].dns). For failover.DefaultGroup
// (or "") it is the dns section itself. ok is false for a group the config
// does not have.
func (c *Config) GroupDNS(group string) (cfg dnsprovider.Config, ok bool) {
	if group == "" || group == failover.DefaultGroup {
		return c.DNS.Config, c.HasDefaultGroup()
	}
	for _, g := range c.Groups {
		if g.Name == group {
			cfg = g.DNS.ProviderConfig(c.DNS.Config)
			if g.DNS.Provider != "" {
				// Its credentials are the group's, not the dns section's.
				cfg.Path = "groups[" + g.Name + "].dns"
			}
			return cfg, true
		}
	}
	return dnsprovider.Config{}, false
}

// ProviderConfig is the provider configuration the group writes through,
// in its zone and fence: its own provider and sections when it names a
// provider, else top's (the dns section's); verified as its verify says,
// else as top's.
func (d GroupDNS) ProviderConfig(top dnsprovider.Config) dnsprovider.Config {
	cfg := top
	if d.Provider != "" {
		cfg = dnsprovider.Config{Provider: d.Provider, Sections: d.Sections}
	}
	cfg.Zone, cfg.FenceName = d.Zone, d.FenceName
	if d.Verify != nil {
		cfg.Verify = *d.Verify
	}
	return cfg
}

// OwnVerifier reports whether the group is verified otherwise than the
// dns section: in another zone, at a provider of its own, or by a verify
// section of its own.
func (d GroupDNS) OwnVerifier(top dnsprovider.Config) bool {
	return d.Zone != top.Zone || d.Provider != "" || d.Verify != nil
}

// GroupFence is the fence record a group writes with when its file leaves
// it out: "_drwatch-" and the group's name, so that two groups in one
// zone never share a fence.
func GroupFence(name string) string { return "_drwatch-" + name }
