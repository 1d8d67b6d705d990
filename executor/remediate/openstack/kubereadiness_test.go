package openstack

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate/kube"
	"github.com/drwatch/drwatch/internal/kubeapi"
	"github.com/drwatch/drwatch/internal/kubeconfig"
	"github.com/drwatch/drwatch/test/kubetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// realKube returns the node's client of the package's kube-apiserver
// (kubetest.Shared), started on first use.
func realKube(t *testing.T) kubeapi.Interface {
	t.Helper()
	c, err := kube.NewClient(kubeconfig.Cluster{Kubeconfig: kubetest.Shared(t).Kubeconfig})
	if err != nil {
		t.Fatalf("kube client: %v", err)
	}
	return c
}

// mkNode creates a Node whose Ready condition is status, last changed
// transitioned after the node's creation (through client-go's clientset:
// the node's client writes no status).
func mkNode(t *testing.T, name, providerID string, status corev1.ConditionStatus, transitioned time.Duration) {
	t.Helper()
	c := kubetest.Shared(t).Clientset(t)
	ctx := context.Background()
	n, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	if status == "" {
		return
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status,
		LastTransitionTime: metav1.NewTime(n.CreationTimestamp.Add(transitioned)), LastHeartbeatTime: metav1.Now()}}
	if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestKubeReadiness(t *testing.T) {
	c := realKube(t)
	mkNode(t, "k-ready", "openstack:///id-ready", corev1.ConditionTrue, time.Minute)
	mkNode(t, "k-never", "openstack:///id-never", corev1.ConditionFalse, 10*time.Second)
	mkNode(t, "k-died", "openstack:///id-died", corev1.ConditionUnknown, 3*time.Hour)
	mkNode(t, "k-silent", "openstack:///id-silent", "", 0)
	mkNode(t, "renamed-node", "openstack:///id-by-provider", corev1.ConditionFalse, 5*time.Second)
	r := NewKubeReadiness(c)
	for _, tt := range []struct {
		inst        Instance
		ready, seen bool
	}{
		{Instance{ID: "id-ready", Name: "k-ready"}, true, true},
		{Instance{ID: "id-never", Name: "k-never"}, false, true},
		{Instance{ID: "id-died", Name: "k-died"}, true, true}, // was Ready once: a dead node, not a never-ready one
		{Instance{ID: "id-silent", Name: "k-silent"}, false, true},
		{Instance{ID: "id-by-provider", Name: "k-other-name"}, false, true},
		{Instance{ID: "id-unregistered", Name: "k-unregistered"}, false, false},
	} {
		ready, seen, err := r.NodeReadiness(context.Background(), tt.inst)
		if err != nil || ready != tt.ready || seen != tt.seen {
			t.Errorf("%s: got ready %v seen %v err %v, want %v %v", tt.inst.Name, ready, seen, err, tt.ready, tt.seen)
		}
	}
}

func TestKubeReadinessClusterNodes(t *testing.T) {
	c := realKube(t)
	fx := kubetest.Shared(t).Clientset(t)
	ctx := context.Background()
	mk := func(name string, spec corev1.NodeSpec, addrs ...corev1.NodeAddress) {
		t.Helper()
		n, err := fx.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = fx.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		if len(addrs) == 0 {
			return
		}
		n.Status.Addresses = addrs
		if _, err := fx.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk("cidr-dual", corev1.NodeSpec{ProviderID: "openstack:///id-dual", PodCIDR: "198.19.4.0/24", PodCIDRs: []string{"198.19.4.0/24", "fd00:4::/64"}},
		corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.180.0.4"},
		corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "203.0.113.4"},
		corev1.NodeAddress{Type: corev1.NodeHostName, Address: "cidr-dual"})
	mk("cidr-none", corev1.NodeSpec{ProviderID: "openstack:///id-none"})
	r := NewKubeReadiness(c)
	nodes, err := r.ClusterNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, n := range nodes {
		got[n.Name] = fmt.Sprintf("%s %v %v", n.ProviderID, n.PodCIDRs, n.Addresses)
	}
	for name, want := range map[string]string{
		"cidr-dual": "openstack:///id-dual [198.19.4.0/24 fd00:4::/64] [10.180.0.4]",
		"cidr-none": "openstack:///id-none [] []",
	} {
		if got[name] != want {
			t.Errorf("%s: got %q, want %q", name, got[name], want)
		}
	}
}
