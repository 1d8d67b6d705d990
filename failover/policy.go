package failover

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/drwatch/drwatch/internal/dnsname"
)

// Site names one of the two sites drwatch moves traffic between.
type Site string

// The two sites. Primary is active until a decision says otherwise.
const (
	Primary Site = "primary"
	Backup  Site = "backup"
)

// sites lists both sites in the one order every loop uses, so output is deterministic.
var sites = [2]Site{Primary, Backup}

// Valid reports whether s is Primary or Backup.
func (s Site) Valid() bool { return s == Primary || s == Backup }

// Other returns the site that is not s.
func (s Site) Other() Site {
	if s == Primary {
		return Backup
	}
	return Primary
}

// Failback modes.
const (
	FailbackManual = "manual"
	FailbackAuto   = "auto"
)

// ProbeRef names a probe of a site. Only critical probes vote on the site's health.
type ProbeRef struct {
	Name     string `json:"name"`
	Critical bool   `json:"critical"`
}

// SitePolicy lists the probes that judge one site.
type SitePolicy struct {
	Probes []ProbeRef `json:"probes"`
}

// FailbackPolicy says whether drwatch moves back to the primary on its own.
// Mode is "manual" (the default when empty) or "auto"; with "auto" the primary
// must have been UP at quorum continuously for After.
type FailbackPolicy struct {
	Mode  string        `json:"mode"`
	After time.Duration `json:"after"`
}

// Record is one DNS RRset that points at the active site. Name is relative to
// Policy.Zone, "@" for the apex, or absolute when it ends in ".". TTL is in seconds.
// The yaml, doc and default tags are the config file's dns.records.
type Record struct {
	Name    string   `json:"name" yaml:"name" doc:"Relative to the zone (lms, @) or fully qualified inside it."`
	Type    string   `json:"type" yaml:"type" default:"A" doc:"A, AAAA or CNAME."`
	TTL     int      `json:"ttl" yaml:"ttl" default:"60" doc:"Seconds. Low, so the flip takes effect quickly."`
	Primary []string `json:"primary" yaml:"primary" doc:"Values while the primary is active."`
	Backup  []string `json:"backup" yaml:"backup" doc:"Values while the backup is active."`
}

// Policy is the replicated rule set: who votes, how many votes decide, and
// which records move. It is set through a SetPolicy command so that every
// replica decides by the same rules.
type Policy struct {
	// Nodes are the voting watcher IDs.
	Nodes []string `json:"nodes"`
	// Quorum is how many votes decide; a majority of Nodes.
	Quorum int `json:"quorum"`
	// Fall is how many failures in a row take a probe DOWN; Rise how many
	// successes in a row bring a DOWN probe back UP. Both >= 1.
	Fall int `json:"fall"`
	Rise int `json:"rise"`
	// Interval is the probe round interval, used for staleness and estimates.
	Interval time.Duration `json:"interval"`
	// StaleAfter is the report age after which a node abstains; 0 means 3*Interval.
	StaleAfter time.Duration `json:"stale_after"`
	// AutoFailover enables automatic decisions; off means manual-only.
	AutoFailover bool `json:"auto_failover"`
	// BlockWindow blocks automatic flips after one, until an Ack or its end; 0 never blocks.
	BlockWindow time.Duration  `json:"block_window"`
	Failback    FailbackPolicy `json:"failback"`
	// Sites holds the probes of Primary and Backup.
	Sites map[Site]SitePolicy `json:"sites"`
	// Zone is the DNS zone of Records, e.g. "example.org.".
	Zone    string   `json:"zone"`
	Records []Record `json:"records"`
	// FailbackGate names primary probes (usually the Octavia load balancer
	// probes, often not critical) that must be UP at quorum before traffic
	// may go back to the primary, by hand or automatically: after a
	// meltdown Octavia comes back last, and a failback onto load balancers
	// stuck in ERROR is a second outage.
	FailbackGate []string `json:"failback_gate,omitempty"`
	// MaxPause bounds how far ahead a pause may end (a pause until resume
	// is not bounded). 0, as in every policy written before it existed,
	// bounds nothing, so old logs replay unchanged.
	MaxPause time.Duration `json:"max_pause,omitempty"`
	// FastInterval is how often a watcher re-probes a site it suspects: its
	// own critical probe of the site has just failed, or any watcher's
	// committed report shows one failing. 0, as in every policy written
	// before it existed, means DefaultFastInterval(Interval); normalize
	// writes that value as 0, so a policy that spells out the default
	// hashes as one that leaves it out.
	FastInterval time.Duration `json:"fast_interval,omitempty"`
	// Groups are the failover groups besides DefaultGroup, whose policy
	// is the fields above from AutoFailover to FailbackGate (see Group).
	// Empty in every policy written before groups existed (log format 3),
	// so such a policy encodes, hashes and decides as before.
	Groups []Group `json:"groups,omitempty"`

	// index answers ForGroup, probe and siteProbes without a scan of the
	// groups, when set (policyIndex).
	index *policyIndex
}

