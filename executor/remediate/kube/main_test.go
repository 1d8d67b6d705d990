package kube

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/remediatetest"
	"github.com/drwatch/drwatch/internal/kubeapi"
	"github.com/drwatch/drwatch/internal/kubeconfig"
	"github.com/drwatch/drwatch/test/kubetest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// One real kube-apiserver (with etcd) for the package (kubetest.Shared),
// started on first use and stopped by TestMain.
func TestMain(m *testing.M) {
	code := m.Run()
	kubetest.CloseShared()
	os.Exit(code)
}

var (
	apiOnce   sync.Once
	apiClient kubeapi.Interface
	apiErr    error
)

// client returns client-go's full clientset for the package's API server,
// to build and inspect fixtures with, with no nodes left from earlier tests
// (nodes are cluster-scoped, and the remediators list them all). The
// remediators themselves get api(t): the client the node runs.
func client(t *testing.T) kubernetes.Interface {
	t.Helper()
	c := kubetest.Shared(t).Clientset(t)
	deleteAllNodes(t, c)
	t.Cleanup(func() { deleteAllNodes(t, c) })
	return c
}

// api returns the client NewClient builds (the node's), for the same API
// server as client(t).
func api(t *testing.T) kubeapi.Interface {
	t.Helper()
	cluster := kubetest.Shared(t)
	apiOnce.Do(func() { apiClient, apiErr = NewClient(kubeconfig.Cluster{Kubeconfig: cluster.Kubeconfig}) })
	if apiErr != nil {
		t.Fatalf("kube client: %v", apiErr)
	}
	return apiClient
}

// deleteAllNodes removes every node, and every pod (grace 0), so that a
// test sees only its own objects.
func deleteAllNodes(t *testing.T, c kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	if err := c.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatalf("delete nodes: %v", err)
	}
	pods, err := c.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	zero := int64(0)
	for _, p := range pods.Items {
		err := c.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("delete pod %s/%s: %v", p.Namespace, p.Name, err)
		}
	}
}

var nsSeq int

// namespace creates a fresh namespace with its default service account
// (no controller manager runs to create it, and pod admission needs it).
func namespace(t *testing.T, c kubernetes.Interface) string {
	t.Helper()
	nsSeq++
	ns := fmt.Sprintf("t%d-%d", nsSeq, time.Now().UnixNano()%1e6)
	ctx := context.Background()
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	if _, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create service account: %v", err)
	}
	return ns
}

// node creates a node and sets its Ready condition through the status
// subresource, as a kubelet (or the node lifecycle controller) would.
func node(t *testing.T, c kubernetes.Interface, name string, ready corev1.ConditionStatus, since time.Time, cordoned bool) *corev1.Node {
	t.Helper()
	ctx := context.Background()
	n, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.NodeSpec{Unschedulable: cordoned},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create node %s: %v", name, err)
	}
	return setReady(t, c, n, ready, since)
}

func setReady(t *testing.T, c kubernetes.Interface, n *corev1.Node, ready corev1.ConditionStatus, since time.Time) *corev1.Node {
	t.Helper()
	n.Status.Conditions = []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: ready, Reason: "Test",
		LastHeartbeatTime: metav1.NewTime(since), LastTransitionTime: metav1.NewTime(since),
	}}
	n, err := c.CoreV1().Nodes().UpdateStatus(context.Background(), n, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update node status %s: %v", n.Name, err)
	}
	return n
}

// pod creates a pod bound to nodeName; owned gives it a controller owner.
func pod(t *testing.T, c kubernetes.Interface, ns, name, nodeName string, lbls map[string]string, owned bool) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: lbls},
		Spec:       corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Image: "example.invalid/c"}}},
	}
	if owned {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name + "-rs",
			UID: types.UID("rs-" + name), Controller: &yes}}
	}
	p, err := c.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	return p
}

// versions returns the resourceVersion of each named object, read by get.
func versions(t *testing.T, get func(name string) (metav1.Object, error), names ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range names {
		o, err := get(n)
		if err != nil {
			t.Fatalf("get %s: %v", n, err)
		}
		out[n] = o.GetResourceVersion()
	}
	return out
}

// dryRunWritesNothing is every remediator's dry-run subtest: one pass in
// dry-run mode records exactly want, and the objects' resourceVersions
// (read by rvs) do not move.
func dryRunWritesNothing(t *testing.T, fc *remediatetest.Log, r remediate.Remediator, want []string, rvs func() map[string]string) {
	t.Run("dry-run writes nothing", func(t *testing.T) {
		before := rvs()
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, remediate.Settings{Mode: remediate.ModeDryRun, MaxPerPass: 5}))
		if !slices.Equal(got, want) {
			t.Fatalf("got %q, want %q", got, want)
		}
		if after := rvs(); !maps.Equal(before, after) {
			t.Fatalf("got resourceVersions %v after dry-run, want unchanged %v", after, before)
		}
	})
}
