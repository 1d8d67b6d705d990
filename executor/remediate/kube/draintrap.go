package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/internal/kubeapi"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// DrainTrapName is the remediation's name.
const DrainTrapName = "drain-trap"

// VerbEvict is the verb of every action drain-trap plans.
const VerbEvict = "evict"

// PoolMember is one member of a load balancer's pool, as the cloud reports
// it. The OpenStack cloud provider names a member after its node and gives
// it the node's InternalIP.
type PoolMember struct {
	Name            string
	Address         string
	OperatingStatus string
}

// LoadBalancerPools reads, at the cloud, which nodes a LoadBalancer
// Service's load balancer sends traffic to (Octavia, in production).
type LoadBalancerPools interface {
	// PoolMembers returns the members of every pool of the load balancer
	// that serves svc. found is false when the cloud has no load balancer
	// for svc (not provisioned yet, or deleted): nothing is known of its
	// pool. An error means the cloud could not be read, or not completely.
	// It only reads, is idempotent, and is safe for concurrent use.
	PoolMembers(ctx context.Context, svc *corev1.Service) (members []PoolMember, found bool, err error)
}

// DrainTrap is the drain-trap remediator (seed 002). A cloud load balancer
// in front of a Service with externalTrafficPolicy Local sends traffic only
// to pool members that run a ready endpoint. Since Kubernetes 1.19 cordoned
// nodes stay in the pool, and since KEP-3458 NotReady nodes do too: a node
// leaves the pool only when it is labelled
// node.kubernetes.io/exclude-from-external-load-balancers, when it is
// deleted, or when the cloud's pool says so. When every ready endpoint sits
// on nodes out of the pool (a drain blocked by a PodDisruptionBudget after
// the old nodes were labelled out), the load balancer has no backend.
//
// The pool is read at the cloud (LoadBalancerPools), never inferred from
// cordon or readiness. Pods move only through the Eviction API, so
// PodDisruptionBudgets hold, one per Service at a time, and the next only
// once every pod of the Service is Ready again and none is terminating:
// the state lives in the cluster, so a new leader waits just the same.
type DrainTrap struct {
	client kubeapi.Interface
	pools  LoadBalancerPools
}

var _ remediate.Remediator = (*DrainTrap)(nil)

// NewDrainTrap returns the remediator. With pools nil the pool cannot be
// read, and every Plan fails: nothing moves.
func NewDrainTrap(client kubeapi.Interface, pools LoadBalancerPools) *DrainTrap {
	return &DrainTrap{client: client, pools: pools}
}

// Name implements remediate.Remediator.
func (d *DrainTrap) Name() string { return DrainTrapName }

// errNoPools is Plan's answer without a pool reader.
var errNoPools = errors.New("no load-balancer pool reader (remediations.openstack for this site): the pool cannot be read, nothing moves")

