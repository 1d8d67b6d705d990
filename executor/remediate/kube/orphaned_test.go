package kube

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/remediatetest"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/fakeclock"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// terminate deletes a bound pod with a grace period: with no kubelet to
// confirm, it stays Terminating with deletionTimestamp = now + grace.
func terminate(t *testing.T, c kubernetes.Interface, ns, name string, grace int64) {
	t.Helper()
	if err := c.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatalf("delete pod %s: %v", name, err)
	}
	p, err := c.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil || p.DeletionTimestamp == nil {
		t.Fatalf("pod %s: got %v (err %v), want it Terminating", name, p, err)
	}
}

func podExists(t *testing.T, c kubernetes.Interface, ns, name string) bool {
	t.Helper()
	_, err := c.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

func TestOrphanedPods(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	node(t, c, "w1", corev1.ConditionTrue, time.Now(), false)
	for _, n := range []string{"orphan-a", "orphan-b", "within-grace", "running"} {
		pod(t, c, ns, n, "w1", nil, true)
	}
	terminate(t, c, ns, "orphan-a", 30)
	terminate(t, c, ns, "orphan-b", 30)
	terminate(t, c, ns, "within-grace", 3*3600) // still inside its grace period an hour from now
	// The remediator's clock runs an hour ahead: orphan-a and orphan-b have
	// been Terminating ~1h past their 30 s grace period.
	r := NewOrphanedPods(api(t), nil, 10*time.Minute, func() time.Time { return time.Now().Add(time.Hour) })
	fc := remediatetest.NewLog()
	all := []string{"orphan-a", "orphan-b", "within-grace", "running"}
	podVersions := func() map[string]string {
		return versions(t, func(n string) (metav1.Object, error) {
			return c.CoreV1().Pods(ns).Get(context.Background(), n, metav1.GetOptions{})
		}, all...)
	}

	dryRunWritesNothing(t, fc, r, []string{"dry_run force-delete pod/" + ns + "/orphan-a", "dry_run force-delete pod/" + ns + "/orphan-b"}, podVersions)
	on := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 1, MaxPerHour: 10}
	t.Run("acts within the cap", func(t *testing.T) {
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on))
		want := []string{"planned force-delete pod/" + ns + "/orphan-a", "applied force-delete pod/" + ns + "/orphan-a",
			"skipped_cap force-delete pod/" + ns + "/orphan-b"}
		if !slices.Equal(got, want) {
			t.Fatalf("got %q, want %q", got, want)
		}
		if podExists(t, c, ns, "orphan-a") || !podExists(t, c, ns, "orphan-b") {
			t.Fatal("want orphan-a gone and orphan-b kept by the cap")
		}
		remediatetest.Pass(t, fc, r, on)
		if podExists(t, c, ns, "orphan-b") {
			t.Fatal("orphan-b still there after the second pass")
		}
		for _, n := range []string{"within-grace", "running"} {
			if !podExists(t, c, ns, n) {
				t.Fatalf("look-alike %s was deleted", n)
			}
		}
	})
	t.Run("repeated pass is a no-op", func(t *testing.T) {
		before := versions(t, func(n string) (metav1.Object, error) {
			return c.CoreV1().Pods(ns).Get(context.Background(), n, metav1.GetOptions{})
		}, "within-grace", "running")
		if got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on)); len(got) != 0 {
			t.Fatalf("got %q, want no records", got)
		}
		after := versions(t, func(n string) (metav1.Object, error) {
			return c.CoreV1().Pods(ns).Get(context.Background(), n, metav1.GetOptions{})
		}, "within-grace", "running")
		if !maps.Equal(before, after) {
			t.Fatalf("got resourceVersions %v, want unchanged %v", after, before)
		}
	})
}

// recordingRebooter stands in for Nova at this boundary: the Nova side is
// tested against the OpenStack simulator in executor/remediate/openstack.
type recordingRebooter struct {
	mu    sync.Mutex
	nodes []string
}

func (r *recordingRebooter) RebootNode(_ context.Context, n *corev1.Node) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nodes = append(r.nodes, n.Name)
	return nil
}

func (r *recordingRebooter) rebooted() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.nodes...)
}

