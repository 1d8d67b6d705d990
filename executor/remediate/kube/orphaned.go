package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/internal/kubeapi"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
)

// OrphanedPodsName is the remediation's name.
const OrphanedPodsName = "orphaned-pods"

// OrphanedPods is the orphaned-pods remediator. It force-deletes pods
// stuck Terminating, but never one that may still run on a node not
// confirmed down when a second copy of it would conflict (a StatefulSet's
// pod, a ReadWriteOnce volume), nor one its finalizers hold. With
// WithReboot it first cordons and reboots the node through the cloud,
// waits, and lifts its own cordon once the node is Ready again.
type OrphanedPods struct {
	client   kubeapi.Interface
	after    time.Duration
	now      func() time.Time
	rebooter NodeRebooter  // nil: pods only (the default)
	wait     time.Duration // from a reboot to force-deletes and the uncordon

	instances InstanceChecker
	noCloud   bool // instances knows nothing: no cloud for this site
}

// NodeRebooter reboots the instance behind a node (Nova, in production).
type NodeRebooter interface {
	// RebootNode soft-reboots node's instance. It is safe for concurrent use;
	// an error means nothing is known to have happened.
	RebootNode(ctx context.Context, node *corev1.Node) error
}

// NodeCloud is the cloud behind one site's nodes, as orphaned-pods uses
// it: it says whether a node's instance is down, and reboots it.
type NodeCloud interface {
	InstanceChecker
	NodeRebooter
}

// WithReboot also cordons and reboots, through r, the nodes orphaned pods
// were stuck on (opt-in), before force-deleting any of their pods; only
// pods still Terminating wait after the reboot are force-deleted (wait <= 0
// means DefaultOrphanRebootWait). It returns o.
func (o *OrphanedPods) WithReboot(r NodeRebooter, wait time.Duration) *OrphanedPods {
	if wait <= 0 {
		wait = DefaultOrphanRebootWait
	}
	o.rebooter, o.wait = r, wait
	return o
}

// Annotations orphaned-pods keeps on the nodes it reboots.
const (
	// AnnotationCordoned marks a cordon drwatch set, so that it only ever
	// undoes its own: an operator's cordon is left alone.
	AnnotationCordoned = "drwatch.io/cordoned-since"
	// AnnotationRebooted is when drwatch last rebooted the node: pods
	// stuck since before it wait for reboot_wait, not for another reboot.
	AnnotationRebooted = "drwatch.io/rebooted-at"
	// AnnotationBootID is the node's boot ID (status.nodeInfo.bootID) when
	// drwatch rebooted it: a kubelet Ready again under another boot ID
	// proves the reboot happened, so that whatever the node ran before it
	// no longer runs (the node is fenced).
	AnnotationBootID = "drwatch.io/rebooted-boot-id"
)

// nodeRef is a node action's data; uncordon, when set, is the cordon
// mark to lift (else the action is a cordon-reboot).
type nodeRef struct {
	name     string
	uid      types.UID
	uncordon string
}

var _ remediate.Remediator = (*OrphanedPods)(nil)

// NewOrphanedPods returns the remediator: a pod Terminating for longer than
// its grace period plus after is force-deleted, within the rules of Plan.
// instances confirms nodes down; nil means no cloud, so only a node
// object's deletion does. now may be nil (time.Now).
func NewOrphanedPods(client kubeapi.Interface, instances InstanceChecker, after time.Duration, now func() time.Time) *OrphanedPods {
	if now == nil {
		now = time.Now
	}
	o := &OrphanedPods{client: client, after: after, now: now, instances: instances, wait: DefaultOrphanRebootWait}
	if instances == nil {
		o.instances, o.noCloud = UnknownInstances{}, true
	}
	return o
}

// Name implements remediate.Remediator.
func (o *OrphanedPods) Name() string { return OrphanedPodsName }

type podRef struct {
	namespace, name string
	uid             types.UID
}

// orphanRef is a force-delete's data: the pod, its node, and whether the
// pod may still run there, so that Apply re-checks the node is down.
type orphanRef struct {
	podRef
	node     string
	needDown bool
	// deleted is when the pod's deletion was asked for: a reboot after it
	// fences the node for this pod.
	deleted time.Time
}