// Plan finds trapped Services and plans the eviction of one of their
// endpoint pods whose replacement fits a pool node (pool.landing), or, when
// none does, reports one. It returns an error, and so plans nothing at all, when
// any Service's pool cannot be read (fail closed: with the cloud down or
// half back, nothing moves). It never writes.
func (d *DrainTrap) Plan(ctx context.Context) ([]remediate.Action, error) {
	if d.pools == nil {
		return nil, errNoPools
	}
	nodes, err := d.nodes(ctx)
	if err != nil {
		return nil, err
	}
	svcs, err := d.client.CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list services: %w", err)
	}
	var out []remediate.Action
	for i := range svcs.Items {
		s := &svcs.Items[i]
		if s.Spec.Type != corev1.ServiceTypeLoadBalancer || s.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal ||
			len(s.Spec.Selector) == 0 {
			continue
		}
		a, err := d.planService(ctx, s, nodes)
		if err != nil {
			return nil, err
		}
		if a != nil {
			out = append(out, *a)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// nodes returns every node by name.
func (d *DrainTrap) nodes(ctx context.Context) (map[string]*corev1.Node, error) {
	list, err := d.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	nodes := make(map[string]*corev1.Node, len(list.Items))
	for i := range list.Items {
		nodes[list.Items[i].Name] = &list.Items[i]
	}
	return nodes, nil
}

// endpoint is a ready endpoint of a Service.
type endpoint struct {
	pod  string
	uid  string
	node string
}

// readyEndpoints returns the Service's ready pod endpoints, sorted by pod.
func (d *DrainTrap) readyEndpoints(ctx context.Context, s *corev1.Service) ([]endpoint, error) {
	sls, err := d.client.DiscoveryV1().EndpointSlices(s.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + s.Name,
	})
	if err != nil {
		return nil, fmt.Errorf("list endpointslices of %s/%s: %w", s.Namespace, s.Name, err)
	}
	var ready []endpoint
	seen := map[string]bool{}
	for _, sl := range sls.Items {
		for _, e := range sl.Endpoints {
			// EndpointConditions: a nil Ready means ready.
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			if e.TargetRef == nil || e.TargetRef.Kind != "Pod" || e.NodeName == nil || seen[e.TargetRef.Name] {
				continue
			}
			seen[e.TargetRef.Name] = true
			ready = append(ready, endpoint{pod: e.TargetRef.Name, uid: string(e.TargetRef.UID), node: *e.NodeName})
		}
	}
	sort.Slice(ready, func(i, j int) bool { return ready[i].pod < ready[j].pod })
	return ready, nil
}

// pool answers whether a node is in a Service's load-balancer pool.
type pool struct {
	nodes   map[string]*corev1.Node
	members []PoolMember
}

// in reports whether the load balancer sends traffic to the node, and if
// not, why. Only the exclusion label, the node's deletion and the cloud's
// pool take a node out; cordon and readiness never do.
func (p pool) in(name string) (bool, string) {
	n, ok := p.nodes[name]
	if !ok {
		return false, "deleted"
	}
	if _, ok := n.Labels[corev1.LabelNodeExcludeBalancers]; ok {
		return false, "labelled " + corev1.LabelNodeExcludeBalancers
	}
	for _, m := range p.members {
		if m.Name != "" && m.Name == n.Name {
			return true, ""
		}
		for _, a := range n.Status.Addresses {
			if m.Address != "" && m.Address == a.Address {
				return true, ""
			}
		}
	}
	return false, "not a member of the load balancer's pool"
}

// planService returns the eviction due for s, or nil.
func (d *DrainTrap) planService(ctx context.Context, s *corev1.Service, nodes map[string]*corev1.Node) (*remediate.Action, error) {
	ready, err := d.readyEndpoints(ctx, s)
	if err != nil || len(ready) == 0 {
		return nil, err
	}
	members, found, err := d.pools.PoolMembers(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("load-balancer pool of service %s/%s: %w", s.Namespace, s.Name, err)
	}
	if !found {
		return nil, nil // no load balancer yet: nothing known
	}
	p := pool{nodes: nodes, members: members}
	why := map[string]string{}
	for _, e := range ready {
		in, reason := p.in(e.node)
		if in {
			return nil, nil // a backend the load balancer uses: not trapped
		}
		why[e.node] = reason
	}
	// The replacement must have somewhere in the pool to go.
	somewhere := false
	for name, n := range nodes {
		if in, _ := p.in(name); in && nodeReady(n) && !n.Spec.Unschedulable {
			somewhere = true
			break
		}
	}
	if !somewhere {
		return nil, nil
	}
	pods, err := d.client.CoreV1().Pods(s.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(s.Spec.Selector).String(),
	})
	if err != nil {
		return nil, fmt.Errorf("list pods of service %s/%s: %w", s.Namespace, s.Name, err)
	}
	// One at a time: while a pod of the Service is terminating or not
	// Ready (the previous eviction's pod, or its replacement), wait.
	byName := map[string]*corev1.Pod{}
	for i := range pods.Items {
		pd := &pods.Items[i]
		if pd.DeletionTimestamp != nil || !podReady(pd) {
			return nil, nil
		}
		byName[pd.Name] = pd
	}
	// A pod with no node to go to is not evicted, whatever the others: its
	// replacement would stay Pending, and the Service would lose a pod that
	// still serves in the cluster for nothing. The first such pod is
	// reported when no other pod can move.
	var stranded *remediate.Action
	for _, e := range ready {
		pd, ok := byName[e.pod]
		n, exists := nodes[e.node]
		// Only from a cordoned node: elsewhere the scheduler could put the
		// replacement right back. A deleted node's pods are the pod
		// garbage collector's.
		if !ok || !exists || !n.Spec.Unschedulable || (e.uid != "" && e.uid != string(pd.UID)) {
			continue
		}
		owner := metav1.GetControllerOf(pd)
		if owner == nil || owner.Kind == "DaemonSet" {
			continue // nothing would recreate it elsewhere
		}
		reason := fmt.Sprintf("service %s/%s (LoadBalancer, externalTrafficPolicy Local) has no ready endpoint on a node of its load balancer's pool: pod %s on node %s (%s)",
			s.Namespace, s.Name, pd.Name, e.node, why[e.node])
		if names, err := d.budgets(ctx, pd); err != nil {
			return nil, err
		} else if len(names) > 0 {
			reason += "; PodDisruptionBudget " + strings.Join(names, ", ") + " guards the eviction"
		}
		a := &remediate.Action{
			Target: "pod/" + pd.Namespace + "/" + pd.Name, Verb: VerbEvict, Reason: reason,
			Key:  VerbEvict + "/pod/" + pd.Namespace + "/" + pd.Name + "/" + string(pd.UID),
			Data: drainData{ref: podRef{pd.Namespace, pd.Name, pd.UID}, node: e.node, members: members},
		}
		if to, why := p.landing(pd, e.node); to == "" {
			if stranded == nil {
				a.ReportOnly = "its replacement could be scheduled nowhere: " + why
				stranded = a
			}
			continue
		}
		return a, nil
	}
	return stranded, nil
}