// DefaultGroup names the failover group whose policy is Policy's own
// fields: the one group of a policy without Groups.
const DefaultGroup = "default"

// Group is one failover group: a platform that fails over as a unit, with
// its own sites' probes, records, failback mode, block window and
// automatic switch. The nodes, quorum, fall, rise and intervals are the
// policy's, shared by every group. A probe name on a site means the same
// probe in every group that names it: the watchers run it once per round,
// and each group counts it with its own Critical.
type Group struct {
	Name         string              `json:"name"`
	AutoFailover bool                `json:"auto_failover"`
	BlockWindow  time.Duration       `json:"block_window"`
	Failback     FailbackPolicy      `json:"failback"`
	Sites        map[Site]SitePolicy `json:"sites"`
	Zone         string              `json:"zone"`
	Records      []Record            `json:"records"`
	FailbackGate []string            `json:"failback_gate,omitempty"`
}

// MaxGroups bounds the failover groups of one policy, DefaultGroup
// included: every group is evaluated on every report.
const MaxGroups = 256

// HasDefaultGroup reports whether DefaultGroup exists: always in a policy
// without Groups; with Groups, when the policy's own fields name records.
func (p *Policy) HasDefaultGroup() bool { return len(p.Groups) == 0 || len(p.Records) > 0 }

// GroupNames lists the policy's failover groups: DefaultGroup first when
// it exists, then Groups in the policy's order (sorted by name once
// normalized).
func (p *Policy) GroupNames() []string {
	var out []string
	if p.HasDefaultGroup() {
		out = append(out, DefaultGroup)
	}
	for _, g := range p.Groups {
		out = append(out, g.Name)
	}
	return out
}

// ForGroup returns the policy as group name sees it: the shared fields,
// with the group's own in place of the default group's and no Groups.
// For DefaultGroup that is p itself, when it exists; ok is false for a
// group p does not have.
func (p *Policy) ForGroup(name string) (*Policy, bool) {
	if name == "" || name == DefaultGroup {
		return p, p.HasDefaultGroup()
	}
	if p.index != nil {
		q, ok := p.index.groups[name]
		return q, ok
	}
	for _, g := range p.Groups {
		if g.Name == name {
			q := *p
			q.Groups, q.index = nil, nil
			q.AutoFailover, q.BlockWindow, q.Failback = g.AutoFailover, g.BlockWindow, g.Failback
			q.Sites, q.Zone, q.Records, q.FailbackGate = g.Sites, g.Zone, g.Records, g.FailbackGate
			return &q, true
		}
	}
	return nil, false
}

// asGroup returns the group fields of p (its default group's) as a Group named name.
func (p *Policy) asGroup(name string) Group {
	return Group{Name: name, AutoFailover: p.AutoFailover, BlockWindow: p.BlockWindow, Failback: p.Failback,
		Sites: p.Sites, Zone: p.Zone, Records: p.Records, FailbackGate: p.FailbackGate}
}

// Upper bounds of the policy's durations. They keep every time sum far from
// int64 overflow and catch unit mistakes; the config validates against them.
const (
	MaxInterval = time.Hour
	MaxWindow   = 366 * 24 * time.Hour
)

// MinFastInterval is the shortest fast_interval: re-probing a suspect site
// more often than ten times a second adds load on a site that may be
// struggling and gains little against network round trips.
const MinFastInterval = 100 * time.Millisecond

