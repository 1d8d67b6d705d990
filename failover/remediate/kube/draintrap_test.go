package kube

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover/remediate"
	"github.com/drwatch/drwatch/failover/remediate/remediatetest"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// lbService creates a LoadBalancer service with the traffic policy and an
// EndpointSlice with one ready endpoint per pod, as the endpoint slice
// controller would have.
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
	yes := true
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name + "-abc", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for i, p := range pods {
		nn := p.Spec.NodeName
		sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{"10.0.0." + string(rune('1'+i))},
			Conditions: discoveryv1.EndpointConditions{Ready: &yes},
			NodeName:   &nn,
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: p.Name, UID: p.UID},
		})
	}
	if _, err := c.DiscoveryV1().EndpointSlices(ns).Create(ctx, sl, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create endpointslice %s: %v", name, err)
	}
}

func TestDrainTrap(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	ctx := context.Background()
	now := time.Now()
	node(t, c, "old-1", corev1.ConditionTrue, now, true) // cordoned by a drain
	node(t, c, "old-2", corev1.ConditionFalse, now, false)
	node(t, c, "new-1", corev1.ConditionTrue, now, false)

	ing := map[string]string{"app": "ingress"}
	trapped := []*corev1.Pod{pod(t, c, ns, "ingress-0", "old-1", ing, true), pod(t, c, ns, "ingress-1", "old-2", ing, true)}
	lbService(t, c, ns, "ingress", corev1.ServiceExternalTrafficPolicyLocal, trapped...)
	one := intstr.FromInt32(2)
	if _, err := c.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "ingress-pdb"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: ing}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Healthy look-alikes.
	mixed := map[string]string{"app": "mixed"}
	lbService(t, c, ns, "mixed", corev1.ServiceExternalTrafficPolicyLocal,
		pod(t, c, ns, "mixed-0", "old-1", mixed, true), pod(t, c, ns, "mixed-1", "new-1", mixed, true))
	cl := map[string]string{"app": "cluster"}
	lbService(t, c, ns, "cluster", corev1.ServiceExternalTrafficPolicyCluster, pod(t, c, ns, "cluster-0", "old-1", cl, true))
	bare := map[string]string{"app": "bare"}
	lbService(t, c, ns, "bare", corev1.ServiceExternalTrafficPolicyLocal, pod(t, c, ns, "bare-0", "old-1", bare, false))

	all := []string{"ingress-0", "ingress-1", "mixed-0", "mixed-1", "cluster-0", "bare-0"}
	podVersions := func() map[string]string {
		return versions(t, func(n string) (metav1.Object, error) {
			return c.CoreV1().Pods(ns).Get(ctx, n, metav1.GetOptions{})
		}, all...)
	}
	terminating := func(name string) bool {
		p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return true // gone
		}
		return p.DeletionTimestamp != nil
	}
	r := NewDrainTrap(c)
	fc := remediatetest.NewLog()

	t.Run("plan names the PDB", func(t *testing.T) {
		acts, err := r.Plan(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(acts) != 2 {
			t.Fatalf("got %d actions %v, want 2 (ingress-0, ingress-1)", len(acts), acts)
		}
		for _, a := range acts {
			if !strings.Contains(a.Reason, "PodDisruptionBudget "+ns+"/ingress-pdb blocked the drain") || !strings.Contains(a.Reason, "service "+ns+"/ingress") {
				t.Fatalf("got reason %q, want the service and the PDB named", a.Reason)
			}
		}
	})
	dryRunWritesNothing(t, fc, r, []string{"dry_run delete pod/" + ns + "/ingress-0", "dry_run delete pod/" + ns + "/ingress-1"}, podVersions)
	on := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 1, MaxPerHour: 10}
	t.Run("acts within the cap", func(t *testing.T) {
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on))
		want := []string{"planned delete pod/" + ns + "/ingress-0", "applied delete pod/" + ns + "/ingress-0",
			"skipped_cap delete pod/" + ns + "/ingress-1"}
		if !slices.Equal(got, want) {
			t.Fatalf("got %q, want %q", got, want)
		}
		if !terminating("ingress-0") || terminating("ingress-1") {
			t.Fatal("want ingress-0 deleted and ingress-1 kept by the cap")
		}
		remediatetest.Pass(t, fc, r, on)
		if !terminating("ingress-1") {
			t.Fatal("ingress-1 not deleted by the second pass")
		}
		for _, n := range []string{"mixed-0", "mixed-1", "cluster-0", "bare-0"} {
			if terminating(n) {
				t.Fatalf("look-alike %s was deleted", n)
			}
		}
	})
	t.Run("repeated pass is a no-op", func(t *testing.T) {
		before := podVersions()
		if got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on)); len(got) != 0 {
			t.Fatalf("got %q, want no records", got)
		}
		if after := podVersions(); !maps.Equal(before, after) {
			t.Fatalf("got resourceVersions %v, want unchanged %v", after, before)
		}
	})
	t.Run("no Ready schedulable node: no action", func(t *testing.T) {
		n, err := c.CoreV1().Nodes().Get(ctx, "new-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Spec.Unschedulable = true
		if _, err := c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		acts, err := r.Plan(ctx)
		if err != nil || len(acts) != 0 {
			t.Fatalf("got %v (%v), want no actions: the pods would have nowhere to go", acts, err)
		}
	})
}
