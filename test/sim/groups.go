package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/drwatch/drwatch/failover"
)

// Failover groups in the simulator. Three schedules in four run the
// policy without groups (simPolicy), as before groups existed; one in
// eight runs two groups and one in eight three, half of those with the
// default group among them (whose state the core keeps in its top-level
// fields) and half with named groups only. A run with groups costs about
// a third more CPU (every report is judged for each group, the snapshot
// invariant 6 hashes after every apply is larger, and each group has a
// reconciler), so a quarter of the seeds keeps make test's budget.
//
// Every group has its own critical probe on each site (web for the
// default group, web-<group> for the others) and names the shared region
// probe, critical on each site too, which the watchers run once per
// round. So an outage of a group's own probe is that
// group's fault alone, and an outage of the region probe is every
// group's. Each group has its own records in the one zone and its own
// fence TXT (_drwatch for the default group, _drwatch-<group> for the
// others), written by a reconciler of its own.

// regionProbe is the probe every group of a schedule with groups names.
const regionProbe = "region"

// namedGroups are the groups other than the default one a schedule may
// draw, in the order it draws them, each with its block window; wiki
// fails over by hand only (AutoFailover off), so its outages are
// withheld.
var namedGroups = []struct {
	name  string
	block time.Duration
	auto  bool
}{{"apps", 20 * time.Second, true}, {"studio", 45 * time.Second, true}, {"wiki", 30 * time.Second, false}}

// ownProbe is group's own probe name on each site.
func ownProbe(group string) string {
	if group == failover.DefaultGroup {
		return "web"
	}
	return "web-" + group
}

// fenceName is group's fence TXT: the zone's default one for the default
// group, as before groups existed.
func fenceName(group string) string {
	if group == failover.DefaultGroup {
		return ""
	}
	return "_drwatch-" + group
}

// drawGroups draws the failover groups of seed's schedule from a stream
// of its own, so that the rest of the schedule stays what it was, and
// names the probe each outage fails and the group each operator command
// is for: a random outage fails one group's own probe or the region
// probe, a random command names one group (a failover moves every group
// one time in four), and each of the scenarios' events (scenario n) are
// about one group, whose own probe its outages fail. events are in the
// order the generator drew them; none of them changes without groups.
func drawGroups(seed uint64, events []Event, scenarios int) []string {
	rng := rand.New(rand.NewPCG(seed, 0x67a0))
	var k int // how many groups: none, as before groups, in six draws of eight
	switch rng.IntN(8) {
	case 6:
		k = 2
	case 7:
		k = 3
	default:
		return nil
	}
	var groups []string
	if rng.IntN(2) == 0 {
		groups = append(groups, failover.DefaultGroup)
	}
	for _, g := range namedGroups[:k-len(groups)] {
		groups = append(groups, g.name)
	}
	focus := make([]string, scenarios+1)
	for i := range focus {
		focus[i] = groups[rng.IntN(len(groups))]
	}
	for i := range events {
		e := &events[i]
		switch {
		case e.Kind == "outage" && e.scenario > 0:
			e.Probe = ownProbe(focus[e.scenario])
		case e.Kind == "outage":
			if j := rng.IntN(len(groups) + 1); j < len(groups) {
				e.Probe = ownProbe(groups[j])
			} else {
				e.Probe = regionProbe
			}
		case (e.Kind == "op" || e.Kind == "depose") && e.scenario > 0:
			e.Group = focus[e.scenario]
		case e.Kind == "op":
			e.Group = groups[rng.IntN(len(groups))]
			if e.Op == "failover" && rng.IntN(4) == 0 {
				e.Group, e.AllGroups = "", true
			}
		}
	}
	return groups
}

// tagged is add marking every event as scenario n's.
func tagged(add func(Event), n int) func(Event) {
	return func(e Event) {
		e.scenario = n
		add(e)
	}
}

// simGroupPolicy is the policy of a schedule with groups: simPolicy's
// nodes, quorum and timings, and for each group its own probe and the
// region probe on each site, both critical, and one A record of its own.
// Without the default group among groups, the policy's own fields name
// no records (Policy.HasDefaultGroup).
func simGroupPolicy(groups []string) failover.Policy {
	p := simPolicy()
	if len(groups) == 0 {
		return p
	}
	sites := func(group string) map[failover.Site]failover.SitePolicy {
		probes := []failover.ProbeRef{{Name: ownProbe(group), Critical: true}, {Name: regionProbe, Critical: true}}
		return map[failover.Site]failover.SitePolicy{failover.Primary: {Probes: probes}, failover.Backup: {Probes: slices.Clone(probes)}}
	}
	if slices.Contains(groups, failover.DefaultGroup) {
		p.Sites = sites(failover.DefaultGroup)
	} else {
		p.Sites, p.Records = nil, nil
	}
	for i, g := range namedGroups {
		if !slices.Contains(groups, g.name) {
			continue
		}
		p.Groups = append(p.Groups, failover.Group{Name: g.name, AutoFailover: g.auto, BlockWindow: g.block,
			Failback: failover.FailbackPolicy{Mode: failover.FailbackManual}, Sites: sites(g.name), Zone: p.Zone,
			Records: []failover.Record{{Name: g.name, Type: "A", TTL: 60,
				Primary: []string{fmt.Sprintf("192.0.2.%d", 20+i)}, Backup: []string{fmt.Sprintf("198.51.100.%d", 20+i)}}}})
	}
	return p
}

// simGroup is one failover group as the invariants read it.
type simGroup struct {
	name     string           // failover.DefaultGroup for the default group
	policy   *failover.Policy // Policy.ForGroup
	fence    string           // its fence TXT name; "" is the zone's default
	critical map[failover.Site][]string
}