// DefaultFastInterval is the fast_interval of a policy that sets none: a
// quarter of interval, at least MinFastInterval, at most interval itself
// (an interval below MinFastInterval is not sped up).
func DefaultFastInterval(interval time.Duration) time.Duration {
	return min(interval, max(interval/4, MinFastInterval))
}

// CheckFastInterval reports what is wrong with fast for interval: it must
// be at least MinFastInterval and at most interval (equal to interval when
// interval is shorter than MinFastInterval).
func CheckFastInterval(fast, interval time.Duration) error {
	switch {
	case fast < MinFastInterval && fast != interval:
		return fmt.Errorf("%s must be ≥ %s", fast, MinFastInterval)
	case fast > interval:
		return fmt.Errorf("%s must be ≤ interval (%s)", fast, interval)
	}
	return nil
}

// FastProbeInterval is how often a watcher re-probes a suspect site: the
// policy's FastInterval, or its default.
func (p *Policy) FastProbeInterval() time.Duration {
	if p.FastInterval > 0 {
		return p.FastInterval
	}
	return DefaultFastInterval(p.Interval)
}

// stale is the age after which a node's report no longer counts.
func (p *Policy) stale() time.Duration {
	if p.StaleAfter > 0 {
		return p.StaleAfter
	}
	return 3 * p.Interval
}

// hasNode reports whether id is a voting node.
func (p *Policy) hasNode(id string) bool {
	_, ok := slices.BinarySearch(p.Nodes, id)
	return ok
}

// probe returns the policy's reference for (site, name), in the default
// group or, failing that, the first of Groups that names it: whether a
// watcher's result is one the policy knows.
func (p *Policy) probe(site Site, name string) (ProbeRef, bool) {
	if p.index != nil && site.Valid() {
		r, ok := p.index.refs[siteIdx(site)][name]
		return r, ok
	}
	if r, ok := findProbe(p.Sites, site, name); ok {
		return r, true
	}
	for _, g := range p.Groups {
		if r, ok := findProbe(g.Sites, site, name); ok {
			return r, true
		}
	}
	return ProbeRef{}, false
}

// siteProbes lists every probe of site the watchers run: the default
// group's, in its order, then each group's not listed yet. For a policy
// without groups that is the default group's list itself, so reports are
// read as before groups existed. Critical is the first group's that names it:
// read it only in a group's scope (Policy.ForGroup).
func (p *Policy) siteProbes(site Site) []ProbeRef {
	if p.index != nil && site.Valid() {
		return p.index.sites[siteIdx(site)]
	}
	if len(p.Groups) == 0 {
		return p.Sites[site].Probes
	}
	out := slices.Clone(p.Sites[site].Probes)
	for _, g := range p.Groups {
		for _, r := range g.Sites[site].Probes {
			if !slices.ContainsFunc(out, func(o ProbeRef) bool { return o.Name == r.Name }) {
				out = append(out, r)
			}
		}
	}
	return out
}

func findProbe(sp map[Site]SitePolicy, site Site, name string) (ProbeRef, bool) {
	for _, r := range sp[site].Probes {
		if r.Name == name {
			return r, true
		}
	}
	return ProbeRef{}, false
}

