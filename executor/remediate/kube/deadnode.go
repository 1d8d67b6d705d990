package kube

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/internal/kubeapi"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
)

// InstanceState is what the cloud proves about a node's guest. Only the
// states dead() accepts let dead-node-out-of-service taint a node: each
// says the guest is not running now.
type InstanceState string

// Instance states. Nova's server status is not one of them: ERROR says
// an operation failed, not that the guest stopped (a failed resize or
// migration leaves ERROR with the guest running), and a dead hypervisor
// leaves ACTIVE.
const (
	// InstanceActive: the guest runs, as far as the cloud can tell.
	InstanceActive InstanceState = "ACTIVE"
	// InstanceShutoff: the guest is powered off (Nova power state SHUTDOWN).
	InstanceShutoff InstanceState = "SHUTOFF"
	// InstanceCrashed: the guest crashed (power state CRASHED).
	InstanceCrashed InstanceState = "CRASHED"
	// InstanceNoState: the hypervisor has no such guest (power state NOSTATE).
	InstanceNoState InstanceState = "NOSTATE"
	// InstanceHostDown: the compute service of the guest's host missed
	// its heartbeats (seen with admin credentials only), and nobody said
	// the host is fenced. Not dead: a lost message bus or a dead agent
	// looks the same, and the guest may still run and write.
	InstanceHostDown InstanceState = "HOST_DOWN"
	// InstanceHostForcedDown: an operator marked the compute service of
	// the guest's host forced down (Nova's forced_down, set once the host
	// is fenced; seen with admin credentials only).
	InstanceHostForcedDown InstanceState = "HOST_FORCED_DOWN"
	// InstanceError: the server is in ERROR and nothing shows the guest
	// down. Not dead.
	InstanceError InstanceState = "ERROR"
	// InstanceGone: the server does not exist (the cloud's own 404 for its ID).
	InstanceGone InstanceState = "GONE"
	// InstanceUnknown: the cloud could not say.
	InstanceUnknown InstanceState = "UNKNOWN"
)

// dead reports whether the state confirms the guest is down: powered off,
// crashed, unknown to its hypervisor, on a host an operator forced down,
// or gone. Every other state, ERROR and HOST_DOWN included, is not
// (invariant 14: fence before force).
func (s InstanceState) dead() bool {
	switch s {
	case InstanceShutoff, InstanceCrashed, InstanceNoState, InstanceHostForcedDown, InstanceGone:
		return true
	}
	return false
}

// InstanceChecker looks up a node's instance in the cloud (a Nova
// implementation will satisfy it).
type InstanceChecker interface {
	// InstanceState returns the state of the instance behind node. It
	// returns InstanceUnknown (or an error) whenever it cannot be sure;
	// callers never act on either. It only reads, and must be safe for
	// concurrent use.
	InstanceState(ctx context.Context, node *corev1.Node) (InstanceState, error)
}

// HostFencing is an InstanceChecker that can also say how to fence the
// host of a node's instance, for reports on a HOST_DOWN one.
type HostFencing interface {
	// FenceAdvice returns how an operator fences the host of node's
	// instance and tells the cloud so, naming the host and the command;
	// "" when it cannot say. It only reads, and is safe for concurrent use.
	FenceAdvice(ctx context.Context, node *corev1.Node) string
}

// unfenced says why a node whose instance is HOST_DOWN is not acted on,
// and what would let drwatch act: the advice c gives, if any.
func unfenced(ctx context.Context, c InstanceChecker, n *corev1.Node) string {
	advice := "fence its host (power it off), then mark the host's compute service forced down in the cloud"
	if f, ok := c.(HostFencing); ok {
		if a := f.FenceAdvice(ctx, n); a != "" {
			advice = a
		}
	}
	return fmt.Sprintf("the compute service of node %s's host is down but not forced down, so its guest may still run and write; %s", n.Name, advice)
}

// UnknownInstances is an InstanceChecker that knows nothing: with it,
// dead-node-out-of-service never taints (it still removes its own taints).
type UnknownInstances struct{}

