package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/drwatch/drwatch/failover/remediate"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
)

// DrainTrapName is the remediation's name.
const DrainTrapName = "drain-trap"

// DrainTrap is the drain-trap remediator (seed 002): a cloud load balancer
// with externalTrafficPolicy Local sends traffic only to nodes that run a
// ready endpoint, and the service controller drops cordoned and NotReady
// nodes from its backends; when every ready endpoint sits on such nodes
// (a drain blocked by a PodDisruptionBudget), the load balancer has no
// backend at all.
type DrainTrap struct {
	client kubernetes.Interface
}

var _ remediate.Remediator = (*DrainTrap)(nil)

// NewDrainTrap returns the remediator.
func NewDrainTrap(client kubernetes.Interface) *DrainTrap { return &DrainTrap{client: client} }

// Name implements remediate.Remediator.
func (d *DrainTrap) Name() string { return DrainTrapName }

// Plan finds trapped services and plans to delete their endpoint pods on
// the bad nodes. It acts only if some node is Ready and schedulable (else
// the pods would have nowhere to go) and only on pods a controller owns
// (else nothing would recreate them).
func (d *DrainTrap) Plan(ctx context.Context) ([]remediate.Action, error) {
	nodes, err := d.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	bad := map[string]string{} // node -> why it takes no load-balancer traffic
	good := 0
	for i := range nodes.Items {
		n := &nodes.Items[i]
		switch {
		case n.Spec.Unschedulable:
			bad[n.Name] = "cordoned"
		case !nodeReady(n):
			bad[n.Name] = "NotReady"
		default:
			good++
		}
	}
	if good == 0 {
		return nil, nil
	}
	svcs, err := d.client.CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list services: %w", err)
	}
	var out []remediate.Action
	for i := range svcs.Items {
		s := &svcs.Items[i]
		if s.Spec.Type != corev1.ServiceTypeLoadBalancer || s.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
			continue
		}
		acts, err := d.planService(ctx, s, bad)
		if err != nil {
			return nil, err
		}
		out = append(out, acts...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (d *DrainTrap) planService(ctx context.Context, s *corev1.Service, bad map[string]string) ([]remediate.Action, error) {
	slices, err := d.client.DiscoveryV1().EndpointSlices(s.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + s.Name,
	})
	if err != nil {
		return nil, fmt.Errorf("list endpointslices of %s/%s: %w", s.Namespace, s.Name, err)
	}
	type ep struct{ pod, node string }
	var ready []ep
	seen := map[string]bool{}
	for _, sl := range slices.Items {
		for _, e := range sl.Endpoints {
			// EndpointConditions: a nil Ready means ready.
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			if e.TargetRef == nil || e.TargetRef.Kind != "Pod" || e.NodeName == nil {
				continue
			}
			if seen[e.TargetRef.Name] {
				continue
			}
			seen[e.TargetRef.Name] = true
			ready = append(ready, ep{pod: e.TargetRef.Name, node: *e.NodeName})
		}
	}
	if len(ready) == 0 {
		return nil, nil
	}
	for _, e := range ready {
		if _, isBad := bad[e.node]; !isBad {
			return nil, nil // a backend the load balancer can use
		}
	}
	pdbs, err := d.client.PolicyV1().PodDisruptionBudgets(s.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list poddisruptionbudgets in %s: %w", s.Namespace, err)
	}
	var out []remediate.Action
	for _, e := range ready {
		p, err := d.client.CoreV1().Pods(s.Namespace).Get(ctx, e.pod, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("get pod %s/%s: %w", s.Namespace, e.pod, err)
		}
		if p.DeletionTimestamp != nil || metav1.GetControllerOf(p) == nil {
			continue
		}
		why := fmt.Sprintf("service %s/%s (LoadBalancer, externalTrafficPolicy Local) has its only ready endpoints on nodes the load balancer skips: pod %s on %s node %s",
			s.Namespace, s.Name, p.Name, bad[e.node], e.node)
		if names := matchingPDBs(pdbs.Items, p); len(names) > 0 {
			why += "; PodDisruptionBudget " + strings.Join(names, ", ") + " blocked the drain"
		}
		out = append(out, remediate.Action{
			Target: "pod/" + p.Namespace + "/" + p.Name, Verb: "delete", Reason: why,
			Key:  "delete/pod/" + p.Namespace + "/" + p.Name + "/" + string(p.UID),
			Data: drainData{ref: podRef{p.Namespace, p.Name, p.UID}, node: e.node},
		})
	}
	return out, nil
}

// matchingPDBs names the budgets whose selector matches the pod's labels.
func matchingPDBs(pdbs []policyPDB, p *corev1.Pod) []string {
	var out []string
	for i := range pdbs {
		sel, err := metav1.LabelSelectorAsSelector(pdbs[i].Spec.Selector)
		if err != nil || sel.Empty() || pdbs[i].Spec.Selector == nil {
			continue
		}
		if sel.Matches(labels.Set(p.Labels)) {
			out = append(out, pdbs[i].Namespace+"/"+pdbs[i].Name)
		}
	}
	sort.Strings(out)
	return out
}

type policyPDB = policyv1.PodDisruptionBudget

type drainData struct {
	ref  podRef
	node string
}

// Apply re-reads the pod and deletes it (gracefully, bypassing the
// eviction API on purpose: the budget is what trapped it), with its UID
// as a precondition. A pod gone or no longer on a bad node is success.
func (d *DrainTrap) Apply(ctx context.Context, a remediate.Action) error {
	data, ok := a.Data.(drainData)
	if !ok {
		return fmt.Errorf("%s: action without pod data", a.Target)
	}
	ref := data.ref
	p, err := d.client.CoreV1().Pods(ref.namespace).Get(ctx, ref.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get pod %s/%s: %w", ref.namespace, ref.name, err)
	}
	if p.UID != ref.uid || p.DeletionTimestamp != nil {
		return nil
	}
	n, err := d.client.CoreV1().Nodes().Get(ctx, data.node, metav1.GetOptions{})
	if err == nil && !n.Spec.Unschedulable && nodeReady(n) {
		return fmt.Errorf("node %s takes traffic again: %w", data.node, remediate.ErrPrecondition)
	}
	err = d.client.CoreV1().Pods(ref.namespace).Delete(ctx, ref.name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &ref.uid},
	})
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return fmt.Errorf("delete pod %s/%s: %w", ref.namespace, ref.name, err)
}
