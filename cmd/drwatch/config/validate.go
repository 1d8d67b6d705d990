package config

import (
	"fmt"
	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/all"
	"github.com/drwatch/drwatch/executor/remediate/hooks"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/internal/dnsname"
	"github.com/drwatch/drwatch/internal/field"
	"github.com/drwatch/drwatch/internal/kubeconfig"
	"github.com/drwatch/drwatch/internal/regularfile"
	"github.com/drwatch/drwatch/probes"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// validator checks the rules that span fields. Paths it reports use list
// items' names, matching the walker's, so positions can be found.
type validator struct {
	file     string
	pos      map[string]pos
	opts     Options
	problems Problems
}

func (v *validator) add(path, format string, args ...any) {
	p := v.lookup(path)
	v.problems = append(v.problems, Problem{File: v.file, Line: p.line, Column: p.col, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// lookup finds the position of path, or of its nearest ancestor present in
// the file (a missing field is reported where its parent is).
func (v *validator) lookup(path string) pos {
	for p := path; p != ""; {
		if at, ok := v.pos[p]; ok {
			return at
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return pos{}
}

func (v *validator) present(path string) bool {
	_, ok := v.pos[path]
	return ok
}

func (v *validator) config(c *Config) {
	derive(c, v.present)
	v.node(c)
	v.tls(c)
	v.api(c)
	v.raft(c)
	v.policy(c)
	v.defaultGroupSites(c)
	records := v.dns(c)
	v.groups(c, records)
	v.remediations(c)
	v.hooks(c)
	v.clusterHealth(c)
	v.drill(c)
	v.log(c)
}

// clusterHealth applies the section's defaults and rules.
func (v *validator) clusterHealth(c *Config) {
	c.ClusterHealth = c.ClusterHealth.Defaulted()
	v.section("cluster_health", c.ClusterHealth.Validate())
}

// hooks checks the top-level hooks section and each group's own. The
// top-level hooks run around the default group's flips only: without a
// default group they would never run, so they are refused.
func (v *validator) hooks(c *Config) {
	v.hooksAt("hooks", c.Hooks)
	if !c.HasDefaultGroup() && len(c.Hooks.PreFailover)+len(c.Hooks.PostFailover) > 0 {
		v.add("hooks", "with groups and no dns.records there is no default group whose flips they would run around: put them in the groups' own hooks (groups[].hooks)")
	}
	labels := field.Labels{}
	for i, g := range c.Groups {
		v.hooksAt(fmt.Sprintf("groups[%s].hooks", labels.Next(g.Name, i)), g.Hooks)
	}
}

// hooksAt checks the hooks section h at path by its own rules and its
// files (a webhook's secret_file).
func (v *validator) hooksAt(path string, h hooks.Config) {
	v.section(path, h.Validate())
	for _, phase := range []struct {
		name  string
		hooks []hooks.Hook
	}{{"pre_failover", h.PreFailover}, {"post_failover", h.PostFailover}} {
		labels := field.Labels{}
		for i, hk := range phase.hooks {
			p := fmt.Sprintf("%s.%s[%s]", path, phase.name, labels.Next(hk.Name, i))
			v.fileField(p+".secret_file", hk.SecretFile, false)
		}
	}
}

// remediations applies the section's own defaults and rules, to the
// top-level remediations section and to each group's, then refuses two
// sections whose node-disrupting repairs share a cluster.
func (v *validator) remediations(c *Config) {
	v.remediationsAt("remediations", &c.Remediations)
	labels := field.Labels{}
	for i := range c.Groups {
		gp := fmt.Sprintf("groups[%s]", labels.Next(c.Groups[i].Name, i))
		v.remediationsAt(gp+".remediations", &c.Groups[i].Remediations)
	}
	v.disruptionBudgets(c)
}

// remediationsAt defaults the remediations section *r at path and checks
// it by its own rules and its files.
func (v *validator) remediationsAt(path string, r *all.Config) {
	*r = r.Defaulted()
	v.section(path, r.Validate())
	for _, site := range []struct {
		path string
		kc   kubeconfig.Cluster
	}{{path + ".kubernetes.primary", r.Kubernetes.Primary}, {path + ".kubernetes.backup", r.Kubernetes.Backup}} {
		v.fileField(site.path+".kubeconfig_file", site.kc.Kubeconfig, false)
	}
	for _, cloud := range []struct {
		path string
		auth remediate.OpenStackAuth
	}{{path + ".octavia_stuck_lb", r.OctaviaStuckLB.OpenStackAuth}, {path + ".openstack", r.OpenStack.OpenStackAuth},
		{path + ".cloud_debris", r.CloudDebris.OpenStackAuth}} {
		for _, f := range cloud.auth.Files() {
			v.fileField(cloud.path+"."+f.Field, f.Path, false)
		}
	}
}

// disruptionBudgets refuses two remediations sections (the top-level one
// and a group's, or two groups') that enable node-disrupting repairs on
// one Kubernetes cluster, named by its kubeconfig file and context: each
// section's runner has its own node disruption budget, and two budgets
// on one cluster would together disrupt more nodes than either allows.
// Within one section the repairs share one runner, as before groups.
func (v *validator) disruptionBudgets(c *Config) {
	if len(c.Groups) == 0 {
		return
	}
	type first struct{ section, path string }
	seen := map[kubeconfig.Cluster]first{}
	check := func(section string, r all.Config) {
		for _, d := range all.Disruptions(r) {
			if d.Cluster.Kubeconfig == "" {
				// Build names the missing client; there is no cluster to share.
				continue
			}
			key := kubeconfig.Cluster{Kubeconfig: filepath.Clean(d.Cluster.Kubeconfig), Context: d.Cluster.Context}
			path := section + "." + d.Section + ".mode"
			f, dup := seen[key]
			switch {
			case !dup:
				seen[key] = first{section, path}
			case f.section != section:
				v.add(path, "enables %s on the cluster of %s.kubernetes.%s (kubeconfig_file %s, context %q), whose nodes %s disrupts too: each section's runner has its own node disruption budget, so two on one cluster would not hold; enable the repairs that disrupt one cluster's nodes in one section",
					d.Repair, section, d.Site, d.Cluster.Kubeconfig, d.Cluster.Context, f.path)
			}
		}
	}
	check("remediations", c.Remediations)
	labels := field.Labels{}
	for i, g := range c.Groups {
		check(fmt.Sprintf("groups[%s].remediations", labels.Next(g.Name, i)), g.Remediations)
	}
}

// section reports the problems a section's own Validate found, each path
// under the section's key.
func (v *validator) section(key string, errs field.Errors) {
	for _, e := range errs.Under(key) {
		v.add(e.Path, "%s", e.Msg)
	}
}

func (v *validator) required(path, val string) bool {
	if strings.TrimSpace(val) == "" {
		v.add(path, "required")
		return false
	}
	return true
}

func (v *validator) hostPort(path, val string) {
	var errs field.Errors
	errs.HostPort(path, val)
	for _, e := range errs {
		v.add(e.Path, "%s", e.Msg)
	}
}

// fileField checks a path to a file. Its value may be a secret pasted where
// the path belongs, so no message quotes it: they name the field and the
// problem only, and never the file's contents either.
func (v *validator) fileField(path, val string, required bool) {
	if val == "" {
		if required {
			v.add(path, "required")
		}
		return
	}
	if v.opts.SkipFileChecks {
		return
	}
	if err := regularfile.Check(path, val); err != nil {
		v.add(path, "%s (%s)", regularfile.Reason(err), valueNotShown)
	}
}

// valueNotShown ends a message about a field whose value is withheld.
const valueNotShown = regularfile.ValueNotShown

func (v *validator) node(c *Config) {
	if v.required("node.id", c.Node.ID) && !validID(c.Node.ID) {
		v.add("node.id", "%q must be lower-case letters, digits and '-', 1-63 characters", c.Node.ID)
	}
	v.required("node.data_dir", c.Node.DataDir)
	v.hostPort("node.raft_addr", c.Node.RaftAddr)
	v.hostPort("node.api_addr", c.Node.APIAddr)

	if len(c.Peers) == 0 {
		v.add("peers", "required: list every watcher, this one included")
		return
	}
	if len(c.Peers)%2 == 0 {
		v.add("peers", "%d peers: use an odd number (3 or 5); an even count adds no fault tolerance", len(c.Peers))
	}
	ids, raftAddrs := map[string]bool{}, map[string]bool{}
	self := false
	labels := field.Labels{}
	for i, p := range c.Peers {
		path := fmt.Sprintf("peers[%s]", labels.Next(p.ID, i))
		if v.required(path+".id", p.ID) {
			if ids[p.ID] {
				v.add(path+".id", "duplicate peer id %q", p.ID)
			}
			ids[p.ID] = true
			if !validID(p.ID) {
				v.add(path+".id", "%q must be lower-case letters, digits and '-', 1-63 characters", p.ID)
			}
		}
		v.hostPort(path+".raft_addr", p.RaftAddr)
		v.hostPort(path+".api_addr", p.APIAddr)
		if p.RaftAddr != "" {
			if raftAddrs[p.RaftAddr] {
				v.add(path+".raft_addr", "duplicate raft_addr %s", p.RaftAddr)
			}
			raftAddrs[p.RaftAddr] = true
		}
		if p.ID == c.Node.ID {
			self = true
		}
	}
	if c.Node.ID != "" && !self {
		v.add("node.id", "%q is not in peers", c.Node.ID)
	}
}

var idRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

func validID(s string) bool { return idRE.MatchString(s) }

func (v *validator) tls(c *Config) {
	v.fileField("tls.ca_file", c.TLS.CAFile, true)
	v.fileField("tls.cert_file", c.TLS.CertFile, true)
	v.fileField("tls.key_file", c.TLS.KeyFile, true)
}

func (v *validator) api(c *Config) {
	v.fileField("api.tokens_file", c.API.TokensFile, true)
	if c.API.MaxBodyBytes < 1024 || c.API.MaxBodyBytes > 16<<20 {
		v.add("api.max_body_bytes", "%d must be between 1024 and %d", c.API.MaxBodyBytes, 16<<20)
	}
	if c.API.ClientCerts != "optional" && c.API.ClientCerts != "required" {
		v.add("api.client_certs", "%q must be optional or required", c.API.ClientCerts)
	}
}

func (v *validator) positive(path string, d time.Duration) bool {
	if d <= 0 {
		v.add(path, "%s must be > 0", d)
		return false
	}
	return true
}

// atMost reports whether d is at most limit; upper bounds catch unit
// mistakes (2h for 2s) and keep time sums far from overflow.
func (v *validator) atMost(path string, d, limit time.Duration) bool {
	if d > limit {
		v.add(path, "%s must be ≤ %s", d, limit)
		return false
	}
	return true
}

func (v *validator) raft(c *Config) {
	v.section("raft", c.Raft.Validate())
}

// policy applies the section's own rules and checks its quorum against
// the peers.
func (v *validator) policy(c *Config) {
	v.section("policy", c.Policy.Validate())
	if n := len(c.Peers); n > 0 {
		if q := c.Policy.Quorum; q <= n/2 || q > n {
			v.add("policy.quorum", "%d is not a majority of the %d peers (want %d..%d)", q, n, n/2+1, n)
		}
	}
}

// defaultGroupSites checks the top-level sites, which are the default
// group's: a config whose groups name every record has none, and then
// neither sites nor policy.failback_gate may say anything.
func (v *validator) defaultGroupSites(c *Config) {
	if c.HasDefaultGroup() {
		v.site("sites.primary", c.Sites.Primary, c.Policy)
		v.failbackGate("policy.failback_gate", c.Policy.FailbackGate, c.Sites.Primary.Probes)
		v.site("sites.backup", c.Sites.Backup, c.Policy)
		return
	}
	if len(c.Sites.Primary.Probes)+len(c.Sites.Backup.Probes) > 0 {
		v.add("sites", "with groups and no dns.records there is no default group to probe for: put these probes in the groups that use them")
	}
	if len(c.Policy.FailbackGate) > 0 {
		v.add("policy.failback_gate", "with groups and no dns.records there is no default group to gate: set failback_gate on each group")
	}
}

// failbackGate checks that every probe a failback gate (at path) names is
// one of primary.
func (v *validator) failbackGate(path string, gate []string, primary []probes.Spec) {
	names := map[string]bool{}
	for _, p := range primary {
		names[p.Name] = true
	}
	for i, g := range gate {
		if !names[g] {
			v.add(fmt.Sprintf("%s[%d]", path, i), "%q is not a probe of the primary site", g)
		}
	}
}

// site checks one site's probes: their own rules are the probes package's;
// what crosses sections (policy.interval) and the files they name are here.
func (v *validator) site(path string, s Site, pol failover.PolicySpec) {
	v.section(path+".probes", probes.ValidateProbes(s.Probes))
	labels := field.Labels{}
	for i, p := range s.Probes {
		pp := fmt.Sprintf("%s.probes[%s]", path, labels.Next(p.Name, i))
		if !probes.KnownType(p.Type) {
			continue
		}
		if p.Timeout > 0 && pol.Interval > 0 && p.Timeout >= pol.Interval {
			v.add(pp+".timeout", "%s must be < policy.interval (%s)", p.Timeout, pol.Interval)
		}
		v.foreignFields(pp, p.Type)
		v.probeFiles(pp, p)
	}
}

// foreignFields reports fields set in the file that belong to another probe type.
func (v *validator) foreignFields(pp, typ string) {
	for name, f := range yamlFields(probeStructType) {
		types := f.Tag.Get("types")
		if types == "" || hasType(types, typ) {
			continue
		}
		if v.present(pp + "." + name) {
			v.add(pp+"."+name, "not a field of a %s probe (it applies to %s)", typ, strings.ReplaceAll(types, ",", ", "))
		}
	}
}

// probeFiles checks that the files a probe names exist; which it reads is
// its type's (probes.Spec.Files), whether they are required the probe's
// own rule.
func (v *validator) probeFiles(pp string, p probes.Spec) {
	for _, f := range p.Files() {
		v.fileField(pp+"."+f.Field, f.Path, false)
	}
}

// dns checks the provider's section with its own rules (dnsprovider), the
// files and variables its credentials come from, and the records against
// the zone. It returns the records' owners (see records).
func (v *validator) dns(c *Config) map[string]string {
	d := c.DNS
	for _, e := range d.Config.Validate().Under("dns") {
		v.add(e.Path, "%s", e.Msg)
	}
	v.credentials("dns", d.Config)
	v.fileField("dns.break_glass.key_file", d.BreakGlass.KeyFile, false)
	v.positive("dns.break_glass.max_age", d.BreakGlass.MaxAge)
	if len(d.Records) == 0 && len(c.Groups) == 0 {
		v.add("dns.records", "required: at least one record to flip")
	}
	owners := map[string]string{}
	v.records("dns", d.Zone, d.Records, owners)
	return owners
}

// credentials checks the files and environment variables the provider
// of the dns section at path reads its credentials from.
func (v *validator) credentials(path string, dc dnsprovider.Config) {
	for _, cr := range dc.Credentials() {
		cp := path + "." + cr.Path
		v.fileField(cp, cr.File, false)
		if cr.Env != "" && !v.opts.SkipFileChecks {
			if _, ok := os.LookupEnv(cr.Env); !ok {
				v.add(cp, "no such environment variable (%s)", valueNotShown)
			}
		}
	}
}

// records checks the records of one group (the dns section at path) against
// its zone. owners maps each record already checked, by absolute name and
// type, to its field path: a record belongs to one group, as two groups
// writing one RRset would undo each other.
func (v *validator) records(path, zone string, records []failover.Record, owners map[string]string) {
	zoneOK := dnsname.IsDomainName(zone)
	labels := field.Labels{}
	for i, r := range records {
		rp := fmt.Sprintf("%s.records[%s]", path, labels.Next(r.Name, i))
		if !v.required(rp+".name", r.Name) {
			continue
		}
		fq := r.Name
		if zoneOK {
			var ok bool
			fq, ok = qualify(r.Name, zone)
			if !ok {
				v.add(rp+".name", "%q is not in zone %s", r.Name, zone)
			}
		}
		key := strings.ToLower(fq) + "/" + r.Type
		if other, dup := owners[key]; dup {
			if strings.HasPrefix(other, path+".") {
				v.add(rp+".name", "duplicate record %s %s", r.Name, r.Type)
			} else {
				v.add(rp+".name", "record %s %s is %s too: a record belongs to one group", r.Name, r.Type, other)
			}
		} else {
			owners[key] = rp
		}
		if r.TTL < 1 || r.TTL > 86400 {
			v.add(rp+".ttl", "%d must be 1-86400 seconds", r.TTL)
		}
		switch r.Type {
		case "A", "AAAA", "CNAME":
		default:
			v.add(rp+".type", "%q must be A, AAAA or CNAME", r.Type)
			continue
		}
		for _, site := range []struct {
			name string
			vals []string
		}{{"primary", r.Primary}, {"backup", r.Backup}} {
			sp := rp + "." + site.name
			if len(site.vals) == 0 {
				v.add(sp, "required: the record needs targets for both sites")
				continue
			}
			if r.Type == "CNAME" && len(site.vals) != 1 {
				v.add(sp, "a CNAME has exactly one target")
			}
			for _, val := range site.vals {
				v.recordValue(sp, r.Type, val)
			}
		}
	}
}

func (v *validator) recordValue(path, typ, val string) {
	switch typ {
	case "A", "AAAA":
		a, err := netip.ParseAddr(val)
		if err != nil {
			v.add(path, "%q is not an IP address", val)
			return
		}
		if typ == "A" && !dnsname.AddrFits(typ, a) {
			v.add(path, "%q is not an IPv4 address", val)
		}
		if typ == "AAAA" && !dnsname.AddrFits(typ, a) {
			v.add(path, "%q is not an IPv6 address", val)
		}
	case "CNAME":
		if !dnsname.IsDomainName(strings.TrimSuffix(val, ".")+".") || !strings.HasSuffix(val, ".") {
			v.add(path, "%q must be a fully qualified name ending in '.'", val)
		}
	}
}

func (v *validator) log(c *Config) {
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		v.add("log.level", "%q must be debug, info, warn or error", c.Log.Level)
	}
	if c.Log.Format != "text" && c.Log.Format != "json" {
		v.add("log.format", "%q must be text or json", c.Log.Format)
	}
}

// qualify returns name as a lower-case FQDN in zone, and whether it lies in
// the zone. "@" is the apex.
func qualify(name, zone string) (string, bool) {
	fq := dnsname.Absolute(name, zone)
	if strings.HasSuffix(name, ".") {
		return fq, dnsname.InZone(fq, strings.ToLower(zone))
	}
	return fq, name == "@" || dnsname.IsDomainName(fq)
}
