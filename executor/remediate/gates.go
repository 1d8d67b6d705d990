package remediate

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/drwatch/drwatch/executor/reconcile"
	"github.com/drwatch/drwatch/executor/remediate/hooks"
	"github.com/drwatch/drwatch/failover"
)

// Gates builds the DNS reconciler's gates and its post-verification step
// from what the config enables: a warm-up gate for the entry named warmup
// (kube.BackupWarmupName) when it is a ReadyChecker, waiting up to
// readyTimeout, then the pre-failover hooks; after runs the post-failover
// hooks once a flip is verified (nil without any). The hooks are told the
// failover group whose reconciler runs them (group; "" for the top-level
// hooks, which act on the default group): a group's reconciler has gates
// of its own, built from its own remediations and hooks.
//
// They live here, not in reconcile: each one drives a remediation (Plan and
// Apply under its Mode) or a hook, which are this package's, while the
// reconciler only knows the Gate interface it declares and stays free of
// remediations.
func Gates(node, group string, entries []Entry, warmup string, readyTimeout time.Duration, h hooks.Config, log *slog.Logger) (gates []reconcile.Gate, after func(context.Context, reconcile.Decision) string) {
	for _, e := range entries {
		if e.Remediator.Name() != warmup {
			continue
		}
		if rc, ok := e.Remediator.(ReadyChecker); ok {
			gates = append(gates, warmupGate{w: e.Remediator, ready: rc, mode: e.Settings.Mode, timeout: readyTimeout})
		}
	}
	if len(h.PreFailover) > 0 {
		gates = append(gates, hookGate{node: node, group: group, hooks: h.PreFailover})
	}
	if post := h.PostFailover; len(post) > 0 {
		after = func(ctx context.Context, d reconcile.Decision) string {
			if d.From == d.To {
				return ""
			}
			if err := hooks.RunAll(ctx, post, event("post-failover", node, group, d)); err != nil {
				log.Warn("post-failover hook failed", "gen", d.Gen, "err", err)
				return "post-failover hooks: " + err.Error()
			}
			return fmt.Sprintf("%d post-failover hook(s) ok", len(post))
		}
	}
	return gates, after
}

// warmupGate scales the backup's workloads when a flip to the backup is
// about to be written, and waits (up to its timeout) until they are ready;
// then the flip goes ahead either way, and the record says which.
type warmupGate struct {
	w       Remediator // *kube.BackupWarmup
	ready   ReadyChecker
	mode    Mode
	timeout time.Duration
}

func (g warmupGate) Name() string { return "backup warm-up" }

func (g warmupGate) Before(ctx context.Context, d reconcile.Decision) (string, error) {
	if d.To != failover.Backup {
		return "", nil
	}
	actions, err := g.w.Plan(ctx)
	if err != nil {
		return fmt.Sprintf("backup warm-up could not plan (%v); flipping without it", err), nil
	}
	if g.mode != ModeOn {
		return fmt.Sprintf("backup warm-up in %s: would scale %d workload(s)", g.mode, len(actions)), nil
	}
	for _, a := range actions {
		if err := g.w.Apply(ctx, a); err != nil {
			return fmt.Sprintf("backup warm-up: %s %s failed (%v); flipping anyway", a.Verb, a.Target, err), nil
		}
	}
	res, err := WaitReady(ctx, g.ready, g.timeout, 2*time.Second)
	switch {
	case err != nil:
		return "", err // ctx ended: leadership lost; the next leader waits again
	case res.TimedOut:
		return fmt.Sprintf("flipped before the backup was ready (waited %s): %s", res.Waited.Round(time.Second), res.Detail), nil
	}
	return fmt.Sprintf("backup ready after %s (scaled %d workload(s))", res.Waited.Round(time.Second), len(actions)), nil
}

// hookGate runs the pre-failover hooks; a hook that times out holds the
// flip only with on_timeout: block.
type hookGate struct {
	node, group string
	hooks       []hooks.Hook
}

func (g hookGate) Name() string { return "pre-failover hooks" }

func (g hookGate) Before(ctx context.Context, d reconcile.Decision) (string, error) {
	if len(g.hooks) == 0 {
		return "", nil
	}
	return hooks.RunPreFailover(ctx, g.hooks, event("pre-failover", g.node, g.group, d))
}

func event(phase, node, group string, d reconcile.Decision) hooks.Event {
	return hooks.Event{Phase: phase, Gen: d.Gen, From: string(d.From), To: string(d.To), Kind: d.Kind,
		Forced: d.Forced, Actor: d.Actor, Reason: d.Reason, Node: node, Group: group}
}
