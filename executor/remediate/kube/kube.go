package kube

import (
	"context"
	"errors"
	"fmt"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/internal/kubeapi"
	"github.com/drwatch/drwatch/internal/kubeconfig"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NewClient builds a client from a kubeconfig file and context.
func NewClient(c kubeconfig.Cluster) (kubeapi.Interface, error) {
	rc, err := c.RESTConfig()
	if err != nil {
		return nil, err
	}
	cs, err := kubeapi.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return cs, nil
}

// readyCondition returns the node's Ready condition, or nil.
func readyCondition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// nodeReady reports whether the node's Ready condition is True.
func nodeReady(n *corev1.Node) bool {
	c := readyCondition(n)
	return c != nil && c.Status == corev1.ConditionTrue
}

// updateNode writes n with its resourceVersion, so a concurrent change
// makes the update fail: that conflict is the world moving on since Plan
// (ErrPrecondition), and the next pass decides again. what names the
// change in the error ("cordon", "update").
func updateNode(ctx context.Context, client kubeapi.Interface, n *corev1.Node, what string) (*corev1.Node, error) {
	out, err := client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		return nil, fmt.Errorf("%s node %s: %w", what, n.Name, errors.Join(err, remediate.ErrPrecondition))
	}
	if err != nil {
		return nil, fmt.Errorf("%s node %s: %w", what, n.Name, err)
	}
	return out, nil
}
