package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/remediatetest"
	"github.com/drwatch/drwatch/internal/kubeapi"
	"github.com/drwatch/drwatch/internal/kubeconfig"
	"github.com/drwatch/drwatch/test/kubetest"
	"github.com/drwatch/drwatch/test/poll"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// The controllers of the simulated cluster: every one whose outcome a
// remediation relies on or races with. The node lifecycle controller marks
// nodes whose kubelet (KWOK) stopped renewing its lease Unknown and taints
// them unreachable; the taint eviction controller then deletes their pods;
// the pod GC and attach-detach controllers act on the out-of-service taint;
// the workload controllers replace pods; the endpoint slice controller
// publishes ready pods; the disruption controller computes every
// PodDisruptionBudget's status.
var simulatedControllers = []string{
	"node-lifecycle-controller",
	"taint-eviction-controller",
	"pod-garbage-collector-controller",
	"persistentvolume-attach-detach-controller",
	"statefulset-controller",
	"deployment-controller",
	"replicaset-controller",
	"endpointslice-controller",
	"disruption-controller",
}

// Timings of the simulated cluster, shorter than a real one's so that a
// kubelet's silence shows within seconds, yet with room for a loaded
// machine: KWOK renews each lease every quarter of simLease, and a node is
// marked Unknown only after simGrace without a renewal; pods tolerate the
// unreachable taint for simToleration seconds (300 by default).
const (
	simLease      = 8 * time.Second
	simGrace      = 24 * time.Second
	simToleration = 2
	// simWait bounds every wait for the controllers: generous, as a loaded
	// 2-core machine must pass (the pod GC alone runs every 20 s).
	simWait = 3 * time.Minute
)

// simCluster is a real API server, controller manager (simulatedControllers)
// and scheduler, with KWOK playing every node's kubelet.
type simCluster struct {
	c    kubernetes.Interface
	api  kubeapi.Interface
	kwok *kubetest.Kwok
	ns   string
}

