package api

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drwatch/drwatch/cluster"
	"github.com/drwatch/drwatch/failover"
)

// defaultInterval is the refresh and staleness unit when no policy is known.
const defaultInterval = 2 * time.Second

// pageModel is what the status page template renders: every string is
// computed here, from one Status, so the template holds no logic that a test
// could not reach through buildPage.
type pageModel struct {
	Nonce     string
	RefreshMS int64
	ServedBy  string
	ServedAt  string
	Leader    string
	DataAge   string

	// Alarm is the page's own verdict on whether this node's view can be
	// trusted (no leader, no quorum, stale data), computed even if the
	// backend's Warnings were empty: DESIGN §4 invariant 7.
	Alarm    string
	Warnings []string
	// Distrust is set when the alarm is about this node's view itself (no
	// leader, no quorum, stale), not about the state it shows.
	Distrust bool

	Active      string
	ActiveClass string
	Since       string
	SinceAbs    string
	Mode        string
	ModeClass   string
	ModeDetail  string
	Decision    string
	Gen         uint64
	Fence       string
	// Drill is the drill line ("last drill passed 2d ago; RTO ≈ 73 s"),
	// DrillClass its colour: down when the last failed or none ran in
	// twice the schedule.
	Drill      string
	DrillClass string

	Sites    []siteModel
	Pending  *pendingModel
	Withheld string
	Failback string

	Probes  []probeHeader
	Nodes   []nodeRow
	DNS     dnsModel
	Raft    raftModel
	Repairs []repairRow
	// RepairGroups shows the group of each repair: on a page of every
	// runner's records (the default group's) in a cluster with groups.
	// A group's page holds its own runner's only.
	RepairGroups bool
	History      []incidentModel

	Clusters []clusterModel

	// Root is the relative way back to "/" from where the page is served:
	// "" there, "../" on a group's page under /groups/.
	Root string
	// Groups is the overview of the failover groups; nil without them.
	Groups *groupsModel
}

// repairRow is one remediation record, as the Repairs section shows it.
type repairRow struct {
	At, AtRel      string
	Group          string // the failover group whose runner recorded it
	Name           string
	Action         string // "failover loadbalancer/…"
	Result, Class  string
	Reason, Detail string
}

type siteModel struct {
	Name    string
	Verdict string
	Class   string
	Text    string // "2 of 3 watchers see primary DOWN, quorum 2"
	Voters  []voterGroup
	Active  bool
}

type voterGroup struct {
	Label, Class string
	Nodes        string
}

type pendingModel struct {
	Text  string
	Class string
}

type probeHeader struct {
	Site, Probe string
	Critical    bool
}

type nodeRow struct {
	Node    string
	Status  string // "fresh", "stale", "abstains: …", "never reported"
	Class   string
	LastAt  string
	Primary string
	Backup  string
	Cells   []cell
	Notes   []string
}

type cell struct {
	Label   string // "primary / lms", for the phone layout
	State   string
	Class   string
	Latency string
	Error   string
	Title   string
	Stale   bool
	History []string // "ok" / "fail", oldest first
	Streak  string   // "3 fails" / "5 oks"
}

type dnsModel struct {
	Unchecked bool
	Checked   string
	Gen       uint64
	Match     bool
	Error     string
	Desired   []string
	Servers   []dnsServerRow
	Fence     string
	Done      bool
	Recon     string
	ReconErr  string
}

type dnsServerRow struct {
	Server  string
	Matched bool
	Got     []string
	Error   string
}

type raftModel struct {
	State, Leader, LeaderAddr, LastContact string
	Term, Commit, Applied, Snapshot        uint64
	Members                                []memberRow
}

type memberRow struct {
	ID, Addr, Suffrage string
	Leader, Self       bool
	// Runs is the server's log format and release ("format 1, v1 (abc)").
	Runs string
}

type incidentModel struct {
	ID       string
	Open     bool
	Title    string
	Class    string
	At       string
	AtRel    string
	Actor    string
	Reason   string
	Forced   string
	Rule     string
	Outcome  string
	Tallies  []string
	Evidence []evidenceRow
	Timings  []timingStep
	Minor    bool // pause, resume, ack, policy, action: one line
}

type evidenceRow struct {
	Node, Primary, Backup, Abstain, LastReport string
	Failing                                    []string
}