// Opt-in: the node a blocking pod is stuck on (a StatefulSet's, whose
// replacement waits for it) is cordoned and rebooted, once per episode,
// before any of its pods is force-deleted; never without the option;
// dry-run touches nothing.
func TestOrphanedPodsCordonAndReboot(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	node(t, c, "w1", corev1.ConditionTrue, time.Now(), false)
	node(t, c, "w2", corev1.ConditionTrue, time.Now(), false)
	ownedPod(t, c, ns, "stuck", "w1", "StatefulSet")
	pod(t, c, ns, "fine", "w2", nil, true)
	terminate(t, c, ns, "stuck", 30)
	later := func() time.Time { return time.Now().Add(time.Hour) }
	fc := remediatetest.NewLog()
	rb := &recordingRebooter{}
	on := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 10}

	// Its own log: a repeated dry-run record with the same reason is not recorded twice.
	if got := remediatetest.Summary(remediatetest.Pass(t, remediatetest.NewLog(), NewOrphanedPods(api(t), nil, 10*time.Minute, later), remediate.Settings{Mode: remediate.ModeDryRun, MaxPerPass: 5})); !slices.Equal(got, []string{"dry_run force-delete pod/" + ns + "/stuck"}) {
		t.Fatalf("without the option: got %q, want only the pod", got)
	}
	r := NewOrphanedPods(api(t), nil, 10*time.Minute, later).WithReboot(rb, 10*time.Minute)
	before := nodeVersions(t, c, "w1", "w2")
	if got := remediatetest.Summary(remediatetest.Pass(t, fc, r, remediate.Settings{Mode: remediate.ModeDryRun, MaxPerPass: 5})); !slices.Equal(got, []string{"dry_run cordon-reboot node/w1"}) {
		t.Fatalf("dry-run: got %q, want only the reboot, which comes first", got)
	}
	if after := nodeVersions(t, c, "w1", "w2"); !maps.Equal(before, after) || len(rb.rebooted()) != 0 {
		t.Fatal("dry-run cordoned or rebooted")
	}
	want := []string{"planned cordon-reboot node/w1", "applied cordon-reboot node/w1"}
	if got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on)); !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if !podExists(t, c, ns, "stuck") {
		t.Fatal("stuck force-deleted before the rebooted node had its chance")
	}
	w1, err := c.CoreV1().Nodes().Get(context.Background(), "w1", metav1.GetOptions{})
	if err != nil || !w1.Spec.Unschedulable {
		t.Fatalf("w1 not cordoned: %v", err)
	}
	if got := rb.rebooted(); !slices.Equal(got, []string{"w1"}) {
		t.Fatalf("rebooted %q, want only w1", got)
	}
	if got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on)); len(got) != 0 {
		t.Fatalf("repeated pass: got %q, want nothing", got)
	}
	if len(rb.rebooted()) != 1 {
		t.Fatal("w1 rebooted twice for one episode")
	}
}

// splitHeld separates a pass's records: the summary of those that act (or
// would, in dry-run), and the report-only ones by target, with the reason
// they cannot be applied.
func splitHeld(recs []failover.RemediationRecord) ([]string, map[string]string) {
	acted, held := []string{}, map[string]string{}
	for _, r := range recs {
		if why, ok := strings.CutPrefix(r.Detail, "report-only: "); ok {
			held[r.Target] = why
			continue
		}
		acted = append(acted, r.Result+" "+r.Verb+" "+r.Target)
	}
	return acted, held
}

// ownedPod creates a pod bound to nodeName whose controller is a kind
// ("StatefulSet", "ReplicaSet"), with vols.
func ownedPod(t *testing.T, c kubernetes.Interface, ns, name, nodeName, kind string, vols ...corev1.Volume) {
	t.Helper()
	yes := true
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: kind, Name: name + "-owner", UID: types.UID("owner-" + name), Controller: &yes}}},
		Spec: corev1.PodSpec{NodeName: nodeName, Volumes: vols,
			Containers: []corev1.Container{{Name: "c", Image: "example.invalid/c"}}},
	}
	if _, err := c.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
}

// claim creates a PersistentVolumeClaim with access modes and returns a
// pod volume that mounts it.
func claim(t *testing.T, c kubernetes.Interface, ns, name string, modes ...corev1.PersistentVolumeAccessMode) corev1.Volume {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: modes,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}
	if _, err := c.CoreV1().PersistentVolumeClaims(ns).Create(context.Background(), pvc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create claim %s: %v", name, err)
	}
	return corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}
}

