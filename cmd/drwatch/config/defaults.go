package config

import (
	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/internal/field"
	"strings"
	"time"
)

func hasType(list, t string) bool {
	for _, s := range strings.Split(list, ",") {
		if s == t {
			return true
		}
	}
	return false
}

// derive resolves the defaults that depend on other fields.
func derive(c *Config, present func(string) bool) {
	c.Policy = c.Policy.WithDerivedDefaults(len(c.Peers), func(path string) bool { return present("policy." + path) })
	deriveExchangeTimeout(&c.DNS.Sections, c.Policy.Interval)
	deriveDrill(c, present)
	deriveProbeTimeouts("sites", &c.Sites, c.Policy.Timeout, present)
	labels := field.Labels{}
	for i := range c.Groups {
		g := &c.Groups[i]
		gp := "groups[" + labels.Next(g.Name, i) + "]"
		deriveGroup(gp, g, c, present)
		deriveProbeTimeouts(gp+".sites", &g.Sites, c.Policy.Timeout, present)
	}
}

// deriveExchangeTimeout bounds one RFC 2136 exchange of the sections by
// the probe interval: at most an interval (1s..5s), so that a query lost
// while the server is down does not delay the retry after it returns.
func deriveExchangeTimeout(s *dnsprovider.Sections, interval time.Duration) {
	if s.RFC2136 != nil {
		s.RFC2136.Timeout = min(max(interval, time.Second), 5*time.Second)
	}
}

// deriveProbeTimeouts gives each probe of sites (at path) that sets no
// timeout the policy's.
func deriveProbeTimeouts(path string, sites *Sites, timeout time.Duration, present func(string) bool) {
	for _, site := range []struct {
		path string
		s    *Site
	}{{path + ".primary", &sites.Primary}, {path + ".backup", &sites.Backup}} {
		labels := field.Labels{}
		for i := range site.s.Probes {
			p := &site.s.Probes[i]
			pp := site.path + ".probes[" + labels.Next(p.Name, i) + "]"
			if !present(pp + ".timeout") {
				p.Timeout = timeout
			}
		}
	}
}

// deriveGroup gives group g (at path gp) the policy's values for what it
// leaves out, the dns section's zone, and a fence of its own. Its
// failback_after is the policy's only when it leaves failback out too: a
// group that sets failback: manual under a policy with failback: auto
// must not inherit a failback_after it may not have.
func deriveGroup(gp string, g *Group, c *Config, present func(string) bool) {
	if !present(gp + ".auto_failover") {
		g.AutoFailover = c.Policy.AutoFailover
	}
	if !present(gp + ".block_window") {
		g.BlockWindow = c.Policy.BlockWindow
	}
	if !present(gp + ".failback") {
		g.Failback = c.Policy.Failback
		if !present(gp + ".failback_after") {
			g.FailbackAfter = c.Policy.FailbackAfter
		}
	}
	if !present(gp + ".dns.zone") {
		g.DNS.Zone = c.DNS.Zone
	}
	if !present(gp+".dns.fence") && g.Name != "" {
		g.DNS.FenceName = GroupFence(g.Name)
	}
	// A provider of the group's own is verified in its own right, never
	// by the dns section's servers.
	if g.DNS.Provider != "" && g.DNS.Verify == nil {
		g.DNS.Verify = &dnsprovider.VerifyConfig{}
		field.SetDefaults(g.DNS.Verify)
	}
	deriveExchangeTimeout(&g.DNS.Sections, c.Policy.Interval)
}