// InstanceState always returns InstanceUnknown.
func (UnknownInstances) InstanceState(context.Context, *corev1.Node) (InstanceState, error) {
	return InstanceUnknown, nil
}

// Out-of-service taint (KEP-2268, feature gate NodeOutOfServiceVolumeDetach:
// alpha and off by default in 1.24 and 1.25, beta and on by default in
// 1.26, GA in 1.28): with it kube-controller-manager force-deletes the
// node's pods and detaches their volumes.
const (
	TaintOutOfService = "node.kubernetes.io/out-of-service"
	taintValue        = "nodeshutdown"
	// AnnotationTainted marks a taint drwatch set, so that it only ever
	// removes its own: an operator's out-of-service taint is left alone.
	AnnotationTainted = "drwatch.io/out-of-service-since"
)

// DeadNode is the dead-node-out-of-service remediator.
type DeadNode struct {
	client    kubeapi.Interface
	instances InstanceChecker
	after     time.Duration
	now       func() time.Time
	alphaGate bool
}

var _ remediate.Remediator = (*DeadNode)(nil)

// DeadNodeName is the remediation's name.
const DeadNodeName = "dead-node-out-of-service"

// NewDeadNode returns the remediator: nodes NotReady or Unknown for longer
// than after, whose instance the cloud confirms down (InstanceState.dead),
// are tainted out of service; on a cluster older than 1.26, or when the
// instance's host only missed its heartbeats (HOST_DOWN, not fenced), the
// taint is planned report-only. now may be nil (time.Now); instances nil means
// UnknownInstances.
func NewDeadNode(client kubeapi.Interface, instances InstanceChecker, after time.Duration, now func() time.Time) *DeadNode {
	if instances == nil {
		instances = UnknownInstances{}
	}
	if now == nil {
		now = time.Now
	}
	return &DeadNode{client: client, instances: instances, after: after, now: now}
}

// WithAlphaGate takes the operator's word that kube-controller-manager
// runs with the alpha NodeOutOfServiceVolumeDetach gate, so that on 1.24
// and 1.25 the taint is applied rather than reported. It returns d.
func (d *DeadNode) WithAlphaGate() *DeadNode {
	d.alphaGate = true
	return d
}

// Name implements remediate.Remediator.
func (d *DeadNode) Name() string { return DeadNodeName }

type deadNodeData struct {
	node string
	uid  string
	add  bool
	// reportOnly: the cluster cannot act on the taint, or the instance may
	// still run (its host is not fenced); never add it.
	reportOnly bool
}