// Validate reports every problem with p at once, each naming its field.
func (p Policy) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if len(p.Nodes) == 0 {
		bad("nodes", "at least one node is needed")
	}
	seen := map[string]bool{}
	for i, n := range p.Nodes {
		switch {
		case n == "":
			bad(fmt.Sprintf("nodes[%d]", i), "empty node id")
		case seen[n]:
			bad(fmt.Sprintf("nodes[%d]", i), "duplicate node id %q", n)
		}
		seen[n] = true
	}
	if p.Quorum <= len(p.Nodes)/2 || p.Quorum > len(p.Nodes) {
		bad("quorum", "%d is not a majority of %d nodes (want %d..%d)", p.Quorum, len(p.Nodes), len(p.Nodes)/2+1, len(p.Nodes))
	}
	if p.Fall < 1 {
		bad("fall", "%d must be >= 1", p.Fall)
	}
	if p.Rise < 1 {
		bad("rise", "%d must be >= 1", p.Rise)
	}
	if p.Interval <= 0 || p.Interval > MaxInterval {
		bad("interval", "%s must be > 0 and <= %s", p.Interval, MaxInterval)
	}
	if p.FastInterval != 0 && p.Interval > 0 {
		if err := CheckFastInterval(p.FastInterval, p.Interval); err != nil {
			bad("fast_interval", "%v", err)
		}
	} else if p.FastInterval < 0 {
		bad("fast_interval", "%s must be ≥ 0", p.FastInterval)
	}
	if p.StaleAfter < 0 || p.StaleAfter > MaxWindow || (p.StaleAfter > 0 && p.StaleAfter < p.Interval) {
		bad("stale_after", "%s must be 0 (3 intervals) or between interval %s and %s", p.StaleAfter, p.Interval, MaxWindow)
	}
	if p.MaxPause < 0 || p.MaxPause > MaxWindow {
		bad("max_pause", "%s must be between 0 (no bound) and %s", p.MaxPause, MaxWindow)
	}
	if p.HasDefaultGroup() {
		g := p.asGroup(DefaultGroup)
		g.validate("", bad)
	}
	if len(p.Groups)+1 > MaxGroups {
		bad("groups", "%d groups, at most %d", len(p.Groups), MaxGroups-1)
	}
	groupNames := map[string]bool{}
	for i, g := range p.Groups {
		prefix := fmt.Sprintf("groups[%d].", i)
		switch {
		case g.Name == DefaultGroup:
			bad(prefix+"name", "%q is the name of the group the policy's own fields describe", g.Name)
		case !ValidGroupName(g.Name):
			bad(prefix+"name", "%q must be 1 to 63 lower-case letters, digits and '-', starting with a letter", g.Name)
		case groupNames[g.Name]:
			bad(prefix+"name", "duplicate group %q", g.Name)
		}
		groupNames[g.Name] = true
		g.validate(prefix, bad)
	}
	// A record belongs to one group: two groups writing one RRset would undo each other.
	owner := map[string]string{}
	for _, name := range p.GroupNames() {
		q, _ := p.ForGroup(name)
		zone := dnsname.Absolute("@", q.Zone)
		for i, r := range q.Records {
			k := dnsname.Absolute(r.Name, zone) + " " + strings.ToUpper(r.Type)
			if o, ok := owner[k]; ok && o != name {
				field := fmt.Sprintf("records[%d]", i)
				if name != DefaultGroup {
					field = fmt.Sprintf("groups[%d].%s", slices.IndexFunc(p.Groups, func(g Group) bool { return g.Name == name }), field)
				}
				bad(field, "%s is a record of group %q too; a record belongs to one group", k, o)
			}
			owner[k] = name
		}
	}
	// The map walk above is unordered; sort so the joined error reads the same every time.
	slices.SortStableFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}

