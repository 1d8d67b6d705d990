package openstack

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/drwatch/drwatch/internal/kubeapi"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeReader is what the OpenStack remediators read of the cluster's
// Kubernetes nodes: readiness for never-ready-instances, pod CIDRs for
// neutron-route-gc. KubeReadiness is the one implementation, over one
// client of the cluster's API server.
type NodeReader interface {
	NodeReadiness
	NodePodCIDRs
}

// KubeReadiness answers NodeReadiness and NodePodCIDRs from the cluster's
// API server.
//
// "Never became Ready" cannot be read from a node's current conditions
// alone, so it is judged conservatively, and only a clear case counts:
//   - no Node object for the instance (by name, or by providerID
//     openstack:///<id>): the kubelet never registered, not seen;
//   - a Node whose Ready condition is not True and has not changed since
//     registration (its last transition within RegistrationWindow of the
//     node's creation): it has never been Ready.
//
// A Node that is not Ready now but whose Ready condition changed later than
// that has been Ready before: it is a dead node (dead-node-out-of-service's
// case), reported here as ready so that it is never rebooted for this.
type KubeReadiness struct {
	client kubeapi.Interface
	// RegistrationWindow is how close to the node's creation the last Ready
	// transition must be for the node to count as never Ready (default 2m).
	RegistrationWindow time.Duration
}

var _ NodeReader = (*KubeReadiness)(nil)

// NewKubeReadiness reads nodes through client.
func NewKubeReadiness(client kubeapi.Interface) *KubeReadiness {
	return &KubeReadiness{client: client, RegistrationWindow: 2 * time.Minute}
}

// NodeReadiness implements NodeReadiness.
func (k *KubeReadiness) NodeReadiness(ctx context.Context, inst Instance) (ready, seen bool, err error) {
	node, err := k.find(ctx, inst)
	if err != nil || node == nil {
		return false, false, err
	}
	var cond *corev1.NodeCondition
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			cond = &node.Status.Conditions[i]
		}
	}
	switch {
	case cond != nil && cond.Status == corev1.ConditionTrue:
		return true, true, nil
	case cond == nil:
		// Registered, but the kubelet never posted readiness.
		return false, true, nil
	}
	sinceCreation := cond.LastTransitionTime.Sub(node.CreationTimestamp.Time)
	return sinceCreation > k.RegistrationWindow, true, nil
}

// find returns inst's Node, or nil when there is none.
func (k *KubeReadiness) find(ctx context.Context, inst Instance) (*corev1.Node, error) {
	if inst.Name != "" {
		n, err := k.client.CoreV1().Nodes().Get(ctx, inst.Name, metav1.GetOptions{})
		switch {
		case err == nil:
			return n, nil
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("get node %s: %w", inst.Name, err)
		}
	}
	list, err := k.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	for i := range list.Items {
		if list.Items[i].Spec.ProviderID == "openstack:///"+inst.ID {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}

// ClusterNodes implements NodePodCIDRs: every Node of the cluster, with
// spec.podCIDRs (spec.podCIDR when podCIDRs is empty, as before dual-stack)
// and its InternalIP addresses. A pod CIDR or address that does not parse
// is an error, so the caller judges nothing from a node it misread.
func (k *KubeReadiness) ClusterNodes(ctx context.Context) ([]ClusterNode, error) {
	list, err := k.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	out := make([]ClusterNode, 0, len(list.Items))
	for _, n := range list.Items {
		cn := ClusterNode{Name: n.Name, ProviderID: n.Spec.ProviderID}
		cidrs := n.Spec.PodCIDRs
		if len(cidrs) == 0 && n.Spec.PodCIDR != "" {
			cidrs = []string{n.Spec.PodCIDR}
		}
		for _, c := range cidrs {
			p, err := netip.ParsePrefix(c)
			if err != nil {
				return nil, fmt.Errorf("node %s: pod CIDR %q: %w", n.Name, c, err)
			}
			cn.PodCIDRs = append(cn.PodCIDRs, p.Masked())
		}
		for _, a := range n.Status.Addresses {
			if a.Type != corev1.NodeInternalIP {
				continue
			}
			ip, err := netip.ParseAddr(a.Address)
			if err != nil {
				return nil, fmt.Errorf("node %s: InternalIP %q: %w", n.Name, a.Address, err)
			}
			cn.Addresses = append(cn.Addresses, ip)
		}
		out = append(out, cn)
	}
	return out, nil
}
