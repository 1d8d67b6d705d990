package kube

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/remediatetest"
	"github.com/drwatch/drwatch/test/kubetest"
	"github.com/drwatch/drwatch/test/poll"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// The controllers whose outcomes the remediators rely on: the pod GC and
// attach-detach controllers act on the out-of-service taint (KEP-2268), the
// Deployment and ReplicaSet controllers replace an evicted pod. The node
// lifecycle controller does not run: the tests set node readiness
// themselves, as there is no kubelet, and it would mark every node without
// heartbeats Unknown. Without it the taint eviction controller fails here
// ("Index with name spec.nodeName does not exist"), so the test deletes the
// dead node's pod gracefully itself, as that controller would for a NoExecute
// taint.
var outcomeControllers = []string{
	"pod-garbage-collector-controller",
	"persistentvolume-attach-detach-controller",
	"deployment-controller",
	"replicaset-controller",
}

const (
	testCSIDriver = "csi.drwatch.test"
	// annotationADC is what a kubelet sets to let the attach-detach
	// controller manage a node's volumes.
	annotationADC = "volumes.kubernetes.io/controller-managed-attach-detach"
)

// TestControllersCompleteRemediations runs the real kube-controller-manager
// of the API server's release and checks what its controllers do after a
// remediation, not the API objects the remediation wrote. The controllers
// act on every object of their kinds, so one controller manager serves these
// subtests only and stops before the package's other tests run.
func TestControllersCompleteRemediations(t *testing.T) {
	c := client(t)
	kubetest.Shared(t).StartControllerManager(t, outcomeControllers...)
	ctx := context.Background()
	ns := namespace(t, c)
	csiDriver(t, c)

	// "dead": its VM is shut off. "partitioned": NotReady as long, but its
	// VM runs (the look-alike that must be left alone). Each runs a pod
	// with a ReadWriteOnce CSI volume attached and mounted; the partitioned
	// node also has a pod stuck Terminating, which only the taint would let
	// the pod GC remove.
	for _, n := range []string{"dead", "partitioned"} {
		controllerManagedNode(t, c, n)
		volumePod(t, c, ns, n+"-db", n)
		attachAndMount(t, c, n, "pv-"+ns+"-"+n+"-db")
	}
	stuck := pod(t, c, ns, "partitioned-stuck", "partitioned", nil, false)
	runPod(t, c, stuck)
	terminate(t, c, ns, stuck.Name, 3600)
	long := time.Now().Add(-10 * time.Minute)
	for _, n := range []string{"dead", "partitioned"} {
		nodeNotReady(t, c, n, long)
	}
	// An operator force-deletes the partitioned node's pod: its volume
	// stays attached (the node may still write to it) until the node is
	// confirmed down, which the taint says.
	zero := int64(0)
	if err := c.CoreV1().Pods(ns).Delete(ctx, "partitioned-db", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatalf("force-delete partitioned-db: %v", err)
	}

	r := NewDeadNode(api(t), fakeInstances{"dead": InstanceShutoff, "partitioned": InstanceActive}, 5*time.Minute, nil)
	got := remediatetest.Summary(remediatetest.Pass(t, remediatetest.NewLog(), r,
		remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 10}))
	if want := []string{"planned taint node/dead", "applied taint node/dead"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}

	t.Run("the dead node's pods are deleted, the partitioned node's kept", func(t *testing.T) {
		// Evicted for the NoExecute taint, the pod is deleted gracefully;
		// with no kubelet to confirm, only the pod GC's force-delete
		// removes it (it runs every 20 s).
		terminate(t, c, ns, "dead-db", 30)
		poll.For(t, 90*time.Second, "the pod GC to remove dead-db", func() bool { return !podExists(t, c, ns, "dead-db") })
		p, err := c.CoreV1().Pods(ns).Get(ctx, stuck.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("partitioned-stuck: got %v, want it kept (its node is not tainted)", err)
		}
		if p.UID != stuck.UID {
			t.Fatalf("partitioned-stuck was recreated: got UID %s, want %s", p.UID, stuck.UID)
		}
	})
	t.Run("the dead node's volume is detached, the partitioned node's kept", func(t *testing.T) {
		poll.For(t, 60*time.Second, "the attach-detach controller to remove dead's VolumeAttachment", func() bool {
			return attachment(t, c, "dead") == nil
		})
		// The partitioned node's pod was deleted before the taint went on
		// dead, so the controller has had longer to (wrongly) detach it.
		if attachment(t, c, "partitioned") == nil {
			t.Fatal("partitioned's VolumeAttachment was removed: its node is not confirmed down and still mounts the volume")
		}
	})
	t.Run("an evicted pod of a Deployment is replaced", func(t *testing.T) {
		node(t, c, "healthy", corev1.ConditionTrue, time.Now(), false)
		sel, tmpl := podTemplate("web")
		tmpl.Spec.NodeName = "healthy"
		if _, err := c.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec:       appsv1.DeploymentSpec{Replicas: ptrTo(int32(1)), Selector: sel, Template: tmpl},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create deployment: %v", err)
		}
		var first *corev1.Pod
		poll.For(t, 60*time.Second, "the Deployment's pod", func() bool {
			first = onlyLivePod(t, c, ns, "app=web")
			return first != nil
		})
		if err := c.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{
			ObjectMeta: metav1.ObjectMeta{Name: first.Name, Namespace: ns},
		}); err != nil {
			t.Fatalf("evict %s: %v", first.Name, err)
		}
		var next *corev1.Pod
		poll.For(t, 60*time.Second, "a replacement for the evicted pod", func() bool {
			next = onlyLivePod(t, c, ns, "app=web")
			return next != nil && next.UID != first.UID
		})
		if next.OwnerReferences[0].UID != first.OwnerReferences[0].UID {
			t.Fatalf("replacement owned by %v, want the evicted pod's ReplicaSet %v", next.OwnerReferences, first.OwnerReferences)
		}
	})
}

