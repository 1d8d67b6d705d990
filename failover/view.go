package failover

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// View is everything the status page shows, computed from one consistent
// state. It is a deep copy: callers may keep and change it.
type View struct {
	// Index is the last applied log index; Now is the leader time of the
	// last applied command (unix ns). A reader compares Now with its own
	// clock to say how stale this replica may be.
	Index       uint64 `json:"index"`
	Now         int64  `json:"now"`
	Active      Site   `json:"active"`
	ActiveSince int64  `json:"active_since"`
	// Mode is "auto", "paused" or "manual-only" (policy has auto_failover off).
	Mode         string `json:"mode"`
	Paused       bool   `json:"paused"`
	PausedUntil  int64  `json:"paused_until,omitempty"`
	PausedBy     string `json:"paused_by,omitempty"`
	PauseReason  string `json:"pause_reason,omitempty"`
	Blocked      bool   `json:"blocked"`
	BlockedUntil int64  `json:"blocked_until,omitempty"`
	LastDecision string `json:"last_decision"`
	// Policy is a copy of the replicated policy, nil before SetPolicy.
	Policy     *Policy `json:"policy"`
	PolicyHash string  `json:"policy_hash"`
	// Sites holds each site's quorum verdict and tally.
	Sites map[Site]Tally `json:"sites"`
	// Pending says how close the active site is to DOWN at quorum; nil when
	// no watcher fails it.
	Pending *Pending `json:"pending,omitempty"`
	// Suspect are the sites every watcher re-probes at the policy's fast
	// interval: a fresh watcher's critical probe of each has been failing
	// since after the last decision, for at most (fall+1) intervals, and
	// the site is not DOWN at quorum yet.
	Suspect        []Site `json:"suspect,omitempty"`
	WithheldRule   string `json:"withheld_rule,omitempty"`
	WithheldReason string `json:"withheld_reason,omitempty"`
	WithheldSince  int64  `json:"withheld_since,omitempty"`
	// FailbackIn is how long until an automatic failback if the primary stays UP; 0 when none is due.
	FailbackIn time.Duration `json:"failback_in,omitempty"`
	Nodes      []NodeView    `json:"nodes"`
	// Warnings are the loud problems a human should read first.
	Warnings []string `json:"warnings"`
	Desired  Desired  `json:"desired"`
	// History is the tail of the history, oldest first, with the newest
	// audit entries (AuditKind) before it, so a burst of routine entries
	// does not hide the last decision or membership change.
	History []Entry `json:"history"`
	// Remediations is the tail of the remediation records, oldest first:
	// what the repairs did, and in dry-run mode what they would have done.
	Remediations []RemediationRecord `json:"remediations"`
	// Drill is the running drill, nil when none runs; LastDrill the latest
	// drill that ended, skipped ones left out (see LastDrill).
	Drill     *DrillRecord `json:"drill,omitempty"`
	LastDrill *DrillRecord `json:"last_drill,omitempty"`
	// Group is the failover group this view shows; empty for DefaultGroup.
	// Its fields from Active on are that group's, its Policy the group's
	// (Policy.ForGroup), its History the group's entries and the cluster's (Entry.InGroup).
	Group string `json:"group,omitempty"`
	// Groups is the overview of every failover group, in the policy's
	// order; empty when the policy has none besides DefaultGroup.
	Groups []GroupSummary `json:"groups,omitempty"`
}

// GroupSummary is one failover group at a glance: where its traffic is,
// what the quorum sees, and whether anything holds it.
type GroupSummary struct {
	Name         string         `json:"name"`
	Active       Site           `json:"active"`
	ActiveSince  int64          `json:"active_since"`
	Mode         string         `json:"mode"`
	Blocked      bool           `json:"blocked"`
	Sites        map[Site]Tally `json:"sites"`
	Pending      bool           `json:"pending"`
	WithheldRule string         `json:"withheld_rule,omitempty"`
	LastDecision string         `json:"last_decision"`
	Desired      Desired        `json:"desired"`
}

// viewHistoryTail is how many of the newest history entries View carries,
// viewAuditTail how many of the newest audit entries it carries besides;
// viewRemediationsTail how many remediation records.
const (
	viewHistoryTail      = 20
	viewAuditTail        = 10
	viewRemediationsTail = 20
)

