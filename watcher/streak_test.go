package watcher

import (
	"context"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/probes"
	"github.com/drwatch/drwatch/test/poll"
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

// waitingCluster is a fakeCluster whose proposals wait until release is
// closed, as a report waits for a leader during an election.
type waitingCluster struct {
	*fakeCluster
	release chan struct{}
}

func (c waitingCluster) Propose(ctx context.Context, b []byte) ([]byte, uint64, error) {
	select {
	case <-c.release:
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
	return c.fakeCluster.Propose(ctx, b)
}

// Rounds that come while a report waits for a leader are taken at once
// and count in the streak: the first report that commits after carries
// every failed round, not only those the loop had time to send.
func TestRoundsCountWhileAReportWaitsForALeader(t *testing.T) {
	w, fc := newTestWatcher(t, 30*time.Second)
	fc.log.Step(t, failover.Command{Payload: failover.SetPolicy{Policy: w.cfg.Policy, Actor: "test"}})
	fc.log.Step(t, failover.Command{Payload: failover.SetFormat{Format: 2}})
	wc := waitingCluster{fakeCluster: fc, release: make(chan struct{})}
	w.cfg.Cluster = wc
	rounds := startReportLoop(t, w)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for seq := range uint64(5) {
		at := start.Add(time.Duration(seq) * time.Second)
		r := probes.Round{Seq: seq + 1, Results: []probes.NamedResult{
			{Site: "primary", Probe: "web", Completed: at, Result: probes.Result{Class: probes.ClassRefused, Phase: "connect", Reason: "refused"}},
			{Site: "backup", Probe: "web", Completed: at, Result: probes.Result{OK: true}},
		}}
		select {
		case rounds <- r:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d not taken while a report waits for a leader", seq+1)
		}
	}
	close(wc.release)
	var got failover.ProbeResult
	poll.Until(t, 10*time.Second, func() bool {
		for _, c := range fc.commands() {
			if o, ok := c.Payload.(failover.Observe); ok && o.Seq == 5 {
				for _, r := range o.Results {
					if r.Site == failover.Primary {
						got = r
						return true
					}
				}
			}
		}
		return false
	}, "round 5 is reported")
	if got.Streak != 5 || got.StreakAt != start.UnixNano() || got.StreakFellAt != start.Add(2*time.Second).UnixNano() {
		t.Fatalf("round 5's primary/web: streak %d from %d fell %d; want 5 from %d fell %d (fall 3)",
			got.Streak, got.StreakAt, got.StreakFellAt, start.UnixNano(), start.Add(2*time.Second).UnixNano())
	}
}
