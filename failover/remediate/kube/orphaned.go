package kube

import (
	"context"
	"fmt"
	"sort"
	"strconv"
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
	client   kubernetes.Interface
	after    time.Duration
	now      func() time.Time
	rebooter NodeRebooter // nil: pods only (the default)
}

// NodeRebooter reboots the instance behind a node (Nova, in production).
type NodeRebooter interface {
	// RebootNode soft-reboots node's instance. It is safe for concurrent use;
	// an error means nothing is known to have happened.
	RebootNode(ctx context.Context, node *corev1.Node) error
}

// WithReboot also cordons and reboots, through r, the nodes orphaned pods
// were stuck on (opt-in). It returns o.
func (o *OrphanedPods) WithReboot(r NodeRebooter) *OrphanedPods {
	o.rebooter = r
	return o
}

type nodeRef struct {
	name string
	uid  types.UID
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
	stuckOn := map[string]time.Time{} // node -> earliest stuck deletion
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp == nil {
			continue
		}
		over := now.Sub(p.DeletionTimestamp.Time)
		if over <= o.after {
			continue
		}
		if n := p.Spec.NodeName; n != "" {
			if t, ok := stuckOn[n]; !ok || p.DeletionTimestamp.Time.Before(t) {
				stuckOn[n] = p.DeletionTimestamp.Time
			}
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
	if o.rebooter == nil {
		return out, nil
	}
	names := make([]string, 0, len(stuckOn))
	for n := range stuckOn {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		node, err := o.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("get node %s: %w", name, err)
		}
		since := stuckOn[name]
		out = append(out, remediate.Action{
			Target: "node/" + name, Verb: "cordon-reboot",
			Reason: fmt.Sprintf("pods stuck Terminating on node %s since %s (stale volume mounts are likely); cordon it and reboot its instance",
				name, since.UTC().Format(time.RFC3339)),
			// One reboot per node and episode: the episode starts with the
			// earliest stuck deletion on it.
			Key:  "cordon-reboot/node/" + name + "/" + string(node.UID) + "/" + strconv.FormatInt(since.Unix(), 10),
			Data: nodeRef{name: name, uid: node.UID},
		})
	}
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
// A cordon-reboot action marks the node unschedulable, then reboots it.
func (o *OrphanedPods) Apply(ctx context.Context, a remediate.Action) error {
	if nr, ok := a.Data.(nodeRef); ok {
		return o.cordonReboot(ctx, nr)
	}
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

// cordonReboot cordons the node (a no-op when it already is) and reboots it.
// A node that is gone, or was replaced (another UID), is a precondition
// failure: the world changed since Plan.
func (o *OrphanedPods) cordonReboot(ctx context.Context, ref nodeRef) error {
	if o.rebooter == nil {
		return fmt.Errorf("node/%s: reboot is not enabled", ref.name)
	}
	node, err := o.client.CoreV1().Nodes().Get(ctx, ref.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && node.UID != ref.uid) {
		return fmt.Errorf("node %s: %w", ref.name, remediate.ErrPrecondition)
	}
	if err != nil {
		return fmt.Errorf("get node %s: %w", ref.name, err)
	}
	if !node.Spec.Unschedulable {
		node.Spec.Unschedulable = true
		if node, err = o.client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsConflict(err) {
				return fmt.Errorf("cordon node %s: %w", ref.name, remediate.ErrPrecondition)
			}
			return fmt.Errorf("cordon node %s: %w", ref.name, err)
		}
	}
	if err := o.rebooter.RebootNode(ctx, node); err != nil {
		return fmt.Errorf("reboot node %s: %w", ref.name, err)
	}
	return nil
}