// historyTail returns copies of the newest viewHistoryTail entries and of
// the newest viewAuditTail audit entries, oldest first.
func (s *state) historyTail() []Entry {
	var out []Entry
	audit, seen := 0, 0
	for i := len(s.History) - 1; i >= 0; i-- {
		e := &s.History[i]
		if !e.InGroup(s.scope) {
			continue // another group's: a group's view counts its own entries
		}
		seen++
		recent := seen <= viewHistoryTail
		if !recent && audit == viewAuditTail {
			break // nothing older is carried
		}
		kept := AuditKind(e.Kind) && audit < viewAuditTail
		if kept {
			audit++
		}
		if recent || kept {
			out = append(out, e.clone())
		}
	}
	slices.Reverse(out)
	if out == nil {
		out = []Entry{}
	}
	return out
}

// SiteVerdict is the quorum verdict on site as a reader should see it:
// "waiting for the first reports" until a watcher has reported, when an
// empty or NO_QUORUM verdict would say nothing true about the site.
func (v View) SiteVerdict(site Site) string {
	for _, n := range v.Nodes {
		if n.Reported {
			return string(v.Sites[site].Verdict)
		}
	}
	return "waiting for the first reports"
}

// Pending says how close the active site is to DOWN at quorum, counting only
// the watchers that are failing it (DESIGN §4 invariant 7). It is present
// while at least one fresh watcher fails a critical probe of the active site
// and the site is not yet DOWN at quorum.
type Pending struct {
	Site Site `json:"site"`
	// Leaning are the fresh watchers with failing critical probes on Site.
	Leaning []string `json:"leaning"`
	// Up are the other watchers, those that see Site UP.
	Up []string `json:"up"`
	// Undecided are the rest: stale, abstaining, or with no verdict yet.
	Undecided []string `json:"undecided"`
	// Quorum is how many DOWN votes mark Site DOWN.
	Quorum int `json:"quorum"`
	// Rounds is how many more failing rounds the leaning watchers need until
	// Quorum of them vote DOWN, and In that many fast intervals (they
	// re-probe a site they see failing that often). There is a
	// countdown only when at least Quorum watchers lean: otherwise Rounds and
	// In are 0 and Then is nil.
	Rounds int           `json:"rounds,omitempty"`
	In     time.Duration `json:"in,omitempty"`
	// Then is what happens when the countdown ends.
	Then *PendingThen `json:"then,omitempty"`
}

// Countdown reports whether enough watchers lean for a countdown to run.
func (p *Pending) Countdown() bool { return p.Then != nil }

// PendingThen is what happens when the active site is DOWN at quorum.
type PendingThen struct {
	// Action is the automatic decision due then: KindAutoFailover while the
	// primary is active, KindAutoFailback while the backup is.
	Action string `json:"action"`
	// Rule is the safety rule (a Rule* constant) that would withhold Action;
	// "" when Action would go ahead.
	Rule string `json:"rule,omitempty"`
}

// NodeView is one watcher as the status page shows it.
type NodeView struct {
	Node     string           `json:"node"`
	Reported bool             `json:"reported"`
	LastAt   int64            `json:"last_at"`
	Stale    bool             `json:"stale"`
	Abstain  string           `json:"abstain,omitempty"`
	Verdicts map[Site]Verdict `json:"verdicts"`
	// PolicyHash is what the node last reported; HashMismatch is true when
	// it differs from the replicated policy (its results still count).
	PolicyHash   string         `json:"policy_hash,omitempty"`
	HashMismatch bool           `json:"hash_mismatch"`
	Probes       []ProbeView    `json:"probes"`
	Unknown      []UnknownProbe `json:"unknown,omitempty"`
}

// ProbeView is one probe's hysteresis state as one node sees it.
type ProbeView struct {
	Site     Site    `json:"site"`
	Probe    string  `json:"probe"`
	Critical bool    `json:"critical"`
	State    Verdict `json:"state"`
	OKs      int     `json:"oks"`
	Fails    int     `json:"fails"`
	// Fresh is false when the last result is older than the staleness limit
	// (the probe then counts as UNKNOWN).
	Fresh  bool        `json:"fresh"`
	LastAt int64       `json:"last_at"`
	Last   ProbeResult `json:"last"`
	// History holds up to 20 recent results, oldest first; true = ok.
	History []bool `json:"history"`
}

// UnknownProbe counts results for a probe the policy does not name.
type UnknownProbe struct {
	Site  Site   `json:"site"`
	Probe string `json:"probe"`
	Count uint64 `json:"count"`
}