func ptrTo[T any](v T) *T { return &v }

// csiDriver registers testCSIDriver, whose volumes need attaching: the
// attach-detach controller creates a VolumeAttachment for each.
func csiDriver(t *testing.T, c kubernetes.Interface) {
	t.Helper()
	if _, err := c.StorageV1().CSIDrivers().Create(context.Background(), &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: testCSIDriver},
		Spec:       storagev1.CSIDriverSpec{AttachRequired: ptrTo(true)},
	}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create CSIDriver: %v", err)
	}
}

// controllerManagedNode creates a Ready node whose volumes the
// attach-detach controller manages, as a kubelet would register it.
func controllerManagedNode(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	n, err := c.CoreV1().Nodes().Create(context.Background(), &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{annotationADC: "true"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create node %s: %v", name, err)
	}
	setReady(t, c, n, corev1.ConditionTrue, time.Now())
}

// volumePod creates, as the PV binder would leave them, a bound PVC and a
// ReadWriteOnce CSI PV named "pv-<ns>-<name>", and a running pod on
// nodeName that uses them.
func volumePod(t *testing.T, c kubernetes.Interface, ns, name, nodeName string) {
	t.Helper()
	ctx := context.Background()
	boundClaim(t, c, ns, name)
	p, err := c.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{NodeName: nodeName,
			Containers: []corev1.Container{{Name: "c", Image: "example.invalid/c",
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	runPod(t, c, p)
}

// boundClaim creates, as the PV binder would leave them, the PVC name bound
// to a ReadWriteOnce CSI PV of testCSIDriver named "pv-<ns>-<name>", and
// returns the PV's name.
func boundClaim(t *testing.T, c kubernetes.Interface, ns, name string) string {
	t.Helper()
	ctx := context.Background()
	pvName := "pv-" + ns + "-" + name
	rwo := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	size := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	pvc, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
		// The scheduler counts a claim bound only with the binder's mark.
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes"}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: rwo, VolumeName: pvName, StorageClassName: ptrTo(""),
			Resources: corev1.VolumeResourceRequirements{Requests: size}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pvc %s: %v", name, err)
	}
	pv, err := c.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{AccessModes: rwo, Capacity: size,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: testCSIDriver, VolumeHandle: pvName}},
			ClaimRef:               &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: name, UID: pvc.UID}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pv %s: %v", pvName, err)
	}
	t.Cleanup(func() {
		_ = c.CoreV1().PersistentVolumes().Delete(context.Background(), pvName, metav1.DeleteOptions{})
	})
	pv.Status.Phase = corev1.VolumeBound
	if _, err := c.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("bind pv %s: %v", pvName, err)
	}
	pvc.Status.Phase = corev1.ClaimBound
	pvc.Status.AccessModes, pvc.Status.Capacity = rwo, size
	if _, err := c.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("bind pvc %s: %v", name, err)
	}
	return pvName
}