// A StatefulSet pod, or a pod holding a ReadWriteOnce(Pod) volume, may
// still run on a node that is only partitioned, or whose host only missed
// its heartbeats: force-deleting it lets its controller start a second
// copy. Such pods are force-deleted only when the node is confirmed down
// (the cloud says its instance is, its host forced down included, or the
// node object is gone); other pods keep the plain rule.
func TestOrphanedPodsNeverCopyAPodThatMayStillRun(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	long := time.Now().Add(-time.Hour)
	node(t, c, "partitioned", corev1.ConditionUnknown, long, false)  // instance ACTIVE
	node(t, c, "silent-cloud", corev1.ConditionUnknown, long, false) // the cloud errors
	node(t, c, "dead", corev1.ConditionUnknown, long, false)         // instance gone
	node(t, c, "unfenced", corev1.ConditionUnknown, long, false)     // host down, not forced down
	node(t, c, "fenced", corev1.ConditionUnknown, long, false)       // host forced down
	healthyNodes(t, c, 4)                                            // the rest of the cluster, under the disruption brake
	cloud := fakeInstances{"partitioned": InstanceActive, "dead": InstanceGone,
		"unfenced": InstanceHostDown, "fenced": InstanceHostForcedDown}
	eph := corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
		VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}}}}
	// Must stay: each may still run on its node.
	held := []string{"sts-partitioned", "rwo-partitioned", "rwop-partitioned", "ephemeral-rwo-partitioned", "sts-silent-cloud", "sts-unfenced"}
	ownedPod(t, c, ns, "sts-partitioned", "partitioned", "StatefulSet")
	ownedPod(t, c, ns, "rwo-partitioned", "partitioned", "ReplicaSet", claim(t, c, ns, "rwo", corev1.ReadWriteOnce))
	ownedPod(t, c, ns, "rwop-partitioned", "partitioned", "ReplicaSet", claim(t, c, ns, "rwop", corev1.ReadWriteOncePod))
	ownedPod(t, c, ns, "ephemeral-rwo-partitioned", "partitioned", "ReplicaSet", eph)
	ownedPod(t, c, ns, "sts-silent-cloud", "silent-cloud", "StatefulSet")
	ownedPod(t, c, ns, "sts-unfenced", "unfenced", "StatefulSet")
	// May go: no second copy can conflict, or the node is confirmed down.
	freed := []string{"deploy-partitioned", "rwx-partitioned", "sts-dead", "rwo-dead", "sts-node-deleted", "sts-fenced"}
	ownedPod(t, c, ns, "deploy-partitioned", "partitioned", "ReplicaSet")
	ownedPod(t, c, ns, "rwx-partitioned", "partitioned", "ReplicaSet", claim(t, c, ns, "rwx", corev1.ReadWriteMany))
	ownedPod(t, c, ns, "sts-dead", "dead", "StatefulSet")
	ownedPod(t, c, ns, "rwo-dead", "dead", "ReplicaSet", claim(t, c, ns, "rwo-2", corev1.ReadWriteOnce))
	ownedPod(t, c, ns, "sts-node-deleted", "node-deleted", "StatefulSet")
	ownedPod(t, c, ns, "sts-fenced", "fenced", "StatefulSet")
	for _, n := range append(slices.Clone(held), freed...) {
		terminate(t, c, ns, n, 30)
	}
	later := func() time.Time { return time.Now().Add(time.Hour) }
	dry := remediate.Settings{Mode: remediate.ModeDryRun, MaxPerPass: 20}
	deletes := func(names ...string) []string {
		var out []string
		for _, n := range slices.Sorted(slices.Values(names)) {
			out = append(out, "dry_run force-delete pod/"+ns+"/"+n)
		}
		return out
	}

	reportedOnly := func(got map[string]string, names ...string) {
		t.Helper()
		want := []string{}
		for _, n := range names {
			want = append(want, "pod/"+ns+"/"+n)
		}
		if keys := slices.Sorted(maps.Keys(got)); !slices.Equal(keys, slices.Sorted(slices.Values(want))) {
			t.Fatalf("got report-only %q, want %q", keys, want)
		}
	}

	t.Run("no cloud configured: only the node's deletion confirms it down", func(t *testing.T) {
		r := NewOrphanedPods(api(t), nil, 10*time.Minute, later)
		got, heldBy := splitHeld(remediatetest.Pass(t, remediatetest.NewLog(), r, dry))
		if want := deletes("deploy-partitioned", "rwx-partitioned", "sts-node-deleted"); !slices.Equal(got, want) {
			t.Fatalf("got %q, want %q", got, want)
		}
		reportedOnly(heldBy, append(slices.Clone(held), "sts-dead", "rwo-dead", "sts-fenced")...)
		if why := heldBy["pod/"+ns+"/sts-dead"]; !strings.Contains(why, "no cloud is configured") {
			t.Fatalf("sts-dead: got report-only reason %q, want it to say no cloud is configured", why)
		}
	})
	t.Run("the cloud confirms the node down", func(t *testing.T) {
		r := NewOrphanedPods(api(t), cloud, 10*time.Minute, later)
		fc := remediatetest.NewLog()
		got, heldBy := splitHeld(remediatetest.Pass(t, fc, r, dry))
		if want := deletes(freed...); !slices.Equal(got, want) {
			t.Fatalf("got %q, want %q", got, want)
		}
		reportedOnly(heldBy, held...)
		if why := heldBy["pod/"+ns+"/rwo-partitioned"]; !strings.Contains(why, "ReadWriteOnce") || !strings.Contains(why, "ACTIVE") {
			t.Fatalf("rwo-partitioned: got report-only reason %q, want its claim's mode and its instance's state", why)
		}
		if why := heldBy["pod/"+ns+"/sts-unfenced"]; !strings.Contains(why, "not forced down") || !strings.Contains(why, "fence its host") {
			t.Fatalf("sts-unfenced: got report-only reason %q, want it to say its host is not forced down and to fence it", why)
		}
		remediatetest.Pass(t, fc, r, remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 20, MaxPerHour: 20})
		for _, n := range freed {
			if podExists(t, c, ns, n) {
				t.Errorf("%s still there, want it force-deleted", n)
			}
		}
		for _, n := range held {
			if !podExists(t, c, ns, n) {
				t.Errorf("%s was force-deleted while its node may still run it", n)
			}
		}
	})
	t.Run("apply refuses a node the cloud no longer reports down", func(t *testing.T) {
		ownedPod(t, c, ns, "sts-flapping", "dead", "StatefulSet")
		terminate(t, c, ns, "sts-flapping", 30)
		r := NewOrphanedPods(api(t), cloud, 10*time.Minute, later)
		acts, err := r.Plan(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(acts, func(a remediate.Action) bool { return a.Target == "pod/"+ns+"/sts-flapping" })
		if i < 0 {
			t.Fatalf("got actions %v, want one for sts-flapping", acts)
		}
		cloud["dead"] = InstanceActive
		if err := r.Apply(context.Background(), acts[i]); !errors.Is(err, remediate.ErrPrecondition) {
			t.Fatalf("got %v, want ErrPrecondition", err)
		}
		if !podExists(t, c, ns, "sts-flapping") {
			t.Fatal("sts-flapping force-deleted although its instance is ACTIVE again")
		}
	})
}