// TestRemediationsOnASimulatedCluster checks the remediations' outcomes
// against the parts of a cluster they rely on, none of them written by the
// test: node readiness comes from KWOK's leases and the node lifecycle
// controller, evictions from the taint eviction controller, placement from
// the scheduler, budgets from the disruption controller. Two nodes' kubelets
// stop at once: "partitioned" (its VM still runs) and "dead" (its VM is
// powered off); three nodes stay Ready. One cluster serves every subtest.
func TestRemediationsOnASimulatedCluster(t *testing.T) {
	cluster := kubetest.StartWith(t, kubetest.Options{DefaultTolerationSeconds: simToleration})
	cluster.StartControllerManagerWith(t, kubetest.ControllerManagerOptions{
		Controllers: simulatedControllers, NodeMonitorGracePeriod: simGrace})
	cluster.StartScheduler(t)
	s := &simCluster{c: cluster.Clientset(t), kwok: cluster.StartKwok(t, kubetest.KwokOptions{LeaseDuration: simLease})}
	var err error
	if s.api, err = NewClient(kubeconfig.Cluster{Kubeconfig: cluster.Kubeconfig}); err != nil {
		t.Fatalf("kube client: %v", err)
	}
	c := s.c
	s.ns = namespace(t, c)
	csiDriver(t, c)
	adc := map[string]string{annotationADC: "true"}
	for _, n := range []string{"ready-1", "ready-2", "ready-3", "partitioned", "dead"} {
		s.kwok.AddNode(t, n, nil, adc)
	}
	for _, n := range []string{"ready-1", "ready-2", "ready-3", "partitioned", "dead"} {
		s.waitSchedulable(t, n)
	}

	// A StatefulSet pod with a ReadWriteOnce volume on each node that will
	// stop reporting, and one on a Ready node that must be left alone.
	// "held" can only run on "partitioned"; "moved" and "steady" prefer
	// their node, and may run elsewhere.
	s.statefulSet(t, "held", "partitioned", true)
	s.statefulSet(t, "moved", "dead", false)
	s.statefulSet(t, "steady", "ready-1", false)
	held, moved, steady := s.runningOn(t, "held-0", "partitioned"), s.runningOn(t, "moved-0", "dead"), s.runningOn(t, "steady-0", "ready-1")
	for _, p := range []*corev1.Pod{held, moved, steady} {
		attachAndMount(t, c, p.Spec.NodeName, "pv-"+s.ns+"-data-"+p.Name)
	}

	s.kwok.StopKubelet(t, "partitioned")
	s.kwok.StopKubelet(t, "dead")
	cloud := fakeInstances{"ready-1": InstanceActive, "ready-2": InstanceActive, "ready-3": InstanceActive,
		"partitioned": InstanceActive, "dead": InstanceShutoff}
	t.Run("silent kubelets: their nodes turn Unknown and their pods Terminating, the rest stays", func(t *testing.T) {
		for _, n := range []string{"partitioned", "dead"} {
			poll.For(t, simWait, "the node lifecycle controller to taint "+n+" unreachable", func() bool {
				return hasTaint(s.node(t, n), corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)
			})
			if rc := readyCondition(s.node(t, n)); rc == nil || rc.Status != corev1.ConditionUnknown {
				t.Fatalf("node %s Ready condition %+v, want Unknown", n, rc)
			}
		}
		for _, p := range []*corev1.Pod{held, moved} {
			poll.For(t, simWait, "the taint eviction controller to delete "+p.Name, func() bool {
				return s.pod(t, p.Name).DeletionTimestamp != nil
			})
		}
		for _, n := range []string{"ready-1", "ready-2", "ready-3"} {
			if !nodeReady(s.node(t, n)) {
				t.Fatalf("node %s is not Ready: KWOK renews its lease", n)
			}
		}
		s.unchanged(t, steady)
	})

	t.Run("dead-node's taint on the powered-off node lets the scheduler place its pod elsewhere and frees its volume", func(t *testing.T) {
		s.waitNotReadyFor(t, "dead", time.Second)
		r := NewDeadNode(s.api, cloud, time.Second, nil)
		got := remediatetest.Summary(remediatetest.Pass(t, remediatetest.NewLog(), r,
			remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 10}))
		if want := []string{"planned taint node/dead", "applied taint node/dead"}; !slices.Equal(got, want) {
			t.Fatalf("got %q, want %q (the partitioned node's VM runs: never tainted)", got, want)
		}
		// The pod GC force-deletes the dead node's Terminating pod (it runs
		// every 20 s), the StatefulSet controller recreates it, the
		// scheduler binds it to a Ready node and KWOK runs it.
		var next *corev1.Pod
		poll.For(t, simWait, "moved-0 to be replaced and run on another node", func() bool {
			next = s.pod(t, "moved-0")
			return next != nil && next.UID != moved.UID && next.Spec.NodeName != "" && podReady(next)
		})
		if next.Spec.NodeName == "dead" || next.Spec.NodeName == "partitioned" {
			t.Fatalf("moved-0 replaced on %s, want a Ready node", next.Spec.NodeName)
		}
		poll.For(t, simWait, "the attach-detach controller to detach moved's volume from dead", func() bool {
			return attachment(t, c, "dead") == nil
		})
		// The node may hold another volume too (steady's, on ready-1): look
		// for moved's.
		poll.For(t, simWait, "the attach-detach controller to attach moved's volume to "+next.Spec.NodeName, func() bool {
			return attachmentOf(t, c, next.Spec.NodeName, "pv-"+s.ns+"-data-moved-0") != nil
		})
		// Look-alikes: the partitioned node is not tainted, its pod is
		// still Terminating and its volume attached; the Ready node's pod
		// never moved.
		if hasTaint(s.node(t, "partitioned"), TaintOutOfService, corev1.TaintEffectNoExecute) {
			t.Fatal("partitioned node tainted out of service: its VM runs")
		}
		if p := s.pod(t, "held-0"); p == nil || p.UID != held.UID {
			t.Fatalf("held-0 was removed or replaced (%v): its node is not confirmed down", p)
		}
		if attachment(t, c, "partitioned") == nil {
			t.Fatal("partitioned's VolumeAttachment was removed: its node may still write to the volume")
		}
		s.unchanged(t, steady)
	})

	t.Run("orphaned-pods holds the partitioned node's StatefulSet pod and reports it", func(t *testing.T) {
		p := s.pod(t, "held-0")
		after := time.Second
		poll.For(t, simWait, "held-0 to be Terminating past its grace period", func() bool {
			return time.Now().After(p.DeletionTimestamp.Add(after))
		})
		r := NewOrphanedPods(s.api, cloud, after, nil)
		acted, heldBy := splitHeld(remediatetest.Pass(t, remediatetest.NewLog(), r,
			remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 10}))
		target := "pod/" + s.ns + "/held-0"
		if len(acted) != 0 || len(heldBy) != 1 || heldBy[target] == "" {
			t.Fatalf("got acted %q, held %q; want only %s held", acted, heldBy, target)
		}
		for _, want := range []string{"StatefulSet held", "partitioned", string(InstanceActive)} {
			if !strings.Contains(heldBy[target], want) {
				t.Fatalf("got reason %q, want it to name %q", heldBy[target], want)
			}
		}
		if q := s.pod(t, "held-0"); q == nil || q.UID != held.UID {
			t.Fatalf("held-0 was force-deleted (%v): its VM runs, a second copy would share its identity and volume", q)
		}
		s.unchanged(t, steady)
	})

	t.Run("drain-trap's eviction obeys the budget the disruption controller computed", func(t *testing.T) {
		s.drainTrap(t)
	})

	t.Run("kubelets that report again: the held pod finishes cleanly, dead-node lifts its taint", func(t *testing.T) {
		s.kwok.StartKubelet(t, "partitioned")
		s.kwok.StartKubelet(t, "dead")
		// The partitioned node's kubelet finishes the deletion it missed;
		// only then does the StatefulSet controller create held-0 again,
		// on the same node: one copy at any time.
		poll.For(t, simWait, "held-0 to be recreated and run on partitioned", func() bool {
			p := s.pod(t, "held-0")
			return p != nil && p.UID != held.UID && podReady(p)
		})
		poll.For(t, simWait, "dead to be Ready again", func() bool { return nodeReady(s.node(t, "dead")) })
		r := NewDeadNode(s.api, cloud, time.Second, nil)
		got := remediatetest.Summary(remediatetest.Pass(t, remediatetest.NewLog(), r,
			remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 10}))
		if want := []string{"planned untaint node/dead", "applied untaint node/dead"}; !slices.Equal(got, want) {
			t.Fatalf("got %q, want %q", got, want)
		}
		s.waitSchedulable(t, "dead")
		s.unchanged(t, steady)
	})
}

