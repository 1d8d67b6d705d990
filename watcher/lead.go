package watcher

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/drwatch/drwatch/cluster"
	"github.com/drwatch/drwatch/executor/drillrun"
	"github.com/drwatch/drwatch/executor/reconcile"
	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/failover"
)

// lead runs while this node is the leader: it makes the replicated policy
// match this node's file, ticks the clock, and reconciles DNS.
func (w *Watcher) lead(ctx context.Context) {
	w.log.Info("leading")
	defer w.log.Info("no longer leading")
	c := w.cfg
	rec, err := reconcile.New(reconcile.Config{
		Node: c.Node, State: w.machine, Cluster: c.Cluster, DNS: c.DNS, Verifier: c.Verifier,
		Interval: c.Interval, Logger: w.log, Now: c.Now,
		// Retry a failed write at most one probe interval apart, so a flip
		// lands within about an interval of the DNS server returning.
		BackoffBase: c.Interval / 10, BackoffMax: c.Interval,
		Observe: w.observeReconcile, Gates: c.Gates, AfterVerified: c.AfterVerified,
		BreakGlassKey: c.BreakGlassKey, BreakGlassMaxAge: c.BreakGlassMaxAge,
	})
	if err != nil {
		w.log.Error("reconciler not started", "err", err)
		return
	}
	w.setLeading(true)
	defer w.setLeading(false)

	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.tickLoop(ctx)
	}()
	if len(c.Remediators) > 0 {
		runner, err := remediate.NewRunner(remediate.RunnerConfig{Node: c.Node, Cluster: c.Cluster, State: w.machine,
			Remediators: c.Remediators, Interval: c.RemediationInterval, Registerer: c.Registry,
			Logger: w.log.With("component", "remediate"), Now: c.Now})
		if err != nil {
			w.log.Error("remediations not started", "err", err)
		} else {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runner.Run(ctx)
			}()
		}
	}
	if d := c.Drill; d != nil {
		runner, err := drillrun.New(drillrun.Config{Node: c.Node, State: w.machine, Cluster: c.Cluster, DNS: d.DNS,
			Verifier: c.Verifier, Schedule: d.Schedule, Canary: d.Canary, Readiness: d.Readiness,
			Interval: c.Interval, BackoffBase: c.Interval / 10, BackoffMax: c.Interval,
			Logger: w.log.With("component", "drill"), Now: c.Now})
		if err != nil {
			w.log.Error("drills not started", "err", err)
		} else {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runner.Run(ctx, c.FSM.drillChanged)
			}()
		}
	}
	wake := make(chan struct{}, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case <-c.FSM.changed:
				select {
				case wake <- struct{}{}:
				default:
				}
			}
		}
	}()
	rec.Run(ctx, wake)
}

func (w *Watcher) setLeading(on bool) {
	w.mu.Lock()
	w.leading = on
	w.mu.Unlock()
}

// tickLoop keeps the replicated policy in step with this leader's file and
// advances the replicated clock once per interval.
func (w *Watcher) tickLoop(ctx context.Context) {
	t := time.NewTicker(w.cfg.Interval)
	defer t.Stop()
	for {
		if w.machine.View().PolicyHash != w.hash {
			w.propose(ctx, failover.Command{Payload: failover.SetPolicy{Policy: w.cfg.Policy, Actor: "node:" + w.cfg.Node}})
		} else {
			w.propose(ctx, failover.Command{Payload: failover.Tick{}})
		}
		w.raiseFormat(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ServerFormats is what a leader needs to raise the cluster's log
// format; *cluster.Node has it.
type ServerFormats interface {
	// ServerInfos is what every server of the configuration runs, as
	// this node last learnt it, without blocking.
	ServerInfos() []cluster.ServerInfo
}

// raiseFormat records in the log, once every server of the configuration
// has said it reads a newer log format than the cluster's, that the
// leader may now write it (failover.SetFormat). A server that could not be
// asked holds it back, and so does one from before formats.
func (w *Watcher) raiseFormat(ctx context.Context) {
	sf, ok := w.cfg.Cluster.(ServerFormats)
	if !ok {
		return
	}
	infos := sf.ServerInfos()
	if len(infos) == 0 {
		return
	}
	every := failover.Format
	for _, i := range infos {
		every = min(every, i.Format)
	}
	from := w.machine.Format()
	if every <= from {
		return
	}
	w.log.Info("raising the log format", "from", from, "to", every, "servers", len(infos))
	w.propose(ctx, failover.Command{Payload: failover.SetFormat{Format: every}})
}

func (w *Watcher) propose(ctx context.Context, c failover.Command) {
	pctx, cancel := context.WithTimeout(ctx, w.cfg.Interval)
	defer cancel()
	_, index, err := failover.Submit(pctx, w.cfg.Cluster, c)
	switch {
	case index == 0 && errors.Is(err, failover.ErrBadCommand):
		// Not proposed: it could not be encoded (a response the core
		// refused as bad comes with the index it was applied at).
		w.log.Error("encode command", "err", err)
	case err != nil && ctx.Err() == nil:
		w.log.Warn("command not committed", "type", c.Type(), "err", err)
	}
}

func (w *Watcher) observeReconcile(r reconcile.Report) {
	w.mu.Lock()
	w.lastRec = r
	w.mu.Unlock()
	w.metrics.reconciled(r)
}