type timingStep struct{ Label, At, Delta string }

// interval is the policy interval, or defaultInterval before a policy is set.
func interval(st *Status) time.Duration {
	if p := st.State.Policy; p != nil && p.Interval > 0 {
		return p.Interval
	}
	return defaultInterval
}

// The alarms about the serving node's own view.
const (
	alarmNoLeader = "No leader"
	alarmNoQuorum = "No quorum of watchers"
	alarmStale    = "Stale data"
)

// trust is the page's own judgement of whether st can be believed, worded
// for the banner. It repeats what Warnings should already say, on purpose:
// a backend that forgot a warning must not make the page lie.
func trust(st *Status) (alarm string, warnings []string) {
	iv := interval(st)
	fresh, total, quorum := freshWatchers(st)
	var own []string
	switch {
	case st.Leader == "":
		alarm = alarmNoLeader
		own = append(own, fmt.Sprintf("node %s knows no Raft leader: no quorum of watchers is reachable from it, so nothing is decided or written, and what this page shows may be stale", cmp.Or(st.ServedBy, dash)))
	case st.State.Policy != nil && fresh < quorum:
		alarm = alarmNoQuorum
		have := "have"
		if fresh == 1 {
			have = "has"
		}
		own = append(own, fmt.Sprintf("only %d of %d watchers %s fresh data (quorum %d): no automatic decision is possible", fresh, total, have, quorum))
	}
	if st.StaleSeconds > 3*iv.Seconds() {
		if alarm == "" {
			alarm = alarmStale
		}
		own = append(own, fmt.Sprintf("stale data: the last state applied on %s is %s old (limit %s, 3 × the %s interval)",
			cmp.Or(st.ServedBy, dash), roundDur(secs(st.StaleSeconds)), 3*iv, iv))
	}
	if st.State.Policy == nil && alarm == "" {
		alarm = "No policy"
		own = append(own, "no policy is set: drwatch makes no decisions until one is")
	}
	warnings = slices.Clone(st.Warnings)
	if len(warnings) == 0 {
		warnings = own
	}
	// The backend normally repeats the state's warnings in its own list;
	// add any it left out, once.
	for _, w := range st.State.Warnings {
		if !slices.Contains(warnings, w) {
			warnings = append(warnings, w)
		}
	}
	if alarm == "" && len(warnings) > 0 {
		alarm = "Warning"
		if len(warnings) > 1 {
			alarm = strconv.Itoa(len(warnings)) + " warnings"
		}
	}
	return alarm, warnings
}

// freshWatchers counts the watchers with fresh reports.
func freshWatchers(st *Status) (fresh, total, quorum int) {
	for _, n := range st.State.Nodes {
		if n.Reported && !n.Stale {
			fresh++
		}
	}
	total = len(st.State.Nodes)
	if p := st.State.Policy; p != nil {
		quorum = p.Quorum
		total = max(total, len(p.Nodes))
	}
	return fresh, total, quorum
}

func secs(s float64) time.Duration {
	if math.IsInf(s, 0) || math.IsNaN(s) || s > 1e9 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(s * float64(time.Second))
}

