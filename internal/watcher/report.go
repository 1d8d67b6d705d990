package watcher

import (
	"context"

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

// reportLoop sends each probe round to the leader as an Observe command.
func (w *Watcher) reportLoop(ctx context.Context, rounds <-chan probes.Round) {
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-rounds:
			w.lastRound.Store(w.cfg.Now().UnixNano())
			w.report(ctx, r)
		}
	}
}

func (w *Watcher) report(ctx context.Context, r probes.Round) {
	if w.machine.View().Policy == nil {
		// The leader has not replicated the policy yet (first seconds of a
		// new cluster); a report now would only be rejected.
		return
	}
	// A report older than one interval is worth little; do not queue it.
	pctx, cancel := context.WithTimeout(ctx, w.cfg.Interval)
	_, _, err := failover.Submit(pctx, w.cfg.Cluster, failover.Command{Payload: Observation(w.cfg.Node, w.hash, r)})
	cancel()
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
