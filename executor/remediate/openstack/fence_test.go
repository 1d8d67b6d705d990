package openstack

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/kube"
	"github.com/drwatch/drwatch/executor/remediate/remediatetest"
	"github.com/drwatch/drwatch/test/kubetest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestOrphanedPodsHoldStatefulSetPodsUntilTheHostIsFenced runs
// orphaned-pods against a real kube-apiserver with real Nova as its
// instance check. A StatefulSet pod stuck Terminating on a node whose
// hypervisor's nova-compute is stopped (Nova shows the service down, the
// guest may still run) is held, and the report names the host and the
// fence command; once an operator forces the service down through the
// os-services API, it is force-deleted. Its look-alike on a partitioned
// node (a healthy host, the guest ACTIVE) stays held throughout.
func TestOrphanedPodsHoldStatefulSetPodsUntilTheHostIsFenced(t *testing.T) {
	s, admin := novaClients(t, "demo-admin")
	ids := deadHost(t)
	for k, v := range mkServers(t, s, server{name: "op-part"}) {
		ids[k] = v
	}
	c := kubetest.Shared(t).Clientset(t)
	ctx := context.Background()
	ns := fmt.Sprintf("fence-%d", time.Now().UnixNano()%1e6)
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	if _, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mkNode(t, "op-hv", "openstack:///"+ids["dn-hv"], corev1.ConditionUnknown, 0)
	mkNode(t, "op-part", "openstack:///"+ids["op-part"], corev1.ConditionUnknown, 0)
	yes, grace := true, int64(30)
	for pod, node := range map[string]string{"db-0": "op-hv", "db-1": "op-part"} {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: types.UID("db-" + ns), Controller: &yes}}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "example.invalid/c"}}},
		}
		if _, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// No kubelet finishes it: it stays Terminating.
		if err := c.CoreV1().Pods(ns).Delete(ctx, pod, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
			t.Fatal(err)
		}
	}
	exists := func(name string) bool {
		_, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	later := func() time.Time { return time.Now().Add(time.Hour) }
	r := kube.NewOrphanedPods(realKube(t), NewNovaInstances(admin), time.Minute, later)
	on := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 10, MaxPerHour: 10}
	fc := remediatetest.NewLog()

	detail := map[string]string{}
	for _, rec := range remediatetest.Pass(t, fc, r, on) {
		detail[rec.Target] = rec.Result + " " + rec.Detail
	}
	fence := "openstack compute service set --down " + hostDead + " nova-compute"
	if got := detail["pod/"+ns+"/db-0"]; !strings.HasPrefix(got, "dry_run report-only:") || !strings.Contains(got, fence) {
		t.Fatalf("db-0 on a host only down: got %q, want a report-only record naming %q", got, fence)
	}
	if got := detail["pod/"+ns+"/db-1"]; !strings.HasPrefix(got, "dry_run report-only:") || !strings.Contains(got, "ACTIVE") {
		t.Fatalf("db-1 on a partitioned node: got %q, want a report-only record saying its instance is ACTIVE", got)
	}
	if !exists("db-0") || !exists("db-1") {
		t.Fatal("a StatefulSet pod that may still run was force-deleted")
	}

	// The operator fences the host and says so.
	if err := s.SetService(ctx, hostDead, false, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.SetService(context.Background(), hostDead, false, false); err != nil {
			t.Errorf("restore %s: %v", hostDead, err)
		}
	})
	var got []string
	for _, rec := range remediatetest.Pass(t, fc, r, on) {
		if rec.Target == "pod/"+ns+"/db-0" {
			got = append(got, rec.Result)
		}
	}
	check(t, "db-0 once its host is forced down", got, []string{"planned", "applied"})
	if exists("db-0") {
		t.Error("db-0: still there once its host is forced down, want it force-deleted")
	}
	if !exists("db-1") {
		t.Error("db-1 on a partitioned node was force-deleted")
	}
}