// buildPage turns a Status into the template's model. now is the serving
// node's clock, the reference for every "… ago".
func buildPage(st Status, now time.Time, nonce string) pageModel {
	v := &st.State
	iv := interval(&st)
	m := pageModel{
		Nonce:     nonce,
		RefreshMS: min(max(iv, time.Second), 10*time.Second).Milliseconds(),
		ServedBy:  cmp.Or(st.ServedBy, dash),
		ServedAt:  absTime(st.ServedAt),
		Leader:    st.Leader,
		Active:    string(v.Active),
		Decision:  v.LastDecision,
		Gen:       v.Desired.Gen,
		Fence:     v.Desired.Fence,
		Withheld:  "",
	}
	if v.Now > 0 {
		m.DataAge = roundDur(secs(st.StaleSeconds))
	}
	m.Alarm, m.Warnings = trust(&st)
	m.Distrust = m.Alarm == alarmNoLeader || m.Alarm == alarmNoQuorum || m.Alarm == alarmStale
	if m.Active == "" {
		m.Active = "unknown"
	}
	m.ActiveClass = "site-" + m.Active
	if v.ActiveSince > 0 {
		at := time.Unix(0, v.ActiveSince)
		m.Since, m.SinceAbs = ago(now, at), absTime(at)
	} else {
		m.Since, m.SinceAbs = "since the cluster was formed", "no decision has moved it"
	}
	m.Mode, m.ModeClass, m.ModeDetail = mode(v, now)
	m.Drill, m.DrillClass = drillLine(st.Drill, now)
	if m.Decision == "" {
		m.Decision = "none yet"
	}
	if v.WithheldRule != "" {
		m.Withheld = "Automatic flip withheld (" + v.WithheldRule + "): " + v.WithheldReason
		if v.WithheldSince > 0 {
			m.Withheld += ", since " + ago(now, time.Unix(0, v.WithheldSince))
		}
	}
	if v.FailbackIn > 0 {
		m.Failback = fmt.Sprintf("automatic failback to the primary in about %s if it stays UP", roundDur(v.FailbackIn))
	}
	total := len(v.Nodes)
	if v.Policy != nil {
		total = max(total, len(v.Policy.Nodes))
	}
	for _, s := range []failover.Site{failover.Primary, failover.Backup} {
		m.Sites = append(m.Sites, siteOf(s, v.Sites[s], total, s == v.Active))
	}
	if p := v.Pending; p != nil {
		m.Pending = pendingOf(p, v.Policy)
	}
	m.Probes, m.Nodes = matrix(v, now)
	m.DNS = dnsOf(&st, now)
	m.Raft = raftOf(&st)
	m.History = incidents(v.History, now)
	m.Repairs = repairs(v.Remediations, now)
	m.Clusters = clusters(st.ClusterHealth, now)
	return m
}

func mode(v *failover.View, now time.Time) (label, class, detail string) {
	switch {
	case v.Paused:
		label, class = "paused", "warn"
		if v.PausedUntil > 0 {
			label = "paused until " + absTime(time.Unix(0, v.PausedUntil))
			detail = until(now, time.Unix(0, v.PausedUntil))
		} else {
			detail = "until someone runs drwatch resume"
		}
		if v.PausedBy != "" {
			detail += "; by " + v.PausedBy
		}
		if v.PauseReason != "" {
			detail += ": " + v.PauseReason
		}
	case v.Mode == "auto":
		label, class = "auto", "ok"
		detail = "drwatch fails over on its own when a quorum sees the active site DOWN"
	case v.Mode == "":
		label, class = "unknown", "unknown"
	default:
		label, class = v.Mode, "warn"
		if v.Policy != nil && !v.Policy.AutoFailover {
			detail = "auto_failover is off: only manual commands move traffic"
		}
	}
	if v.Blocked {
		// Blocked only matters while automatic decisions would otherwise run.
		bu := time.Unix(0, v.BlockedUntil)
		if v.Mode == "auto" {
			label, class = "blocked until "+absTime(bu), "warn"
			detail = "an automatic flip happened: further automatic flips wait " + strings.TrimPrefix(until(now, bu), "in ") +
				" or until someone runs drwatch ack; manual commands still work and acknowledge it"
		} else {
			detail += "; automatic flips also blocked until " + absTime(bu)
		}
	}
	return label, class, detail
}

// drillLine is the status page's drill line and its class.
func drillLine(d DrillStatus, now time.Time) (text, class string) {
	switch l := d.Last; {
	case d.Running != nil:
		text, class = fmt.Sprintf("drill %d running since %s", d.Running.ID, ago(now, time.Unix(0, d.Running.StartedAt))), "warn"
	case l == nil:
		text, class = "no drill yet: run drwatch drill", "unknown"
	default:
		at := l.EndedAt
		if at == 0 {
			at = l.StartedAt
		}
		word := strings.ReplaceAll(l.Outcome, "_", " ")
		text = fmt.Sprintf("last drill %s %s", word, ago(now, time.Unix(0, at)))
		switch l.Outcome {
		case failover.DrillPassed:
			class = "ok"
		case failover.DrillFailed:
			class = "down"
			if l.Rule != "" {
				text += " (" + l.Rule + ")"
			}
		default:
			class = "warn"
		}
		if l.RTO != nil {
			text += fmt.Sprintf("; RTO ≈ %.0f s", l.RTO.RTOSeconds)
		}
	}
	if d.Red {
		class = "down"
		if d.Last == nil || d.Last.Outcome != failover.DrillFailed {
			text += " — " + d.Reason
		}
	}
	return text, class
}