// Plan lists the force-deletes, node reboots and uncordons due, ordered by
// Key (reboots sort before force-deletes). The API server sets a pod's
// deletionTimestamp to the time of the delete request plus its grace
// period, so "Terminating longer than the grace period plus T" is
// now > deletionTimestamp + T.
//
// A pod that may still run, and whose second copy would conflict with it
// (a StatefulSet's pod, a pod with a ReadWriteOnce or ReadWriteOncePod
// volume), is force-deleted only when its node is confirmed down: the
// node object is gone, or the cloud says its instance is dead. Force
// deleting only removes the API object; a kubelet cut off from the API
// server keeps the containers running, and the controller starts a second
// copy elsewhere: two pods of one StatefulSet identity, or two writers of
// one volume (Kubernetes' "Force Delete StatefulSet Pods" task warns of
// exactly this). A pod with finalizers is held too: a force-delete does
// not remove it.
//
// A held pod is planned report-only: the runner records what would be done
// and why it cannot be, and never applies it.
func (o *OrphanedPods) Plan(ctx context.Context) ([]remediate.Action, error) {
	pods, err := o.client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	nodes, err := o.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	v := &podView{o: o, nodes: map[string]*corev1.Node{}, down: map[string]downness{}, claims: map[string]claimModes{},
		claimUsers: map[string][]*corev1.Pod{}}
	for i := range nodes.Items {
		v.nodes[nodes.Items[i].Name] = &nodes.Items[i]
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, vol := range p.Spec.Volumes {
			if c := vol.PersistentVolumeClaim; c != nil {
				k := p.Namespace + "/" + c.ClaimName
				v.claimUsers[k] = append(v.claimUsers[k], p)
			}
		}
	}
	now := o.now()
	var out []remediate.Action
	stuckOn := map[string]time.Time{} // node to reboot -> earliest blocking deletion
	blocking := map[string]string{}   // node to reboot -> what its first held pod blocks
	type stuckPod struct {
		p    *corev1.Pod
		over time.Duration
		vd   verdict
	}
	var stuck []stuckPod
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp == nil {
			continue
		}
		over := now.Sub(p.DeletionTimestamp.Time)
		if over <= o.after {
			continue
		}
		vd := v.decide(ctx, p, now)
		if vd.reboot {
			if t, ok := stuckOn[p.Spec.NodeName]; !ok || p.DeletionTimestamp.Time.Before(t) {
				stuckOn[p.Spec.NodeName] = p.DeletionTimestamp.Time
			}
			if blocking[p.Spec.NodeName] == "" {
				blocking[p.Spec.NodeName] = vd.note
			}
		}
		stuck = append(stuck, stuckPod{p, over, vd})
	}
	for _, sp := range stuck {
		p, over, vd := sp.p, sp.over, sp.vd
		_, rebooting := stuckOn[p.Spec.NodeName]
		switch {
		case vd.held != "":
			// Stable text (no durations), so that the records do not
			// repeat it every pass.
			out = append(out, remediate.Action{
				Target: "pod/" + p.Namespace + "/" + p.Name, Verb: "force-delete",
				Reason: fmt.Sprintf("pod %s/%s on node %s stuck Terminating since %s; would force-delete the pod object",
					p.Namespace, p.Name, orNone(p.Spec.NodeName), p.DeletionTimestamp.UTC().Format(time.RFC3339)),
				Key:        "force-delete/pod/" + p.Namespace + "/" + p.Name + "/" + string(p.UID),
				ReportOnly: vd.held,
			})
			continue
		case vd.reboot, vd.wait, vd.unlessReboot && rebooting:
			// The node is rebooted first (its rebooted kubelet finishes
			// the pod itself), or was and gets its time.
			continue
		}
		reason := fmt.Sprintf("pod %s/%s on node %s still Terminating %s past its grace period (%s); force-deleting the pod object",
			p.Namespace, p.Name, orNone(p.Spec.NodeName), over.Round(time.Second), graceOf(p))
		if vd.note != "" {
			reason += " (" + vd.note + ")"
		}
		a := remediate.Action{
			Target: "pod/" + p.Namespace + "/" + p.Name, Verb: "force-delete", Reason: reason,
			Key:  "force-delete/pod/" + p.Namespace + "/" + p.Name + "/" + string(p.UID),
			Data: orphanRef{podRef{p.Namespace, p.Name, p.UID}, p.Spec.NodeName, vd.needDown, p.DeletionTimestamp.Time},
		}
		if n := v.nodes[p.Spec.NodeName]; n != nil && !nodeReady(n) {
			// Pods leave a node that is not Ready: one node at a time.
			a.Disrupts = n.Name
		}
		out = append(out, a)
	}
	for name, since := range stuckOn {
		node := v.nodes[name]
		out = append(out, remediate.Action{
			Target: "node/" + name, Verb: "cordon-reboot",
			Reason: fmt.Sprintf("pods stuck Terminating on node %s since %s hold what other pods wait for (%s); cordon it and reboot its instance to fence it, and once it is back Ready under a new boot, force-delete what is still Terminating %s after the reboot",
				name, since.UTC().Format(time.RFC3339), blocking[name], o.wait),
			// One reboot per node and episode: the episode starts with the
			// earliest stuck deletion on it not yet covered by a reboot
			// (AnnotationRebooted).
			Key:      "cordon-reboot/node/" + name + "/" + string(node.UID) + "/" + strconv.FormatInt(since.Unix(), 10),
			Data:     nodeRef{name: name, uid: node.UID},
			Disrupts: name,
		})
	}
	for i := range nodes.Items {
		if _, again := stuckOn[nodes.Items[i].Name]; !again {
			out = append(out, o.uncordon(&nodes.Items[i], now)...)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// uncordon returns the action that lifts the cordon drwatch set on n, if
// one is due: n is Ready again and reboot_wait has passed since its
// reboot. When someone else already uncordoned n, the action only forgets
// drwatch's mark, so that a later cordon counts as theirs and is never
// lifted. A cordon without drwatch's mark is never touched.
func (o *OrphanedPods) uncordon(n *corev1.Node, now time.Time) []remediate.Action {
	mark := n.Annotations[AnnotationCordoned]
	if mark == "" {
		return nil
	}
	var why string
	switch {
	case !n.Spec.Unschedulable:
		why = fmt.Sprintf("node %s was uncordoned by someone else; forgetting the cordon drwatch set at %s", n.Name, mark)
	case !nodeReady(n), now.Sub(rebootedAt(n)) < o.wait:
		return nil
	default:
		why = fmt.Sprintf("node %s is Ready again after its reboot; lifting the cordon drwatch set at %s", n.Name, mark)
	}
	return []remediate.Action{{
		Target: "node/" + n.Name, Verb: "uncordon", Reason: why,
		Key:  "uncordon/node/" + n.Name + "/" + string(n.UID) + "/" + mark,
		Data: nodeRef{name: n.Name, uid: n.UID, uncordon: mark},
	}}
}

// verdict is what Plan does with one stuck pod: hold it (held says why),
// reboot its node first (reboot: a held pod blocks something, note says
// what), wait for the rebooted node, force-delete it unless its node is
// rebooted for another pod (unlessReboot), or force-delete it (note adds
// to the reason; needDown makes Apply re-check that the node is down or
// fenced).
type verdict struct {
	held         string
	reboot, wait bool
	unlessReboot bool
	note         string
	needDown     bool
}

// decide applies the rules to one pod stuck Terminating. With reboot_node,
// a reboot is a fence (as medik8s' fence agents treat it): a node not
// confirmed down is rebooted only for a held pod (one that may still run
// and whose copy would conflict) that blocks something: a StatefulSet
// pod's replacement, another pod waiting for its volume. A held pod that
// blocks nothing stays held, and its node is not rebooted: a partitioned
// node whose VMs still serve is left serving. Once the node is back Ready
// under a new boot (fenced), a held pod still Terminating the wait after
// the reboot is force-deleted: whatever it ran before the reboot no
// longer runs. Other pods on a node to be rebooted wait for the reboot (a
// rebooted kubelet finishes them itself, cleanly); elsewhere they keep
// the plain rule.
func (v *podView) decide(ctx context.Context, p *corev1.Pod, now time.Time) verdict {
	if len(p.Finalizers) > 0 {
		// The API server keeps the object until every finalizer is
		// removed, and removing another controller's is not ours.
		return verdict{held: fmt.Sprintf("its finalizers %s keep it until their owners remove them; neither a force-delete nor a reboot frees it",
			strings.Join(p.Finalizers, ", "))}
	}
	conflict := v.conflict(ctx, p)
	n := v.nodes[p.Spec.NodeName]
	reboot := v.o.rebooter != nil && n != nil
	var down downness
	if conflict != "" || reboot {
		down = v.nodeDown(ctx, p.Spec.NodeName)
	}
	var notes []string
	if reboot && !down.down {
		at := rebootedAt(n)
		switch {
		case !at.After(p.DeletionTimestamp.Time) && conflict == "":
			return verdict{unlessReboot: true}
		case !at.After(p.DeletionTimestamp.Time):
			if b := v.blocks(p); b != "" {
				return verdict{reboot: true, note: b}
			}
			return verdict{held: conflict + ", and " + down.why + "; it blocks nothing (no replacement, no pod elsewhere waits for its volume), so its node is not rebooted for it"}
		case now.Sub(at) < v.o.wait:
			return verdict{wait: true}
		}
		notes = append(notes, fmt.Sprintf("still Terminating %s after its node was rebooted at %s",
			now.Sub(at).Round(time.Second), at.UTC().Format(time.RFC3339)))
		if conflict != "" {
			if !back(n) {
				return verdict{held: fmt.Sprintf("%s, and its node %s, rebooted at %s, is not back Ready under a new boot yet, nor confirmed down",
					conflict, n.Name, at.UTC().Format(time.RFC3339))}
			}
			notes = append(notes, conflict+", and its node is fenced: rebooted and back Ready under a new boot")
			return verdict{note: strings.Join(notes, "; "), needDown: true}
		}
	}
	if conflict != "" {
		if !down.down {
			return verdict{held: conflict + ", and " + down.why}
		}
		notes = append(notes, conflict+", and "+down.why)
	}
	return verdict{note: strings.Join(notes, "; "), needDown: conflict != ""}
}

// blocks says what the held pod p blocks while its object exists ("" for
// nothing): its StatefulSet's replacement of it (the controller starts
// a pod of the same identity only once the old object is gone), or
// another pod that mounts the same claim elsewhere than on p's node and
// so waits for the volume (one on the same node shares it, and would be
// cut by a reboot, not freed).
func (v *podView) blocks(p *corev1.Pod) string {
	for _, r := range p.OwnerReferences {
		if r.Kind == "StatefulSet" {
			return fmt.Sprintf("StatefulSet %s cannot start %s/%s's replacement", r.Name, p.Namespace, p.Name)
		}
	}
	for _, vol := range p.Spec.Volumes {
		c := vol.PersistentVolumeClaim
		if c == nil {
			continue
		}
		for _, other := range v.claimUsers[p.Namespace+"/"+c.ClaimName] {
			if other.Name != p.Name && other.Spec.NodeName != p.Spec.NodeName {
				return fmt.Sprintf("pod %s/%s waits for claim %s", p.Namespace, other.Name, c.ClaimName)
			}
		}
	}
	return ""
}

// back reports whether n came back from drwatch's reboot: Ready under
// another boot ID than the one it had then (or, when none was recorded,
// Ready since a transition after the reboot).
func back(n *corev1.Node) bool {
	if !nodeReady(n) {
		return false
	}
	if was := n.Annotations[AnnotationBootID]; was != "" {
		return n.Status.NodeInfo.BootID != "" && n.Status.NodeInfo.BootID != was
	}
	return readyCondition(n).LastTransitionTime.After(rebootedAt(n))
}

// fenced reports whether drwatch rebooted n after since and n is back:
// nothing that ran on it before since still runs.
func fenced(n *corev1.Node, since time.Time) bool {
	return rebootedAt(n).After(since) && back(n)
}

// rebootedAt is when orphaned-pods last rebooted n (zero: never, or an
// annotation it cannot read).
func rebootedAt(n *corev1.Node) time.Time {
	t, err := time.Parse(time.RFC3339, n.Annotations[AnnotationRebooted])
	if err != nil {
		return time.Time{}
	}
	return t
}

// downness says whether a node is confirmed down, and why (not).
type downness struct {
	down bool
	why  string
}

// podView reads, once per pass, what deciding about the pods needs: nodes,
// the cloud's view of their instances, and claims' access modes.
type podView struct {
	o      *OrphanedPods
	nodes  map[string]*corev1.Node
	down   map[string]downness
	claims map[string]claimModes
	// claimUsers lists, by "namespace/claim", the pods not being deleted
	// that mount the claim.
	claimUsers map[string][]*corev1.Pod
}

type claimModes struct {
	modes []corev1.PersistentVolumeAccessMode
	err   error
}

// conflict says why a second copy of p could conflict with p still
// running ("" when none could): it belongs to a StatefulSet (two pods of
// one identity), or it holds a volume only one node (or pod) may use. A
// claim that cannot be read counts as such a volume (fail closed).
func (v *podView) conflict(ctx context.Context, p *corev1.Pod) string {
	for _, r := range p.OwnerReferences {
		if r.Kind == "StatefulSet" {
			return fmt.Sprintf("it belongs to StatefulSet %s", r.Name)
		}
	}
	for _, vol := range p.Spec.Volumes {
		switch {
		case vol.Ephemeral != nil && vol.Ephemeral.VolumeClaimTemplate != nil:
			if m := exclusive(vol.Ephemeral.VolumeClaimTemplate.Spec.AccessModes); m != "" {
				return fmt.Sprintf("its ephemeral volume %s is %s", vol.Name, m)
			}
		case vol.PersistentVolumeClaim != nil:
			name := vol.PersistentVolumeClaim.ClaimName
			key := p.Namespace + "/" + name
			cm, ok := v.claims[key]
			if !ok {
				pvc, err := v.o.client.CoreV1().PersistentVolumeClaims(p.Namespace).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					cm.err = err
				} else {
					cm.modes = append(slices.Clone(pvc.Spec.AccessModes), pvc.Status.AccessModes...)
				}
				v.claims[key] = cm
			}
			if cm.err != nil {
				return fmt.Sprintf("the access modes of its claim %s are unknown (%v)", name, cm.err)
			}
			if m := exclusive(cm.modes); m != "" {
				return fmt.Sprintf("its claim %s is %s", name, m)
			}
		}
	}
	return ""
}

// exclusive returns the first single-node or single-pod access mode in
// modes, or "".
func exclusive(modes []corev1.PersistentVolumeAccessMode) corev1.PersistentVolumeAccessMode {
	for _, m := range modes {
		if m == corev1.ReadWriteOnce || m == corev1.ReadWriteOncePod {
			return m
		}
	}
	return ""
}

// nodeDown says whether the node named name is confirmed down: bound to no
// node at all, the node object gone, or its instance dead by the cloud's
// InstanceChecker (the same rule dead-node-out-of-service uses: a host
// that only missed its heartbeats is not down until it is forced down).
func (v *podView) nodeDown(ctx context.Context, name string) downness {
	if d, ok := v.down[name]; ok {
		return d
	}
	d := v.o.confirmDown(ctx, name, v.nodes[name])
	v.down[name] = d
	return d
}

// confirmDown decides for one node; n is nil when the node object is gone.
func (o *OrphanedPods) confirmDown(ctx context.Context, name string, n *corev1.Node) downness {
	switch {
	case name == "":
		return downness{true, "it was never bound to a node"}
	case n == nil:
		return downness{true, fmt.Sprintf("node %s is gone", name)}
	case o.noCloud:
		return downness{false, fmt.Sprintf("no cloud is configured for this site, so nothing can confirm that node %s is down", name)}
	}
	st, err := o.instances.InstanceState(ctx, n)
	switch {
	case err != nil:
		return downness{false, fmt.Sprintf("the cloud cannot say whether node %s's instance is down: %v", name, err)}
	case st == InstanceHostDown:
		return downness{false, unfenced(ctx, o.instances, n)}
	case !st.dead():
		return downness{false, fmt.Sprintf("node %s's instance is %s, not confirmed down", name, st)}
	}
	return downness{true, fmt.Sprintf("node %s's instance is %s", name, st)}
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
		if nr.uncordon != "" {
			return o.liftCordon(ctx, nr)
		}
		return o.cordonReboot(ctx, nr)
	}
	ref, ok := a.Data.(orphanRef)
	if !ok {
		return fmt.Errorf("%s: action without pod data", a.Target)
	}
	if ref.needDown {
		n, err := o.client.CoreV1().Nodes().Get(ctx, ref.node, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			n, err = nil, nil
		}
		if err != nil {
			return fmt.Errorf("get node %s: %w", ref.node, err)
		}
		if d := o.confirmDown(ctx, ref.node, n); !d.down && (o.rebooter == nil || n == nil || !fenced(n, ref.deleted)) {
			return fmt.Errorf("pod %s/%s may still run: %s: %w", ref.namespace, ref.name, d.why, remediate.ErrPrecondition)
		}
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

// cordonReboot cordons the node (marking the cordon as drwatch's when it
// sets it), stamps the reboot time on it, and reboots it. The stamp comes
// first, so that no reboot happens that Plan does not know of; when the
// reboot fails, the stamp and drwatch's cordon are rolled back, so that the
// next pass retries the reboot instead of waiting on one that never
// happened. A node that is gone, or was replaced (another UID), is a
// precondition failure: the world changed since Plan.
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
	prev, hadPrev := node.Annotations[AnnotationRebooted]
	cordon := !node.Spec.Unschedulable
	stamp := o.now().UTC().Format(time.RFC3339)
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	if cordon {
		node.Spec.Unschedulable = true
		node.Annotations[AnnotationCordoned] = stamp
	}
	node.Annotations[AnnotationRebooted] = stamp
	prevBoot, hadPrevBoot := node.Annotations[AnnotationBootID]
	if b := node.Status.NodeInfo.BootID; b != "" {
		node.Annotations[AnnotationBootID] = b
	} else {
		delete(node.Annotations, AnnotationBootID)
	}
	if node, err = updateNode(ctx, o.client, node, "cordon"); err != nil {
		return err
	}
	if err := o.rebooter.RebootNode(ctx, node); err != nil {
		err = fmt.Errorf("reboot node %s: %w", ref.name, err)
		undo := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n, gerr := o.client.CoreV1().Nodes().Get(context.WithoutCancel(ctx), ref.name, metav1.GetOptions{})
			if gerr != nil {
				return gerr
			}
			if n.UID != ref.uid || n.Annotations[AnnotationRebooted] != stamp {
				return nil // someone else moved on
			}
			if hadPrev {
				n.Annotations[AnnotationRebooted] = prev
			} else {
				delete(n.Annotations, AnnotationRebooted)
			}
			if hadPrevBoot {
				n.Annotations[AnnotationBootID] = prevBoot
			} else {
				delete(n.Annotations, AnnotationBootID)
			}
			if cordon && n.Annotations[AnnotationCordoned] == stamp {
				n.Spec.Unschedulable = false
				delete(n.Annotations, AnnotationCordoned)
			}
			_, uerr := o.client.CoreV1().Nodes().Update(context.WithoutCancel(ctx), n, metav1.UpdateOptions{})
			return uerr
		})
		if undo != nil {
			return errors.Join(err, fmt.Errorf("undo cordon of node %s: %w", ref.name, undo))
		}
		return err
	}
	return nil
}

