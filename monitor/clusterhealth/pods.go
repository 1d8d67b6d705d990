package clusterhealth

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/drwatch/drwatch/internal/kubeapi"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The pod problems counted.
const (
	PodTerminating     = "Terminating"
	PodStatefulUnknown = "StatefulSet pod on Unknown node"
	PodEvicted         = "Evicted"
)

// readPods counts the pods stuck Terminating longer than after, the
// StatefulSet pods bound to a node of unknown (names), and the Evicted
// pods not yet removed.
func readPods(ctx context.Context, c kubeapi.Interface, unknown map[string]bool, after time.Duration, now time.Time) (*Pods, error) {
	out := &Pods{TerminatingAfterSeconds: after.Seconds(), Problems: []PodProblem{}}
	var problems []PodProblem
	trunc, err := pages(ctx, MaxPods, func(ctx context.Context, opts metav1.ListOptions, room int) (int, string, error) {
		l, err := c.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			return 0, "", fmt.Errorf("list pods: %w", err)
		}
		for i := range l.Items[:min(room, len(l.Items))] {
			p := &l.Items[i]
			out.Total++
			problem, since := "", time.Time{}
			switch {
			case p.DeletionTimestamp != nil && now.Sub(p.DeletionTimestamp.Time) > after:
				// The deletion timestamp is when the grace period ended:
				// past it by more than after, nothing is finishing it.
				out.Terminating++
				problem, since = PodTerminating, p.DeletionTimestamp.Time
			case p.Spec.NodeName != "" && unknown[p.Spec.NodeName] && ownedByStatefulSet(p):
				// The StatefulSet controller will not start a replacement
				// until this pod is gone, and nothing removes it while its
				// node is Unknown.
				out.StatefulOnUnknown++
				problem, since = PodStatefulUnknown, p.CreationTimestamp.Time
			case p.Status.Phase == corev1.PodFailed && p.Status.Reason == PodEvicted:
				out.Evicted++
				problem, since = PodEvicted, p.CreationTimestamp.Time
			default:
				continue
			}
			// The oldest are the ones shown.
			problems = trim(append(problems, PodProblem{Namespace: cut(p.Namespace), Name: cut(p.Name), Node: cut(p.Spec.NodeName),
				Problem: problem, Since: since}), MaxShownPods, sortPods)
		}
		return len(l.Items), l.Continue, nil
	})
	if err != nil {
		return nil, err
	}
	sortPods(problems)
	out.Problems = append(out.Problems, problems[:min(len(problems), MaxShownPods)]...)
	out.Truncated = trunc
	return out, nil
}

func ownedByStatefulSet(p *corev1.Pod) bool {
	o := metav1.GetControllerOf(p)
	return o != nil && o.Kind == "StatefulSet"
}

func sortPods(p []PodProblem) {
	slices.SortStableFunc(p, func(a, b PodProblem) int {
		return cmp.Or(a.Since.Compare(b.Since), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
}