// Plan lists the nodes: a dead one without the taint gets "taint"; a Ready
// one with drwatch's taint gets "untaint". The keys carry the node's UID and
// the Ready condition's transition time, so each outage is tainted once.
func (d *DeadNode) Plan(ctx context.Context) ([]remediate.Action, error) {
	nodes, err := d.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	sort.Slice(nodes.Items, func(i, j int) bool { return nodes.Items[i].Name < nodes.Items[j].Name })
	now := d.now()
	var out []remediate.Action
	cannot, versionRead := "", false
	for i := range nodes.Items {
		n := &nodes.Items[i]
		rc := readyCondition(n)
		if rc == nil {
			// Never reported: not a dead node, a node that never came up.
			continue
		}
		since := rc.LastTransitionTime.Time
		episode := strconv.FormatInt(since.Unix(), 10)
		tainted, ours := hasOutOfService(n), n.Annotations[AnnotationTainted] != ""
		switch {
		case rc.Status == corev1.ConditionTrue:
			if tainted && ours {
				out = append(out, remediate.Action{
					Target: "node/" + n.Name, Verb: "untaint",
					Reason: fmt.Sprintf("node %s is Ready again (since %s); removing the out-of-service taint drwatch set", n.Name, since.UTC().Format(time.RFC3339)),
					Key:    "untaint/node/" + n.Name + "/" + string(n.UID) + "/" + episode,
					Data:   deadNodeData{node: n.Name, uid: string(n.UID)},
				})
			}
		case tainted:
			// Already out of service (ours or an operator's).
		case now.Sub(since) < d.after:
			// Not long enough: kubelets restart, networks blip.
		default:
			st, err := d.instances.InstanceState(ctx, n)
			if err == nil && st == InstanceHostDown {
				// Invariant 14: a host that only missed its heartbeats may
				// still run the guest. Say what would be done, and the
				// fence that would let it be; the text is stable, so the
				// records do not repeat it every pass.
				out = append(out, remediate.Action{
					Target: "node/" + n.Name, Verb: "taint",
					Reason:     fmt.Sprintf("node %s Ready=%s since %s and its instance is %s", n.Name, rc.Status, since.UTC().Format(time.RFC3339), st),
					Key:        "taint/node/" + n.Name + "/" + string(n.UID) + "/" + episode,
					Data:       deadNodeData{node: n.Name, uid: string(n.UID), add: true, reportOnly: true},
					ReportOnly: unfenced(ctx, d.instances, n),
				})
				continue
			}
			if err != nil || !st.dead() {
				// Fail closed: only a cloud that says the instance is
				// down lets pods be force-deleted from under it.
				continue
			}
			if !versionRead {
				// Read once a pass, and only when a node qualifies.
				if cannot, err = d.outOfServiceUnsupported(ctx); err != nil {
					return nil, err
				}
				versionRead = true
			}
			out = append(out, remediate.Action{
				Target: "node/" + n.Name, Verb: "taint",
				Reason: fmt.Sprintf("node %s Ready=%s for %s and its instance is %s", n.Name, rc.Status, now.Sub(since).Round(time.Second), st),
				Key:    "taint/node/" + n.Name + "/" + string(n.UID) + "/" + episode,
				Data:   deadNodeData{node: n.Name, uid: string(n.UID), add: true, reportOnly: cannot != ""},
				// On a cluster without the taint's controllers, say what
				// would be done and why not; never taint.
				ReportOnly: cannot,
				Disrupts:   n.Name,
			})
		}
	}
	return out, nil
}

// outOfServiceFrom is the first Kubernetes release in which the
// out-of-service taint works without a feature gate to turn on.
var outOfServiceFrom = version.MajorMinor(1, 26)

// outOfServiceUnsupported reads the server version (the API server's /version)
// and returns why the cluster cannot act on the out-of-service taint, or
// "" when it can. 1.24 and 1.25 count as unable unless WithAlphaGate: their
// alpha gate is off unless kube-controller-manager was started with it,
// which cannot be seen from the API. An unreadable version is an error
// (plan nothing).
func (d *DeadNode) outOfServiceUnsupported(ctx context.Context) (string, error) {
	info, err := d.client.ServerVersion(ctx)
	if err != nil {
		return "", fmt.Errorf("read server version: %w", err)
	}
	v, err := version.ParseGeneric(info.GitVersion)
	switch {
	case err != nil:
		return fmt.Sprintf("server version %q is not understood, and the out-of-service taint needs Kubernetes %s or later", info.GitVersion, outOfServiceFrom), nil
	case v.AtLeast(outOfServiceFrom):
		return "", nil
	case v.AtLeast(version.MajorMinor(1, 24)) && d.alphaGate:
		// The operator says kube-controller-manager has the gate on.
		return "", nil
	case v.AtLeast(version.MajorMinor(1, 24)):
		return fmt.Sprintf("Kubernetes %s acts on the out-of-service taint only with the alpha feature gate NodeOutOfServiceVolumeDetach on kube-controller-manager (off by default, not visible from the API); it needs %s or later, or alpha_gate_on if that gate is on", info.GitVersion, outOfServiceFrom), nil
	}
	return fmt.Sprintf("Kubernetes %s has no out-of-service taint (from %s; 1.24 and 1.25 behind an alpha feature gate)", info.GitVersion, outOfServiceFrom), nil
}

func hasOutOfService(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == TaintOutOfService {
			return true
		}
	}
	return false
}