// TallyText is the one-line quorum summary of a site, e.g.
// "2 of 3 watchers see primary DOWN, quorum 2".
func TallyText(site failover.Site, t failover.Tally, watchers int) string {
	switch t.Verdict {
	case failover.Down:
		s := fmt.Sprintf("%d of %d watchers %s %s DOWN, quorum %d", len(t.Down), watchers, see(len(t.Down)), site, t.Quorum)
		if len(t.Up) > 0 {
			s += fmt.Sprintf("; %d %s it UP", len(t.Up), see(len(t.Up)))
		}
		return s
	case failover.Up:
		s := fmt.Sprintf("%d of %d watchers %s %s UP, quorum %d", len(t.Up), watchers, see(len(t.Up)), site, t.Quorum)
		if len(t.Down) > 0 {
			s += fmt.Sprintf("; %d %s it DOWN", len(t.Down), see(len(t.Down)))
		}
		return s
	}
	parts := []string{}
	for _, g := range []struct {
		n    int
		what string
	}{{len(t.Up), "UP"}, {len(t.Down), "DOWN"}, {len(t.Abstain), "abstaining"}, {len(t.Unknown), "unknown"}} {
		if g.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", g.n, g.what))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "no votes")
	}
	return fmt.Sprintf("no quorum on %s: %s of %d watchers, quorum %d", site, strings.Join(parts, ", "), watchers, t.Quorum)
}

// see agrees with its count: "1 sees", "2 see".
func see(n int) string {
	if n == 1 {
		return "sees"
	}
	return "see"
}

func siteOf(s failover.Site, t failover.Tally, watchers int, active bool) siteModel {
	verdict := string(t.Verdict)
	if verdict == "" {
		verdict = string(failover.Unknown)
	}
	sm := siteModel{Name: string(s), Verdict: strings.ReplaceAll(verdict, "_", " "), Class: verdictClass(t.Verdict),
		Text: TallyText(s, t, watchers), Active: active}
	for _, g := range []struct {
		label, class string
		nodes        []string
	}{{"DOWN", "down", t.Down}, {"UP", "up", t.Up}, {"abstaining", "unknown", t.Abstain}, {"unknown", "unknown", t.Unknown}} {
		if len(g.nodes) > 0 {
			sm.Voters = append(sm.Voters, voterGroup{Label: g.label, Class: g.class, Nodes: strings.Join(g.nodes, ", ")})
		}
	}
	return sm
}

func verdictClass(v failover.Verdict) string {
	switch v {
	case failover.Up:
		return "up"
	case failover.Down:
		return "down"
	}
	return "unknown"
}

// PendingText says how close the active site is to DOWN at quorum: with
// fewer failing watchers than the quorum, who fails and who does not; with
// enough, the countdown to the automatic flip or the rule that would
// withhold it.
func PendingText(p *failover.Pending, pol *failover.Policy) string {
	if !p.Countdown() {
		total := len(p.Leaning) + len(p.Up) + len(p.Undecided)
		needs := "a flip needs"
		if p.Site == failover.Backup {
			needs = "a DOWN verdict needs"
		}
		s := fmt.Sprintf("%d of %d watchers (%s) %s %s failing; %s %d", len(p.Leaning), total, strings.Join(p.Leaning, ", "), see(len(p.Leaning)), p.Site, needs, p.Quorum)
		switch len(p.Up) {
		case 0:
		case 1:
			s += "; " + p.Up[0] + " sees it UP"
		default:
			s += "; " + andList(p.Up) + " see it UP"
		}
		if len(p.Undecided) > 0 {
			s += "; no UP or DOWN vote from " + andList(p.Undecided)
		}
		return s
	}
	who := strings.Join(p.Leaning, ", ")
	rounds := fmt.Sprintf(" (%d more failing round", p.Rounds)
	if p.Rounds != 1 {
		rounds += "s"
	}
	rounds += ")"
	in := fmt.Sprintf("about %d s", int64(math.Ceil(p.In.Seconds())))
	action := "failover"
	if p.Then.Action == failover.KindAutoFailback {
		action = "failback"
	}
	switch {
	case p.Then.Rule != "":
		return fmt.Sprintf("%s would be DOWN at quorum in %s if this persists%s, but the automatic %s would be withheld: %s (%s)",
			p.Site, in, rounds, action, p.Then.Rule, ruleText(p.Then.Rule, pol))
	case p.Then.Action == failover.KindAutoFailover:
		return fmt.Sprintf("automatic failover to %s in %s if this persists%s: %s %s %s failing", p.Site.Other(), in, rounds, who, see(len(p.Leaning)), p.Site)
	default:
		return fmt.Sprintf("%s would be DOWN at quorum in %s if this persists%s; then: %s", p.Site, in, rounds, p.Then.Action)
	}
}

