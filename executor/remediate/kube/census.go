package kube

import (
	"context"
	"fmt"
	"strings"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/internal/kubeapi"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	_ remediate.Census = (*DeadNode)(nil)
	_ remediate.Census = (*OrphanedPods)(nil)
)

// undoes reports whether verb only undoes an earlier repair; such actions
// are no disruption and the brake does not count them.
func undoes(verb string) bool { return verb == "untaint" || verb == "uncordon" }

// Census counts the cluster's nodes and the distinct nodes acts would
// taint. It only reads.
func (d *DeadNode) Census(ctx context.Context, acts []remediate.Action) (remediate.Population, error) {
	return nodeCensus(ctx, d.client, acts, func(context.Context, remediate.Action) (string, error) { return "", nil })
}

// Census counts the cluster's nodes and the distinct nodes acts concern:
// the node a pod to delete is bound to (read from the API), or the node
// itself for a node action. A pod already gone or never scheduled concerns
// no node. It only reads.
func (o *OrphanedPods) Census(ctx context.Context, acts []remediate.Action) (remediate.Population, error) {
	return nodeCensus(ctx, o.client, acts, func(ctx context.Context, a remediate.Action) (string, error) {
		ns, name, ok := strings.Cut(strings.TrimPrefix(a.Target, "pod/"), "/")
		if !ok || !strings.HasPrefix(a.Target, "pod/") {
			return "", nil
		}
		p, err := o.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("get pod %s/%s: %w", ns, name, err)
		}
		return p.Spec.NodeName, nil
	})
}

// nodeCensus lists the nodes and counts the distinct ones acts concern: a
// "node/<name>" target is that node, any other target is mapped by nodeOf
// ("" for none). Undoing actions are not counted.
func nodeCensus(ctx context.Context, client kubeapi.Interface, acts []remediate.Action,
	nodeOf func(context.Context, remediate.Action) (string, error)) (remediate.Population, error) {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return remediate.Population{}, fmt.Errorf("list nodes: %w", err)
	}
	pop := remediate.Population{Total: len(nodes.Items), Unit: "nodes"}
	seen := map[string]bool{}
	for _, a := range acts {
		if undoes(a.Verb) {
			continue
		}
		n, ok := strings.CutPrefix(a.Target, "node/")
		if !ok {
			if n, err = nodeOf(ctx, a); err != nil {
				return remediate.Population{}, err
			}
		}
		if n != "" && !seen[n] {
			seen[n] = true
			pop.Affected++
		}
	}
	return pop, nil
}
