package api

import (
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
)

// passedDrill is a drill that ended at fxNow-ago, having measured a 40 ms
// commit, a 60 ms write and a 200 ms propagation on a 60 s TTL.
func passedDrill(ago time.Duration, outcome string) *failover.DrillRecord {
	start := fxAt(ago) - 1e9
	return &failover.DrillRecord{ID: 7, Reason: "weekly", Outcome: outcome, RequestedAt: start - 40e6, StartedAt: start, EndedAt: start + 1e9,
		Canary: failover.DrillCanary{Name: "drwatch-drill.lms.example.org.", Type: "A", TTL: 60},
		Steps: []failover.DrillStepRecord{{Step: failover.DrillStepBackupWritten, At: start + 60e6},
			{Step: failover.DrillStepBackupVerified, At: start + 260e6, Servers: []failover.ServerVerification{{Server: "ns1:53", VerifiedAt: start + 200e6}}}}}
}

func TestDrillReportMeasuresTheRTO(t *testing.T) {
	p := &failover.Policy{Fall: 3, Interval: 2 * time.Second}
	r := NewDrillReport(*passedDrill(time.Hour, failover.DrillPassed), p, 1500*time.Millisecond)
	if r.RTO == nil {
		t.Fatal("got no RTO for a drill that wrote and verified")
	}
	// detection ≤ 3×2s+1.5s = 7.5s; decision and write 0.1s; propagation 0.2s; TTL 60s.
	if got := r.RTO; got.DetectionSeconds != 7.5 || got.CommitSeconds != 0.04 || got.WriteSeconds != 0.06 ||
		got.PropagationSeconds != 0.2 || got.TotalSeconds != 7.8 || got.RTOSeconds != 67.8 || got.Servers["ns1:53"] != 0.14 {
		t.Errorf("got %+v, want detection 7.5 commit 0.04 write 0.06 propagation 0.2 total 7.8 rto 67.8, ns1:53 0.14", *got)
	}
	if want := "≈ 68 s (detection ≤ 7.5 s, decision and write 100 ms, propagation 200 ms, caches up to TTL 60 s)"; !strings.Contains(r.RTO.Summary, want) {
		t.Errorf("summary %q lacks %q", r.RTO.Summary, want)
	}
	if r := NewDrillReport(failover.DrillRecord{ID: 8, Outcome: failover.DrillFailed}, p, 0); r.RTO != nil {
		t.Errorf("a drill that never wrote: got RTO %+v, want none", r.RTO)
	}
}

func TestDrillLine(t *testing.T) {
	p := &failover.Policy{Fall: 3, Interval: 2 * time.Second}
	week := 168 * time.Hour
	for _, tc := range []struct {
		name      string
		last      *failover.DrillRecord
		running   *failover.DrillRecord
		schedule  time.Duration
		want      []string
		wantClass string
	}{
		{"passed two days ago", passedDrill(48*time.Hour, failover.DrillPassed), nil, week,
			[]string{"last drill passed 2d", "ago; RTO ≈ 68 s"}, "ok"},
		{"failed", func() *failover.DrillRecord {
			d := passedDrill(time.Hour, failover.DrillFailed)
			d.Rule = "certificates"
			return d
		}(), nil, week, []string{"last drill failed", "(certificates)"}, "down"},
		{"passed, but none in twice the schedule", passedDrill(15*24*time.Hour, failover.DrillPassed), nil, week,
			[]string{"last drill passed 15d", "no drill ran in twice the schedule (336h0m0s)"}, "down"},
		{"none yet, scheduled", nil, nil, week, []string{"no drill yet", "no drill ran in twice the schedule"}, "down"},
		{"none yet, no schedule", nil, nil, 0, []string{"no drill yet: run drwatch drill"}, "unknown"},
		{"rolled back", passedDrill(time.Hour, failover.DrillRolledBack), nil, 0, []string{"last drill rolled back"}, "warn"},
		{"running", passedDrill(time.Hour, failover.DrillPassed), passedDrill(time.Second, failover.DrillRunning), week,
			[]string{"drill 7 running since 2s ago"}, "warn"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := failover.View{Policy: p, LastDrill: tc.last, Drill: tc.running}
			text, class := drillLine(NewDrillStatus(v, tc.schedule, 1500*time.Millisecond, fxNow), fxNow)
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("got %q, want it to contain %q", text, w)
				}
			}
			if class != tc.wantClass {
				t.Errorf("got class %q, want %q (%s)", class, tc.wantClass, text)
			}
		})
	}
}

// The status page shows the drill line, red when the last drill failed.
func TestPageShowsTheDrillLine(t *testing.T) {
	st := fxFailedOver()
	d := passedDrill(time.Hour, failover.DrillFailed)
	d.Rule = "certificates"
	st.State.LastDrill = d
	st.Drill = NewDrillStatus(st.State, 168*time.Hour, 0, fxNow)
	_, body := pageGet(t, pageServer(t, st, nil), "/")
	if !strings.Contains(string(body), `class="pill down" id="drill">last drill failed 1h`) || !strings.Contains(text(body), "(certificates)") {
		t.Errorf("page: no red drill line naming the check\n%s", text(body))
	}
}
