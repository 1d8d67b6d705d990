package api

import (
	"fmt"
	"net/http"
	"time"

	"github.com/drwatch/drwatch/failover"
)

// DrillRTO is what a drill measured, as the time a real failover would
// take now, in seconds.
type DrillRTO struct {
	// DetectionSeconds is the policy's detection floor, at most
	// fall×interval plus the probe timeout.
	DetectionSeconds float64 `json:"detection_seconds"`
	// CommitSeconds and WriteSeconds are the drill's: from the request to
	// the committed command, and from there to the canary written.
	CommitSeconds float64 `json:"commit_seconds"`
	WriteSeconds  float64 `json:"write_seconds"`
	// PropagationSeconds is from the write to the last authoritative
	// server serving it; Servers each server's.
	PropagationSeconds float64            `json:"propagation_seconds"`
	Servers            map[string]float64 `json:"servers,omitempty"`
	TTLSeconds         float64            `json:"ttl_seconds"`
	// TotalSeconds is detection, decision and write, and propagation:
	// when every authoritative server answers with the backup.
	TotalSeconds float64 `json:"total_seconds"`
	// RTOSeconds adds the TTL: when clients that cached the old answer
	// have the backup too. The status page shows it.
	RTOSeconds float64 `json:"rto_seconds"`
	// Summary says it in one sentence.
	Summary string `json:"summary"`
}

// DrillReport is one drill with its measured RTO (when it measured one).
type DrillReport struct {
	failover.DrillRecord
	RTO *DrillRTO `json:"rto,omitempty"`
}

// DrillHistory is GET /api/v1/drills: the ended drills, oldest first, and
// the running one.
type DrillHistory struct {
	Drills  []DrillReport `json:"drills"`
	Running *DrillReport  `json:"running,omitempty"`
	// ScheduleSeconds is how often the leader drills by itself; 0: off.
	ScheduleSeconds float64 `json:"schedule_seconds"`
}

// DrillStatus is the status page's drill line: the last drill that ran,
// the running one, and whether it is time to worry.
type DrillStatus struct {
	Last            *DrillReport `json:"last,omitempty"`
	Running         *DrillReport `json:"running,omitempty"`
	ScheduleSeconds float64      `json:"schedule_seconds"`
	// Red is set when the last drill failed, or when none ran within
	// twice the schedule; Reason says which.
	Red    bool   `json:"red"`
	Reason string `json:"reason,omitempty"`
}

func seconds(d time.Duration) float64 { return d.Seconds() }

// NewDrillReport measures d under policy p (nil: no policy known) and
// the probe timeout.
func NewDrillReport(d failover.DrillRecord, p *failover.Policy, timeout time.Duration) DrillReport {
	r := DrillReport{DrillRecord: d}
	if p == nil {
		return r
	}
	rto, ok := d.RTO(*p, timeout)
	if !ok {
		return r
	}
	t, _ := d.Times()
	out := &DrillRTO{DetectionSeconds: seconds(rto.Detection), CommitSeconds: seconds(t.Commit), WriteSeconds: seconds(t.Write),
		PropagationSeconds: seconds(rto.Propagation), TTLSeconds: seconds(rto.TTL), TotalSeconds: seconds(rto.Total()),
		RTOSeconds: seconds(rto.Total() + rto.TTL)}
	for _, s := range t.Servers {
		if out.Servers == nil {
			out.Servers = map[string]float64{}
		}
		out.Servers[s.Server] = seconds(s.After)
	}
	out.Summary = rto.Summary()
	r.RTO = out
	return r
}

// NewDrillStatus is the drill line of the status at now.
func NewDrillStatus(v failover.View, schedule, timeout time.Duration, now time.Time) DrillStatus {
	s := DrillStatus{ScheduleSeconds: seconds(schedule)}
	if v.Drill != nil {
		r := NewDrillReport(*v.Drill, v.Policy, timeout)
		s.Running = &r
	}
	if v.LastDrill != nil {
		r := NewDrillReport(*v.LastDrill, v.Policy, timeout)
		s.Last = &r
	}
	switch {
	case s.Last != nil && s.Last.Outcome == failover.DrillFailed:
		s.Red, s.Reason = true, "the last drill failed"
	case schedule > 0 && (s.Last == nil || now.Sub(time.Unix(0, s.Last.StartedAt)) > 2*schedule):
		s.Red, s.Reason = true, fmt.Sprintf("no drill ran in twice the schedule (%s)", 2*schedule)
	}
	return s
}

func (s *Server) drills(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.read.Drills())
}

func (s *Server) drillCmd(req WriteRequest, actor string) (failover.Command, error) {
	c, err := s.writes.DrillCanary()
	if err != nil {
		return failover.Command{}, err
	}
	return failover.Command{Payload: failover.DrillStart{Reason: req.Reason, Actor: actor, Canary: c, RequestedAt: s.now().UnixNano()}}, nil
}
