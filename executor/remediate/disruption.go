package remediate

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Disruptor is implemented by remediators whose actions disrupt nodes
// (Action.Disrupts): a reboot, an out-of-service taint, a force-delete of
// a node's pods. The Runner asks it, once a pass, which nodes its earlier
// actions still keep disrupted, and lets the remediations of one cluster
// disrupt at most Entry.MaxDisruptedNodes nodes at a time: the next node
// only once the previous one is Ready again or declared gone (invariant
// 14).
type Disruptor interface {
	// Disrupted returns the nodes that the applied actions (from the
	// replicated budget: which targets were acted on, by which Keys) left
	// disrupted: a node still is until the live world shows it Ready again
	// since the action, or gone (deleted, replaced, or its instance
	// confirmed down). Why must be stable text (no ages): it is recorded
	// once per change. It only reads, and is called once per pass. An
	// error means the nodes could not be judged: the Runner then lets none
	// of the cluster's remediations disrupt a node this pass.
	Disrupted(ctx context.Context, applied []Applied) ([]Disruption, error)
}

// Applied is an action the replicated budget shows as applied: its target,
// and its Key as the remediator planned it (without the Runner's prefix).
type Applied struct {
	Target, Key string
}

// Disruption is one node a remediator's earlier action keeps disrupted.
type Disruption struct {
	Node string
	// Why says what was done and what is awaited, for the records.
	Why string
}

// nodeBudget is one cluster's node disruption budget during a pass: the
// nodes disrupted now, each with why, and how many may be.
type nodeBudget struct {
	cluster string
	max     int
	nodes   map[string]string
	// broken, when set, is why the budget could not be judged: no node may
	// be disrupted.
	broken string
}

// disruptionBudgets reads, for each cluster of the enabled entries, the
// nodes its remediations' applied actions keep disrupted.
func (r *Runner) disruptionBudgets(ctx context.Context) map[string]*nodeBudget {
	out := map[string]*nodeBudget{}
	for _, e := range r.cfg.Remediators {
		if e.Cluster == "" || !e.Settings.Mode.Enabled() {
			continue
		}
		b := out[e.Cluster]
		if b == nil {
			b = &nodeBudget{cluster: e.Cluster, max: e.MaxDisruptedNodes, nodes: map[string]string{}}
			out[e.Cluster] = b
		}
		d, ok := e.Remediator.(Disruptor)
		if !ok {
			continue
		}
		name := e.Remediator.Name()
		applied := appliedActions(name, r.cfg.State)
		if len(applied) == 0 {
			continue
		}
		ds, err := d.Disrupted(ctx, applied)
		if err != nil {
			why := fmt.Sprintf("%s cannot tell which nodes it keeps disrupted: %v", name, err)
			if b.broken == "" {
				r.log.Warn("node disruption budget cannot be judged", "remediation", name, "err", err)
				b.broken = why
			}
			continue
		}
		for _, x := range ds {
			if _, seen := b.nodes[x.Node]; !seen {
				b.nodes[x.Node] = name + ": " + x.Why
			}
		}
	}
	return out
}

// appliedActions lists what name's replicated budget shows applied, by
// target then Key.
func appliedActions(name string, st State) []Applied {
	bud := st.RemediationBudget(name)
	var out []Applied
	for _, target := range slices.Sorted(maps.Keys(bud.Targets)) {
		for _, k := range bud.Targets[target].Applied {
			if key, ok := strings.CutPrefix(k, name+"/"); ok {
				out = append(out, Applied{Target: target, Key: key})
			}
		}
	}
	return out
}

// refuse says why node may not be disrupted now, or "" when it may: it
// is disrupted already (the same episode goes on), or the budget has
// room. nil (no cluster) never refuses.
func (b *nodeBudget) refuse(node string) string {
	switch {
	case b == nil:
		return ""
	case b.broken != "":
		return fmt.Sprintf("node disruption budget of cluster %s: %s", b.cluster, b.broken)
	}
	if _, ok := b.nodes[node]; ok || len(b.nodes) < b.max {
		return ""
	}
	var busy []string
	for _, n := range slices.Sorted(maps.Keys(b.nodes)) {
		busy = append(busy, fmt.Sprintf("node %s (%s)", n, b.nodes[n]))
	}
	return fmt.Sprintf("node disruption budget of cluster %s: at most %d node(s) disrupted at a time, and %s not Ready again nor gone yet: %s",
		b.cluster, b.max, plural(len(busy), "this one is", "these are"), strings.Join(busy, "; "))
}

// take counts node as disrupted by name for the rest of the pass.
func (b *nodeBudget) take(node, name string) {
	if b == nil {
		return
	}
	if _, ok := b.nodes[node]; !ok {
		b.nodes[node] = name + ": disrupted in this pass"
	}
}

func (b *nodeBudget) clone() *nodeBudget {
	c := *b
	c.nodes = maps.Clone(b.nodes)
	return &c
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
