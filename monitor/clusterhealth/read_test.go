package clusterhealth

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/internal/kubeapi"
	"github.com/drwatch/drwatch/internal/kubeconfig"
	"github.com/drwatch/drwatch/test/kubetest"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// node creates a node and writes its conditions through the status
// subresource, as a kubelet would.
func node(t *testing.T, c kubernetes.Interface, name string, conds ...corev1.NodeCondition) {
	t.Helper()
	ctx := context.Background()
	n, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create node %s: %v", name, err)
	}
	if len(conds) == 0 {
		return
	}
	now := metav1.Now()
	for i := range conds {
		conds[i].LastHeartbeatTime, conds[i].LastTransitionTime = now, now
	}
	n.Status.Conditions = conds
	if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update node status %s: %v", name, err)
	}
}

func cond(typ corev1.NodeConditionType, st corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
	return corev1.NodeCondition{Type: typ, Status: st, Reason: reason, Message: msg}
}

var (
	ready   = cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status")
	noDisk  = cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "")
	noMem   = cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "")
	plegMsg = "PLEG is not healthy: pleg was last seen active 27h14m51.413818128s ago; threshold is 3m0s"
)

var nsSeq int

func namespace(t *testing.T, c kubernetes.Interface) string {
	t.Helper()
	nsSeq++
	ns := fmt.Sprintf("h%d-%d", nsSeq, time.Now().UnixNano()%1e6)
	if _, err := c.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	// The ServiceAccount admission plugin wants it before any pod; the
	// controller that makes it does not run here.
	if _, err := c.CoreV1().ServiceAccounts(ns).Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create service account: %v", err)
	}
	return ns
}

// event creates a core/v1 event as a kubelet (legacy recorder) writes it.
func event(t *testing.T, c kubernetes.Interface, ns, name, typ, reason, msg string, obj corev1.ObjectReference, last time.Time, count int32) {
	t.Helper()
	e := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, InvolvedObject: obj,
		Type: typ, Reason: reason, Message: msg, Count: count, Source: corev1.EventSource{Component: "kubelet"},
		FirstTimestamp: metav1.NewTime(last.Add(-time.Minute)), LastTimestamp: metav1.NewTime(last),
	}
	if _, err := c.CoreV1().Events(ns).Create(context.Background(), e, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create event %s: %v", name, err)
	}
}

func lbService(t *testing.T, c kubernetes.Interface, ns, name string, typ corev1.ServiceType, ingress string) {
	t.Helper()
	ctx := context.Background()
	s, err := c.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{Type: typ, Ports: []corev1.ServicePort{{Port: 443, TargetPort: intstr.FromInt32(8443)}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create service %s: %v", name, err)
	}
	if ingress != "" {
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ingress}}
		if _, err := c.CoreV1().Services(ns).UpdateStatus(ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update service status %s: %v", name, err)
		}
	}
}

// pod creates a pod bound to nodeName; owner, when set, is the kind of its
// controller.
func pod(t *testing.T, c kubernetes.Interface, ns, name, nodeName, owner string) {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Image: "example.invalid/c"}}},
	}
	if owner != "" {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: owner, Name: name + "-owner",
			UID: types.UID("owner-" + name), Controller: &yes}}
	}
	if _, err := c.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	// Bound pods wait for a kubelet that never comes: remove them at once.
	t.Cleanup(func() {
		zero := int64(0)
		_ = c.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
}

// deletePod asks for a graceful deletion: a bound pod then stays
// Terminating until its kubelet (absent here) confirms.
func deletePod(t *testing.T, c kubernetes.Interface, ns, name string) {
	t.Helper()
	if err := c.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pod %s: %v", name, err)
	}
	p, err := c.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil || p.DeletionTimestamp == nil {
		t.Fatalf("got pod %s %v after delete (%v), want it Terminating", name, p, err)
	}
}

// podFailed writes the pod's status as a kubelet does when it fails it.
func podFailed(t *testing.T, c kubernetes.Interface, ns, name, reason string) {
	t.Helper()
	ctx := context.Background()
	p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get pod %s: %v", name, err)
	}
	p.Status.Phase, p.Status.Reason = corev1.PodFailed, reason
	if _, err := c.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update pod status %s: %v", name, err)
	}
}