// ValidGroupName reports whether name can name a failover group: 1 to 63
// lower-case letters, digits and '-', starting with a letter, so it fits
// a DNS label, a metric label and a URL path unescaped.
func ValidGroupName(name string) bool {
	if name == "" || len(name) > 63 || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// validate reports through bad every problem with g's own fields, each
// field named after prefix ("" for the default group, as before groups).
func (g Group) validate(prefix string, report func(field, format string, args ...any)) {
	bad := func(field, format string, args ...any) { report(prefix+field, format, args...) }
	if g.BlockWindow < 0 || g.BlockWindow > MaxWindow {
		bad("block_window", "%s must be between 0 and %s", g.BlockWindow, MaxWindow)
	}
	if g.Failback.After > MaxWindow {
		bad("failback.after", "%s must be <= %s", g.Failback.After, MaxWindow)
	}
	switch g.Failback.Mode {
	case "", FailbackManual:
	case FailbackAuto:
		if g.Failback.After <= 0 {
			bad("failback.after", "%s must be > 0 with mode auto", g.Failback.After)
		}
	default:
		bad("failback.mode", "%q must be manual or auto", g.Failback.Mode)
	}
	if g.Failback.After < 0 {
		bad("failback.after", "%s must be >= 0", g.Failback.After)
	}
	for s := range g.Sites {
		if !s.Valid() {
			bad("sites."+string(s), "unknown site (want primary or backup)")
		}
	}
	for _, s := range sites {
		sp, ok := g.Sites[s]
		field := "sites." + string(s)
		if !ok {
			bad(field, "missing")
			continue
		}
		critical := 0
		names := map[string]bool{}
		for i, r := range sp.Probes {
			f := fmt.Sprintf("%s.probes[%d].name", field, i)
			switch {
			case r.Name == "":
				bad(f, "empty probe name")
			case strings.ContainsAny(r.Name, "/ \t\n"):
				bad(f, "%q must not contain '/' or spaces", r.Name)
			case names[r.Name]:
				bad(f, "duplicate probe %q", r.Name)
			}
			names[r.Name] = true
			if r.Critical {
				critical++
			}
		}
		if critical == 0 {
			bad(field+".probes", "at least one critical probe is needed to judge the site")
		}
	}
	for i, name := range g.FailbackGate {
		if _, ok := findProbe(g.Sites, Primary, name); !ok {
			bad(fmt.Sprintf("failback_gate[%d]", i), "%q is not a probe of the primary site", name)
		}
	}
	zone := strings.ToLower(g.Zone)
	if zone == "" || zone == "." {
		bad("zone", "empty zone")
	} else if !strings.HasSuffix(zone, ".") {
		zone += "."
	}
	if len(g.Records) == 0 {
		bad("records", "at least one record is needed")
	}
	types := map[string][]string{} // fqdn -> types
	for i, r := range g.Records {
		f := fmt.Sprintf("records[%d]", i)
		name := dnsname.Absolute(r.Name, zone)
		if r.Name == "" {
			bad(f+".name", "empty name")
		} else if zone != "" && !dnsname.InZone(name, zone) {
			bad(f+".name", "%q is not inside zone %q", r.Name, zone)
		}
		typ := strings.ToUpper(r.Type)
		switch typ {
		case "A", "AAAA", "CNAME":
		default:
			bad(f+".type", "%q must be A, AAAA or CNAME", r.Type)
		}
		if r.TTL < 1 || r.TTL > 1<<31-1 {
			bad(f+".ttl", "%d must be between 1 and 2147483647 seconds", r.TTL)
		}
		if slices.Contains(types[name], typ) {
			bad(f, "duplicate %s %s", name, typ)
		}
		types[name] = append(types[name], typ)
		for _, side := range []struct {
			field  string
			values []string
		}{{"primary", r.Primary}, {"backup", r.Backup}} {
			vf := f + "." + side.field
			if len(side.values) == 0 {
				bad(vf, "at least one value is needed")
			}
			if typ == "CNAME" && len(side.values) > 1 {
				bad(vf, "a CNAME has exactly one value, got %d", len(side.values))
			}
			for j, v := range side.values {
				if err := checkValue(typ, v); err != nil {
					bad(fmt.Sprintf("%s[%d]", vf, j), "%v", err)
				}
			}
		}
	}
	for name, ts := range types {
		if slices.Contains(ts, "CNAME") && len(ts) > 1 {
			bad("records", "%s has a CNAME and other types", name)
		}
	}
}

func checkValue(typ, v string) error {
	switch typ {
	case "A":
		a, err := netip.ParseAddr(v)
		if err != nil || !dnsname.AddrFits(typ, a) {
			return fmt.Errorf("%q is not an IPv4 address", v)
		}
	case "AAAA":
		a, err := netip.ParseAddr(v)
		if err != nil || !dnsname.AddrFits(typ, a) {
			return fmt.Errorf("%q is not an IPv6 address", v)
		}
	case "CNAME":
		if !strings.HasSuffix(v, ".") || len(v) < 2 {
			return fmt.Errorf("%q must be an absolute name ending in '.'", v)
		}
	}
	return nil
}

// normalize returns a deep copy in canonical form: sorted nodes, probes,
// records and groups, absolute lower-case names, canonical addresses. Two
// policies that mean the same thing normalize to the same value, so they
// hash the same.
func (p Policy) normalize() Policy {
	q := p.clone()
	slices.Sort(q.Nodes)
	if q.FastInterval == DefaultFastInterval(q.Interval) {
		q.FastInterval = 0
	}
	q.setGroupFields(q.asGroup(DefaultGroup).normalize())
	for i := range q.Groups {
		q.Groups[i] = q.Groups[i].normalize()
	}
	slices.SortStableFunc(q.Groups, func(a, b Group) int { return strings.Compare(a.Name, b.Name) })
	return q
}

// setGroupFields sets p's default-group fields to g's.
func (p *Policy) setGroupFields(g Group) {
	p.AutoFailover, p.BlockWindow, p.Failback = g.AutoFailover, g.BlockWindow, g.Failback
	p.Sites, p.Zone, p.Records, p.FailbackGate = g.Sites, g.Zone, g.Records, g.FailbackGate
}

// normalize puts g's fields in canonical form (see Policy.normalize); g
// must be a clone, as its maps and slices are sorted in place.
func (g Group) normalize() Group {
	slices.Sort(g.FailbackGate)
	if g.Failback.Mode == "" {
		g.Failback.Mode = FailbackManual
	}
	for s, sp := range g.Sites {
		slices.SortStableFunc(sp.Probes, func(a, b ProbeRef) int { return strings.Compare(a.Name, b.Name) })
		g.Sites[s] = sp
	}
	g.Zone = dnsname.Absolute("@", g.Zone)
	for i := range g.Records {
		r := &g.Records[i]
		r.Name = dnsname.Absolute(r.Name, g.Zone)
		r.Type = strings.ToUpper(r.Type)
		r.Primary = dnsname.Values(r.Type, r.Primary)
		r.Backup = dnsname.Values(r.Type, r.Backup)
	}
	slices.SortStableFunc(g.Records, func(a, b Record) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Type, b.Type)
	})
	return g
}

