package kube

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/remediatetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// shapeNode sets a node's labels and taints, as an operator or a node pool
// would.
func shapeNode(t *testing.T, c kubernetes.Interface, name string, lbls map[string]string, taints ...corev1.Taint) {
	t.Helper()
	ctx := context.Background()
	n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Labels, n.Spec.Taints = lbls, taints
	if _, err := c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update node %s: %v", name, err)
	}
}

// requireNode gives a pod spec a required node affinity of one term.
func requireNode(exprs []corev1.NodeSelectorRequirement, fields []corev1.NodeSelectorRequirement) func(*corev1.PodSpec) {
	return func(s *corev1.PodSpec) {
		s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
				{MatchExpressions: exprs, MatchFields: fields}}}}}
	}
}

func expr(key string, op corev1.NodeSelectorOperator, values ...string) []corev1.NodeSelectorRequirement {
	return []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}
}

// TestDrainTrapEvictsOnlyWhereTheReplacementCanLand: a trapped Service's
// only pod is evicted only when some Ready, schedulable node of the pool
// matches its nodeSelector and required node affinity (In, NotIn, Exists,
// DoesNotExist, Gt, Lt, matchFields) and tolerates the node's NoSchedule
// and NoExecute taints. Otherwise the replacement would stay Pending: the
// pod is reported (report-only, naming why each node refuses it) and, in
// mode on, kept. The look-alikes that fit somewhere are still evicted.
func TestDrainTrapEvictsOnlyWhereTheReplacementCanLand(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	ctx := context.Background()
	poolNode(t, c, "old-1", "192.0.2.11", corev1.ConditionTrue, true, true) // drained, labelled out of the LB
	poolNode(t, c, "out-1", "192.0.2.12", corev1.ConditionTrue, false, false)
	poolNode(t, c, "hdd", "192.0.2.21", corev1.ConditionTrue, false, false)
	poolNode(t, c, "ssd", "192.0.2.22", corev1.ConditionTrue, false, false)
	poolNode(t, c, "nvme", "192.0.2.23", corev1.ConditionTrue, false, false)
	poolNode(t, c, "tape", "192.0.2.24", corev1.ConditionTrue, false, false)
	poolNode(t, c, "flash", "192.0.2.25", corev1.ConditionFalse, false, false) // NotReady: no target
	poolNode(t, c, "optane", "192.0.2.26", corev1.ConditionTrue, true, false)  // cordoned: no target
	shapeNode(t, c, "old-1", map[string]string{corev1.LabelNodeExcludeBalancers: "true", "disk": "ssd", "gpu": "yes"})
	shapeNode(t, c, "out-1", map[string]string{"disk": "ssd", "gpu": "yes"}) // schedulable, but not in the pool
	shapeNode(t, c, "hdd", map[string]string{"disk": "hdd", "tier": "3"})
	shapeNode(t, c, "ssd", map[string]string{"disk": "ssd", "tier": "5"},
		corev1.Taint{Key: "dedicated", Value: "edge", Effect: corev1.TaintEffectNoSchedule})
	shapeNode(t, c, "nvme", map[string]string{"disk": "nvme"},
		corev1.Taint{Key: "maintenance", Value: "true", Effect: corev1.TaintEffectNoExecute})
	shapeNode(t, c, "tape", map[string]string{"disk": "tape"},
		corev1.Taint{Key: "slow", Value: "yes", Effect: corev1.TaintEffectPreferNoSchedule})
	shapeNode(t, c, "flash", map[string]string{"disk": "flash"})
	shapeNode(t, c, "optane", map[string]string{"disk": "optane"})
	// Ready, but the node lifecycle controller has not yet removed the
	// not-ready taint the API server put on it: the scheduler refuses it.
	poolNode(t, c, "fresh", "192.0.2.27", corev1.ConditionTrue, false, false)
	shapeNode(t, c, "fresh", map[string]string{"disk": "fresh"},
		corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule})
	var pool []PoolMember
	for _, n := range []string{"hdd", "ssd", "nvme", "tape", "flash", "optane", "fresh"} {
		pool = append(pool, PoolMember{Name: n})
	}

	tolerate := func(tol corev1.Toleration) func(*corev1.PodSpec) {
		return func(s *corev1.PodSpec) { s.Tolerations = append(s.Tolerations, tol) }
	}
	selector := func(k, v string) func(*corev1.PodSpec) {
		return func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{k: v} }
	}
	both := func(fs ...func(*corev1.PodSpec)) func(*corev1.PodSpec) {
		return func(s *corev1.PodSpec) {
			for _, f := range fs {
				f(s)
			}
		}
	}
	edge := corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "edge", Effect: corev1.TaintEffectNoSchedule}
	maint := corev1.Toleration{Key: "maintenance", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}
	for _, tc := range []struct {
		name  string
		spec  func(*corev1.PodSpec)
		lands bool   // some pool node takes the replacement
		why   string // in the report when it does not
	}{
		{"no constraint", nil, true, ""},
		{"selector on a tainted node", selector("disk", "ssd"), false, "ssd: taint dedicated=edge:NoSchedule"},
		{"selector with its toleration", both(selector("disk", "ssd"), tolerate(edge)), true, ""},
		{"selector only off the pool", selector("gpu", "yes"), false, "nodeSelector or node affinity"},
		{"selector on a NotReady node", selector("disk", "flash"), false, "no Ready, schedulable node"},
		{"selector on a cordoned node", selector("disk", "optane"), false, "no Ready, schedulable node"},
		{"selector on a node still tainted not-ready", selector("disk", "fresh"), false, "fresh: taint " + corev1.TaintNodeNotReady + ":NoSchedule"},
		{"affinity In on a NoExecute node", requireNode(expr("disk", corev1.NodeSelectorOpIn, "nvme"), nil), false, "nvme: taint maintenance=true:NoExecute"},
		{"affinity In with its toleration", both(requireNode(expr("disk", corev1.NodeSelectorOpIn, "nvme"), nil), tolerate(maint)), true, ""},
		{"affinity In a PreferNoSchedule node", requireNode(expr("disk", corev1.NodeSelectorOpIn, "tape"), nil), true, ""},
		{"affinity NotIn every pool disk", requireNode(expr("disk", corev1.NodeSelectorOpNotIn, "hdd", "ssd", "nvme", "tape"), nil), false, "hdd: nodeSelector or node affinity"},
		{"affinity NotIn but hdd", requireNode(expr("disk", corev1.NodeSelectorOpNotIn, "ssd", "nvme", "tape"), nil), true, ""},
		{"affinity Exists off the pool", requireNode(expr("gpu", corev1.NodeSelectorOpExists), nil), false, "nodeSelector or node affinity"},
		{"affinity DoesNotExist", requireNode(expr("disk", corev1.NodeSelectorOpDoesNotExist), nil), false, "nodeSelector or node affinity"},
		{"affinity DoesNotExist gpu", requireNode(expr("gpu", corev1.NodeSelectorOpDoesNotExist), nil), true, ""},
		{"affinity Gt on a tainted node", requireNode(expr("tier", corev1.NodeSelectorOpGt, "4"), nil), false, "ssd: taint dedicated=edge:NoSchedule"},
		{"affinity Lt", requireNode(expr("tier", corev1.NodeSelectorOpLt, "4"), nil), true, ""},
		{"matchFields off the pool", requireNode(nil, expr("metadata.name", corev1.NodeSelectorOpIn, "out-1")), false, "nodeSelector or node affinity"},
		{"matchFields in the pool", requireNode(nil, expr("metadata.name", corev1.NodeSelectorOpIn, "hdd")), true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := "s" + strings.ToLower(strings.ReplaceAll(tc.name, " ", "-"))
			lbls := map[string]string{"app": app}
			pd := servingPodSpec(t, c, ns, app+"-0", "old-1", "ReplicaSet", lbls, true, tc.spec)
			lbService(t, c, ns, app, corev1.ServiceExternalTrafficPolicyLocal, pd)
			r := NewDrainTrap(api(t), &fakePools{members: map[string][]PoolMember{ns + "/" + app: pool}})
			acts, err := r.Plan(ctx)
			if err != nil {
				t.Fatalf("plan: %v", err)
			}
			i := slices.IndexFunc(acts, func(a remediate.Action) bool { return a.Target == "pod/"+ns+"/"+pd.Name })
			if i < 0 {
				t.Fatalf("got actions %+v, want one for pod %s", acts, pd.Name)
			}
			a := acts[i]
			if tc.lands {
				if a.ReportOnly != "" {
					t.Fatalf("got report-only %q, want an eviction: a pool node takes the replacement", a.ReportOnly)
				}
				return
			}
			if a.ReportOnly == "" || !strings.Contains(a.ReportOnly, tc.why) {
				t.Fatalf("got report-only %q, want the eviction reported only, naming %q", a.ReportOnly, tc.why)
			}
			// In mode on the Runner records it and never evicts: the
			// Service's last pod stays where it serves.
			fc := remediatetest.NewLog()
			remediatetest.Pass(t, fc, r, remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 10})
			got, err := c.CoreV1().Pods(ns).Get(ctx, pd.Name, metav1.GetOptions{})
			if err != nil || got.DeletionTimestamp != nil {
				t.Fatalf("got pod %s %v (deleting: %v), want it kept", pd.Name, err, got != nil && got.DeletionTimestamp != nil)
			}
		})
	}

	// Two pods of one Service (two workloads behind it): the one with
	// nowhere to go is passed over for the one that fits.
	t.Run("the pod that fits goes first", func(t *testing.T) {
		lbls := map[string]string{"app": "canary"}
		stuck := servingPodSpec(t, c, ns, "canary-0", "old-1", "ReplicaSet", lbls, true, selector("disk", "flash"))
		fits := servingPodSpec(t, c, ns, "canary-1", "old-1", "ReplicaSet", lbls, true, nil)
		lbService(t, c, ns, "canary", corev1.ServiceExternalTrafficPolicyLocal, stuck, fits)
		r := NewDrainTrap(api(t), &fakePools{members: map[string][]PoolMember{ns + "/canary": pool}})
		acts, err := r.Plan(ctx)
		if err != nil {
			t.Fatalf("plan: %v", err)
		}
		if len(acts) != 1 || acts[0].Target != "pod/"+ns+"/canary-1" || acts[0].ReportOnly != "" {
			t.Fatalf("got actions %+v, want one eviction of pod/%s/canary-1", acts, ns)
		}
	})

	// Apply reads the nodes again: the only node that fit, tainted since
	// Plan, makes the eviction a failed precondition and the pod stays;
	// once the taint is gone the same action evicts it.
	t.Run("a target tainted between plan and apply", func(t *testing.T) {
		lbls := map[string]string{"app": "late"}
		pd := servingPodSpec(t, c, ns, "late-0", "old-1", "ReplicaSet", lbls, true, selector("disk", "hdd"))
		lbService(t, c, ns, "late", corev1.ServiceExternalTrafficPolicyLocal, pd)
		r := NewDrainTrap(api(t), &fakePools{members: map[string][]PoolMember{ns + "/late": pool}})
		a := planOne(t, r)
		hdd := map[string]string{"disk": "hdd", "tier": "3"}
		shapeNode(t, c, "hdd", hdd, corev1.Taint{Key: "drain", Value: "now", Effect: corev1.TaintEffectNoSchedule})
		if err := r.Apply(ctx, a); !errors.Is(err, remediate.ErrPrecondition) || !strings.Contains(err.Error(), "hdd: taint drain=now:NoSchedule") {
			t.Fatalf("apply: got %v, want remediate.ErrPrecondition naming the taint", err)
		}
		if got, err := c.CoreV1().Pods(ns).Get(ctx, pd.Name, metav1.GetOptions{}); err != nil || got.DeletionTimestamp != nil {
			t.Fatalf("got pod %s (%v), want it kept", pd.Name, err)
		}
		shapeNode(t, c, "hdd", hdd)
		if err := r.Apply(ctx, a); err != nil {
			t.Fatalf("apply once the taint is gone: %v", err)
		}
		if got, err := c.CoreV1().Pods(ns).Get(ctx, pd.Name, metav1.GetOptions{}); err == nil && got.DeletionTimestamp == nil {
			t.Fatalf("pod %s kept, want it evicted", pd.Name)
		}
	})
}

// planOne plans r and returns its one action.
func planOne(t *testing.T, r *DrainTrap) remediate.Action {
	t.Helper()
	acts, err := r.Plan(context.Background())
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	if len(acts) != 1 || acts[0].ReportOnly != "" {
		t.Fatalf("got actions %+v, want one eviction", acts)
	}
	return acts[0]
}
