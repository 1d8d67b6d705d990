package api

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drwatch/drwatch/failover"
)

// Summary is GET /api/v1/summary.json, shaped like Atlassian Statuspage's
// /api/v2/summary.json so that status aggregators can read it. It is
// derived from Status only.
type Summary struct {
	Page       SummaryPage        `json:"page"`
	Status     SummaryStatus      `json:"status"`
	Components []SummaryComponent `json:"components"`
	Incidents  []SummaryIncident  `json:"incidents"`
	// Groups is a drwatch addition: every failover group, in the policy's
	// order; absent when the policy has none besides the default one.
	Groups []SummaryGroup `json:"groups,omitempty"`
}

// SummaryGroup is one failover group: where its traffic is and whether it
// is healthy there, as a Statuspage component status.
type SummaryGroup struct {
	Name   string        `json:"name"`
	Active failover.Site `json:"active"`
	// Status is major_outage when the active site is DOWN at quorum,
	// partial_outage when the standby is (no disaster recovery),
	// degraded_performance while a move is pending, withheld, blocked or
	// paused, and operational otherwise.
	Status      string `json:"status"`
	Description string `json:"description"`
}

// SummaryPage identifies the page and when its data was produced.
type SummaryPage struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	URL       string    `json:"url"`
	TimeZone  string    `json:"time_zone"`
	UpdatedAt time.Time `json:"updated_at"`
	// ServedBy and Leader are drwatch additions: who answered, and who leads.
	ServedBy string `json:"served_by"`
	Leader   string `json:"leader"`
}

// Statuspage indicators, worst last.
const (
	IndicatorNone     = "none"
	IndicatorMinor    = "minor"
	IndicatorMajor    = "major"
	IndicatorCritical = "critical"
)

// Statuspage component statuses.
const (
	ComponentOperational = "operational"
	ComponentDegraded    = "degraded_performance"
	ComponentPartial     = "partial_outage"
	ComponentMajor       = "major_outage"
)

// SummaryStatus is the page's overall indicator and a one-line description.
type SummaryStatus struct {
	Indicator   string `json:"indicator"`
	Description string `json:"description"`
}

