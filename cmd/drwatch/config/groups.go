package config

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/internal/field"
	"github.com/drwatch/drwatch/probes"
)

// groups checks every failover group: its name, its sites as the
// top-level ones, its policy fields by the policy section's own rules, its
// zone and fence by the dns section's, and its records against its zone
// and every other group's (owners, filled by dns). Across groups, a fence
// is one group's in its zone, and a probe named on one site by several is
// one definition.
func (v *validator) groups(c *Config, owners map[string]string) {
	if len(c.Groups) == 0 {
		return
	}
	if len(c.Groups)+1 > failover.MaxGroups {
		v.add("groups", "%d groups, at most %d", len(c.Groups), failover.MaxGroups-1)
	}
	fences := map[string]string{fenceKey(c.DNS.Zone, c.DrillFence()): "the drill fence"}
	defs := map[string]probeDef{}
	if c.HasDefaultGroup() {
		fences[fenceKey(c.DNS.Zone, c.DNS.FenceName)] = "dns.fence"
		v.sameProbes("sites", c.Sites, defs)
	}
	names := map[string]bool{}
	labels := field.Labels{}
	for i, g := range c.Groups {
		gp := fmt.Sprintf("groups[%s]", labels.Next(g.Name, i))
		switch {
		case !v.required(gp+".name", g.Name):
		case g.Name == failover.DefaultGroup:
			v.add(gp+".name", "%q names the group of the top-level sites and dns.records", g.Name)
		case !failover.ValidGroupName(g.Name):
			v.add(gp+".name", "%q must be 1 to 63 lower-case letters, digits and '-', starting with a letter", g.Name)
		case names[g.Name]:
			v.add(gp+".name", "duplicate group %q", g.Name)
		}
		names[g.Name] = true
		v.site(gp+".sites.primary", g.Sites.Primary, c.Policy)
		v.failbackGate(gp+".failback_gate", g.FailbackGate, g.Sites.Primary.Probes)
		v.site(gp+".sites.backup", g.Sites.Backup, c.Policy)
		v.sameProbes(gp+".sites", g.Sites, defs)
		v.groupPolicy(gp, g, c.Policy)
		v.groupDNS(gp, g, c.DNS.Config, fences)
		if len(g.DNS.Records) == 0 {
			v.add(gp+".dns.records", "required: at least one record to flip")
		}
		v.records(gp+".dns", g.DNS.Zone, g.DNS.Records, owners)
	}
}

// groupPolicy checks a group's own policy fields by the policy section's
// rules for them.
func (v *validator) groupPolicy(gp string, g Group, pol failover.PolicySpec) {
	pol.AutoFailover, pol.BlockWindow, pol.Failback, pol.FailbackAfter = g.AutoFailover, g.BlockWindow, g.Failback, g.FailbackAfter
	for _, e := range pol.Validate() {
		switch e.Path {
		case "block_window", "failback", "failback_after":
			v.add(gp+"."+e.Path, "%s", e.Msg)
		}
	}
}

// groupDNS checks a group's dns section by the dns section's rules: its
// zone and fence, and, when it names a provider of its own, that
// provider's section and credentials and its verification, each at its
// full path (groups[NAME].dns.rfc2136.server). Without a provider of its
// own a provider section is refused: it would be ignored. No other group
// (nor the drills) may fence on the same record.
func (v *validator) groupDNS(gp string, g Group, top dnsprovider.Config, fences map[string]string) {
	dp := gp + ".dns"
	own := g.DNS.Provider != ""
	if !own {
		for _, name := range g.DNS.Sections.Set() {
			v.add(dp+"."+name, "section for provider %s, but the group names no provider of its own: set %s.provider, or leave the section out to write through dns.provider", name, dp)
		}
	}
	bad := false
	for _, e := range g.DNS.ProviderConfig(top).Validate() {
		switch {
		case e.Path == "zone" || e.Path == "fence":
			bad = true
		case own:
		case g.DNS.Verify != nil && strings.HasPrefix(e.Path, "verify."):
		default:
			continue // the dns section's own, reported there
		}
		v.add(dp+"."+e.Path, "%s", e.Msg)
	}
	if own {
		v.credentials(dp, g.DNS.ProviderConfig(top))
	}
	if bad {
		return
	}
	k := fenceKey(g.DNS.Zone, g.DNS.FenceName)
	if other, dup := fences[k]; dup {
		v.add(gp+".dns.fence", "%q in zone %s is %s too: each group needs its own fence, or one group's decision would fence another's", g.DNS.FenceName, g.DNS.Zone, other)
		return
	}
	fences[k] = gp + ".dns.fence"
}

// fenceKey is a fence record's absolute name.
func fenceKey(zone, fence string) string {
	q, _ := qualify(fence, zone)
	return strings.ToLower(q)
}

// probeDef is where a probe was first defined, and how.
type probeDef struct {
	path string
	spec probes.Spec
}

// sameProbes checks that each probe of sites (at path) is defined as the
// probe of that site and name first met in defs, which it adds to: the
// watchers run it once per round for every group that names it.
func (v *validator) sameProbes(path string, sites Sites, defs map[string]probeDef) {
	for _, site := range []struct {
		name   string
		probes []probes.Spec
	}{{"primary", sites.Primary.Probes}, {"backup", sites.Backup.Probes}} {
		labels := field.Labels{}
		for i, p := range site.probes {
			pp := fmt.Sprintf("%s.%s.probes[%s]", path, site.name, labels.Next(p.Name, i))
			if p.Name == "" {
				continue
			}
			key := site.name + "/" + p.Name
			first, seen := defs[key]
			switch {
			case !seen:
				defs[key] = probeDef{path: pp, spec: p}
			case !sameProbe(first.spec, p):
				v.add(pp, "differs from %s: a probe named on one site by several groups runs once per round, so each must define it the same (only critical may differ)", first.path)
			}
		}
	}
}

// sameProbe reports whether a and b are one probe: equal but for
// critical, which each group sets for itself.
func sameProbe(a, b probes.Spec) bool {
	a.Critical, b.Critical = nil, nil
	return reflect.DeepEqual(a, b)
}