// View returns the status page's picture of the state: DefaultGroup's,
// with the overview of every group when the policy has more.
func (m *Machine) View() View {
	m.mu.RLock()
	defer m.mu.RUnlock()
	name := DefaultGroup
	if p := m.st.Policy; p != nil && !p.HasDefaultGroup() {
		name = p.Groups[0].Name // no default group: the first stands in for it
	}
	v, _ := m.st.groupView(name)
	m.st.withOverview(&v)
	return v
}

// GroupView returns the view of failover group name (DefaultGroup for ""
// or "default"); ok is false for a group the policy does not have.
func (m *Machine) GroupView(name string) (v View, ok bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if v, ok = m.st.groupView(name); ok {
		m.st.withOverview(&v)
	}
	return v, ok
}

// GroupViews returns the view of every failover group in the policy's
// order (names, as Groups), each as GroupView returns it less the overview
// of all groups (View.Groups), under one read lock. A GroupView per group
// builds every group's view again for its overview: with 50 groups a
// metrics scrape built 2,600 views, this builds 50. With no groups (or no
// policy yet) names is nil and views is the default group's one view.
func (m *Machine) GroupViews() (names []string, views []View) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if p := m.st.Policy; p == nil || len(p.Groups) == 0 {
		return nil, []View{m.st.view()}
	}
	for _, name := range m.st.Policy.GroupNames() {
		if v, ok := m.st.groupView(name); ok {
			names, views = append(names, name), append(views, v)
		}
	}
	return names, views
}

// groupView is the view of group name (DefaultGroup for "" or "default")
// without the overview; ok is false for a group the policy does not have.
// Called with the machine's lock held.
func (s *state) groupView(name string) (v View, ok bool) {
	if name == "" || name == DefaultGroup {
		if s.Policy != nil && !s.Policy.HasDefaultGroup() {
			return View{}, false
		}
		return s.view(), true
	}
	c := s.scoped(name)
	if ok = c.inGroup(name, func() { v = c.view() }); ok {
		v.Group = name
	}
	return v, ok
}

// withOverview adds the overview of every group to v when the policy has
// groups.
func (s *state) withOverview(v *View) {
	if s.Policy != nil && len(s.Policy.Groups) > 0 {
		v.Groups = s.overview()
	}
}

// scoped returns a shallow copy of s whose state of group name is its own,
// so inGroup can run on it under a read lock without writing what s holds.
func (s *state) scoped(name string) *state {
	c := *s
	if gs := s.Groups[name]; gs != nil {
		c.Groups = map[string]*groupState{name: new(*gs)}
	}
	return &c
}

// Groups lists the policy's failover groups (Policy.GroupNames); none
// before a policy is set.
func (m *Machine) Groups() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.st.Policy == nil {
		return nil
	}
	return m.st.Policy.GroupNames()
}

// Overview summarises every failover group, in the policy's order.
func (m *Machine) Overview() []GroupSummary {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.st.overview()
}

func (s *state) overview() []GroupSummary {
	if s.Policy == nil {
		return nil
	}
	var out []GroupSummary
	for _, name := range s.Policy.GroupNames() {
		c := s
		if name != DefaultGroup {
			c = s.scoped(name)
		}
		c.inGroup(name, func() {
			v := c.view()
			out = append(out, GroupSummary{
				Name: name, Active: v.Active, ActiveSince: v.ActiveSince, Mode: v.Mode, Blocked: v.Blocked,
				Sites: v.Sites, Pending: v.Pending != nil && v.Pending.Countdown(), WithheldRule: v.WithheldRule,
				LastDecision: v.LastDecision, Desired: v.Desired,
			})
		})
	}
	return out
}

// remediationsTail is the View's tail of the remediation records: every
// runner's outside any group's scope, as before groups; in a group's
// scope, that group's runner's only, so that a busy group does not push
// another's records out of its view.
func (s *state) remediationsTail() []RemediationRecord {
	out := []RemediationRecord{}
	if s.scope == "" {
		return append(out, s.Remediations[max(0, len(s.Remediations)-viewRemediationsTail):]...)
	}
	for i := len(s.Remediations) - 1; i >= 0 && len(out) < viewRemediationsTail; i-- {
		if s.Remediations[i].Group == s.scope {
			out = append(out, s.Remediations[i])
		}
	}
	slices.Reverse(out)
	return out
}