// podReady reports whether the pod runs and its Ready condition is True.
func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// budgets names the PodDisruptionBudgets whose selector matches the pod.
func (d *DrainTrap) budgets(ctx context.Context, p *corev1.Pod) ([]string, error) {
	pdbs, err := d.client.PolicyV1().PodDisruptionBudgets(p.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list poddisruptionbudgets in %s: %w", p.Namespace, err)
	}
	var out []string
	for i := range pdbs.Items {
		if pdbs.Items[i].Spec.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdbs.Items[i].Spec.Selector)
		if err != nil || sel.Empty() {
			continue
		}
		if sel.Matches(labels.Set(p.Labels)) {
			out = append(out, pdbs.Items[i].Namespace+"/"+pdbs.Items[i].Name)
		}
	}
	slices.Sort(out)
	return out, nil
}

type drainData struct {
	ref  podRef
	node string
	// members is the pool Plan read, for Apply's check that the
	// replacement still has somewhere to go.
	members []PoolMember
}

// Apply re-reads the pod and evicts it through the Eviction API
// (policy/v1), with its UID as a precondition, so that its
// PodDisruptionBudgets hold. A pod gone, replaced or already terminating
// is success; a node no longer cordoned, or no node of the pool Plan read
// admitting the replacement any more, wraps remediate.ErrPrecondition; a
// budget's refusal (429) wraps remediate.ErrBlocked.
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
	if err == nil && !n.Spec.Unschedulable {
		return fmt.Errorf("node %s is no longer cordoned: %w", data.node, remediate.ErrPrecondition)
	}
	// A target node tainted or gone since Plan would strand the
	// replacement: the nodes are read again (the pool is Plan's, as the
	// cloud is not asked twice in one pass).
	nodes, err := d.nodes(ctx)
	if err != nil {
		return err
	}
	if to, why := (pool{nodes: nodes, members: data.members}).landing(p, data.node); to == "" {
		return fmt.Errorf("pod %s/%s: its replacement could be scheduled nowhere: %s: %w", ref.namespace, ref.name, why, remediate.ErrPrecondition)
	}
	err = d.client.PolicyV1().Evictions(ref.namespace).Evict(ctx, &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: ref.name, Namespace: ref.namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &ref.uid}},
	})
	switch {
	case err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return nil
	case apierrors.IsTooManyRequests(err):
		return fmt.Errorf("evict pod %s/%s: %w: %w", ref.namespace, ref.name, err, remediate.ErrBlocked)
	}
	return fmt.Errorf("evict pod %s/%s: %w", ref.namespace, ref.name, err)
}