// lease writes a kube-system leader Lease as a leader elector does.
func lease(t *testing.T, c kubernetes.Interface, name, holder string, renewed time.Time) {
	t.Helper()
	dur := int32(15)
	rt := metav1.NewMicroTime(renewed)
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceSystem},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &dur, AcquireTime: &rt, RenewTime: &rt}}
	if _, err := c.CoordinationV1().Leases(metav1.NamespaceSystem).Create(context.Background(), l, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create lease %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = c.CoordinationV1().Leases(metav1.NamespaceSystem).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

func readClient(t *testing.T, cluster *kubetest.Cluster) kubeapi.Interface {
	t.Helper()
	c, err := NewClient(kubeconfig.Cluster{Kubeconfig: cluster.Kubeconfig})
	if err != nil {
		t.Fatalf("read-only client: %v", err)
	}
	return c
}

// TestReadShowsSeed004Conditions builds, on a real API server, each
// condition of seed 004 next to a healthy look-alike, and reads them the
// way every watcher does.
func TestReadShowsSeed004Conditions(t *testing.T) {
	c, cluster := fixtures(t)
	node(t, c, "n-disk", ready, cond(corev1.NodeDiskPressure, corev1.ConditionTrue, "KubeletHasDiskPressure", "kubelet has disk pressure"), noMem)
	node(t, c, "n-mem", ready, noDisk, cond(corev1.NodeMemoryPressure, corev1.ConditionTrue, "KubeletHasInsufficientMemory", ""))
	node(t, c, "n-pid", ready, cond(corev1.NodePIDPressure, corev1.ConditionTrue, "KubeletHasInsufficientPID", ""))
	node(t, c, "n-net", ready, cond(corev1.NodeNetworkUnavailable, corev1.ConditionTrue, "NoRouteCreated", "RouteController failed to create a route"))
	node(t, c, "n-pleg", cond(corev1.NodeReady, corev1.ConditionFalse, "KubeletNotReady", plegMsg))
	node(t, c, "n-unknown", cond(corev1.NodeReady, corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status."))
	node(t, c, "n-never") // registered, no status yet: Unknown
	// Look-alikes: each must count as healthy.
	node(t, c, "ok-ready", ready, noDisk, noMem, cond(corev1.NodeNetworkUnavailable, corev1.ConditionFalse, "RouteCreated", ""))
	node(t, c, "n-notready", cond(corev1.NodeReady, corev1.ConditionFalse, "KubeletNotReady", "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady"))

	ns := namespace(t, c)
	now := time.Now()
	// The kubelet records a node's events in the default namespace.
	nodeRef := corev1.ObjectReference{Kind: "Node", Name: "n-disk"}
	podRef := corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "db-0"}
	event(t, c, metav1.NamespaceDefault, "e1", "Warning", "ImageGCFailed", "failed to garbage collect required amount of images. Wanted to free 6089891840 bytes, but freed 0 bytes", nodeRef, now.Add(-5*time.Minute), 3)
	event(t, c, metav1.NamespaceDefault, "e2", "Warning", "FreeDiskSpaceFailed", "failed to garbage collect required amount of images", nodeRef, now.Add(-10*time.Minute), 1)
	event(t, c, metav1.NamespaceDefault, "e3", "Warning", "ContainerGCFailed", "rpc error: code = DeadlineExceeded", nodeRef, now.Add(-time.Minute), 1)
	event(t, c, metav1.NamespaceDefault, "e4", "Warning", "EvictionThresholdMet", "Attempting to reclaim ephemeral-storage", nodeRef, now.Add(-8*time.Minute), 19)
	event(t, c, ns, "e5", "Warning", "FailedAttachVolume", "AttachVolume.Attach failed for volume \"pvc-1\" : timed out", podRef, now.Add(-2*time.Minute), 1)
	event(t, c, ns, "e6", "Warning", "FailedAttachVolume", "Multi-Attach error for volume \"pvc-2\" Volume is already exclusively attached to one node and can't be attached to another", podRef, now.Add(-3*time.Minute), 2)
	event(t, c, metav1.NamespaceDefault, "e7", "Warning", "SystemOOM", "System OOM encountered, victim process: java, pid: 4242", nodeRef, now.Add(-4*time.Minute), 1)
	event(t, c, ns, "e8", "Warning", "Evicted", "The node was low on resource: ephemeral-storage.", podRef, now.Add(-6*time.Minute), 1)
	event(t, c, ns, "e9", "Warning", "FailedCreatePodSandBox", "Failed to create pod sandbox: plugin type=\"calico\" failed (add): connection refused", podRef, now.Add(-7*time.Minute), 4)
	event(t, c, ns, "mount", "Warning", "FailedMount", "MountVolume.SetUp failed", podRef, now.Add(-9*time.Minute), 1)
	// Look-alikes: too old, or another reason.
	event(t, c, metav1.NamespaceDefault, "old", "Warning", "ImageGCFailed", "an old failure", nodeRef, now.Add(-2*time.Hour), 1)
	event(t, c, metav1.NamespaceDefault, "old-oom", "Warning", "SystemOOM", "an old OOM", nodeRef, now.Add(-3*time.Hour), 1)
	event(t, c, ns, "oom-killing", "Normal", "Killing", "Stopping container c", podRef, now.Add(-time.Minute), 1)
	event(t, c, metav1.NamespaceDefault, "normal", "Normal", "NodeHasDiskPressure", "Node n-disk status is now: NodeHasDiskPressure", nodeRef, now.Add(-time.Minute), 1)

	// Pods: stuck Terminating (bound, deleted, no kubelet to finish it), a
	// StatefulSet pod on an Unknown node, an Evicted pod; and look-alikes:
	// a StatefulSet pod on a Ready node, a ReplicaSet pod on the Unknown
	// node, a pod Failed for another reason, a running pod.
	pod(t, c, ns, "stuck", "ok-ready", "")
	deletePod(t, c, ns, "stuck")
	pod(t, c, ns, "db-0", "n-unknown", "StatefulSet")
	pod(t, c, ns, "web-0", "ok-ready", "StatefulSet")
	pod(t, c, ns, "api-1", "n-unknown", "ReplicaSet")
	pod(t, c, ns, "evicted", "ok-ready", "")
	podFailed(t, c, ns, "evicted", "Evicted")
	pod(t, c, ns, "crashed", "ok-ready", "")
	podFailed(t, c, ns, "crashed", "")
	pod(t, c, ns, "running", "ok-ready", "")

	// The cloud-controller-manager's leader Lease, next to another
	// controller's that must not be taken for it.
	renewed := now.Add(-30 * time.Second)
	lease(t, c, "cloud-controller-manager", "ccm-a_7f3e", renewed)
	lease(t, c, "kube-controller-manager", "kcm-b_1c2d", now)

	lbService(t, c, ns, "lb-pending", corev1.ServiceTypeLoadBalancer, "")
	lbService(t, c, ns, "lb-ready", corev1.ServiceTypeLoadBalancer, "203.0.113.7")
	lbService(t, c, ns, "internal", corev1.ServiceTypeClusterIP, "")

	cfg := Config{LBPendingAfter: 10 * time.Minute}.Defaulted()
	quota := func(context.Context) (Routes, error) { return Routes{RouterID: "r1", Used: 29, Limit: 31}, nil }
	target := Target{Site: "primary", Client: readClient(t, cluster), Routes: quota}
	// 15 minutes on: lb-pending has waited past lb_pending_after.
	later := time.Now().Add(15 * time.Minute)
	cfg.EventWindow = time.Hour + 15*time.Minute
	s := Read(context.Background(), cfg, "w1", target, later)

	t.Run("every part read", func(t *testing.T) {
		for part, err := range map[string]string{"nodes": s.NodesError, "pods": s.PodsError, "events": s.EventsError, "services": s.ServicesError, "version": s.VersionError} {
			if err != "" {
				t.Errorf("%s: got error %q, want none", part, err)
			}
		}
		if !s.Configured || s.ReadBy != "w1" || !s.At.Equal(later) {
			t.Errorf("got configured %v read by %q at %s, want true, w1, %s", s.Configured, s.ReadBy, s.At, later)
		}
	})
	t.Run("version", func(t *testing.T) {
		if s.Version != kubetest.DefaultVersion {
			t.Fatalf("got version %q, want %q", s.Version, kubetest.DefaultVersion)
		}
	})
	t.Run("nodes", func(t *testing.T) {
		want := &Nodes{Total: 9, Unknown: 2, NotReady: 2, PLEG: 1, DiskPressure: 1, MemoryPressure: 1, PIDPressure: 1, NetworkUnavailable: 1,
			Problems: []NodeProblem{
				{Name: "n-disk", Problems: []string{"DiskPressure"}},
				{Name: "n-mem", Problems: []string{"MemoryPressure"}},
				{Name: "n-net", Problems: []string{"NetworkUnavailable"}},
				{Name: "n-never", Problems: []string{"Unknown"}},
				{Name: "n-notready", Problems: []string{"NotReady: container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady"}},
				{Name: "n-pid", Problems: []string{"PIDPressure"}},
				{Name: "n-pleg", Problems: []string{plegMsg}},
				{Name: "n-unknown", Problems: []string{"Unknown"}},
			}}
		if !reflect.DeepEqual(s.Nodes, want) {
			t.Fatalf("got %+v, want %+v", s.Nodes, want)
		}
	})
	t.Run("pods stuck terminating, on unknown nodes, evicted", func(t *testing.T) {
		p := s.Pods
		if p == nil {
			t.Fatal("got no pods")
		}
		var got []string
		for _, q := range p.Problems {
			got = append(got, q.Namespace+"/"+q.Name+" "+q.Node+" "+q.Problem)
		}
		slices.Sort(got)
		want := []string{ns + "/db-0 n-unknown " + PodStatefulUnknown, ns + "/evicted ok-ready " + PodEvicted,
			ns + "/stuck ok-ready " + PodTerminating}
		if !slices.Equal(got, want) {
			t.Errorf("got problems %q, want %q", got, want)
		}
		if p.Total != 7 || p.Terminating != 1 || p.StatefulOnUnknown != 1 || p.Evicted != 1 || p.TerminatingAfterSeconds != 600 || p.Truncated {
			t.Errorf("got %+v, want 7 pods: 1 terminating (after 600s), 1 StatefulSet on an Unknown node, 1 evicted", *p)
		}
		// Read now, the deleted pod is within its threshold.
		young := Read(context.Background(), cfg, "w1", target, time.Now())
		if young.Pods == nil || young.Pods.Terminating != 0 || young.Pods.StatefulOnUnknown != 1 {
			t.Fatalf("got %+v read at once, want none terminating and 1 StatefulSet pod on an Unknown node", young.Pods)
		}
	})
	t.Run("events", func(t *testing.T) {
		e := s.Events
		if e == nil {
			t.Fatal("got no events")
		}
		want := map[string]int{"ImageGCFailed": 1, "FreeDiskSpaceFailed": 1, "ContainerGCFailed": 1, "EvictionThresholdMet": 1,
			"SystemOOM": 1, "Evicted": 1, "FailedCreatePodSandBox": 1, "FailedMount": 1, "FailedAttachVolume": 1, "Multi-Attach": 1}
		if !reflect.DeepEqual(e.Counts, want) {
			t.Errorf("got counts %v, want %v", e.Counts, want)
		}
		var got []string
		for _, ev := range e.Recent {
			got = append(got, fmt.Sprintf("%s %s x%d", ev.Reason, ev.Object, ev.Count))
		}
		wantRecent := []string{"ContainerGCFailed Node/n-disk x1", "FailedAttachVolume Pod/" + ns + "/db-0 x1",
			"Multi-Attach Pod/" + ns + "/db-0 x2", "SystemOOM Node/n-disk x1", "ImageGCFailed Node/n-disk x3",
			"Evicted Pod/" + ns + "/db-0 x1", "FailedCreatePodSandBox Pod/" + ns + "/db-0 x4",
			"EvictionThresholdMet Node/n-disk x19", "FailedMount Pod/" + ns + "/db-0 x1", "FreeDiskSpaceFailed Node/n-disk x1"}
		if !slices.Equal(got, wantRecent) {
			t.Errorf("got recent %q, want newest first %q", got, wantRecent)
		}
	})
	t.Run("load balancers pending past the threshold", func(t *testing.T) {
		want := &Services{LoadBalancers: 2, Pending: 1, PendingAfterSeconds: 600}
		got := *s.Services
		if len(got.Oldest) != 1 || got.Oldest[0].Namespace != ns || got.Oldest[0].Name != "lb-pending" {
			t.Fatalf("got oldest %+v, want %s/lb-pending", got.Oldest, ns)
		}
		got.Oldest = nil
		l := got.CCMLease
		if l == nil || got.CCMLeaseError != "" {
			t.Fatalf("got no cloud-controller-manager lease (error %q), want it read while a Service is pending", got.CCMLeaseError)
		}
		age := later.Sub(renewed).Seconds()
		if l.Name != DefaultCCMLease || l.Holder != "ccm-a_7f3e" || l.DurationSeconds != 15 || l.RenewAgeSeconds < age-1 || l.RenewAgeSeconds > age+1 {
			t.Errorf("got lease %+v, want %s held by ccm-a_7f3e for 15s, renewed %.0fs before the read", *l, DefaultCCMLease, age)
		}
		got.CCMLease = nil
		if !reflect.DeepEqual(&got, want) {
			t.Fatalf("got %+v, want %+v", got, *want)
		}
		// Read now, the same Service has not waited long enough.
		young := Read(context.Background(), cfg, "w1", target, time.Now())
		if young.Services == nil || young.Services.Pending != 0 || young.Services.LoadBalancers != 2 {
			t.Fatalf("got %+v read at once, want 2 load balancers and none pending", young.Services)
		}
		if young.Services.CCMLease != nil || young.Services.CCMLeaseError != "" {
			t.Errorf("got lease %+v (error %q) with nothing pending, want it not read", young.Services.CCMLease, young.Services.CCMLeaseError)
		}
		// Another name, as cluster_health.ccm_lease sets it: that Lease
		// is read, and one that does not exist says so.
		other := cfg
		other.CCMLease = "kube-system/kube-controller-manager"
		if l := Read(context.Background(), other, "w1", target, later).Services.CCMLease; l == nil || l.Holder != "kcm-b_1c2d" {
			t.Errorf("got lease %+v, want the configured kube-controller-manager's", l)
		}
		other.CCMLease = "kube-system/absent"
		if sv := Read(context.Background(), other, "w1", target, later).Services; sv.CCMLease != nil || !strings.Contains(sv.CCMLeaseError, "not found") {
			t.Errorf("got lease %+v (error %q), want unreadable: not found", sv.CCMLease, sv.CCMLeaseError)
		}
	})
	t.Run("route quota", func(t *testing.T) {
		if want := (&Routes{RouterID: "r1", Used: 29, Limit: 31}); !reflect.DeepEqual(s.Routes, want) || s.RoutesUnknown != "" {
			t.Fatalf("got %+v (unknown %q), want %+v", s.Routes, s.RoutesUnknown, want)
		}
		none := Read(context.Background(), cfg, "w1", Target{Site: "backup", Client: target.Client, RoutesUnknown: "remediations.openstack is for the primary site"}, later)
		if none.Routes != nil || none.RoutesUnknown != "remediations.openstack is for the primary site" {
			t.Fatalf("got %+v (unknown %q), want unknown with its reason", none.Routes, none.RoutesUnknown)
		}
		failing := Read(context.Background(), cfg, "w1", Target{Site: "primary", Client: target.Client,
			Routes: func(context.Context) (Routes, error) { return Routes{}, errors.New("neutron: 503") }}, later)
		if failing.Routes != nil || !strings.Contains(failing.RoutesUnknown, "neutron: 503") {
			t.Fatalf("got %+v (unknown %q), want unknown naming the error", failing.Routes, failing.RoutesUnknown)
		}
	})
	t.Run("metrics", func(t *testing.T) {
		m := NewMonitor(cfg, "w1", []Target{target, {Site: "backup"}}, func() time.Time { return later })
		m.ReadOnce(context.Background())
		want := []string{
			`drwatch_cluster_node_condition{condition="DiskPressure",site="primary"} 1`,
			`drwatch_cluster_node_condition{condition="MemoryPressure",site="primary"} 1`,
			`drwatch_cluster_node_condition{condition="NetworkUnavailable",site="primary"} 1`,
			`drwatch_cluster_node_condition{condition="PIDPressure",site="primary"} 1`,
			`drwatch_cluster_nodes_unknown{site="primary"} 2`,
			`drwatch_cluster_nodes_pleg_unhealthy{site="primary"} 1`,
			`drwatch_cluster_nodes_not_ready{site="primary"} 2`,
			`drwatch_cluster_pods{problem="terminating",site="primary"} 1`,
			`drwatch_cluster_pods{problem="statefulset_on_unknown_node",site="primary"} 1`,
			`drwatch_cluster_pods{problem="evicted",site="primary"} 1`,
			`drwatch_cluster_health_read_ok{part="pods",site="primary"} 1`,
			`drwatch_cluster_lb_services_pending{site="primary"} 1`,
			`drwatch_cluster_health_read_ok{part="ccm_lease",site="primary"} 1`,
			`drwatch_cluster_router_routes{site="primary"} 29`,
			`drwatch_cluster_router_route_limit{site="primary"} 31`,
			`drwatch_cluster_version_info{site="primary",version="` + kubetest.DefaultVersion + `"} 1`,
			`drwatch_cluster_health_read_ok{part="events",site="primary"} 1`,
			`drwatch_cluster_health_read_ok{part="nodes",site="primary"} 1`,
			`drwatch_cluster_health_read_ok{part="routes",site="primary"} 1`,
			`drwatch_cluster_health_read_ok{part="services",site="primary"} 1`,
			`drwatch_cluster_health_read_ok{part="version",site="primary"} 1`,
			`drwatch_cluster_recent_events{reason="ContainerGCFailed",site="primary"} 1`,
			`drwatch_cluster_recent_events{reason="EvictionThresholdMet",site="primary"} 1`,
			`drwatch_cluster_recent_events{reason="FailedAttachVolume",site="primary"} 1`,
			`drwatch_cluster_recent_events{reason="FreeDiskSpaceFailed",site="primary"} 1`,
			`drwatch_cluster_recent_events{reason="ImageGCFailed",site="primary"} 1`,
			`drwatch_cluster_recent_events{reason="Multi-Attach",site="primary"} 1`,
			`drwatch_cluster_recent_events{reason="SystemOOM",site="primary"} 1`,
			`drwatch_cluster_recent_events{reason="Evicted",site="primary"} 1`,
			`drwatch_cluster_recent_events{reason="FailedCreatePodSandBox",site="primary"} 1`,
			`drwatch_cluster_recent_events{reason="FailedMount",site="primary"} 1`,
		}
		got := gathered(t, m)
		if age := fmt.Sprintf(`drwatch_cluster_ccm_lease_renew_age_seconds{site="primary"} %d`, int(later.Sub(renewed).Seconds())); !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, age) }) {
			t.Errorf("got no %s… in\n%s", age, strings.Join(got, "\n"))
		}
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("got no %s in\n%s", w, strings.Join(got, "\n"))
			}
		}
		for _, g := range got {
			if strings.Contains(g, `site="backup"`) {
				t.Errorf("got %s, want nothing for a site with no kubeconfig and no route quota", g)
			}
		}
	})
}

// gathered renders every sample c collects as `name{k="v",...} value`.
func gathered(t *testing.T, c prometheus.Collector) []string {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			out = append(out, fmt.Sprintf("%s{%s} %g", mf.GetName(), strings.Join(labels, ","), m.GetGauge().GetValue()))
		}
	}
	return out
}
