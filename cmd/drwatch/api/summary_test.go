package api

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
)

func TestSummaryJSONSchema(t *testing.T) {
	resp, body := pageGet(t, pageServer(t, fxFailedOver(), nil), "/api/v1/summary.json")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("summary.json: got %d %q %q, want 200 application/json no-store", resp.StatusCode,
			resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"))
	}
	// Decode loosely, as a Statuspage client would, and check the shape.
	var doc struct {
		Page struct {
			ID, Name  string
			UpdatedAt *time.Time `json:"updated_at"`
		}
		Status     struct{ Indicator, Description string }
		Components []struct {
			Name, Status string
		}
		Incidents []struct {
			ID, Name, Status, Impact string
			CreatedAt                *time.Time `json:"created_at"`
			ResolvedAt               *time.Time `json:"resolved_at"`
			IncidentUpdates          []struct {
				Status, Body string
			} `json:"incident_updates"`
		}
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("summary.json: %v", err)
	}
	if doc.Page.ID == "" || doc.Page.Name == "" || doc.Page.UpdatedAt == nil || !doc.Page.UpdatedAt.Equal(fxNow) {
		t.Errorf("page: got %+v, want id, name and updated_at=%v", doc.Page, fxNow)
	}
	if !slices.Contains([]string{"none", "minor", "major", "critical"}, doc.Status.Indicator) || doc.Status.Description == "" {
		t.Errorf("status: got %+v, want an indicator of none|minor|major|critical and a description", doc.Status)
	}
	var names []string
	for _, c := range doc.Components {
		names = append(names, c.Name)
		if !slices.Contains([]string{"operational", "degraded_performance", "partial_outage", "major_outage"}, c.Status) {
			t.Errorf("component %s: status %q is not a Statuspage status", c.Name, c.Status)
		}
	}
	if want := []string{"primary site", "backup site", "dns", "watchers"}; !slices.Equal(names, want) {
		t.Errorf("components: got %v, want %v", names, want)
	}
	if len(doc.Incidents) != 1 {
		t.Fatalf("incidents: got %d, want 1 (the automatic failover; pause, resume, policy and action entries are not incidents)", len(doc.Incidents))
	}
	in := doc.Incidents[0]
	if in.ID != "gen-4200" || in.Status != "resolved" || in.Impact != "major" || in.ResolvedAt == nil || len(in.IncidentUpdates) != 4 {
		t.Fatalf("incident: got %+v, want gen-4200 resolved major with 4 updates (detected, decided, written, verified)", in)
	}
	if in.IncidentUpdates[0].Status != "resolved" {
		t.Errorf("incident updates: newest first, got first %+v", in.IncidentUpdates[0])
	}
	// The incident began when the watchers' evidence did, not at the commit.
	detected := time.Unix(0, fxAt(10*time.Minute+1500*time.Millisecond)).UTC()
	if first := in.IncidentUpdates[3]; in.CreatedAt == nil || !in.CreatedAt.Equal(detected) || first.Status != "investigating" ||
		!strings.Contains(first.Body, "primary DOWN") || !strings.Contains(first.Body, "first failed probe 1.7s earlier") {
		t.Errorf("incident start: got created %v, first update %+v; want created %v, investigating: primary DOWN, first failed probe 1.7s earlier",
			in.CreatedAt, first, detected)
	}
}

func TestSummaryIndicator(t *testing.T) {
	healthy := fxPending()
	healthy.State.Pending = nil
	healthy.State.Sites[failover.Primary] = failover.Tally{Verdict: failover.Up, Up: []string{"a", "b", "c"}, Quorum: 2}
	activeDown := fxPending()
	activeDown.State.Pending = nil
	activeDown.State.Sites[failover.Primary] = failover.Tally{Verdict: failover.Down, Down: []string{"a", "b"}, Up: []string{"c"}, Quorum: 2}
	backupDown := fxPending()
	backupDown.State.Pending = nil
	backupDown.State.Sites[failover.Backup] = failover.Tally{Verdict: failover.Down, Down: []string{"a", "b", "c"}, Quorum: 2}
	dnsWrong := healthy
	dnsWrong.DNS = DNSCheck{At: fxNow, Match: false, Servers: []ServerCheck{{Server: "ns1", Matched: false}, {Server: "ns2", Matched: false}}}
	dnsHalf := healthy
	dnsHalf.DNS = DNSCheck{At: fxNow, Match: false, Servers: []ServerCheck{{Server: "ns1", Matched: true}, {Server: "ns2", Matched: false}}}
	noLeader := healthy
	noLeader.Leader = ""
	for _, tt := range []struct {
		name      string
		st        Status
		indicator string
		comps     map[string]string
	}{
		{"healthy", healthy, IndicatorNone, map[string]string{"primary": ComponentOperational, "backup": ComponentOperational, "dns": ComponentOperational, "watchers": ComponentOperational}},
		{"pending flip", fxPending(), IndicatorMinor, map[string]string{"primary": ComponentDegraded}},
		// Running on the backup with the primary DOWN: no DR left.
		{"failed over, primary down", fxFailedOver(), IndicatorMajor, map[string]string{"primary": ComponentMajor, "backup": ComponentOperational}},
		{"active site down", activeDown, IndicatorCritical, map[string]string{"primary": ComponentMajor}},
		{"standby down", backupDown, IndicatorMajor, map[string]string{"backup": ComponentMajor}},
		{"dns wrong everywhere", dnsWrong, IndicatorCritical, map[string]string{"dns": ComponentMajor}},
		{"dns wrong on one server", dnsHalf, IndicatorMinor, map[string]string{"dns": ComponentPartial}},
		{"no leader", noLeader, IndicatorMajor, map[string]string{"watchers": ComponentMajor}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := BuildSummary(tt.st)
			if s.Status.Indicator != tt.indicator {
				t.Errorf("indicator: got %q (%s), want %q", s.Status.Indicator, s.Status.Description, tt.indicator)
			}
			for _, c := range s.Components {
				if want, ok := tt.comps[c.ID]; ok && c.Status != want {
					t.Errorf("component %s: got %q (%s), want %q", c.ID, c.Status, c.Description, want)
				}
			}
		})
	}
}

func TestSummaryWithheldIncident(t *testing.T) {
	st := fxPending()
	st.State.History = append(st.State.History, failover.Entry{Index: 5000, At: fxAt(time.Minute), Kind: failover.KindWithheld,
		From: failover.Primary, To: failover.Backup, Rule: failover.RuleTargetUnhealthy, Reason: "backup is not UP at quorum"})
	st.State.WithheldRule, st.State.WithheldSince = failover.RuleTargetUnhealthy, fxAt(time.Minute)
	s := BuildSummary(st)
	if len(s.Incidents) != 1 || s.Incidents[0].Status != "investigating" || s.Incidents[0].Impact != IndicatorCritical {
		t.Fatalf("open withheld episode: got %+v, want one investigating critical incident", s.Incidents)
	}
	st.State.WithheldRule, st.State.WithheldSince = "", 0
	st.State.History = append(st.State.History, failover.Entry{Index: 5100, At: fxAt(10 * time.Second), Kind: failover.KindAck, Actor: "alice"})
	s = BuildSummary(st)
	if len(s.Incidents) != 1 || s.Incidents[0].Status != "resolved" || s.Incidents[0].ResolvedAt == nil ||
		!s.Incidents[0].ResolvedAt.Equal(fxNow.Add(-10*time.Second)) {
		t.Fatalf("closed withheld episode: got %+v, want resolved at the next entry", s.Incidents)
	}
}