// liftCordon uncordons the node if it still carries the cordon mark Plan
// saw, and removes the mark. A node no longer Ready, or cordoned again
// since (another mark), is a precondition failure; a node gone or without
// the mark needs nothing.
func (o *OrphanedPods) liftCordon(ctx context.Context, ref nodeRef) error {
	n, err := o.client.CoreV1().Nodes().Get(ctx, ref.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get node %s: %w", ref.name, err)
	}
	mark := n.Annotations[AnnotationCordoned]
	switch {
	case mark == "":
		return nil
	case n.UID != ref.uid || mark != ref.uncordon:
		return fmt.Errorf("node %s was replaced or cordoned again: %w", ref.name, remediate.ErrPrecondition)
	case n.Spec.Unschedulable && !nodeReady(n):
		return fmt.Errorf("node %s is not Ready: %w", ref.name, remediate.ErrPrecondition)
	}
	n.Spec.Unschedulable = false
	delete(n.Annotations, AnnotationCordoned)
	_, err = updateNode(ctx, o.client, n, "uncordon")
	return err
}

var _ remediate.Disruptor = (*OrphanedPods)(nil)

// Disrupted implements remediate.Disruptor: a node it rebooted stays
// disrupted until it is back Ready under a new boot, gone or replaced, or
// its instance is confirmed down. Force-deletes keep no node disrupted
// past their pass: the node they were on is down, fenced by a reboot that
// counts already, or they free pods whose copies conflict with nothing.
// It only reads.
func (o *OrphanedPods) Disrupted(ctx context.Context, applied []remediate.Applied) ([]remediate.Disruption, error) {
	var out []remediate.Disruption
	for _, k := range latestNodeKeys(applied, "cordon-reboot/node/") {
		n, err := o.client.CoreV1().Nodes().Get(ctx, k.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("get node %s: %w", k.name, err)
		}
		if string(n.UID) != k.uid || back(n) || o.confirmDown(ctx, k.name, n).down {
			continue
		}
		out = append(out, remediate.Disruption{Node: k.name,
			Why: fmt.Sprintf("node %s was rebooted at %s to fence it and is neither back Ready under a new boot nor confirmed down",
				k.name, rebootedAt(n).UTC().Format(time.RFC3339))})
	}
	return out, nil
}