// Apply re-reads the node, re-checks that it is still (not) Ready, and adds
// or removes the taint with an update that carries the node's
// resourceVersion, so a concurrent change makes it fail and retry.
func (d *DeadNode) Apply(ctx context.Context, a remediate.Action) error {
	data, ok := a.Data.(deadNodeData)
	if !ok {
		return fmt.Errorf("%s: action without node data", a.Target)
	}
	n, err := d.client.CoreV1().Nodes().Get(ctx, data.node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if data.add {
			return fmt.Errorf("node %s is gone: %w", data.node, remediate.ErrPrecondition)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("get node %s: %w", data.node, err)
	}
	if string(n.UID) != data.uid {
		return fmt.Errorf("node %s was recreated: %w", data.node, remediate.ErrPrecondition)
	}
	if data.add {
		if data.reportOnly {
			return fmt.Errorf("taint of node %s is report-only: the cluster cannot act on it, or its instance may still run", data.node)
		}
		if nodeReady(n) {
			return fmt.Errorf("node %s is Ready again: %w", data.node, remediate.ErrPrecondition)
		}
		if hasOutOfService(n) {
			return nil
		}
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: TaintOutOfService, Value: taintValue,
			Effect: corev1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: d.now()}})
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[AnnotationTainted] = d.now().UTC().Format(time.RFC3339)
	} else {
		if !nodeReady(n) {
			return fmt.Errorf("node %s is not Ready: %w", data.node, remediate.ErrPrecondition)
		}
		if n.Annotations[AnnotationTainted] == "" {
			return nil
		}
		kept := n.Spec.Taints[:0]
		for _, t := range n.Spec.Taints {
			if t.Key != TaintOutOfService {
				kept = append(kept, t)
			}
		}
		n.Spec.Taints = kept
		delete(n.Annotations, AnnotationTainted)
	}
	_, err = updateNode(ctx, d.client, n, "update")
	return err
}

var _ remediate.Disruptor = (*DeadNode)(nil)

// Disrupted implements remediate.Disruptor: a node it tainted stays
// disrupted, for the outage the taint's Key names, until it is Ready again,
// gone or replaced, its Ready condition changed since (another outage), or
// its instance is confirmed down (then it is declared gone). It only reads.
func (d *DeadNode) Disrupted(ctx context.Context, applied []remediate.Applied) ([]remediate.Disruption, error) {
	var out []remediate.Disruption
	for _, k := range latestNodeKeys(applied, "taint/node/") {
		n, err := d.client.CoreV1().Nodes().Get(ctx, k.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("get node %s: %w", k.name, err)
		}
		rc := readyCondition(n)
		if string(n.UID) != k.uid || rc == nil || rc.Status == corev1.ConditionTrue ||
			strconv.FormatInt(rc.LastTransitionTime.Unix(), 10) != k.episode {
			continue
		}
		st, err := d.instances.InstanceState(ctx, n)
		if err != nil {
			return nil, fmt.Errorf("instance of node %s: %w", k.name, err)
		}
		if st.dead() {
			continue
		}
		out = append(out, remediate.Disruption{Node: k.name,
			Why: fmt.Sprintf("node %s was tainted out of service and is neither Ready again nor confirmed down (its instance is %s now)", k.name, st)})
	}
	return out, nil
}

// nodeKey is a node action's Key as Plan writes it: prefix, then
// "<name>/<uid>/<episode>".
type nodeKey struct{ name, uid, episode string }

// latestNodeKeys returns, per node, the latest of the applied Keys with
// prefix (the budget lists a target's Keys oldest first), in order of
// first appearance.
func latestNodeKeys(applied []remediate.Applied, prefix string) []nodeKey {
	var out []nodeKey
	at := map[string]int{}
	for _, a := range applied {
		rest, ok := strings.CutPrefix(a.Key, prefix)
		parts := strings.Split(rest, "/")
		if !ok || len(parts) != 3 {
			continue
		}
		k := nodeKey{parts[0], parts[1], parts[2]}
		if i, seen := at[k.name]; seen {
			out[i] = k
			continue
		}
		at[k.name] = len(out)
		out = append(out, k)
	}
	return out
}