// A pod held by a finalizer outlives a force-delete: the API server keeps
// it until the finalizer's owner removes it. Such a pod is never "applied"
// as if freed, and does not trigger a node reboot, which cannot free it.
func TestOrphanedPodsLeaveFinalizerHeldPods(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	node(t, c, "w1", corev1.ConditionTrue, time.Now(), false)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "finalized", Namespace: ns, Finalizers: []string{"example.com/backup"}},
		Spec:       corev1.PodSpec{NodeName: "w1", Containers: []corev1.Container{{Name: "c", Image: "example.invalid/c"}}},
	}
	if _, err := c.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Release it, or it would stay Terminating for the next test.
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		if _, err := c.CoreV1().Pods(ns).Patch(context.Background(), "finalized", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("release finalized: %v", err)
		}
	})
	terminate(t, c, ns, "finalized", 30)
	r := NewOrphanedPods(api(t), nil, 10*time.Minute, func() time.Time { return time.Now().Add(time.Hour) }).
		WithReboot(&recordingRebooter{}, 10*time.Minute)
	got, heldBy := splitHeld(remediatetest.Pass(t, remediatetest.NewLog(), r, remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 10}))
	if len(got) != 0 {
		t.Fatalf("got %q, want no force-delete and no reboot for a pod its finalizer holds", got)
	}
	if why := heldBy["pod/"+ns+"/finalized"]; !strings.Contains(why, "example.com/backup") {
		t.Fatalf("got report-only %q, want finalized reported, naming its finalizer", heldBy)
	}
	if !podExists(t, c, ns, "finalized") {
		t.Fatal("finalized gone")
	}
}