// view builds the View of the group in scope (DefaultGroup's outside any).
func (s *state) view() View {
	now := s.Now
	v := View{
		Index: s.LastIndex, Now: now, Active: s.Active, ActiveSince: s.ActiveSince,
		Paused: s.Paused, PausedUntil: s.PausedUntil, PausedBy: s.PausedBy, PauseReason: s.PauseReason,
		Blocked: s.BlockedUntil > now, PolicyHash: s.PolicyHash,
		WithheldRule: s.Withheld.Rule, WithheldReason: s.Withheld.Message, WithheldSince: s.Withheld.Since,
		Desired:  s.Desired.clone(),
		Sites:    map[Site]Tally{},
		Nodes:    []NodeView{},
		Warnings: []string{},
	}
	if v.Blocked {
		v.BlockedUntil = s.BlockedUntil
	}
	for i := len(s.History) - 1; i >= 0; i-- {
		if e := &s.History[i]; e.decision() && e.Kind != KindPolicy && e.Group == s.scope {
			v.LastDecision = oneLine(e)
			break
		}
	}
	v.History = s.historyTail()
	v.Remediations = s.remediationsTail()

	if s.Drill != nil {
		d := s.Drill.clone()
		v.Drill = &d
	}
	if d, ok := LastDrill(s.Drills); ok {
		d = d.clone()
		v.LastDrill = &d
	}
	p := s.Policy
	if p == nil {
		v.Mode = "manual-only"
		v.Warnings = append(v.Warnings, "no policy set: drwatch makes no decisions until one is")
		return v
	}
	pc := p.clone()
	v.Policy = &pc
	switch {
	case !p.AutoFailover:
		v.Mode = "manual-only"
	case s.Paused:
		v.Mode = "paused"
	default:
		v.Mode = "auto"
	}
	t := s.tallies(now)
	v.Sites = cloneTallies(t)
	cutoff := now - int64(p.stale())
	for _, id := range p.Nodes {
		v.Nodes = append(v.Nodes, s.nodeView(id, now, cutoff))
	}
	for _, n := range v.Nodes {
		if n.HashMismatch {
			v.Warnings = append(v.Warnings, fmt.Sprintf("node %s runs policy %s, the cluster runs %s: its results count, its policy is not merged",
				n.Node, cmp.Or(ShortHash(n.PolicyHash), "-"), ShortHash(s.PolicyHash)))
		}
		if !n.Reported {
			v.Warnings = append(v.Warnings, fmt.Sprintf("node %s has never reported", n.Node))
		}
		if n.Reported && n.Stale {
			v.Warnings = append(v.Warnings, fmt.Sprintf("node %s is stale: last report %s", n.Node, fmtTime(n.LastAt)))
		}
		if n.Abstain == abstainSelfCheck {
			v.Warnings = append(v.Warnings, fmt.Sprintf("node %s sees both sites DOWN and abstains: check its network", n.Node))
		}
		for _, u := range n.Unknown {
			v.Warnings = append(v.Warnings, fmt.Sprintf("unknown probe %s from node %s (site %s, results ignored: %d)", u.Probe, n.Node, u.Site, u.Count))
		}
	}
	fresh := len(p.Nodes) - len(t[Primary].Abstain)
	if fresh < p.Quorum {
		v.Warnings = append(v.Warnings, fmt.Sprintf("only %d of %d nodes have fresh data (quorum %d): no automatic decision is possible", fresh, len(p.Nodes), p.Quorum))
	}
	if s.Withheld.Rule != "" {
		v.Warnings = append(v.Warnings, "automatic flip withheld ("+s.Withheld.Rule+"): "+s.Withheld.Message)
	}
	v.Pending = s.pending(now, cutoff, t)
	v.Suspect = s.suspects(now, cutoff, t)
	if s.Active == Backup && p.Failback.Mode == FailbackAuto && s.PrimaryUp {
		if left := int64(p.Failback.After) - (now - s.PrimaryUpAt); left > 0 {
			v.FailbackIn = time.Duration(left)
		}
	}
	return v
}

// Suspicion is what a watcher reads of the replicated state after every
// applied command to decide which sites to re-probe fast, without building
// a whole View.
type Suspicion struct {
	// Fall is the replicated policy's fall; 0 before a policy is set.
	Fall int
	// Suspect is View.Suspect.
	Suspect []Site
	// Down are the critical probes the state holds DOWN for the node
	// asked about, as "site/probe".
	Down []string
	// Probes names, with Groups, the probes of each suspect site that a
	// fast round re-probes: the critical probes whose failures make it
	// suspect, in any group, sorted. A site is DOWN for a watcher once any
	// one critical probe is, so the failing ones are all there is to
	// confirm or refute; the others keep their full-round results. So a
	// region probe failing under 50 groups costs one probe per fast round,
	// not every probe of every group, and its report is not held back by
	// them. Nil without Groups: every probe of the site.
	Probes map[Site][]string
}

