package kube

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/drwatch/drwatch/failover/remediate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// OrphanedPodsName is the remediation's name.
const OrphanedPodsName = "orphaned-pods"

// OrphanedPods is the orphaned-pods remediator. The optional cordon and
// Nova reboot of the pod's node is not implemented.
type OrphanedPods struct {
	client kubernetes.Interface
	after  time.Duration
	now    func() time.Time
}

var _ remediate.Remediator = (*OrphanedPods)(nil)

// NewOrphanedPods returns the remediator: a pod Terminating for longer than
// its grace period plus after is force-deleted. now may be nil (time.Now).
func NewOrphanedPods(client kubernetes.Interface, after time.Duration, now func() time.Time) *OrphanedPods {
	if now == nil {
		now = time.Now
	}
	return &OrphanedPods{client: client, after: after, now: now}
}

// Name implements remediate.Remediator.
func (o *OrphanedPods) Name() string { return OrphanedPodsName }

type podRef struct {
	namespace, name string
	uid             types.UID
}

// Plan lists the pods being deleted. The API server sets a pod's
// deletionTimestamp to the time of the delete request plus its grace
// period, so "Terminating longer than the grace period plus T" is
// now > deletionTimestamp + T.
func (o *OrphanedPods) Plan(ctx context.Context) ([]remediate.Action, error) {
	pods, err := o.client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	now := o.now()
	var out []remediate.Action
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp == nil {
			continue
		}
		over := now.Sub(p.DeletionTimestamp.Time)
		if over <= o.after {
			continue
		}
		out = append(out, remediate.Action{
			Target: "pod/" + p.Namespace + "/" + p.Name, Verb: "force-delete",
			Reason: fmt.Sprintf("pod %s/%s on node %s still Terminating %s past its grace period (%s); force-deleting the pod object",
				p.Namespace, p.Name, orNone(p.Spec.NodeName), over.Round(time.Second), graceOf(p)),
			Key:  "force-delete/pod/" + p.Namespace + "/" + p.Name + "/" + string(p.UID),
			Data: podRef{p.Namespace, p.Name, p.UID},
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func graceOf(p *corev1.Pod) string {
	if p.DeletionGracePeriodSeconds != nil {
		return (time.Duration(*p.DeletionGracePeriodSeconds) * time.Second).String()
	}
	return "unset"
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// Apply deletes the pod with grace period 0 and its UID as a precondition:
// a pod already gone, or replaced by a new one of the same name, is success.
func (o *OrphanedPods) Apply(ctx context.Context, a remediate.Action) error {
	ref, ok := a.Data.(podRef)
	if !ok {
		return fmt.Errorf("%s: action without pod data", a.Target)
	}
	zero := int64(0)
	err := o.client.CoreV1().Pods(ref.namespace).Delete(ctx, ref.name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero,
		Preconditions:      &metav1.Preconditions{UID: &ref.uid},
	})
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// NotFound: gone already. Conflict: the UID differs, so the pod
		// we planned for is gone and a new one took its name.
		return nil
	}
	return fmt.Errorf("force-delete pod %s/%s: %w", ref.namespace, ref.name, err)
}