func expectPass(t *testing.T, fc *remediatetest.Log, r remediate.Remediator, s remediate.Settings, clk *fakeclock.Clock, want ...string) {
	t.Helper()
	got := remediatetest.Summary(remediatetest.Pass(t, fc, r, s))
	if want == nil {
		want = []string{}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("at %s: got %q, want %q", clk.Now().Format(time.TimeOnly), got, want)
	}
}

// With reboot_node, the reboot comes first: a rebooted kubelet finishes
// its pods itself. Only a pod still Terminating once the wait after the
// reboot has passed is force-deleted, and a pod that may still run is not
// even then (its node is not back Ready under a new boot: the fence is not
// proven). max_per_pass 1 must not put the delete first.
func TestOrphanedPodsRebootBeforeForceDelete(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	node(t, c, "w1", corev1.ConditionFalse, time.Now(), false) // PLEG-stuck: instance ACTIVE
	ownedPod(t, c, ns, "web-1", "w1", "ReplicaSet")
	ownedPod(t, c, ns, "db-0", "w1", "StatefulSet")
	terminate(t, c, ns, "web-1", 30)
	terminate(t, c, ns, "db-0", 30)
	clk := fakeclock.At(time.Now().Add(time.Hour))
	rb := &recordingRebooter{}
	r := NewOrphanedPods(api(t), fakeInstances{"w1": InstanceActive}, 10*time.Minute, clk.Now).WithReboot(rb, 10*time.Minute)
	fc := remediatetest.NewLog()
	on := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 1, MaxPerHour: 10}
	pass := func(want ...string) {
		t.Helper()
		expectPass(t, fc, r, on, clk, want...)
	}

	pass("planned cordon-reboot node/w1", "applied cordon-reboot node/w1")
	if !podExists(t, c, ns, "web-1") || !slices.Equal(rb.rebooted(), []string{"w1"}) {
		t.Fatalf("after the first pass: web-1 there %v, rebooted %q; want web-1 kept and w1 rebooted", podExists(t, c, ns, "web-1"), rb.rebooted())
	}
	clk.Add(5 * time.Minute)
	pass() // within the wait: the rebooted kubelet may still finish web-1
	if !podExists(t, c, ns, "web-1") {
		t.Fatal("web-1 force-deleted within the wait after the reboot")
	}
	clk.Add(6 * time.Minute)
	pass("dry_run force-delete pod/"+ns+"/db-0", // report-only: its node is not back, so the reboot is not proven
		"planned force-delete pod/"+ns+"/web-1", "applied force-delete pod/"+ns+"/web-1")
	if podExists(t, c, ns, "web-1") || !podExists(t, c, ns, "db-0") {
		t.Fatal("want web-1 force-deleted after the wait, and db-0 kept (its node is up, so it may run)")
	}
	pass()
	if got := rb.rebooted(); len(got) != 1 {
		t.Fatalf("rebooted %q, want w1 once for the episode", got)
	}
}

// failingRebooter is Nova refusing the reboot.
type failingRebooter struct{}

func (failingRebooter) RebootNode(context.Context, *corev1.Node) error {
	return errors.New("nova: 409 instance is locked")
}

// A reboot that failed is recorded as failed and leaves no trace on the
// node: not drwatch's cordon, nor a reboot stamp that would make the next
// pass wait on a reboot that never happened.
func TestOrphanedPodsFailedRebootIsUndone(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	node(t, c, "w1", corev1.ConditionFalse, time.Now(), false)
	ownedPod(t, c, ns, "web-1", "w1", "StatefulSet") // its replacement waits: the node is to be fenced
	terminate(t, c, ns, "web-1", 30)
	r := NewOrphanedPods(api(t), nil, 10*time.Minute, func() time.Time { return time.Now().Add(time.Hour) }).WithReboot(failingRebooter{}, 10*time.Minute)
	fc := remediatetest.NewLog()
	on := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 1, MaxPerHour: 10}
	failed := []string{"planned cordon-reboot node/w1", "failed cordon-reboot node/w1"}
	if got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on)); !slices.Equal(got, failed) {
		t.Fatalf("first pass: got %q, want %q", got, failed)
	}
	// The runner backs off from the failed target; once the backoff has
	// passed the reboot is tried again, because nothing on the node says it
	// happened.
	if got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on)); len(got) != 0 {
		t.Fatalf("pass within the backoff: got %q, want nothing", got)
	}
	later := func() time.Time { return time.Now().Add(2 * time.Minute) }
	if got := remediatetest.Summary(remediatetest.PassAt(t, fc, r, on, later)); !slices.Equal(got, failed) {
		t.Fatalf("pass after the backoff: got %q, want %q (the reboot retried, the pod kept)", got, failed)
	}
	w1, err := c.CoreV1().Nodes().Get(context.Background(), "w1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if w1.Spec.Unschedulable || w1.Annotations[AnnotationCordoned] != "" || w1.Annotations[AnnotationRebooted] != "" {
		t.Fatalf("got unschedulable %v, annotations %v; want the cordon and the stamp undone", w1.Spec.Unschedulable, w1.Annotations)
	}
	if !podExists(t, c, ns, "web-1") {
		t.Fatal("web-1 force-deleted although its node was never rebooted")
	}
}

