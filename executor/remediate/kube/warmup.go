package kube

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/internal/kubeapi"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BackupWarmupName is the remediation's name.
const BackupWarmupName = "backup-warmup"

// BackupWarmup is the backup-warmup remediator: while the decision makes
// the backup site active, the listed workloads on the backup cluster are
// scaled up to their replicas. With scale-down (opt-in), after a failback
// they return to their idle replicas once the failback is verified at every
// authoritative server and one TTL of its records has passed.
type BackupWarmup struct {
	client    kubeapi.Interface
	workloads []Workload
	decision  func() remediate.Decision
	scaleDown bool
	now       func() time.Time
}

var (
	_ remediate.Remediator   = (*BackupWarmup)(nil)
	_ remediate.ReadyChecker = (*BackupWarmup)(nil)
)

// NewBackupWarmup returns the remediator. client is the BACKUP cluster's;
// decision returns the current decision (the node reads it from its
// replica: Desired().Gen and Desired().Active).
func NewBackupWarmup(client kubeapi.Interface, workloads []Workload, decision func() remediate.Decision) *BackupWarmup {
	return &BackupWarmup{client: client, workloads: workloads, decision: decision, now: time.Now}
}

// Name implements remediate.Remediator.
func (b *BackupWarmup) Name() string { return BackupWarmupName }

// WithScaleDown makes the remediator return the workloads to their idle
// replicas after a failback to the primary (opt-in), once the failback has
// settled by now's clock (nil: time.Now). It returns b.
func (b *BackupWarmup) WithScaleDown(on bool, now func() time.Time) *BackupWarmup {
	b.scaleDown = on
	if now != nil {
		b.now = now
	}
	return b
}

type scaleData struct {
	w    Workload
	down bool   // scale to IdleReplicas (after failback) instead of up to Replicas
	gen  uint64 // the failback decision a scale-down was planned for
}

// failbackSettled says whether clients have left the backup after the
// failback d: every authoritative server serves the primary's records
// (verified), and one TTL has passed since, so no resolver still caches
// the backup's answer. A verification whose time is unknown (the decision
// left the history) never settles: keeping the backup warm is the safe side.
func failbackSettled(d remediate.Decision, now time.Time) bool {
	return d.Active != failover.Backup && d.Verified && !d.VerifiedAt.IsZero() && !now.Before(d.VerifiedAt.Add(d.TTL))
}

func target(w Workload) string {
	return strings.ToLower(w.Kind) + "/" + w.Namespace + "/" + w.Name
}

// scale reads the workload's scale subresource.
func (b *BackupWarmup) scale(ctx context.Context, w Workload) (*autoscalingv1.Scale, error) {
	switch w.Kind {
	case "Deployment":
		return b.client.AppsV1().Deployments(w.Namespace).GetScale(ctx, w.Name, metav1.GetOptions{})
	case "StatefulSet":
		return b.client.AppsV1().StatefulSets(w.Namespace).GetScale(ctx, w.Name, metav1.GetOptions{})
	}
	return nil, fmt.Errorf("kind %q: want Deployment or StatefulSet", w.Kind)
}

// Plan returns a scale action per workload below its replicas, only while
// the decision (gen > 0) makes the backup active. Keys carry the
// generation: each decision warms up once (invariant 6), and a workload
// someone scaled down during that decision is not fought over. A missing
// workload is skipped here and reported by Ready.
func (b *BackupWarmup) Plan(ctx context.Context) ([]remediate.Action, error) {
	d := b.decision()
	if d.Gen == 0 {
		return nil, nil
	}
	if d.Active != failover.Backup {
		return b.planScaleDown(ctx, d)
	}
	var out []remediate.Action
	for _, w := range b.workloads {
		sc, err := b.scale(ctx, w)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("get scale of %s: %w", target(w), err)
		}
		if sc.Spec.Replicas >= w.Replicas {
			continue
		}
		out = append(out, remediate.Action{
			Target: target(w), Verb: "scale",
			Reason: fmt.Sprintf("failover to backup (gen %d): scale %s from %d to %d replicas", d.Gen, target(w), sc.Spec.Replicas, w.Replicas),
			Key:    "scale/" + target(w) + "/gen/" + strconv.FormatUint(d.Gen, 10),
			Data:   scaleData{w: w},
		})
	}
	return out, nil
}