// drainTrap: a Local LoadBalancer Service whose two pods both run on nodes
// drained out of its load balancer's pool, guarded by a budget of
// minAvailable 2 and then 1, and a look-alike Service whose pod runs on a
// pool member.
func (s *simCluster) drainTrap(t *testing.T) {
	c, ns, ctx := s.c, s.ns, context.Background()
	old := map[string]string{"drwatch.test/pool": "old"}
	for _, n := range []string{"old-1", "old-2"} {
		s.kwok.AddNode(t, n, old, nil)
		s.waitSchedulable(t, n)
	}
	s.deployment(t, "ingress", 2, func(sp *corev1.PodSpec) {
		// Preferred, not required: the replacements may go anywhere.
		sp.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 100,
				Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: "drwatch.test/pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"old"}}}}}}}}
	})
	s.deployment(t, "steady-web", 1, func(sp *corev1.PodSpec) {
		sp.NodeSelector = map[string]string{corev1.LabelHostname: "ready-2"}
	})
	for _, app := range []string{"ingress", "steady-web"} {
		if _, err := c.CoreV1().Services(ns).Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: app},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
				Selector: map[string]string{"app": app}, Ports: []corev1.ServicePort{{Port: 443, TargetPort: intstr.FromInt32(8443)}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create service %s: %v", app, err)
		}
	}
	var ingress []corev1.Pod
	poll.For(t, simWait, "both ingress pods to run on old nodes", func() bool {
		ingress = s.readyPods(t, "app=ingress")
		return len(ingress) == 2 && !slices.ContainsFunc(ingress, func(p corev1.Pod) bool {
			return s.node(t, p.Spec.NodeName).Labels["drwatch.test/pool"] != "old"
		})
	})
	web := s.readyPodsWait(t, "app=steady-web", 1)[0]
	for _, app := range []string{"ingress", "steady-web"} {
		poll.For(t, simWait, "the endpoint slice controller to publish "+app+"'s ready pods", func() bool {
			return len(s.readyEndpoints(t, app)) == len(s.readyPods(t, "app="+app))
		})
	}
	two := intstr.FromInt32(2)
	if _, err := c.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "ingress"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &two, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ingress"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pdb: %v", err)
	}
	s.waitBudget(t, "ingress", 0)
	// The drain: the old nodes are cordoned and labelled out of external
	// load balancers; the cloud's pool holds the Ready nodes.
	for _, n := range []string{"old-1", "old-2"} {
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}},"spec":{"unschedulable":true}}`, corev1.LabelNodeExcludeBalancers)
		if _, err := c.CoreV1().Nodes().Patch(ctx, n, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatalf("drain %s: %v", n, err)
		}
	}
	var pool []PoolMember
	for _, n := range []string{"ready-1", "ready-2", "ready-3"} {
		pool = append(pool, PoolMember{Name: n, Address: "127.0.0.1", OperatingStatus: "ONLINE"})
	}
	r := NewDrainTrap(s.api, &fakePools{members: map[string][]PoolMember{ns + "/ingress": pool, ns + "/steady-web": pool}})
	fc := remediatetest.NewLog()
	on := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 10}
	first := "pod/" + ns + "/" + ingress[0].Name

	got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on))
	if want := []string{"planned evict " + first, "blocked evict " + first}; !slices.Equal(got, want) {
		t.Fatalf("minAvailable 2 of 2: got %q, want %q", got, want)
	}
	if p := s.pod(t, ingress[0].Name); p == nil || p.DeletionTimestamp != nil {
		t.Fatalf("%s evicted although its budget allows no disruption", first)
	}

	one := intstr.FromInt32(1)
	pdb, err := c.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "ingress", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pdb.Spec.MinAvailable = &one
	if _, err := c.PolicyV1().PodDisruptionBudgets(ns).Update(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update pdb: %v", err)
	}
	s.waitBudget(t, "ingress", 1)
	got = remediatetest.Summary(remediatetest.Pass(t, fc, r, on))
	if want := []string{"planned evict " + first, "applied evict " + first}; !slices.Equal(got, want) {
		t.Fatalf("minAvailable 1 of 2: got %q, want %q", got, want)
	}
	// KWOK finishes the eviction's deletion; the ReplicaSet controller
	// creates the replacement, the scheduler binds it to a pool node.
	var repl *corev1.Pod
	poll.For(t, simWait, "the evicted pod's replacement to run on a pool node", func() bool {
		for _, p := range s.readyPods(t, "app=ingress") {
			if p.UID != ingress[0].UID && p.UID != ingress[1].UID {
				repl = &p
				return true
			}
		}
		return false
	})
	if !slices.ContainsFunc(pool, func(m PoolMember) bool { return m.Name == repl.Spec.NodeName }) {
		t.Fatalf("replacement %s runs on %s, want a node of the pool", repl.Name, repl.Spec.NodeName)
	}
	if q := s.pod(t, ingress[1].Name); q == nil || q.UID != ingress[1].UID || q.DeletionTimestamp != nil {
		t.Fatalf("%s was evicted too: one pod at a time", ingress[1].Name)
	}
	s.unchanged(t, &web)
}

// waitSchedulable waits until KWOK reports node Ready and the node
// lifecycle controller lifted the not-ready taint the API server put on it
// at creation.
func (s *simCluster) waitSchedulable(t *testing.T, name string) {
	t.Helper()
	poll.For(t, simWait, "node "+name+" to be Ready and untainted", func() bool {
		n := s.node(t, name)
		return nodeReady(n) && len(n.Spec.Taints) == 0
	})
}

// waitNotReadyFor waits until node's Ready condition has been other than
// True for d.
func (s *simCluster) waitNotReadyFor(t *testing.T, name string, d time.Duration) {
	t.Helper()
	poll.For(t, simWait, "node "+name+" to be NotReady for "+d.String(), func() bool {
		rc := readyCondition(s.node(t, name))
		return rc != nil && rc.Status != corev1.ConditionTrue && time.Since(rc.LastTransitionTime.Time) > d
	})
}

// waitBudget waits until the disruption controller has computed the
// budget's current spec: allowed disruptions, with both pods healthy.
func (s *simCluster) waitBudget(t *testing.T, name string, allowed int32) {
	t.Helper()
	poll.For(t, simWait, fmt.Sprintf("the disruption controller to allow %d disruption(s) for %s", allowed, name), func() bool {
		pdb, err := s.c.PolicyV1().PodDisruptionBudgets(s.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st := pdb.Status
		return st.ObservedGeneration == pdb.Generation && st.CurrentHealthy == 2 && st.DisruptionsAllowed == allowed
	})
}

func (s *simCluster) node(t *testing.T, name string) *corev1.Node {
	t.Helper()
	n, err := s.c.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get node %s: %v", name, err)
	}
	return n
}

// pod returns the pod, or nil when it does not exist.
func (s *simCluster) pod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	p, err := s.c.CoreV1().Pods(s.ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("get pod %s: %v", name, err)
	}
	return p
}

// runningOn waits until KWOK reports the pod Ready and returns it; it
// fails when the scheduler put it on another node than want.
func (s *simCluster) runningOn(t *testing.T, name, want string) *corev1.Pod {
	t.Helper()
	var p *corev1.Pod
	poll.For(t, simWait, "pod "+name+" to run", func() bool {
		p = s.pod(t, name)
		return p != nil && podReady(p)
	})
	if p.Spec.NodeName != want {
		t.Fatalf("pod %s runs on %s, want %s", name, p.Spec.NodeName, want)
	}
	return p
}

// unchanged fails unless p still exists with its UID, is not terminating,
// and stays on its node.
func (s *simCluster) unchanged(t *testing.T, p *corev1.Pod) {
	t.Helper()
	q := s.pod(t, p.Name)
	if q == nil || q.UID != p.UID || q.DeletionTimestamp != nil || q.Spec.NodeName != p.Spec.NodeName {
		t.Fatalf("look-alike %s on Ready node %s was disturbed: now %v", p.Name, p.Spec.NodeName, q)
	}
}

// readyPods lists the namespace's Ready, non-terminating pods matching
// selector, sorted by name.
func (s *simCluster) readyPods(t *testing.T, selector string) []corev1.Pod {
	t.Helper()
	pods, err := s.c.CoreV1().Pods(s.ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	out := slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil || !podReady(&p) })
	slices.SortFunc(out, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// readyPodsWait waits for n Ready pods matching selector.
func (s *simCluster) readyPodsWait(t *testing.T, selector string, n int) []corev1.Pod {
	t.Helper()
	var out []corev1.Pod
	poll.For(t, simWait, fmt.Sprintf("%d ready pods %s", n, selector), func() bool {
		out = s.readyPods(t, selector)
		return len(out) == n
	})
	return out
}

// readyEndpoints lists the pods the endpoint slice controller published as
// ready endpoints of the Service.
func (s *simCluster) readyEndpoints(t *testing.T, svc string) []string {
	t.Helper()
	sls, err := s.c.DiscoveryV1().EndpointSlices(s.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + svc})
	if err != nil {
		t.Fatalf("list endpointslices: %v", err)
	}
	var out []string
	for _, sl := range sls.Items {
		for _, e := range sl.Endpoints {
			if (e.Conditions.Ready == nil || *e.Conditions.Ready) && e.TargetRef != nil {
				out = append(out, e.TargetRef.Name)
			}
		}
	}
	return out
}

// statefulSet creates a one-replica StatefulSet name whose pod mounts the
// ReadWriteOnce claim data-<name>-0, bound beforehand as the PV binder
// would. Its pod must run on node when required, else prefers it.
func (s *simCluster) statefulSet(t *testing.T, name, node string, required bool) {
	t.Helper()
	boundClaim(t, s.c, s.ns, "data-"+name+"-0")
	sel, tmpl := simTemplate(name)
	if required {
		tmpl.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
	} else {
		tmpl.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 100,
				Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}}}
	}
	tmpl.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	rwo := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	if _, err := s.c.AppsV1().StatefulSets(s.ns).Create(context.Background(), &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.StatefulSetSpec{Replicas: ptrTo(int32(1)), Selector: sel, Template: tmpl, ServiceName: name,
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: rwo, StorageClassName: ptrTo(""),
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create statefulset %s: %v", name, err)
	}
}

// deployment creates a Deployment of replicas pods labelled app=name,
// shaped by spec.
func (s *simCluster) deployment(t *testing.T, name string, replicas int32, spec func(*corev1.PodSpec)) {
	t.Helper()
	sel, tmpl := simTemplate(name)
	spec(&tmpl.Spec)
	if _, err := s.c.AppsV1().Deployments(s.ns).Create(context.Background(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       appsv1.DeploymentSpec{Replicas: &replicas, Selector: sel, Template: tmpl},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment %s: %v", name, err)
	}
}

// simTemplate is podTemplate for pods the scheduler places: no node, and a
// 1 s grace period, so that an eviction's deletion is due within a second.
func simTemplate(app string) (*metav1.LabelSelector, corev1.PodTemplateSpec) {
	sel, tmpl := podTemplate(app)
	tmpl.Spec.NodeName = ""
	tmpl.Spec.TerminationGracePeriodSeconds = ptrTo(int64(1))
	return sel, tmpl
}

// hasTaint reports whether n carries the taint key with effect.
func hasTaint(n *corev1.Node, key string, effect corev1.TaintEffect) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key && t.Effect == effect })
}