// clone deep-copies p.
func (p Policy) clone() Policy {
	q := p
	q.index = nil
	q.Nodes = slices.Clone(p.Nodes)
	q.setGroupFields(p.asGroup(DefaultGroup).clone())
	if p.Groups != nil {
		q.Groups = make([]Group, len(p.Groups))
		for i, g := range p.Groups {
			q.Groups[i] = g.clone()
		}
	}
	return q
}

// clone deep-copies g.
func (g Group) clone() Group {
	g.FailbackGate = slices.Clone(g.FailbackGate)
	if g.Sites != nil {
		sites := make(map[Site]SitePolicy, len(g.Sites))
		for s, sp := range g.Sites {
			sites[s] = SitePolicy{Probes: slices.Clone(sp.Probes)}
		}
		g.Sites = sites
	}
	if g.Records != nil {
		recs := make([]Record, len(g.Records))
		for i, r := range g.Records {
			r.Primary = slices.Clone(r.Primary)
			r.Backup = slices.Clone(r.Backup)
			recs[i] = r
		}
		g.Records = recs
	}
	return g
}

// Hash is the hex SHA-256 of the policy's canonical JSON encoding. Nodes
// report the hash of the policy they run so a mismatch shows on the status page.
func (p Policy) Hash() string {
	n := p.normalize()
	b, err := json.Marshal(n)
	if err != nil {
		// A Policy holds only strings, ints, bools and maps with string keys:
		// encoding cannot fail.
		panic("failover: encode policy: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ShortHash is the first 12 hex digits of a policy hash (all of h when it
// is shorter): how messages, the log and the status page name a policy.
func ShortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// RRset is one record set of the desired DNS state: an absolute name, a
// type, a TTL in seconds and sorted values.
type RRset struct {
	Name   string   `json:"name"`
	Type   string   `json:"type"`
	TTL    int      `json:"ttl"`
	Values []string `json:"values"`
}

// rrsets renders the records for site. p must be normalized.
// RRsets returns the records site has under p (absolute names). The
// reconciler checks a break-glass marker's site against them.
func (p *Policy) RRsets(site Site) []RRset { return p.rrsets(site) }

func (p *Policy) rrsets(site Site) []RRset {
	out := make([]RRset, 0, len(p.Records))
	for _, r := range p.Records {
		vs := r.Primary
		if site == Backup {
			vs = r.Backup
		}
		out = append(out, RRset{Name: r.Name, Type: r.Type, TTL: r.TTL, Values: slices.Clone(vs)})
	}
	return out
}
