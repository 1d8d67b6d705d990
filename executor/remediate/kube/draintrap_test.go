package kube

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/remediatetest"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// fakePools is the cloud's view of the load-balancer pools, keyed by
// "namespace/name" of the Service. A Service not in members has no load
// balancer (found false). err, when set, is every read's answer.
type fakePools struct {
	mu      sync.Mutex
	members map[string][]PoolMember
	err     error
}

func (f *fakePools) PoolMembers(_ context.Context, svc *corev1.Service) ([]PoolMember, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, false, f.err
	}
	m, ok := f.members[svc.Namespace+"/"+svc.Name]
	return slices.Clone(m), ok, nil
}

func (f *fakePools) set(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// poolNode creates a node with an InternalIP, its Ready condition, and
// optionally cordoned or labelled out of external load balancers. A Ready
// node loses the not-ready taint the API server's TaintNodesByCondition
// admission put on it at creation, as the node lifecycle controller (none
// runs here) would remove it: the scheduler refuses a node that keeps it.
func poolNode(t *testing.T, c kubernetes.Interface, name, ip string, ready corev1.ConditionStatus, cordoned, excluded bool) {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Unschedulable: cordoned}}
	if excluded {
		n.Labels = map[string]string{corev1.LabelNodeExcludeBalancers: "true"}
	}
	n, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create node %s: %v", name, err)
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}, {Type: corev1.NodeHostName, Address: name}}
	n = setReady(t, c, n, ready, time.Now())
	if ready != corev1.ConditionTrue {
		return
	}
	n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
	if _, err := c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("untaint node %s: %v", name, err)
	}
}

// servingPod creates a pod on nodeName owned by a controller of kind
// (ReplicaSet, DaemonSet) and marks it Running and Ready through the
// status subresource, as its kubelet would; ready false leaves it Running
// but not Ready (a replacement still starting).
func servingPod(t *testing.T, c kubernetes.Interface, ns, name, nodeName, kind string, lbls map[string]string, ready bool) *corev1.Pod {
	t.Helper()
	return servingPodSpec(t, c, ns, name, nodeName, kind, lbls, ready, nil)
}

// servingPodSpec is servingPod with spec, when not nil, shaping the pod's
// spec (its nodeSelector, affinity, tolerations) before it is created.
func servingPodSpec(t *testing.T, c kubernetes.Interface, ns, name, nodeName, kind string, lbls map[string]string, ready bool, spec func(*corev1.PodSpec)) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	yes := true
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: lbls,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: lbls["app"],
				UID: types.UID(kind + "-" + lbls["app"]), Controller: &yes}}},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Image: "example.invalid/c"}}},
	}
	if spec != nil {
		spec(&p.Spec)
	}
	p, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	return setPodReady(t, c, p, ready)
}

func setPodReady(t *testing.T, c kubernetes.Interface, p *corev1.Pod, ready bool) *corev1.Pod {
	t.Helper()
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st, LastTransitionTime: metav1.Now()}}
	p, err := c.CoreV1().Pods(p.Namespace).UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update pod status %s: %v", p.Name, err)
	}
	return p
}

// lbService creates a Service of type LoadBalancer with the traffic policy
// and selector app=name, and its EndpointSlice with one endpoint per pod,
// as the endpoint slice controller would (none runs here).
func lbService(t *testing.T, c kubernetes.Interface, ns, name string, policy corev1.ServiceExternalTrafficPolicy, pods ...*corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	_, err := c.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: policy,
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Port: 443, TargetPort: intstr.FromInt32(8443)}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create service %s: %v", name, err)
	}
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name + "-abc", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   endpoints(pods),
	}
	if _, err := c.DiscoveryV1().EndpointSlices(ns).Create(ctx, sl, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create endpointslice %s: %v", name, err)
	}
}

// setEndpoints rewrites the Service's EndpointSlice from the pods' current
// state, as the endpoint slice controller would after a pod change.
func setEndpoints(t *testing.T, c kubernetes.Interface, ns, name string, pods ...*corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	sl, err := c.DiscoveryV1().EndpointSlices(ns).Get(ctx, name+"-abc", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sl.Endpoints = endpoints(pods)
	if _, err := c.DiscoveryV1().EndpointSlices(ns).Update(ctx, sl, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update endpointslice %s: %v", name, err)
	}
}

func endpoints(pods []*corev1.Pod) []discoveryv1.Endpoint {
	var out []discoveryv1.Endpoint
	for i, p := range pods {
		ready := p.DeletionTimestamp == nil
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady {
				ready = ready && cond.Status == corev1.ConditionTrue
			}
		}
		nn := p.Spec.NodeName
		out = append(out, discoveryv1.Endpoint{
			Addresses:  []string{"10.0.0." + string(rune('1'+i))},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready},
			NodeName:   &nn,
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID},
		})
	}
	return out
}