// Suspicion returns the suspect sites and node's DOWN critical probes.
func (m *Machine) Suspicion(node string) Suspicion {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p := m.st.Policy
	if p == nil {
		return Suspicion{}
	}
	// A site is suspect when it is in any group; a probe is DOWN for the
	// node when it is critical in any group.
	out := Suspicion{Fall: p.Fall}
	for _, name := range p.GroupNames() {
		s := &m.st
		if name != DefaultGroup {
			s = m.st.scoped(name)
		}
		s.inGroup(name, func() {
			v, abstains := s.quorumVerdicts(s.Now)
			for i, site := range sites {
				failing := s.suspectProbes(site, s.Now, s.Now-int64(s.Policy.stale()), v[i] == Down, abstains)
				if len(failing) == 0 {
					continue
				}
				if !slices.Contains(out.Suspect, site) {
					out.Suspect = append(out.Suspect, site)
				}
				if len(p.Groups) > 0 {
					if out.Probes == nil {
						out.Probes = map[Site][]string{}
					}
					for _, n := range failing {
						if !slices.Contains(out.Probes[site], n) {
							out.Probes[site] = append(out.Probes[site], n)
						}
					}
				}
			}
			ns := s.Nodes[node]
			if ns == nil {
				return
			}
			for _, site := range sites {
				for _, ref := range s.Policy.Sites[site].Probes {
					if !ref.Critical {
						continue
					}
					if ps := ns.probe(site, ref.Name); ps != nil && ps.State == Down {
						if k := probeKey(site, ref.Name); !slices.Contains(out.Down, k) {
							out.Down = append(out.Down, k)
						}
					}
				}
			}
		})
	}
	slices.SortFunc(out.Suspect, func(a, b Site) int { return siteIdx(a) - siteIdx(b) })
	if len(p.Groups) > 0 {
		slices.Sort(out.Down)
	}
	for _, names := range out.Probes {
		slices.Sort(names)
	}
	return out
}

