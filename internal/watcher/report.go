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
func (w *Watcher) reportLoop(ctx context.Context, rounds <-chan probes.Round) {
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-rounds:
			w.lastRound.Store(w.cfg.Now().UnixNano())
			w.reprobe(w.susp.round(r)) // before the report: a commit takes a while
			w.report(ctx, r)
			w.rephase()
		}
	}
}

// rephase hands SetPhase this node's phase under the replicated policy.
func (w *Watcher) rephase() {
	if w.cfg.SetPhase == nil {
		return
	}
	nodes := w.cfg.Policy.Nodes
	if p := w.machine.View().Policy; p != nil {
		nodes = p.Nodes
	}
	w.cfg.SetPhase(Phase(nodes, w.cfg.Node, w.cfg.Interval))
}

func (w *Watcher) report(ctx context.Context, r probes.Round) {
	p, hash := w.machine.Policy()
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