// andList joins names as prose: "a", "a and b", "a, b and c".
func andList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

func ruleText(rule string, pol *failover.Policy) string {
	switch rule {
	case failover.RulePaused:
		return "automatic decisions are paused"
	case failover.RuleBlocked:
		return "an automatic flip happened recently and is not acknowledged"
	case failover.RuleAutoDisabled:
		return "auto_failover is off in the policy"
	case failover.RuleTargetUnhealthy:
		return "the other site is not UP at quorum"
	case failover.RuleNoQuorum:
		return "too few fresh watchers"
	case failover.RuleFailbackManual:
		return "failback to the primary is manual under this policy"
	case failover.RuleFailbackDwell:
		if pol != nil {
			return "the primary must be UP for " + pol.Failback.After.String() + " first"
		}
		return "the primary has not been UP long enough"
	}
	return "see the history"
}

func pendingOf(p *failover.Pending, pol *failover.Policy) *pendingModel {
	pm := &pendingModel{Text: PendingText(p, pol), Class: "warn"}
	if p.Countdown() && p.Then.Action == failover.KindAutoFailover && p.Then.Rule == "" {
		pm.Class = "down"
	}
	return pm
}

func matrix(v *failover.View, now time.Time) ([]probeHeader, []nodeRow) {
	var hdr []probeHeader
	seen := map[[2]string]int{}
	add := func(site failover.Site, name string, critical bool) {
		k := [2]string{string(site), name}
		if _, ok := seen[k]; ok {
			return
		}
		seen[k] = len(hdr)
		hdr = append(hdr, probeHeader{Site: string(site), Probe: name, Critical: critical})
	}
	if p := v.Policy; p != nil {
		for _, s := range []failover.Site{failover.Primary, failover.Backup} {
			for _, r := range p.Sites[s].Probes {
				add(s, r.Name, r.Critical)
			}
		}
	}
	for _, n := range v.Nodes {
		for _, pv := range n.Probes {
			add(pv.Site, pv.Probe, pv.Critical)
		}
	}
	rows := make([]nodeRow, 0, len(v.Nodes))
	for _, n := range v.Nodes {
		r := nodeRow{Node: n.Node, Primary: cmp.Or(string(n.Verdicts[failover.Primary]), dash), Backup: cmp.Or(string(n.Verdicts[failover.Backup]), dash),
			Cells: make([]cell, len(hdr))}
		switch {
		case !n.Reported:
			r.Status, r.Class = "never reported", "unknown"
		case n.Abstain != "":
			r.Status, r.Class = "abstains: "+n.Abstain, "warn"
		case n.Stale:
			r.Status, r.Class = "stale", "warn"
		default:
			r.Status, r.Class = "fresh", "ok"
		}
		if n.Stale && n.Abstain != "" && n.Abstain != "stale" {
			r.Status += " (stale)"
		}
		if n.LastAt > 0 {
			r.LastAt = "reported " + ago(now, time.Unix(0, n.LastAt))
		}
		if n.HashMismatch {
			r.Notes = append(r.Notes, "runs a different policy ("+failover.ShortHash(n.PolicyHash)+")")
		}
		for _, u := range n.Unknown {
			r.Notes = append(r.Notes, fmt.Sprintf("unknown probe %s/%s (%d results ignored)", u.Site, u.Probe, u.Count))
		}
		for i := range r.Cells {
			r.Cells[i] = cell{State: dash, Class: "none"}
		}
		for _, pv := range n.Probes {
			i, ok := seen[[2]string{string(pv.Site), pv.Probe}]
			if !ok {
				continue
			}
			r.Cells[i] = cellOf(pv, n.Stale)
		}
		for i := range r.Cells {
			r.Cells[i].Label = hdr[i].Site + " / " + hdr[i].Probe
		}
		rows = append(rows, r)
	}
	return hdr, rows
}

