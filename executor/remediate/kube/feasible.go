package kube

import (
	"fmt"
	"sort"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// landing returns a node of the pool, other than from, on which the
// scheduler could place the replacement of pd as far as node labels and
// taints go, or "" and why there is none. The replacement's ReplicaSet
// stamps it from the same template, so pd's own nodeSelector, required
// node affinity and tolerations are the replacement's.
//
// A candidate is a pool member (p.in), Ready and not cordoned. It must
// match the pod's nodeSelector and
// requiredDuringSchedulingIgnoredDuringExecution node affinity (the
// scheduler's NodeAffinity filter, through the upstream helper: In, NotIn,
// Exists, DoesNotExist, Gt, Lt, matchFields on metadata.name), and every
// NoSchedule and NoExecute taint of the node must be tolerated (its
// TaintToleration filter). Tolerations with the Lt/Gt operators are
// behind a feature gate we cannot see: they are taken as tolerating
// nothing, so such a pod is reported rather than evicted. What the
// scheduler weighs beyond labels and taints (free resources, inter-pod
// affinity, topology spread, volumes) is not checked.
func (p pool) landing(pd *corev1.Pod, from string) (string, string) {
	req := nodeaffinity.GetRequiredNodeAffinity(pd)
	names := make([]string, 0, len(p.nodes))
	for name := range p.nodes {
		names = append(names, name)
	}
	sort.Strings(names)
	var why []string
	for _, name := range names {
		n := p.nodes[name]
		if in, _ := p.in(name); !in || name == from || !nodeReady(n) || n.Spec.Unschedulable {
			continue
		}
		ok, err := req.Match(n)
		if err != nil {
			// An affinity the API server accepted but the helper cannot
			// parse: the scheduler would not place the pod either.
			return "", fmt.Sprintf("its node affinity cannot be read: %v", err)
		}
		if !ok {
			why = append(why, name+": nodeSelector or node affinity")
			continue
		}
		if t, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logr.Discard(), n.Spec.Taints, pd.Spec.Tolerations, schedulingTaint, false); untolerated {
			why = append(why, name+": taint "+t.ToString())
			continue
		}
		return name, ""
	}
	if len(why) == 0 {
		return "", "no other Ready, schedulable node is in the pool"
	}
	// The reason is recorded in the replicated state: a few examples
	// explain it, a large pool's every node would only bloat it.
	more := ""
	if len(why) > maxRefusals {
		more = fmt.Sprintf("; and %d more", len(why)-maxRefusals)
		why = why[:maxRefusals]
	}
	return "", "no Ready, schedulable node of the pool admits it (" + strings.Join(why, "; ") + more + ")"
}

// maxRefusals bounds the nodes a report names.
const maxRefusals = 5

// schedulingTaint selects the taints that keep a pod off a node.
// PreferNoSchedule only steers the scheduler.
func schedulingTaint(t *corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
}