// runPod reports the pod's container running and ready, as its kubelet
// would: a pod without container statuses counts as terminated once
// deleted, and the attach-detach controller would detach at once.
func runPod(t *testing.T, c kubernetes.Interface, p *corev1.Pod) {
	t.Helper()
	now := metav1.Now()
	p.Status = corev1.PodStatus{
		Phase:      corev1.PodRunning,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "c", Image: "example.invalid/c", Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}},
	}
	if _, err := c.CoreV1().Pods(p.Namespace).UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("pod %s status: %v", p.Name, err)
	}
}

// attachAndMount plays the CSI external attacher and the kubelet for pvName
// on node: it waits for the attach-detach controller's VolumeAttachment,
// marks it attached, waits until the controller records the volume attached
// on the node, then reports it mounted (node.status.volumesInUse).
func attachAndMount(t *testing.T, c kubernetes.Interface, node, pvName string) {
	t.Helper()
	ctx := context.Background()
	var va *storagev1.VolumeAttachment
	poll.For(t, 60*time.Second, "the VolumeAttachment of "+pvName, func() bool {
		va = attachmentOf(t, c, node, pvName)
		return va != nil
	})
	va.Status.Attached = true
	if _, err := c.StorageV1().VolumeAttachments().UpdateStatus(ctx, va, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("mark %s attached: %v", va.Name, err)
	}
	unique := corev1.UniqueVolumeName("kubernetes.io/csi/" + testCSIDriver + "^" + pvName)
	poll.For(t, 60*time.Second, pvName+" in "+node+"'s volumesAttached", func() bool {
		n, err := c.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(n.Status.VolumesAttached, func(v corev1.AttachedVolume) bool { return v.Name == unique })
	})
	updateNodeStatus(t, c, node, func(n *corev1.Node) { n.Status.VolumesInUse = append(n.Status.VolumesInUse, unique) })
}

// nodeNotReady sets node's Ready condition False since since, keeping the
// rest of its status.
func nodeNotReady(t *testing.T, c kubernetes.Interface, node string, since time.Time) {
	t.Helper()
	updateNodeStatus(t, c, node, func(n *corev1.Node) {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "Test",
			LastHeartbeatTime: metav1.NewTime(since), LastTransitionTime: metav1.NewTime(since)}}
	})
}

// updateNodeStatus applies change to the node's latest status, retrying on
// conflicts with the attach-detach controller's own status updates.
func updateNodeStatus(t *testing.T, c kubernetes.Interface, node string, change func(*corev1.Node)) {
	t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(n)
		_, err = c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("node %s status: %v", node, err)
	}
}

// attachment returns the VolumeAttachment of testCSIDriver on node, or nil.
func attachment(t *testing.T, c kubernetes.Interface, node string) *storagev1.VolumeAttachment {
	t.Helper()
	return attachmentOf(t, c, node, "")
}

// attachmentOf is the test driver's VolumeAttachment of the volume pv
// (any volume when pv is "") to node, or nil: a node may hold several.
func attachmentOf(t *testing.T, c kubernetes.Interface, node, pv string) *storagev1.VolumeAttachment {
	t.Helper()
	vas, err := c.StorageV1().VolumeAttachments().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list VolumeAttachments: %v", err)
	}
	for i := range vas.Items {
		va := &vas.Items[i]
		if va.Spec.NodeName != node || va.Spec.Attacher != testCSIDriver {
			continue
		}
		if pv == "" || (va.Spec.Source.PersistentVolumeName != nil && *va.Spec.Source.PersistentVolumeName == pv) {
			return va
		}
	}
	return nil
}

// onlyLivePod returns the one pod matching selector that is not
// terminating, or nil when there is none or more than one.
func onlyLivePod(t *testing.T, c kubernetes.Interface, ns, selector string) *corev1.Pod {
	t.Helper()
	pods, err := c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	var live []*corev1.Pod
	for i := range pods.Items {
		if pods.Items[i].DeletionTimestamp == nil {
			live = append(live, &pods.Items[i])
		}
	}
	if len(live) != 1 {
		return nil
	}
	return live[0]
}