// setCordon cordons or uncordons a node as an operator would (kubectl
// cordon), leaving its annotations alone.
func setCordon(t *testing.T, c kubernetes.Interface, name string, on bool) {
	t.Helper()
	n, err := c.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.Unschedulable = on
	if _, err := c.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("cordon %s %v: %v", name, on, err)
	}
}

// A node drwatch cordoned for its reboot is uncordoned once it is Ready
// again after the wait; an operator's cordon never is, even on a node
// drwatch once cordoned.
func TestOrphanedPodsUncordonOnlyTheirOwnCordon(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	long := time.Now().Add(-time.Hour)
	node(t, c, "w1", corev1.ConditionFalse, long, false)
	node(t, c, "w2", corev1.ConditionFalse, long, true) // the operator cordoned it
	node(t, c, "w3", corev1.ConditionFalse, long, false)
	healthyNodes(t, c, 4) // three of seven: under the disruption brake
	for _, n := range []string{"w1", "w2", "w3"} {
		ownedPod(t, c, ns, "db-"+n, n, "StatefulSet")
		terminate(t, c, ns, "db-"+n, 30)
	}
	clk := fakeclock.At(time.Now().Add(time.Hour))
	cloud := fakeInstances{"w1": InstanceActive, "w2": InstanceActive, "w3": InstanceActive}
	r := NewOrphanedPods(api(t), cloud, 10*time.Minute, clk.Now).WithReboot(&recordingRebooter{}, 10*time.Minute)
	fc := remediatetest.NewLog()
	on := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 20}
	pass := func(want ...string) {
		t.Helper()
		expectPass(t, fc, r, on, clk, want...)
	}
	cordoned := func(name string) bool {
		t.Helper()
		n, err := c.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n.Spec.Unschedulable
	}
	readyNow := func(name string) {
		t.Helper()
		n, err := c.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		setReady(t, c, n, corev1.ConditionTrue, time.Now())
	}

	pass("planned cordon-reboot node/w1", "applied cordon-reboot node/w1", "planned cordon-reboot node/w2", "applied cordon-reboot node/w2",
		"planned cordon-reboot node/w3", "applied cordon-reboot node/w3")
	setCordon(t, c, "w3", false) // the operator takes w3 over
	readyNow("w1")
	readyNow("w2")
	clk.Add(5 * time.Minute)
	// Within the wait w1 stays cordoned; drwatch only forgets w3's cordon.
	pass("planned uncordon node/w3", "applied uncordon node/w3")
	setCordon(t, c, "w3", true)
	readyNow("w3")
	clk.Add(6 * time.Minute)
	// The StatefulSet pods stay, reported only: their nodes are Ready, but
	// not since a new boot, so no reboot is proven to have stopped them.
	pass("dry_run force-delete pod/"+ns+"/db-w1", "dry_run force-delete pod/"+ns+"/db-w2", "dry_run force-delete pod/"+ns+"/db-w3",
		"planned uncordon node/w1", "applied uncordon node/w1")
	pass()
	if cordoned("w1") || !cordoned("w2") || !cordoned("w3") {
		t.Fatalf("got cordoned w1 %v, w2 %v, w3 %v; want only the operator's cordons (w2, w3) left", cordoned("w1"), cordoned("w2"), cordoned("w3"))
	}
}

// healthyNodes adds n Ready nodes, the rest of a cluster beside the nodes a
// test is about, so that those stay under the disruption brake's default
// share as they would in a real cluster.
func healthyNodes(t *testing.T, c kubernetes.Interface, n int) {
	t.Helper()
	for i := range n {
		node(t, c, fmt.Sprintf("healthy-%d", i), corev1.ConditionTrue, time.Now().Add(-time.Hour), false)
	}
}