// setBudget sets the PodDisruptionBudget's status as the disruption
// controller would (none runs here): the eviction API refuses with 429
// while disruptionsAllowed is 0.
func setBudget(t *testing.T, c kubernetes.Interface, ns, name string, allowed int32) *policyv1.PodDisruptionBudget {
	t.Helper()
	ctx := context.Background()
	pdb, err := c.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pdb.Status.ObservedGeneration = pdb.Generation
	pdb.Status.DisruptionsAllowed = allowed
	pdb.Status.CurrentHealthy, pdb.Status.DesiredHealthy, pdb.Status.ExpectedPods = 2+allowed, 2, 2+allowed
	pdb.Status.DisruptedPods = nil
	pdb, err = c.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, pdb, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update pdb status: %v", err)
	}
	return pdb
}

// TestDrainTrap: a Local LoadBalancer Service whose ready endpoints are all
// on nodes out of its load balancer's pool (labelled
// exclude-from-external-load-balancers, or no longer a pool member) gets
// one pod evicted at a time through the Eviction API, the next only once
// the replacement is Ready; a PodDisruptionBudget refusing the eviction is
// recorded as blocked. Cordoned and NotReady nodes that are still pool
// members, other Services, and Services whose pool cannot be read are
// untouched.
func TestDrainTrap(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	ctx := context.Background()
	poolNode(t, c, "old-1", "192.0.2.11", corev1.ConditionTrue, true, true)  // drained, labelled out of the LB
	poolNode(t, c, "old-2", "192.0.2.12", corev1.ConditionTrue, true, false) // drained, dropped from the pool by the cloud
	poolNode(t, c, "new-1", "192.0.2.21", corev1.ConditionTrue, false, false)
	poolNode(t, c, "new-2", "192.0.2.22", corev1.ConditionTrue, false, false) // not yet added to the pool
	poolNode(t, c, "cord-1", "192.0.2.31", corev1.ConditionTrue, true, false) // cordoned, still a member
	poolNode(t, c, "nr-1", "192.0.2.41", corev1.ConditionFalse, false, false) // NotReady, still a member
	// Every pool of this cluster's load balancers: cord-1 is matched by
	// address only, as a member created without a name.
	pool := []PoolMember{{Name: "new-1", Address: "192.0.2.21", OperatingStatus: "ONLINE"},
		{Address: "192.0.2.31", OperatingStatus: "ONLINE"}, {Name: "nr-1", Address: "192.0.2.41", OperatingStatus: "ERROR"},
		{Name: "old-1", Address: "192.0.2.11", OperatingStatus: "ONLINE"}} // old-1: the label wins over a stale member
	pools := &fakePools{members: map[string][]PoolMember{}}
	for _, s := range []string{"ingress", "cordoned", "notready", "mixed", "cluster", "daemon"} {
		pools.members[ns+"/"+s] = pool
	}

	ing := map[string]string{"app": "ingress"}
	ing0 := servingPod(t, c, ns, "ingress-0", "old-1", "ReplicaSet", ing, true)
	ing1 := servingPod(t, c, ns, "ingress-1", "old-2", "ReplicaSet", ing, true)
	lbService(t, c, ns, "ingress", corev1.ServiceExternalTrafficPolicyLocal, ing0, ing1)
	two := intstr.FromInt32(2)
	if _, err := c.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "ingress-pdb"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &two, Selector: &metav1.LabelSelector{MatchLabels: ing}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setBudget(t, c, ns, "ingress-pdb", 0)

	// Look-alikes, each with every ready endpoint on nodes that are still
	// pool members, or not trapped, or with no pool to read.
	lookAlikes := []string{"cordoned-0", "notready-0", "mixed-0", "mixed-1", "cluster-0", "daemon-0", "pending-0"}
	lbService(t, c, ns, "cordoned", corev1.ServiceExternalTrafficPolicyLocal,
		servingPod(t, c, ns, "cordoned-0", "cord-1", "ReplicaSet", map[string]string{"app": "cordoned"}, true))
	lbService(t, c, ns, "notready", corev1.ServiceExternalTrafficPolicyLocal,
		servingPod(t, c, ns, "notready-0", "nr-1", "ReplicaSet", map[string]string{"app": "notready"}, true))
	mixed := map[string]string{"app": "mixed"}
	lbService(t, c, ns, "mixed", corev1.ServiceExternalTrafficPolicyLocal,
		servingPod(t, c, ns, "mixed-0", "old-1", "ReplicaSet", mixed, true), servingPod(t, c, ns, "mixed-1", "new-1", "ReplicaSet", mixed, true))
	lbService(t, c, ns, "cluster", corev1.ServiceExternalTrafficPolicyCluster,
		servingPod(t, c, ns, "cluster-0", "old-1", "ReplicaSet", map[string]string{"app": "cluster"}, true))
	// A DaemonSet's pod would come back on the same node.
	lbService(t, c, ns, "daemon", corev1.ServiceExternalTrafficPolicyLocal,
		servingPod(t, c, ns, "daemon-0", "old-2", "DaemonSet", map[string]string{"app": "daemon"}, true))
	// No load balancer in the cloud yet (found false): nothing is known.
	lbService(t, c, ns, "pending", corev1.ServiceExternalTrafficPolicyLocal,
		servingPod(t, c, ns, "pending-0", "old-1", "ReplicaSet", map[string]string{"app": "pending"}, true))

	versionsOf := func(names ...string) func() map[string]string {
		return func() map[string]string {
			return versions(t, func(n string) (metav1.Object, error) {
				return c.CoreV1().Pods(ns).Get(ctx, n, metav1.GetOptions{})
			}, names...)
		}
	}
	lookAlikesBefore := versionsOf(lookAlikes...)()
	terminating := func(name string) bool {
		p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return true // gone
		}
		return p.DeletionTimestamp != nil
	}
	r := NewDrainTrap(api(t), pools)
	fc := remediatetest.NewLog()
	on := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 10}
	pass := func(t *testing.T, want ...string) {
		t.Helper()
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on))
		if want == nil {
			want = []string{}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("got records %q, want %q", got, want)
		}
	}
	evictIng := func(pod string) []string {
		return []string{"planned evict pod/" + ns + "/" + pod, "applied evict pod/" + ns + "/" + pod}
	}

	t.Run("plan: one pod of the trapped service, named with its node and budget", func(t *testing.T) {
		acts, err := r.Plan(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(acts) != 1 || acts[0].Target != "pod/"+ns+"/ingress-0" || acts[0].Verb != "evict" {
			t.Fatalf("got actions %+v, want one: evict pod/%s/ingress-0", acts, ns)
		}
		for _, want := range []string{"service " + ns + "/ingress", "node old-1", corev1.LabelNodeExcludeBalancers,
			"PodDisruptionBudget " + ns + "/ingress-pdb"} {
			if !strings.Contains(acts[0].Reason, want) {
				t.Fatalf("got reason %q, want it to name %q", acts[0].Reason, want)
			}
		}
	})
	dryRunWritesNothing(t, fc, r, []string{"dry_run evict pod/" + ns + "/ingress-0"}, versionsOf("ingress-0", "ingress-1"))

	t.Run("pool unreadable: nothing moves", func(t *testing.T) {
		pools.set(errors.New("octavia: 503"))
		defer pools.set(nil)
		acts, err := r.Plan(ctx)
		if err == nil || !strings.Contains(err.Error(), "octavia: 503") || len(acts) != 0 {
			t.Fatalf("got %v, %v; want no actions and the pool's error", acts, err)
		}
	})
	t.Run("no pool reader: nothing moves", func(t *testing.T) {
		acts, err := NewDrainTrap(api(t), nil).Plan(ctx)
		if err == nil || len(acts) != 0 {
			t.Fatalf("got %v, %v; want no actions and an error", acts, err)
		}
	})

	t.Run("budget refuses: blocked, pod kept", func(t *testing.T) {
		pass(t, "planned evict pod/"+ns+"/ingress-0", "blocked evict pod/"+ns+"/ingress-0")
		if terminating("ingress-0") {
			t.Fatal("ingress-0 was deleted although its budget allows no disruption")
		}
		rec := fc.M.Remediations()[len(fc.M.Remediations())-1]
		if !strings.Contains(rec.Detail, "disruption budget") {
			t.Fatalf("got blocked detail %q, want the budget's refusal", rec.Detail)
		}
	})

	t.Run("budget allows: one eviction through the eviction API", func(t *testing.T) {
		setBudget(t, c, ns, "ingress-pdb", 1)
		pass(t, evictIng("ingress-0")...)
		if !terminating("ingress-0") || terminating("ingress-1") {
			t.Fatal("want ingress-0 evicted and ingress-1 kept")
		}
		pdb, err := c.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "ingress-pdb", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := pdb.Status.DisruptedPods["ingress-0"]; !ok || pdb.Status.DisruptionsAllowed != 0 {
			t.Fatalf("got budget status %+v, want ingress-0 among its disrupted pods (the eviction API was used)", pdb.Status)
		}
	})

	t.Run("replacement not Ready: the next pod waits", func(t *testing.T) {
		// The budget would allow another disruption: only drain-trap's own
		// wait keeps ingress-1.
		setBudget(t, c, ns, "ingress-pdb", 1)
		pass(t) // ingress-0 still terminating
		zero := int64(0)
		if err := c.CoreV1().Pods(ns).Delete(ctx, "ingress-0", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		// The replacement lands on new-2, which the cloud has not added to
		// the pool yet, and is still starting.
		ing2 := servingPod(t, c, ns, "ingress-2", "new-2", "ReplicaSet", ing, false)
		ing1, err := c.CoreV1().Pods(ns).Get(ctx, "ingress-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		setEndpoints(t, c, ns, "ingress", ing1, ing2)
		pass(t)
		if terminating("ingress-1") {
			t.Fatal("ingress-1 evicted while the replacement is not Ready")
		}
		// Ready now, yet outside the pool: the service is still trapped,
		// and the next pod moves.
		ing2 = setPodReady(t, c, ing2, true)
		setEndpoints(t, c, ns, "ingress", ing1, ing2)
		pass(t, evictIng("ingress-1")...)
		if !terminating("ingress-1") || terminating("ingress-2") {
			t.Fatal("want ingress-1 evicted and ingress-2 (on a schedulable node) kept")
		}
	})

	t.Run("repeated pass is a no-op", func(t *testing.T) {
		setBudget(t, c, ns, "ingress-pdb", 1)
		rvs := versionsOf("ingress-1", "ingress-2")
		before := rvs()
		pass(t)
		if after := rvs(); !maps.Equal(before, after) {
			t.Fatalf("got resourceVersions %v, want unchanged %v", after, before)
		}
	})

	t.Run("look-alikes untouched", func(t *testing.T) {
		if after := versionsOf(lookAlikes...)(); !maps.Equal(lookAlikesBefore, after) {
			t.Fatalf("got resourceVersions %v, want unchanged %v", after, lookAlikesBefore)
		}
	})
}

// TestDrainTrapNeedsSomewhereToGo: a trapped service's pod is not moved
// while no Ready, schedulable node is in the pool: the replacement would
// be trapped too.
func TestDrainTrapNeedsSomewhereToGo(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	ctx := context.Background()
	poolNode(t, c, "old-1", "192.0.2.11", corev1.ConditionTrue, true, true)
	poolNode(t, c, "in-cordoned", "192.0.2.21", corev1.ConditionTrue, true, false)
	poolNode(t, c, "in-notready", "192.0.2.22", corev1.ConditionFalse, false, false)
	poolNode(t, c, "in-excluded", "192.0.2.23", corev1.ConditionTrue, false, true) // a stale member, labelled out
	poolNode(t, c, "outside", "192.0.2.24", corev1.ConditionTrue, false, false)
	pools := &fakePools{members: map[string][]PoolMember{ns + "/ingress": {
		{Name: "in-cordoned", Address: "192.0.2.21"}, {Name: "in-notready", Address: "192.0.2.22"}, {Name: "in-excluded", Address: "192.0.2.23"}}}}
	lbService(t, c, ns, "ingress", corev1.ServiceExternalTrafficPolicyLocal,
		servingPod(t, c, ns, "ingress-0", "old-1", "ReplicaSet", map[string]string{"app": "ingress"}, true))
	r := NewDrainTrap(api(t), pools)
	acts, err := r.Plan(ctx)
	if err != nil || len(acts) != 0 {
		t.Fatalf("got %v (%v), want no actions: no Ready schedulable pool member to move to", acts, err)
	}
	// Once the cloud adds the schedulable node to the pool, it moves.
	pools.mu.Lock()
	pools.members[ns+"/ingress"] = append(pools.members[ns+"/ingress"], PoolMember{Name: "outside", Address: "192.0.2.24"})
	pools.mu.Unlock()
	acts, err = r.Plan(ctx)
	if err != nil || len(acts) != 1 {
		t.Fatalf("got %v (%v), want one eviction once a pool member can take the pod", acts, err)
	}
}