// SummaryComponent is one of "primary site", "backup site", "dns", "watchers".
type SummaryComponent struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Status      string    `json:"status"`
	Description string    `json:"description"`
	Position    int       `json:"position"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// SummaryIncident is one decision (or withheld flip) from the recent history.
type SummaryIncident struct {
	ID              string          `json:"id"`
	Name            string          `json:"name"`
	Status          string          `json:"status"` // investigating, identified, monitoring, resolved
	Impact          string          `json:"impact"` // none, minor, major, critical
	CreatedAt       time.Time       `json:"created_at"`
	UpdatedAt       time.Time       `json:"updated_at"`
	ResolvedAt      *time.Time      `json:"resolved_at"`
	Shortlink       string          `json:"shortlink"`
	IncidentUpdates []IncidentEvent `json:"incident_updates"`
}

// IncidentEvent is one update of an incident.
type IncidentEvent struct {
	ID        string    `json:"id"`
	Status    string    `json:"status"`
	Body      string    `json:"body"`
	CreatedAt time.Time `json:"created_at"`
}

// maxSummaryIncidents bounds the incidents listed.
const maxSummaryIncidents = 10

var componentRank = map[string]int{ComponentOperational: 0, ComponentDegraded: 1, ComponentPartial: 2, ComponentMajor: 3}

// BuildSummary derives the Statuspage-style summary from st.
func BuildSummary(st Status) Summary {
	v := &st.State
	at := st.ServedAt.UTC()
	sum := Summary{
		Page: SummaryPage{ID: "drwatch", Name: "drwatch", URL: "/", TimeZone: "Etc/UTC", UpdatedAt: at,
			ServedBy: st.ServedBy, Leader: st.Leader},
		Components: []SummaryComponent{},
		Incidents:  []SummaryIncident{},
	}
	fresh, total, quorum := freshWatchers(&st)
	for i, s := range []failover.Site{failover.Primary, failover.Backup} {
		t := v.Sites[s]
		c := SummaryComponent{ID: string(s), Name: string(s) + " site", Position: i + 1, UpdatedAt: at,
			Description: TallyText(s, t, total)}
		switch {
		case t.Verdict == failover.Up && len(t.Down) == 0:
			c.Status = ComponentOperational
		case t.Verdict == failover.Up:
			c.Status = ComponentDegraded
		case t.Verdict == failover.Down:
			c.Status = ComponentMajor
		case len(t.Down) > 0:
			c.Status = ComponentPartial
		default:
			c.Status = ComponentDegraded
		}
		if p := v.Pending; p != nil && p.Site == s && c.Status == ComponentOperational {
			c.Status = ComponentDegraded
		}
		sum.Components = append(sum.Components, c)
	}
	dns := SummaryComponent{ID: "dns", Name: "dns", Position: 3, UpdatedAt: at}
	matched := 0
	for _, sc := range st.DNS.Servers {
		if sc.Matched {
			matched++
		}
	}
	switch {
	case st.DNS.At.IsZero():
		dns.Status, dns.Description = ComponentDegraded, "not checked yet"
	case st.DNS.Match && v.Desired.Done:
		dns.Status = ComponentOperational
		dns.Description = fmt.Sprintf("every authoritative server serves the records for %s (gen %d, verified)", v.Desired.Active, v.Desired.Gen)
	case st.DNS.Match:
		dns.Status = ComponentDegraded
		dns.Description = fmt.Sprintf("records match, decision gen %d not verified yet", v.Desired.Gen)
	case matched > 0:
		dns.Status = ComponentPartial
		dns.Description = fmt.Sprintf("%d of %d authoritative servers serve the desired records", matched, len(st.DNS.Servers))
	default:
		dns.Status = ComponentMajor
		dns.Description = "the authoritative servers do not serve the desired records"
		if st.DNS.Error != "" {
			dns.Description += ": " + st.DNS.Error
		}
	}
	sum.Components = append(sum.Components, dns)
	w := SummaryComponent{ID: "watchers", Name: "watchers", Position: 4, UpdatedAt: at,
		Description: fmt.Sprintf("%d of %d watchers fresh, quorum %d, leader %s", fresh, total, quorum, cmp.Or(st.Leader, dash))}
	iv := interval(&st)
	switch {
	case st.Leader == "" || v.Policy == nil || fresh < quorum:
		w.Status = ComponentMajor
	case st.StaleSeconds > 3*iv.Seconds() || fresh < total:
		w.Status = ComponentDegraded
	default:
		w.Status = ComponentOperational
	}
	sum.Components = append(sum.Components, w)

	sum.Status = overall(&st, sum.Components)
	sum.Incidents = summaryIncidents(v)
	for _, g := range v.Groups {
		sum.Groups = append(sum.Groups, summaryGroup(g))
	}
	return sum
}

func summaryGroup(g failover.GroupSummary) SummaryGroup {
	out := SummaryGroup{Name: g.Name, Active: g.Active, Status: ComponentOperational,
		Description: fmt.Sprintf("on %s; %s; %s", cmp.Or(string(g.Active), dash), GroupTallies(g.Sites), g.Mode)}
	switch {
	case g.Active.Valid() && g.Sites[g.Active].Verdict == failover.Down:
		out.Status = ComponentMajor
	case g.Active.Valid() && g.Sites[g.Active.Other()].Verdict == failover.Down:
		out.Status = ComponentPartial
	case g.Pending || g.WithheldRule != "" || g.Blocked || g.Mode != "auto":
		out.Status = ComponentDegraded
	}
	if g.Blocked {
		out.Description += ", automatic flips blocked"
	}
	if g.WithheldRule != "" {
		out.Description += ", flip withheld (" + g.WithheldRule + ")"
	}
	return out
}

// GroupTallies is each site's quorum verdict with its tally, in a few
// words: "primary DOWN 2/3, backup UP 3/3" (DOWN counts the watchers that
// see it DOWN, UP those that see it UP, of every watcher tallied).
func GroupTallies(sites map[failover.Site]failover.Tally) string {
	var parts []string
	for _, site := range []failover.Site{failover.Primary, failover.Backup} {
		t := sites[site]
		n := len(t.Up) + len(t.Down) + len(t.Abstain) + len(t.Unknown)
		switch t.Verdict {
		case failover.Down:
			parts = append(parts, fmt.Sprintf("%s DOWN %d/%d", site, len(t.Down), n))
		case failover.Up:
			parts = append(parts, fmt.Sprintf("%s UP %d/%d", site, len(t.Up), n))
		default:
			parts = append(parts, fmt.Sprintf("%s %s (%d up, %d down of %d)", site, cmp.Or(string(t.Verdict), dash), len(t.Up), len(t.Down), n))
		}
	}
	return strings.Join(parts, ", ")
}

// overall picks the indicator: critical when the site taking traffic is
// DOWN or DNS is wrong everywhere; major when the DR machinery itself
// cannot act (no leader, no quorum, backup DOWN); minor for any other
// degradation.
func overall(st *Status, cs []SummaryComponent) SummaryStatus {
	v := &st.State
	by := map[string]SummaryComponent{}
	worst := ComponentOperational
	for _, c := range cs {
		by[c.ID] = c
		if componentRank[c.Status] > componentRank[worst] {
			worst = c.Status
		}
	}
	active := string(v.Active)
	standby := string(v.Active.Other())
	switch {
	case v.Active.Valid() && by[active].Status == ComponentMajor:
		return SummaryStatus{IndicatorCritical, "the active site (" + active + ") is DOWN at quorum"}
	case by["dns"].Status == ComponentMajor:
		return SummaryStatus{IndicatorCritical, "DNS does not serve the desired records"}
	case by["watchers"].Status == ComponentMajor:
		return SummaryStatus{IndicatorMajor, "no automatic failover possible: " + by["watchers"].Description}
	case v.Active.Valid() && by[standby].Status == ComponentMajor:
		return SummaryStatus{IndicatorMajor, "the standby site (" + standby + ") is DOWN: disaster recovery is not viable"}
	case worst != ComponentOperational:
		for _, c := range cs {
			if c.Status != ComponentOperational {
				return SummaryStatus{IndicatorMinor, c.Name + ": " + c.Description}
			}
		}
	}
	return SummaryStatus{IndicatorNone, "All Systems Operational: traffic on " + active}
}

func summaryIncidents(v *failover.View) []SummaryIncident {
	out := []SummaryIncident{}
	for i := len(v.History) - 1; i >= 0 && len(out) < maxSummaryIncidents; i-- {
		e := v.History[i]
		var impact string
		switch e.Kind {
		case failover.KindAutoFailover, failover.KindAutoFailback, failover.KindBreakGlass:
			impact = IndicatorMajor
		case failover.KindManualFailover, failover.KindManualFailback:
			impact = IndicatorMinor
		case failover.KindSwitchover:
			impact = IndicatorNone
		case failover.KindWithheld:
			impact = IndicatorCritical
		default:
			continue
		}
		created := time.Unix(0, e.At).UTC()
		title := kindTitle[e.Kind]
		if e.From != "" && e.To != "" {
			title += ": " + string(e.From) + " → " + string(e.To)
		}
		in := SummaryIncident{ID: "gen-" + strconv.FormatUint(e.Index, 10), Name: title, Impact: impact,
			CreatedAt: created, UpdatedAt: created, IncidentUpdates: []IncidentEvent{}}
		body := e.Reason
		if e.Actor != "" {
			body = joinNonEmpty(": ", "by "+e.Actor, body)
		}
		if e.Forced {
			body += " (forced)"
		}
		in.IncidentUpdates = append(in.IncidentUpdates, IncidentEvent{ID: in.ID + "-decided", Status: "identified", Body: body, CreatedAt: created})
		if e.Kind == failover.KindWithheld {
			// The episode is open while the view still reports it and this
			// entry belongs to it; a closed one ended by the next entry at the latest.
			in.Status = "resolved"
			if v.WithheldRule != "" && e.At >= v.WithheldSince {
				in.Status = "investigating"
			} else if i+1 < len(v.History) {
				r := time.Unix(0, v.History[i+1].At).UTC()
				in.ResolvedAt, in.UpdatedAt = &r, r
			}
			in.IncidentUpdates[0].Status = in.Status
			in.IncidentUpdates[0].Body = joinNonEmpty(": ", "withheld by rule "+e.Rule, e.Reason)
			out = append(out, in)
			continue
		}
		t := e.Timings
		if t.DetectedAt != 0 && t.DetectedAt < e.At {
			// The incident began when the watchers' evidence did, not when
			// the decision was committed.
			d := time.Unix(0, t.DetectedAt).UTC()
			body := fmt.Sprintf("watchers saw %s DOWN at quorum, %s before the decision", e.From,
				strings.TrimPrefix(gapDur(time.Duration(e.At-t.DetectedAt)), "+"))
			if t.FirstFailureAt != 0 && t.FirstFailureAt <= t.DetectedAt {
				body += "; first failed probe " + strings.TrimPrefix(gapDur(time.Duration(t.DetectedAt-t.FirstFailureAt)), "+") + " earlier"
			}
			in.IncidentUpdates = slices.Insert(in.IncidentUpdates, 0,
				IncidentEvent{ID: in.ID + "-detected", Status: "investigating", Body: body, CreatedAt: d})
			in.CreatedAt = d
		}
		switch e.Outcome {
		case failover.OutcomeVerified:
			in.Status = "resolved"
		case failover.OutcomeWritten:
			in.Status = "monitoring"
		case failover.OutcomeFailed, failover.OutcomeConflict:
			in.Status = "investigating"
		default:
			in.Status = "identified"
		}
		if t.WrittenAt != 0 {
			w := time.Unix(0, t.WrittenAt).UTC()
			in.IncidentUpdates = append(in.IncidentUpdates, IncidentEvent{ID: in.ID + "-written", Status: "monitoring",
				Body: "DNS written (+" + roundDur(time.Duration(t.WrittenAt-t.DecidedAt)) + ")", CreatedAt: w})
			in.UpdatedAt = w
		}
		if t.VerifiedAt != 0 {
			r := time.Unix(0, t.VerifiedAt).UTC()
			in.IncidentUpdates = append(in.IncidentUpdates, IncidentEvent{ID: in.ID + "-verified", Status: "resolved",
				Body: "every authoritative server serves the new records (+" + roundDur(time.Duration(t.VerifiedAt-t.DecidedAt)) + ")", CreatedAt: r})
			in.UpdatedAt = r
			if in.Status == "resolved" {
				in.ResolvedAt = &r
			}
		}
		if in.Status == "investigating" {
			in.IncidentUpdates = append(in.IncidentUpdates, IncidentEvent{ID: in.ID + "-outcome", Status: in.Status,
				Body: joinNonEmpty(": ", "DNS "+e.Outcome, e.Detail), CreatedAt: in.UpdatedAt})
		}
		// Statuspage lists updates newest first.
		for a, b := 0, len(in.IncidentUpdates)-1; a < b; a, b = a+1, b-1 {
			in.IncidentUpdates[a], in.IncidentUpdates[b] = in.IncidentUpdates[b], in.IncidentUpdates[a]
		}
		out = append(out, in)
	}
	return out
}
