package watcher

import (
	"context"
	"slices"
	"time"

	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/probes"
)

// Observation is the report of one probe round from node, running the
// policy with hash. Each result carries its completion time on this
// watcher's clock, as evidence of when a failure was seen; the leader
// stamps the command's At, which every rule uses.
func Observation(node, hash string, r probes.Round) failover.Observe {
	obs := failover.Observe{Node: node, Seq: r.Seq, PolicyHash: hash}
	for _, res := range r.Results {
		pr := failover.ProbeResult{Site: failover.Site(res.Site), Probe: res.Probe, OK: res.OK,
			Class: string(res.Class), Phase: res.Phase, Reason: res.Reason, LatencyMS: res.Duration.Milliseconds()}
		if !res.CertExpiry.IsZero() {
			pr.CertExpiry = res.CertExpiry.Unix()
		}
		if !res.Completed.IsZero() {
			pr.CompletedAt = res.Completed.UnixNano()
		}
		obs.Results = append(obs.Results, pr)
	}
	return obs
}

// Phase is the offset within interval at which node probes: index/N ×
// interval, its place among the policy's nodes, so that N watchers sample
// each site at N distinct moments of every interval. The quorum-th
// watcher's first failing probe then comes (quorum-1)/N to quorum/N of an
// interval after a fault, not anywhere within a whole interval as when all
// probe in step. A node not in the list probes at 0.
func Phase(nodes []string, node string, interval time.Duration) time.Duration {
	i := slices.Index(nodes, node)
	if i < 0 || len(nodes) == 0 {
		return 0
	}
	return time.Duration(int64(interval) * int64(i) / int64(len(nodes)))
}

// reportLoop sends each probe round to the leader as an Observe command
// (lean when it can, see Reporter), and keeps the scheduler's phase at this
// node's place in the replicated member order (the file's until a policy
// is replicated).
//
// It takes every round as it comes, counts it into the failure streaks and
// the suspicion at once, and hands it to a sender that reports one round
// at a time. A report waits up to an interval for a leader (an election):
// rounds that come meanwhile are merged into the one pending, as the
// scheduler merges those nobody takes, but they still count in the
// streaks, so the first report after the election carries every failed
// round (failover.StreakCounter).
func (w *Watcher) reportLoop(ctx context.Context, rounds <-chan probes.Round) {
	next := make(chan probes.Round, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case r := <-next:
				w.report(ctx, r)
			}
		}
	}()
	defer func() { <-done }()
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-rounds:
			w.lastRound.Store(w.cfg.Now().UnixNano())
			p, _ := w.replicated.get(w.machine)
			w.susp.setPolicy(p)
			w.reprobe(w.susp.round(r)) // before the report: a commit takes a while
			if p != nil {
				// Without a policy a report would only be rejected.
				w.rep.Count(p, r)
				handOver(next, r)
			}
			w.rephase(p)
		}
	}
}

// handOver puts r in next, the one-round mailbox of the sender, merged
// with a round still pending there: only the caller sends on next.
func handOver(next chan probes.Round, r probes.Round) {
	select {
	case next <- r:
		return
	default:
	}
	select {
	case old := <-next:
		r = mergeRounds(r, old)
	default:
	}
	next <- r
}

// mergeRounds returns newer with older's results for the probes newer
// does not hold: a fast round of one site must not cost the other site's
// results of a full round not yet reported.
func mergeRounds(newer, older probes.Round) probes.Round {
	has := make(map[[2]string]bool, len(newer.Results))
	for _, nr := range newer.Results {
		has[[2]string{nr.Site, nr.Probe}] = true
	}
	out := newer
	out.Results = slices.Clone(newer.Results)
	for _, nr := range older.Results {
		if !has[[2]string{nr.Site, nr.Probe}] {
			out.Results = append(out.Results, nr)
		}
	}
	out.Fast = newer.Fast && older.Fast
	return out
}

// rephase hands SetPhase this node's phase under the replicated policy
// p (nil: none yet, the file's order). It runs after every round, so it
// takes the policy the round was counted under rather than building the
// whole View, which with many failover groups costs milliseconds.
func (w *Watcher) rephase(p *failover.Policy) {
	if w.cfg.SetPhase == nil {
		return
	}
	nodes := w.cfg.Policy.Nodes
	if p != nil {
		nodes = p.Nodes
	}
	w.cfg.SetPhase(Phase(nodes, w.cfg.Node, w.cfg.Interval))
}

func (w *Watcher) report(ctx context.Context, r probes.Round) {
	p, hash := w.replicated.get(w.machine)
	if p == nil {
		// The leader has not replicated the policy yet (first seconds of a
		// new cluster); a report now would only be rejected.
		return
	}
	// A report older than one interval is worth little; do not queue it.
	pctx, cancel := context.WithTimeout(ctx, w.cfg.Interval)
	_, lean, err := w.rep.Report(pctx, w.cfg.Cluster, p, hash, r, w.cfg.Now)
	cancel()
	w.metrics.reported(lean, err)
	w.mu.Lock()
	prevErr := w.lastReport.err
	w.lastReport.at, w.lastReport.err = w.cfg.Now(), err
	w.mu.Unlock()
	switch {
	case err != nil && prevErr == nil:
		w.log.Warn("probe report not committed", "err", err)
	case err == nil && prevErr != nil:
		w.log.Info("probe reports committed again")
	}
}