// CriticalProbes returns, with Groups, those of failing that some
// failover group holds as a critical probe of site, sorted: what a
// watcher whose own probes of site fail re-probes fast (see
// Suspicion.Probes). Nil without Groups: every probe of the site.
func (p *Policy) CriticalProbes(site Site, failing []string) []string {
	if len(p.Groups) == 0 {
		return nil
	}
	out := []string{}
	for _, name := range p.GroupNames() {
		gp, _ := p.ForGroup(name)
		for _, ref := range gp.Sites[site].Probes {
			if ref.Critical && slices.Contains(failing, ref.Name) && !slices.Contains(out, ref.Name) {
				out = append(out, ref.Name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// suspects are the sites every watcher reads from its replica and
// re-probes at once, then at the fast interval, so that one vantage
// point's failing report is confirmed or refuted by the others within a
// fast interval, not at their next interval tick.
//
// A site is suspect while a fresh watcher that does not abstain has a
// critical probe of it failing (Fails > 0, DOWN or not: with fall 1 the
// first failing report is already DOWN, and still needs the others'
// confirmation) in a failure episode that began after the last decision
// moved traffic (FailSince > ActiveSince), and the site has not settled:
//
//   - a decision taken since the failure began settles it (the episode
//     then began before ActiveSince);
//   - DOWN at quorum settles it: there is nothing left to confirm, and a
//     dead site's flickers (one success, then failures again while still
//     DOWN) would otherwise speed up its rise;
//   - UP at quorum with no failing watcher settles it;
//   - and suspicion from one failure episode lasts at most suspectWindow
//     after its FailSince, so one watcher cut off from a site that the
//     others see UP costs them fast probing for that window, not for as
//     long as the partition lasts.
//
// Only failures make a site suspect, never successes. A site failing since
// before the last decision (the dead primary after a failover) is never
// suspect, nor is a probe DOWN with fewer than fall failures in a row: it
// was DOWN before this failure began (a recovering site's success, then a
// failure again), which is no new failure to confirm. Together with the
// watchers' side (a watcher does not re-probe fast a site it votes DOWN,
// see package watcher) rise, and failback, keep the interval.
func (s *state) suspects(now, cutoff int64, t map[Site]Tally) []Site {
	var out []Site
	abstains := len(t[Primary].Abstain) > 0
	for _, site := range sites {
		if len(s.suspectProbes(site, now, cutoff, t[site].Verdict == Down, abstains)) > 0 {
			out = append(out, site)
		}
	}
	return out
}

// suspectProbes are the critical probes of site whose failures make it
// suspect (see suspects), on any watcher, in the policy's order; none
// when the site is not suspect. down is the site's verdict at now, and
// abstains whether any node abstains at now (the tally's).
func (s *state) suspectProbes(site Site, now, cutoff int64, down, abstains bool) []string {
	p := s.Policy
	if down {
		return nil
	}
	window := int64(suspectWindow(p))
	var out []string
	for _, id := range p.Nodes {
		ns := s.Nodes[id]
		if ns == nil || abstains && s.nodeVote(id, now).abstain != "" {
			continue
		}
		for _, ref := range p.Sites[site].Probes {
			if !ref.Critical {
				continue
			}
			ps := ns.probe(site, ref.Name)
			if ps != nil && ps.LastAt >= cutoff && ps.Fails > 0 &&
				(ps.State != Down || ps.Fails >= p.Fall) &&
				ps.FailSince > s.ActiveSince && now-ps.FailSince <= window &&
				!slices.Contains(out, ref.Name) {
				out = append(out, ref.Name)
			}
		}
	}
	return out
}

// suspectWindow bounds how long one failure episode keeps its site
// suspect: (fall+1) intervals after it began. By then every watcher that
// sees the site failing has had fall grid rounds of its own since the
// failure began, and so has voted DOWN without any fast round; a watcher
// that has not sees the site UP, and probing it fast any longer cannot
// confirm what the first watcher saw. Fast rounds (at most an interval
// apart) reach fall well within the window, the extra interval leaving
// room for the probe's own time and the commit of the reports.
func suspectWindow(p *Policy) time.Duration {
	return time.Duration(p.Fall+1) * p.Interval
}

func (s *state) nodeView(id string, now, cutoff int64) NodeView {
	p := s.Policy
	vt := s.nodeVote(id, now)
	nv := NodeView{Node: id, Abstain: vt.abstain, Verdicts: map[Site]Verdict{Primary: vt.v[0], Backup: vt.v[1]}, Probes: []ProbeView{}}
	ns := s.Nodes[id]
	if ns != nil {
		nv.Reported, nv.LastAt, nv.PolicyHash = ns.Reported, ns.LastAt, ns.PolicyHash
		nv.HashMismatch = ns.Reported && ns.PolicyHash != s.PolicyHash
	}
	nv.Stale = ns == nil || !ns.Reported || ns.LastAt < cutoff
	for _, site := range sites {
		for _, ref := range p.Sites[site].Probes {
			pv := ProbeView{Site: site, Probe: ref.Name, Critical: ref.Critical, State: Unknown, History: []bool{}}
			if ns != nil {
				if ps := ns.probe(site, ref.Name); ps != nil {
					pv.State, pv.OKs, pv.Fails, pv.LastAt, pv.Last = ps.State, ps.OKs, ps.Fails, ps.LastAt, ps.Last
					pv.Fresh = ps.LastAt >= cutoff
					for i := 0; i < len(ps.Ring); i++ {
						pv.History = append(pv.History, ps.Ring[i] == '+')
					}
				}
			}
			nv.Probes = append(nv.Probes, pv)
		}
	}
	if ns != nil {
		for _, k := range sortedKeys(ns.Unknown) {
			site, name, _ := cutKey(k)
			nv.Unknown = append(nv.Unknown, UnknownProbe{Site: site, Probe: name, Count: ns.Unknown[k]})
		}
	}
	return nv
}

// pending counts how many rounds until the active site is DOWN at quorum,
// if its failing probes keep failing. Only leaning watchers count: per
// leaning watcher the rounds left are fall minus the consecutive failures of
// its closest critical probe (0 when it already votes DOWN), and the
// quorum-th smallest decides. A healthy watcher is never about to vote DOWN,
// so with fewer than quorum leaning there is no countdown.
func (s *state) pending(now, cutoff int64, t map[Site]Tally) *Pending {
	p := s.Policy
	a := s.Active
	if t[a].Verdict == Down {
		return nil
	}
	pd := &Pending{Site: a, Leaning: []string{}, Up: []string{}, Undecided: []string{}, Quorum: p.Quorum}
	var rems []int
	for _, id := range p.Nodes {
		vt := s.nodeVote(id, now)
		if vt.abstain == "" {
			if rem, lean := s.roundsToDown(id, a, cutoff); lean {
				pd.Leaning = append(pd.Leaning, id)
				rems = append(rems, rem)
				continue
			}
		}
		if vt.v[siteIdx(a)] == Up {
			pd.Up = append(pd.Up, id)
		} else {
			pd.Undecided = append(pd.Undecided, id)
		}
	}
	if len(pd.Leaning) == 0 {
		return nil
	}
	if len(rems) < p.Quorum {
		return pd
	}
	slices.Sort(rems)
	pd.Rounds = rems[p.Quorum-1]
	// The leaning watchers re-probe the site every fast interval until
	// they vote (a probe that runs to its timeout takes longer).
	pd.In = time.Duration(pd.Rounds) * p.FastProbeInterval()
	rule, _ := s.downRule(now, t)
	pd.Then = &PendingThen{Action: KindAutoFailover, Rule: rule}
	if a == Backup {
		pd.Then.Action = KindAutoFailback
	}
	return pd
}

// roundsToDown says whether node id fails a fresh critical probe of site
// (it leans) and, if so, how many more failing rounds until it votes the
// site DOWN: 0 when it already does.
func (s *state) roundsToDown(id string, site Site, cutoff int64) (rounds int, lean bool) {
	p := s.Policy
	ns := s.Nodes[id]
	rounds = p.Fall
	for _, ref := range p.Sites[site].Probes {
		if !ref.Critical {
			continue
		}
		ps := ns.probe(site, ref.Name)
		if ps == nil || ps.LastAt < cutoff {
			continue
		}
		switch {
		case ps.State == Down:
			rounds, lean = 0, true
		case ps.Fails > 0:
			rounds, lean = min(rounds, max(p.Fall-ps.Fails, 1)), true
		}
	}
	return rounds, lean
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// Explain describes decision gen (0 = the latest) in words an on-call
// human understands: what moved, why, which nodes saw what, and what DNS did.
func (m *Machine) Explain(gen uint64) (string, error) { return m.ExplainGroup("", gen) }

// ExplainGroup is Explain for decision gen of failover group (DefaultGroup
// for ""); gen 0 is the group's latest.
func (m *Machine) ExplainGroup(group string, gen uint64) (string, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if group == DefaultGroup {
		group = ""
	}
	s := &m.st
	latest := s.Desired.Gen
	if group != "" {
		gs := s.Groups[group]
		if gs == nil {
			return "", fmt.Errorf("explain group %q: no such failover group: %w", group, ErrUnknownGen)
		}
		latest = gs.Desired.Gen
	}
	if gen == 0 {
		gen = latest
	}
	var e, ack *Entry
	for i := len(s.History) - 1; i >= 0; i-- {
		if h := &s.History[i]; h.decision() && h.Gen == gen && h.Group == group {
			e = h
			// A manual move that acknowledged a block recorded it right before itself.
			if i > 0 && s.History[i-1].Kind == KindAck && s.History[i-1].Index == h.Index {
				ack = &s.History[i-1]
			}
			break
		}
	}
	if e == nil {
		return "", fmt.Errorf("explain gen %d: %w", gen, ErrUnknownGen)
	}
	var b strings.Builder
	what := map[string]string{
		KindAutoFailover:   "automatic failover",
		KindAutoFailback:   "automatic failback",
		KindManualFailover: "manual failover",
		KindManualFailback: "manual failback",
		KindSwitchover:     "planned switchover",
		KindBreakGlass:     "break-glass DNS write (made without quorum)",
		KindPolicy:         "policy change with new records",
	}[e.Kind]
	if e.Kind == KindPolicy {
		fmt.Fprintf(&b, "gen %d: %s for %s at %s by %s.\n", e.Gen, what, e.To, fmtTime(e.At), cmp.Or(EscapeText(e.Actor), "-"))
	} else {
		fmt.Fprintf(&b, "gen %d: %s from %s to %s at %s, by %s.\n", e.Gen, what, e.From, e.To, fmtTime(e.At), cmp.Or(EscapeText(e.Actor), "-"))
	}
	if e.Forced {
		if e.Rule != "" {
			fmt.Fprintf(&b, "FORCED past the %s safety rule.\n", e.Rule)
		} else {
			b.WriteString("Recorded as forced.\n")
		}
	}
	if e.Reason != "" {
		fmt.Fprintf(&b, "Why: %s.\n", EscapeText(strings.TrimSuffix(e.Reason, ".")))
	}
	if ack != nil {
		fmt.Fprintf(&b, "It acknowledged the standing block on automatic flips (%s): automatic flips are armed again.\n", ack.Detail)
	}
	if len(e.Tallies) > 0 {
		b.WriteString("Quorum at that moment:\n")
		for _, site := range sites {
			if t, ok := e.Tallies[site]; ok {
				fmt.Fprintf(&b, "  %s: %s\n", site, describeTally(t))
			}
		}
	}
	if len(e.Evidence) > 0 {
		b.WriteString("What each watcher saw:\n")
		for _, ev := range e.Evidence {
			fmt.Fprintf(&b, "  node %s: primary %s, backup %s; last report %s", ev.Node, ev.Votes[Primary], ev.Votes[Backup], fmtTime(ev.LastReport))
			if ev.Abstain != "" {
				fmt.Fprintf(&b, "; abstained: %s", EscapeText(ev.Abstain))
			}
			b.WriteString("\n")
			for _, f := range ev.Failing {
				if f.State == Down {
					fmt.Fprintf(&b, "    %s probe %s is DOWN, %d failures in a row", f.Site, f.Probe, f.Fails)
				} else {
					fmt.Fprintf(&b, "    %s probe %s is still %s but failed the last %d round(s)", f.Site, f.Probe, f.State, f.Fails)
				}
				switch {
				case f.StreakAt != 0:
					fmt.Fprintf(&b, " since %s (watcher's clock)", fmtTime(f.StreakAt))
				case f.FailSince != 0:
					fmt.Fprintf(&b, " since %s", fmtTime(f.FailSince))
				}
				if f.Class != "" || f.Phase != "" || f.Reason != "" {
					fmt.Fprintf(&b, ": %s", EscapeText(joinNonEmpty(f.Class, f.Phase, f.Reason)))
				}
				b.WriteString("\n")
			}
		}
	}
	writeTimeline(&b, e.Timings)
	if e.Outcome != "" {
		fmt.Fprintf(&b, "Last DNS outcome: %s", EscapeText(e.Outcome))
		if e.Detail != "" {
			fmt.Fprintf(&b, " (%s)", EscapeText(e.Detail))
		}
		b.WriteString(".\n")
	}
	if gen != latest {
		fmt.Fprintf(&b, "Superseded by gen %d.\n", latest)
	}
	return b.String(), nil
}

// writeTimeline prints the decision's timing chain, one step a line with
// the gap from the step before, and the time from detection to verified
// DNS: what drwatch adds over the floor that fall and interval set.
func writeTimeline(b *strings.Builder, tm Timings) {
	b.WriteString("Timeline (gap from the step before; first failure and detected are on the watchers' clocks):\n")
	for i, st := range tm.Steps() {
		if st.Server {
			fmt.Fprintf(b, "    %s served it at %s, %s after the write\n", st.Label, fmtTime(st.At), signedDur(st.Gap))
			continue
		}
		gap := ""
		switch {
		case st.Since != 0:
			gap = fmt.Sprintf("%s without a leader (nothing committed since %s)", signedDur(st.Gap), fmtTime(st.Since))
		case i > 0:
			gap = signedDur(st.Gap)
		}
		line := fmt.Sprintf("  %-14s %-32s %s", st.Label, fmtTime(st.At), gap)
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	switch {
	case tm.WrittenAt == 0:
		b.WriteString("  DNS not yet written; not yet verified.\n")
	case tm.VerifiedAt == 0:
		b.WriteString("  not yet verified.\n")
	case tm.DetectedAt != 0:
		fmt.Fprintf(b, "  From detection to verified DNS: %s.\n", time.Duration(tm.VerifiedAt-tm.DetectedAt))
	}
}

// signedDur renders a gap with its sign: a negative one means clocks disagree.
func signedDur(d time.Duration) string {
	if d < 0 {
		return d.String()
	}
	return "+" + d.String()
}

func joinNonEmpty(xs ...string) string {
	var out []string
	for _, x := range xs {
		if x != "" {
			out = append(out, x)
		}
	}
	return strings.Join(out, " / ")
}
