package watcher

import (
	"context"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/probes"
)

// A watcher's reports carry its failure streaks only once the cluster's
// log format reads them: while the format is below 2 (a server of an
// older release in the trio) they are the old form, and the rounds it
// failed meanwhile still count in the streak it sends once it may.
func TestReportsCarryStreaksOnlyOnceTheClusterFormatReadsThem(t *testing.T) {
	_, m, lp, rep := reporterOnLog(t)
	seq := uint64(0)
	send := func() failover.ProbeResult {
		t.Helper()
		seq++
		lp.at = lp.at.Add(time.Second)
		r := probes.Round{Seq: seq}
		for _, site := range []string{"primary", "backup"} {
			for _, name := range []string{"web", "api"} {
				res := probes.Result{OK: true, Duration: 4 * time.Millisecond}
				if site == "primary" && name == "web" {
					res = probes.Result{Class: probes.ClassRefused, Phase: "connect", Reason: "refused"}
				}
				r.Results = append(r.Results, probes.NamedResult{Site: site, Probe: name, Completed: lp.at, Result: res})
			}
		}
		p, h := m.Policy()
		if _, _, err := rep.Report(context.Background(), lp, p, h, r, func() time.Time { return lp.at }); err != nil {
			t.Fatal(err)
		}
		for _, res := range lp.last.Results {
			if res.Site == failover.Primary && res.Probe == "web" {
				return res
			}
		}
		t.Fatalf("report %+v lacks primary/web", lp.last)
		return failover.ProbeResult{}
	}
	first := lp.at.Add(time.Second).UnixNano()
	for i := range 2 {
		if got := send(); got.Streak != 0 || got.StreakAt != 0 || got.StreakFellAt != 0 {
			t.Fatalf("format %d, round %d: report carries a streak %+v; want the old form", m.Format(), i+1, got)
		}
	}
	lp.index++
	if _, err := m.Step(lp.index, failover.Command{At: lp.at.UnixNano(), Payload: failover.SetFormat{Format: 2}}); err != nil {
		t.Fatal(err)
	}
	got := send()
	if got.Streak != 3 || got.StreakAt != first || got.StreakFellAt != lp.at.UnixNano() {
		t.Fatalf("format 2, third failing round: streak %d from %d fell %d; want 3 from %d fell %d",
			got.Streak, got.StreakAt, got.StreakFellAt, first, lp.at.UnixNano())
	}
}