// planScaleDown returns the workloads above their idle replicas to them,
// once per failback decision, when scale-down is enabled and the failback
// has settled. Until then it plans nothing: the backup may still serve
// clients whose resolvers hold its answer.
func (b *BackupWarmup) planScaleDown(ctx context.Context, d remediate.Decision) ([]remediate.Action, error) {
	if !b.scaleDown || !failbackSettled(d, b.now()) {
		return nil, nil
	}
	var out []remediate.Action
	for _, w := range b.workloads {
		sc, err := b.scale(ctx, w)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("get scale of %s: %w", target(w), err)
		}
		if sc.Spec.Replicas <= w.IdleReplicas {
			continue
		}
		out = append(out, remediate.Action{
			Target: target(w), Verb: "scale-down",
			Reason: fmt.Sprintf("traffic back on the primary (gen %d): scale %s from %d to its idle %d replicas", d.Gen, target(w), sc.Spec.Replicas, w.IdleReplicas),
			Key:    "scale-down/" + target(w) + "/gen/" + strconv.FormatUint(d.Gen, 10),
			Data:   scaleData{w: w, down: true, gen: d.Gen},
		})
	}
	return out, nil
}

// Apply sets the workload's replicas through the scale subresource,
// carrying the resourceVersion it read: up to Replicas at failover (never
// down: a workload already at or above is success), or down to
// IdleReplicas after a failback (a workload at or below is success). A
// scale-down whose failback is no longer the settled decision is refused
// with ErrPrecondition.
func (b *BackupWarmup) Apply(ctx context.Context, a remediate.Action) error {
	data, ok := a.Data.(scaleData)
	if !ok {
		return fmt.Errorf("%s: action without workload data", a.Target)
	}
	if d := b.decision(); data.down && (d.Gen != data.gen || !failbackSettled(d, b.now())) {
		return fmt.Errorf("scale down %s: the failback of gen %d is no longer the settled decision (now gen %d, %s active): %w",
			target(data.w), data.gen, d.Gen, d.Active, remediate.ErrPrecondition)
	}
	w := data.w
	sc, err := b.scale(ctx, w)
	if err != nil {
		return fmt.Errorf("get scale of %s: %w", target(w), err)
	}
	want := w.Replicas
	if data.down {
		want = w.IdleReplicas
		if sc.Spec.Replicas <= want {
			return nil
		}
	} else if sc.Spec.Replicas >= want {
		return nil
	}
	sc.Spec.Replicas = want
	switch w.Kind {
	case "Deployment":
		_, err = b.client.AppsV1().Deployments(w.Namespace).UpdateScale(ctx, w.Name, sc, metav1.UpdateOptions{})
	case "StatefulSet":
		_, err = b.client.AppsV1().StatefulSets(w.Namespace).UpdateScale(ctx, w.Name, sc, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("scale %s to %d: %w", target(w), want, err)
	}
	return nil
}

// Ready reports whether every listed workload has at least its replicas
// ready, with a detail line per workload that is not ("deployment/ns/web
// 1/3 ready"). It only reads. An error means the backup cluster could not
// be read; a missing workload is not ready, not an error.
func (b *BackupWarmup) Ready(ctx context.Context) (bool, string, error) {
	var notReady []string
	for _, w := range b.workloads {
		var ready int32
		var err error
		switch w.Kind {
		case "Deployment":
			dep, e := b.client.AppsV1().Deployments(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
			err = e
			if err == nil {
				ready = dep.Status.ReadyReplicas
			}
		case "StatefulSet":
			ss, e := b.client.AppsV1().StatefulSets(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
			err = e
			if err == nil {
				ready = ss.Status.ReadyReplicas
			}
		default:
			err = fmt.Errorf("kind %q: want Deployment or StatefulSet", w.Kind)
		}
		if apierrors.IsNotFound(err) {
			notReady = append(notReady, target(w)+" not found")
			continue
		}
		if err != nil {
			return false, "", fmt.Errorf("read %s: %w", target(w), err)
		}
		if ready < w.Replicas {
			notReady = append(notReady, fmt.Sprintf("%s %d/%d ready", target(w), ready, w.Replicas))
		}
	}
	if len(notReady) > 0 {
		return false, strings.Join(notReady, "; "), nil
	}
	return true, fmt.Sprintf("%d workloads ready", len(b.workloads)), nil
}