// entryGroup is the group a history entry is about: the default group
// when it names none (membership and drills included, which the group
// checks do not read).
func entryGroup(e failover.Entry) string {
	if e.Group == "" {
		return failover.DefaultGroup
	}
	return e.Group
}

// cmdGroup is the Group a command for group carries: "" for the default
// group, as a trio without groups writes it.
func cmdGroup(group string) string {
	if group == failover.DefaultGroup {
		return ""
	}
	return group
}

// groupsOf lists p's failover groups: the default group alone for a
// policy without groups.
func groupsOf(p *failover.Policy) []simGroup {
	var out []simGroup
	for _, name := range p.GroupNames() {
		gp, _ := p.ForGroup(name)
		g := simGroup{name: name, policy: gp, fence: fenceName(name), critical: map[failover.Site][]string{}}
		for site, sp := range gp.Sites {
			for _, r := range sp.Probes {
				if r.Critical {
					g.critical[site] = append(g.critical[site], r.Name)
				}
			}
		}
		out = append(out, g)
	}
	return out
}

// probesOf lists every probe the watchers run on site, sorted.
func probesOf(p *failover.Policy, site failover.Site) []string {
	var out []string
	for _, g := range groupsOf(p) {
		for _, r := range g.policy.Sites[site].Probes {
			if !slices.Contains(out, r.Name) {
				out = append(out, r.Name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// groupGen names one decision of one group: generations are log indexes,
// so one region outage gives every group a decision of the same gen.
type groupGen struct {
	group string
	gen   uint64
}

// fenceWatch is what a replica's machine showed of each group's fence,
// for the per-group fence invariant: from one apply to the next (a
// restart builds a new machine, which replays from the last snapshot, and
// a snapshot installed takes the machine to its index), no group's
// Desired.Gen ever goes down.
type fenceWatch struct {
	mu   sync.Mutex
	gens map[string]uint64
}

// restart makes m's generations, just restored from a snapshot, the new
// baseline: a snapshot takes the whole machine to another point of the
// log, as a restart does.
func (f *fenceWatch) restart(m *failover.Machine, groups []simGroup) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gens = map[string]uint64{}
	for _, g := range groups {
		if d, ok := m.GroupDesired(g.name); ok {
			f.gens[g.name] = d.Gen
		}
	}
}

// check records m's generation of each of groups after the entry at
// index and returns a violation when one went down.
func (f *fenceWatch) check(m *failover.Machine, groups []simGroup, node string, index uint64) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gens == nil {
		f.gens = map[string]uint64{}
	}
	var out []string
	for _, g := range groups {
		d, ok := m.GroupDesired(g.name)
		if !ok {
			continue
		}
		if d.Gen < f.gens[g.name] {
			out = append(out, fmt.Sprintf("group fence: on %s at index %d group %s's decision went back from gen %d to gen %d",
				node, index, g.name, f.gens[g.name], d.Gen))
		}
		f.gens[g.name] = max(f.gens[g.name], d.Gen)
	}
	return out
}

// checkGroupIndependence holds one of group's automatic entries
// (auto_failover, auto_failback, withheld) to the groups' independence:
// some watcher must have been scripted to see one of the group's own
// critical probes, or the region probe it names, failing on either site
// at or before the entry (within the skew slack). Another group's fault
// alone never explains it. A necessary condition, like invariant 1's.
func (w *World) checkGroupIndependence(node string, g simGroup, e failover.Entry) {
	slack := w.faults.skewSlack()
	at := time.Unix(0, e.At)
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, rs := range w.rounds {
		for _, r := range rs {
			if r.at.After(at.Add(slack)) {
				break
			}
			if r.siteDown(failover.Primary, g.critical[failover.Primary]) || r.siteDown(failover.Backup, g.critical[failover.Backup]) {
				return
			}
		}
	}
	w.violations = append(w.violations, fmt.Sprintf(
		"group independence: %s recorded %s for group %s at index %d (%s), but no watcher was scripted to see any of its probes %v failing",
		node, e.Kind, g.name, e.Index, at.Sub(w.sched.start).Round(time.Millisecond), g.critical))
}

// automaticKind reports whether kind is an automatic decision of a group,
// which only the group's own evidence may cause.
func automaticKind(kind string) bool {
	return kind == failover.KindAutoFailover || kind == failover.KindAutoFailback || kind == failover.KindWithheld
}

// groupsOnce computes the World's groups from its policy once: a World
// built by hand (the checks' tests) has them too.
type groupsOnce struct {
	once   sync.Once
	groups []simGroup
	probes map[failover.Site][]string // probesOf, by site
}

func (g *groupsOnce) init(p *failover.Policy) {
	g.once.Do(func() {
		g.groups = groupsOf(p)
		g.probes = map[failover.Site][]string{failover.Primary: probesOf(p, failover.Primary), failover.Backup: probesOf(p, failover.Backup)}
	})
}

// simGroups lists the policy's failover groups: the default group alone
// without groups.
func (w *World) simGroups() []simGroup {
	w.groups.init(&w.policy)
	return w.groups.groups
}

// siteProbes lists every probe the watchers run on site, sorted.
func (w *World) siteProbes(site failover.Site) []string {
	w.groups.init(&w.policy)
	return w.groups.probes[site]
}

// simGroup returns group name of the policy.
func (w *World) simGroup(name string) (simGroup, bool) {
	for _, g := range w.simGroups() {
		if g.name == name {
			return g, true
		}
	}
	return simGroup{}, false
}

// groupPrefix names group in a violation, "" for the default group.
func groupPrefix(group string) string {
	if group == failover.DefaultGroup {
		return ""
	}
	return "group " + group + " "
}
