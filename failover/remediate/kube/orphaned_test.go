package kube

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover/remediate"
	"github.com/drwatch/drwatch/failover/remediate/remediatetest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	r := NewOrphanedPods(c, 10*time.Minute, func() time.Time { return time.Now().Add(time.Hour) })
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
// tested against the OpenStack simulator in failover/remediate/openstack.
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

// Opt-in: the node orphaned pods were stuck on is cordoned and rebooted,
// once per episode; never without the option; dry-run touches nothing.
func TestOrphanedPodsCordonAndReboot(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	node(t, c, "w1", corev1.ConditionTrue, time.Now(), false)
	node(t, c, "w2", corev1.ConditionTrue, time.Now(), false)
	pod(t, c, ns, "stuck", "w1", nil, true)
	pod(t, c, ns, "fine", "w2", nil, true)
	terminate(t, c, ns, "stuck", 30)
	later := func() time.Time { return time.Now().Add(time.Hour) }
	fc := remediatetest.NewLog()
	rb := &recordingRebooter{}
	on := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 10}

	// Its own log: a repeated dry-run record with the same reason is not recorded twice.
	if got := remediatetest.Summary(remediatetest.Pass(t, remediatetest.NewLog(), NewOrphanedPods(c, 10*time.Minute, later), remediate.Settings{Mode: remediate.ModeDryRun, MaxPerPass: 5})); !slices.Equal(got, []string{"dry_run force-delete pod/" + ns + "/stuck"}) {
		t.Fatalf("without the option: got %q, want only the pod", got)
	}
	r := NewOrphanedPods(c, 10*time.Minute, later).WithReboot(rb)
	before := nodeVersions(t, c, "w1", "w2")
	if got := remediatetest.Summary(remediatetest.Pass(t, fc, r, remediate.Settings{Mode: remediate.ModeDryRun, MaxPerPass: 5})); !slices.Equal(got, []string{"dry_run force-delete pod/" + ns + "/stuck", "dry_run cordon-reboot node/w1"}) {
		t.Fatalf("dry-run: got %q", got)
	}
	if after := nodeVersions(t, c, "w1", "w2"); !maps.Equal(before, after) || len(rb.rebooted()) != 0 {
		t.Fatal("dry-run cordoned or rebooted")
	}
	want := []string{"planned force-delete pod/" + ns + "/stuck", "applied force-delete pod/" + ns + "/stuck",
		"planned cordon-reboot node/w1", "applied cordon-reboot node/w1"}
	if got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on)); !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
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