func cellOf(pv failover.ProbeView, nodeStale bool) cell {
	state := string(pv.State)
	if state == "" {
		state = string(failover.Unknown)
	}
	c := cell{State: state, Class: verdictClass(pv.State), Stale: !pv.Fresh || nodeStale}
	if pv.LastAt > 0 {
		if pv.Last.LatencyMS > 0 || pv.Last.OK {
			c.Latency = strconv.FormatInt(pv.Last.LatencyMS, 10) + " ms"
		}
		if !pv.Last.OK {
			c.Error = failureText(pv.Last.Class, pv.Last.Phase, pv.Last.Reason)
		}
	}
	c.Title = c.Error
	c.Error = truncate(c.Error, 120)
	switch {
	case pv.Fails > 0:
		c.Streak = plural(pv.Fails, "fail")
	case pv.OKs > 0:
		c.Streak = plural(pv.OKs, "ok")
	}
	for _, ok := range pv.History {
		if ok {
			c.History = append(c.History, "ok")
		} else {
			c.History = append(c.History, "fail")
		}
	}
	return c
}

// failureText is "class · phase: reason", without the phase when the
// reason already starts with it (Go network errors do: "connect: …").
func failureText(class, phase, reason string) string {
	if phase != "" && (strings.HasPrefix(reason, phase+":") || strings.HasPrefix(reason, phase+" ")) {
		phase = ""
	}
	s := joinNonEmpty(" · ", class, joinNonEmpty(": ", phase, reason))
	if s == "" {
		return "failed"
	}
	return s
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

func dnsOf(st *Status, now time.Time) dnsModel {
	d := dnsModel{Gen: st.DNS.Gen, Match: st.DNS.Match, Error: st.DNS.Error, Fence: st.State.Desired.Fence, Done: st.State.Desired.Done}
	if st.DNS.At.IsZero() {
		d.Unchecked, d.Checked = true, "not checked yet"
	} else {
		d.Checked = "checked " + ago(now, st.DNS.At) + " (" + absTime(st.DNS.At) + ")"
	}
	if len(st.DNS.Desired) > 0 {
		for _, r := range st.DNS.Desired {
			d.Desired = append(d.Desired, rrsetLine(r))
		}
	} else {
		for _, r := range st.State.Desired.Records {
			d.Desired = append(d.Desired, rrsetLine(r))
		}
	}
	for _, s := range st.DNS.Servers {
		row := dnsServerRow{Server: s.Server, Matched: s.Matched, Error: s.Error}
		if s.NS != "" && s.NS != s.Server {
			row.Server += " (" + s.NS + ")"
		}
		for _, r := range s.Got {
			row.Got = append(row.Got, rrsetLine(r))
		}
		d.Servers = append(d.Servers, row)
	}
	if rc := st.Reconcile; rc != nil {
		d.Recon = fmt.Sprintf("leader's last reconcile pass %s: gen %d, action %s, fence gen=%d, records match: %s",
			ago(now, rc.At), rc.Gen, cmp.Or(rc.Action, dash), rc.Fence, yesNo(rc.Match))
		d.ReconErr = rc.Error
	}
	return d
}

func rrsetLine(r failover.RRset) string {
	return fmt.Sprintf("%s %d %s %s", r.Name, r.TTL, r.Type, strings.Join(r.Values, " "))
}

func raftOf(st *Status) raftModel {
	r := st.Raft
	m := raftModel{State: cmp.Or(r.State, dash), Leader: st.Leader, LeaderAddr: r.LeaderAddr, Term: r.Term,
		Commit: r.CommitIndex, Applied: r.AppliedIndex, Snapshot: r.LastSnapshotIndex}
	switch {
	case strings.EqualFold(r.State, "leader"):
		m.LastContact = "this node is the leader"
	case r.State == "":
		m.LastContact = "unknown"
	case r.LastContactSecs < 0:
		m.LastContact = "never heard from a leader"
	default:
		m.LastContact = roundDur(secs(r.LastContactSecs)) + " ago"
	}
	for _, mb := range r.Members {
		m.Members = append(m.Members, memberRow{ID: mb.ID, Addr: mb.Addr, Suffrage: mb.Suffrage,
			Leader: mb.Leader || (st.Leader != "" && mb.ID == st.Leader), Self: mb.ID == st.ServedBy, Runs: memberRuns(mb)})
	}
	return m
}

// memberRuns says what a member runs, as the serving node last learnt it.
func memberRuns(m cluster.Member) string {
	switch {
	case m.Format == cluster.UnknownFormat:
		return "release unknown (not reachable)"
	case m.Format == cluster.LegacyFormat && m.Release == "":
		return "format 0 (a release from before log formats)"
	}
	return fmt.Sprintf("format %d, %s", m.Format, m.Release)
}

var kindTitle = map[string]string{
	failover.KindAutoFailover:       "Automatic failover",
	failover.KindAutoFailback:       "Automatic failback",
	failover.KindManualFailover:     "Manual failover",
	failover.KindManualFailback:     "Manual failback",
	failover.KindSwitchover:         "Planned switchover",
	failover.KindWithheld:           "Automatic flip withheld",
	failover.KindPause:              "Paused",
	failover.KindResume:             "Resumed",
	failover.KindAck:                "Acknowledged",
	failover.KindPolicy:             "Policy set",
	failover.KindBreakGlass:         "Break-glass DNS write (no quorum)",
	failover.KindBreakGlassRejected: "Break-glass marker refused (changed nothing)",
	failover.KindAction:             "DNS outcome",
	failover.KindMemberAdd:          "Watcher added",
	failover.KindMemberRemove:       "Watcher removed",
}

// incidents renders the history tail newest first.
// repairs lists the remediation records newest first. Dry-run records
// appear only here: they never enter the history.
func repairs(rs []failover.RemediationRecord, now time.Time) []repairRow {
	out := make([]repairRow, 0, len(rs))
	for i := len(rs) - 1; i >= 0; i-- {
		r := rs[i]
		row := repairRow{Group: cmp.Or(r.Group, failover.DefaultGroup), Name: r.Name, Action: r.Verb + " " + r.Target, Reason: r.Reason, Detail: r.Detail}
		if r.At > 0 {
			row.At, row.AtRel = absTime(time.Unix(0, r.At)), ago(now, time.Unix(0, r.At))
		}
		switch r.Result {
		case failover.RemediationApplied:
			row.Result, row.Class = "applied", "ok"
		case failover.RemediationFailed:
			row.Result, row.Class = "failed", "down"
		case failover.RemediationSkippedCap:
			row.Result, row.Class = "skipped: cap reached", "warn"
		case failover.RemediationDryRun:
			row.Result, row.Class = "dry run: not applied", "manual"
		case failover.RemediationBlocked:
			row.Result, row.Class = "blocked: budget refused, retried next pass", "warn"
		case failover.RemediationPlanned:
			row.Result, row.Class = "planned", "minor"
		default:
			row.Result, row.Class = r.Result, "unknown"
		}
		if r.NeedsAdmin {
			// Parked: the runner will not retry it until its state changes.
			row.Result += ": needs an admin, not retried"
		}
		out = append(out, row)
	}
	return out
}

func incidents(h []failover.Entry, now time.Time) []incidentModel {
	out := make([]incidentModel, 0, len(h))
	openedOne := false
	for i := len(h) - 1; i >= 0; i-- {
		e := h[i]
		title, ok := kindTitle[e.Kind]
		if !ok {
			title = e.Kind
		}
		im := incidentModel{ID: "h" + strconv.FormatUint(e.Index, 10), Title: title, Actor: e.Actor, Reason: e.Reason,
			Rule: e.Rule, Outcome: joinNonEmpty(": ", e.Outcome, e.Detail)}
		if e.From != "" || e.To != "" {
			if e.From != "" && e.To != "" && e.From != e.To {
				im.Title += " " + string(e.From) + " → " + string(e.To)
			} else if e.To != "" {
				im.Title += " (" + string(e.To) + ")"
			}
		}
		if e.Gen != 0 {
			im.Title = "gen " + strconv.FormatUint(e.Gen, 10) + " · " + im.Title
		}
		if e.At > 0 {
			im.At, im.AtRel = absTime(time.Unix(0, e.At)), ago(now, time.Unix(0, e.At))
		}
		switch e.Kind {
		case failover.KindAutoFailover, failover.KindAutoFailback, failover.KindBreakGlass:
			im.Class = "down"
		case failover.KindWithheld:
			im.Class = "warn"
		case failover.KindManualFailover, failover.KindManualFailback, failover.KindSwitchover:
			im.Class = "manual"
		default:
			im.Class, im.Minor = "minor", true
		}
		if e.Forced {
			im.Forced = "forced"
			if e.Rule != "" {
				im.Forced += " past the " + e.Rule + " rule"
			}
			im.Rule = ""
		}
		for _, s := range []failover.Site{failover.Primary, failover.Backup} {
			if t, ok := e.Tallies[s]; ok {
				im.Tallies = append(im.Tallies, TallyText(s, t, len(t.Up)+len(t.Down)+len(t.Abstain)+len(t.Unknown)))
			}
		}
		for _, ev := range e.Evidence {
			row := evidenceRow{Node: ev.Node, Primary: string(ev.Votes[failover.Primary]), Backup: string(ev.Votes[failover.Backup]), Abstain: ev.Abstain}
			if ev.LastReport > 0 {
				row.LastReport = absTime(time.Unix(0, ev.LastReport))
			}
			for _, f := range ev.Failing {
				s := fmt.Sprintf("%s/%s %s, %s", f.Site, f.Probe, f.State, plural(f.Fails, "failure"))
				if f.Class != "" || f.Phase != "" || f.Reason != "" {
					s += ": " + failureText(f.Class, f.Phase, f.Reason)
				}
				row.Failing = append(row.Failing, s)
			}
			im.Evidence = append(im.Evidence, row)
		}
		im.Timings = timings(e.Timings)
		if !im.Minor && !openedOne {
			im.Open, openedOne = true, true
		}
		out = append(out, im)
	}
	return out
}

// timings is the decision's chain from the first failed probe to verified
// DNS, each step with the gap from the one before (a server's from the
// DNS write), so the cost of probe → report → commit → write shows.
func timings(t failover.Timings) []timingStep {
	var out []timingStep
	for i, st := range t.Steps() {
		ts := timingStep{Label: st.Label, At: absTime(time.Unix(0, st.At))}
		if i > 0 {
			ts.Delta = gapDur(st.Gap)
		}
		switch {
		case st.Server:
			ts.Label, ts.Delta = "served by "+st.Label, ts.Delta+" after the write"
		case st.Since != 0:
			ts.Label, ts.Delta = "no leader until", gapDur(st.Gap)+" without a leader"
		}
		out = append(out, ts)
	}
	return out
}

// gapDur renders a timeline gap with its sign, to 10ms under 10s: the
// steps of a flip are seconds apart and roundDur's whole seconds hide them.
func gapDur(d time.Duration) string {
	sign := "+"
	if d < 0 {
		sign, d = "−", -d
	}
	switch {
	case d < time.Second:
		return sign + roundDur(d)
	case d < 10*time.Second:
		return sign + d.Round(10*time.Millisecond).String()
	}
	return sign + roundDur(d)
}

func joinNonEmpty(sep string, xs ...string) string {
	var out []string
	for _, x := range xs {
		if x != "" {
			out = append(out, x)
		}
	}
	return strings.Join(out, sep)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// dash is what the page and the summary show for a value that is not there:
// no leader, a verdict not yet reached, a time that never happened.
const dash = "—"

// absTime formats t in UTC to the second.
func absTime(t time.Time) string {
	if t.IsZero() {
		return dash
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// ago says how long before now t was, coarsely ("4m 10s ago").
func ago(now, t time.Time) string {
	d := now.Sub(t)
	if d < 0 {
		return "in " + roundDur(-d)
	}
	if d < time.Second {
		return "just now"
	}
	return roundDur(d) + " ago"
}

func until(now, t time.Time) string {
	d := t.Sub(now)
	if d <= 0 {
		return "due now"
	}
	return "in " + roundDur(d)
}

// roundDur prints a duration with at most two units: "850ms", "42s", "4m 10s", "3h 5m", "2d 4h".
func roundDur(d time.Duration) string {
	switch {
	case d == time.Duration(math.MaxInt64):
		return "forever"
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	case d < time.Hour:
		return fmt.Sprintf("%dm %ds", d/time.Minute, (d%time.Minute)/time.Second)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh %dm", d/time.Hour, (d%time.Hour)/time.Minute)
	}
	return fmt.Sprintf("%dd %dh", d/(24*time.Hour), (d%(24*time.Hour))/time.Hour)
}

// truncate shortens s to at most n runes, ending in "…" when cut.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
