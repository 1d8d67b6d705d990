package watcher

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/drwatch/drwatch/cluster"
	"github.com/drwatch/drwatch/executor/drillrun"
	"github.com/drwatch/drwatch/executor/reconcile"
	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/failover"
	"github.com/prometheus/client_golang/prometheus"
)

// lead runs while this node is the leader: it makes the replicated policy
// match this node's file, ticks the clock, and reconciles DNS.
func (w *Watcher) lead(ctx context.Context) {
	w.log.Info("leading")
	defer w.log.Info("no longer leading")
	c := w.cfg
	recs, err := w.reconcilers()
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
	for _, runner := range w.remediationRunners() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runner.Run(ctx)
		}()
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
	// Each group's reconciler runs on its own, with its own backoff and
	// wake-up: one group's failing or slow zone never delays another's
	// write (invariant 10). An applied command wakes those it may
	// concern (Reconciler.Wants): a settled group waits for its requeue.
	wakes := make([]chan struct{}, len(recs))
	for i, rec := range recs {
		wakes[i] = make(chan struct{}, 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec.Run(ctx, wakes[i])
		}()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.FSM.changed:
			for i, wake := range wakes {
				if !recs[i].Wants() {
					continue
				}
				select {
				case wake <- struct{}{}:
				default:
				}
			}
		}
	}
}

// reconcilers builds the leader's DNS reconcilers: the default group's,
// when the policy has one, then one per group of Config.Groups, each on
// the group's desired state and its own fenced provider, those of one
// zone and server sharing their writes (reconcile.BatchWrites). The
// default group's has the top-level gates and post-flip hooks, and alone
// the break-glass key; a group's has its own (GroupGates: its backup
// warm-up and its own hooks), so one group's hooks never run for, nor
// hold, another group's flip.
func (w *Watcher) reconcilers() ([]*reconcile.Reconciler, error) {
	c := w.cfg
	base := reconcile.Config{
		Node: c.Node, Cluster: c.Cluster, Interval: c.Interval, Logger: w.log, Now: c.Now,
		// Retry a failed write at most one probe interval apart, so a flip
		// lands within about an interval of the DNS server returning.
		BackoffBase: c.Interval / 10, BackoffMax: c.Interval,
	}
	var out []*reconcile.Reconciler
	if c.Policy.HasDefaultGroup() {
		rc := base
		rc.State, rc.DNS, rc.Verifier, rc.Observe = w.machine, c.DNS, c.Verifier, w.observeReconcile
		rc.Gates, rc.AfterVerified = c.Gates, c.AfterVerified
		rc.BreakGlassKey, rc.BreakGlassMaxAge = c.BreakGlassKey, c.BreakGlassMaxAge
		rec, err := reconcile.New(rc)
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	for _, g := range c.Groups {
		rc := base
		rc.Group, rc.State, rc.DNS, rc.Verifier = g.Name, reconcile.GroupState(w.machine, g.Name), g.DNS, g.Verifier
		for _, gg := range c.GroupGates {
			if gg.Name == g.Name {
				rc.Gates, rc.AfterVerified = gg.Gates, gg.AfterVerified
			}
		}
		rc.Observe = func(r reconcile.Report) { w.observeGroupReconcile(g.Name, r) }
		rec, err := reconcile.New(rc)
		if err != nil {
			return nil, fmt.Errorf("group %s: %w", g.Name, err)
		}
		out = append(out, rec)
	}
	// Groups of one zone on one RFC 2136 server share their writes: a
	// region outage is one UPDATE per zone, each group still fenced on
	// its own record. A ready write waits for a sibling still reading
	// DNS at most a tenth of an interval, the first retry's delay.
	if n := reconcile.BatchWrites(c.Interval/10, out); n > 0 {
		w.log.Info("dns writes batched per zone", "batches", n)
	}
	return out, nil
}

// remediationRunners builds the leader's remediation runners: the
// top-level section's (as before groups, on the lead group's decision),
// then one per failover group with remediations of its own, on the
// group's decision and budgets. With groups in the policy each runner's
// metrics carry a group label ("default" for the top-level runner), as
// the decision metrics do; without groups, exactly the series before
// groups. A runner that cannot be built is logged, and the others run.
func (w *Watcher) remediationRunners() []*remediate.Runner {
	c := w.cfg
	grouped := len(c.Policy.Groups) > 0
	var out []*remediate.Runner
	add := func(group string, state remediate.State, entries []remediate.Entry, interval time.Duration) {
		if len(entries) == 0 {
			return
		}
		rc := remediate.RunnerConfig{Node: c.Node, Group: group, Cluster: c.Cluster, State: state,
			Remediators: entries, Interval: interval, Registerer: c.Registry, Logger: w.log.With("component", "remediate"), Now: c.Now}
		if grouped {
			rc.Registerer = prometheus.WrapRegistererWith(prometheus.Labels{"group": cmp.Or(group, failover.DefaultGroup)}, c.Registry)
			rc.Logger = rc.Logger.With("group", cmp.Or(group, failover.DefaultGroup))
		}
		runner, err := remediate.NewRunner(rc)
		if err != nil {
			w.log.Error("remediations not started", "group", cmp.Or(group, failover.DefaultGroup), "err", err)
			return
		}
		out = append(out, runner)
	}
	add("", w.machine, c.Remediators, c.RemediationInterval)
	for _, g := range c.GroupRemediations {
		add(g.Name, remediate.GroupState(w.machine, g.Name), g.Remediators, g.Interval)
	}
	return out
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
	held := false
	for {
		held = w.tick(ctx, held)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// tick is one interval of the leader: it proposes this node's policy when
// the replicated one differs, or else a Tick, then raises the log format
// when every server reads a newer one. A policy that needs a newer log
// format than the cluster writes (failover groups, while a server still
// runs an earlier release) is held, and a Tick proposed instead: the
// leader's stamp would refuse it every interval, and the clock would stand
// still. It is proposed at the first interval after raiseFormat lifted the
// format, so the groups turn on by themselves. held says whether the last
// interval held it, so that it is logged once; tick returns it for this one.
func (w *Watcher) tick(ctx context.Context, held bool) bool {
	policy := failover.Command{Payload: failover.SetPolicy{Policy: w.cfg.Policy, Actor: "node:" + w.cfg.Node}}
	switch format := w.machine.Format(); {
	case w.machine.PolicyHash() == w.hash:
		held = false
		w.propose(ctx, failover.Command{Payload: failover.Tick{}})
	case w.policyFormat > format:
		if !held {
			w.log.Info("policy held until every server reads its log format", "policy", failover.ShortHash(w.hash), "needs", w.policyFormat, "format", format)
		}
		held = true
		w.propose(ctx, failover.Command{Payload: failover.Tick{}})
	default:
		held = false
		w.propose(ctx, policy)
	}
	w.raiseFormat(ctx)
	return held
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

func (w *Watcher) observeGroupReconcile(name string, r reconcile.Report) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.groupRec == nil {
		w.groupRec = map[string]reconcile.Report{}
	}
	w.groupRec[name] = r
}

func (w *Watcher) observeReconcile(r reconcile.Report) {
	w.mu.Lock()
	w.lastRec = r
	w.mu.Unlock()
	w.metrics.reconciled(r)
}
