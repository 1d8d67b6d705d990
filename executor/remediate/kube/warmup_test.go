package kube

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/remediatetest"
	"github.com/drwatch/drwatch/failover"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func podTemplate(app string) (*metav1.LabelSelector, corev1.PodTemplateSpec) {
	l := map[string]string{"app": app}
	return &metav1.LabelSelector{MatchLabels: l}, corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: l},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/c"}}},
	}
}

func replicas(t *testing.T, c kubernetes.Interface, w Workload) (spec, ready int32, rv string) {
	t.Helper()
	ctx := context.Background()
	if w.Kind == "Deployment" {
		d, err := c.AppsV1().Deployments(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return *d.Spec.Replicas, d.Status.ReadyReplicas, d.ResourceVersion
	}
	s, err := c.AppsV1().StatefulSets(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return *s.Spec.Replicas, s.Status.ReadyReplicas, s.ResourceVersion
}

func TestBackupWarmup(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	ctx := context.Background()
	zero := int32(0)
	sel, tpl := podTemplate("web")
	if _, err := c.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: &zero, Selector: sel, Template: tpl}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sel, tpl = podTemplate("db")
	if _, err := c.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: appsv1.StatefulSetSpec{Replicas: &zero, Selector: sel, Template: tpl, ServiceName: "db"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	web := Workload{Kind: "Deployment", Namespace: ns, Name: "web", Replicas: 3}
	db := Workload{Kind: "StatefulSet", Namespace: ns, Name: "db", Replicas: 2}
	fc := remediatetest.NewLog()
	decision := func() remediate.Decision {
		d := fc.M.Desired()
		return remediate.Decision{Gen: d.Gen, Active: d.Active}
	}
	r := NewBackupWarmup(api(t), []Workload{web, db}, decision)
	rvs := func() map[string]string {
		_, _, a := replicas(t, c, web)
		_, _, b := replicas(t, c, db)
		return map[string]string{"web": a, "db": b}
	}
	on := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 1, MaxPerHour: 10}

	t.Run("no failover: no action", func(t *testing.T) {
		before := rvs()
		if got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on)); len(got) != 0 {
			t.Fatalf("got %q with the primary active, want nothing", got)
		}
		if !maps.Equal(before, rvs()) {
			t.Fatal("workloads changed without a failover")
		}
	})
	gen := fc.FailoverToBackup(t)
	dryRunWritesNothing(t, fc, r, []string{"dry_run scale deployment/" + ns + "/web", "dry_run scale statefulset/" + ns + "/db"}, rvs)
	t.Run("acts within the cap, keyed by gen", func(t *testing.T) {
		recs := remediatetest.Pass(t, fc, r, on)
		got := remediatetest.Summary(recs)
		want := []string{"planned scale deployment/" + ns + "/web", "applied scale deployment/" + ns + "/web", "skipped_cap scale statefulset/" + ns + "/db"}
		if !slices.Equal(got, want) {
			t.Fatalf("got %q, want %q", got, want)
		}
		for _, rec := range recs {
			if rec.Gen != gen || !strings.HasSuffix(rec.Key, "/gen/"+strconv.FormatUint(gen, 10)) {
				t.Fatalf("got record gen %d key %q, want gen %d in both", rec.Gen, rec.Key, gen)
			}
		}
		if s, _, _ := replicas(t, c, web); s != 3 {
			t.Fatalf("web: got %d replicas, want 3", s)
		}
		remediatetest.Pass(t, fc, r, on)
		if s, _, _ := replicas(t, c, db); s != 2 {
			t.Fatalf("db: got %d replicas, want 2", s)
		}
	})
	t.Run("repeated pass is a no-op", func(t *testing.T) {
		before := rvs()
		if got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on)); len(got) != 0 {
			t.Fatalf("got %q, want nothing", got)
		}
		if !maps.Equal(before, rvs()) {
			t.Fatal("repeated pass changed a workload")
		}
	})
	t.Run("never twice for one decision, even on a new leader", func(t *testing.T) {
		// An operator scales web down during the same decision; a new
		// leader's Runner must not scale it up again for this gen.
		sc, err := c.AppsV1().Deployments(ns).GetScale(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sc.Spec.Replicas = 1
		if _, err := c.AppsV1().Deployments(ns).UpdateScale(ctx, "web", sc, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on)); len(got) != 0 {
			t.Fatalf("got %q, want nothing: the key for gen %d is applied", got, gen)
		}
		if s, _, _ := replicas(t, c, web); s != 1 {
			t.Fatalf("web: got %d replicas, want the operator's 1", s)
		}
	})
	t.Run("ready", func(t *testing.T) {
		ok, detail, err := r.Ready(ctx)
		if err != nil || ok || !strings.Contains(detail, "deployment/"+ns+"/web 0/3 ready") || !strings.Contains(detail, "statefulset/"+ns+"/db 0/2 ready") {
			t.Fatalf("got %v %q %v, want not ready naming both", ok, detail, err)
		}
		d, err := c.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d.Status.Replicas, d.Status.ReadyReplicas = 3, 3
		if _, err := c.AppsV1().Deployments(ns).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		s, err := c.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Status.Replicas, s.Status.ReadyReplicas, s.Status.AvailableReplicas = 2, 2, 2
		if _, err := c.AppsV1().StatefulSets(ns).UpdateStatus(ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		ok, detail, err = r.Ready(ctx)
		if err != nil || !ok {
			t.Fatalf("got %v %q %v, want ready", ok, detail, err)
		}
		missing := NewBackupWarmup(api(t), []Workload{{Kind: "Deployment", Namespace: ns, Name: "nope", Replicas: 1}}, decision)
		if ok, detail, err := missing.Ready(ctx); ok || err != nil || !strings.Contains(detail, "not found") {
			t.Fatalf("missing workload: got %v %q %v, want not ready, not found", ok, detail, err)
		}
	})
	if fc.M.Desired().Active != failover.Backup {
		t.Fatal("decision lost")
	}
}

// failedBack starts a backup cluster whose web runs its 3 active replicas
// (idle 1), and a log whose decision is a failback from the backup, not
// yet written.
func failedBack(t *testing.T) (kubernetes.Interface, Workload, *remediatetest.Log) {
	t.Helper()
	c := client(t)
	ns := namespace(t, c)
	three := int32(3)
	sel, tpl := podTemplate("web")
	if _, err := c.AppsV1().Deployments(ns).Create(context.Background(), &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: &three, Selector: sel, Template: tpl}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fc := remediatetest.NewLog()
	fc.FailoverToBackup(t) // records with a TTL of 60s
	fc.Step(t, failover.Command{Payload: failover.Failback{Actor: "alice", Reason: "primary back", Force: true}})
	return c, Workload{Kind: "Deployment", Namespace: ns, Name: "web", Replicas: 3, IdleReplicas: 1}, fc
}

// Opt-in scale-down after a failback: back to the idle replicas once per
// failback decision, and never without the option. Never before the
// failback is verified at every authoritative server and one TTL of its
// records has passed since: until then resolvers may still send clients to
// the backup.
func TestBackupWarmupScaleDownAtFailback(t *testing.T) {
	c, web, fc := failedBack(t)
	ns := web.Namespace
	decision := func() remediate.Decision { return remediate.NewDecision(fc.M.Desired(), fc.M.History()) }
	on := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 10}
	failback := fc.M.Desired().Gen
	verifiedAt := time.Now().Add(-time.Hour).Truncate(time.Second)
	now := verifiedAt.Add(time.Hour) // long after: only verification holds it back
	clock := func() time.Time { return now }
	r := NewBackupWarmup(api(t), []Workload{web}, decision).WithScaleDown(true, clock)
	untouched := func(when string) {
		t.Helper()
		if got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on)); len(got) != 0 {
			t.Fatalf("%s: got %q, want nothing", when, got)
		}
		if s, _, _ := replicas(t, c, web); s != 3 {
			t.Fatalf("%s: web has %d replicas, want its 3", when, s)
		}
	}

	if got := remediatetest.Summary(remediatetest.Pass(t, fc, NewBackupWarmup(api(t), []Workload{web}, decision), on)); len(got) != 0 {
		t.Fatalf("without the option: got %q, want nothing", got)
	}
	untouched("failback written but not verified")
	fc.Step(t, failover.Command{Payload: failover.ActionResult{Gen: failback, Outcome: failover.OutcomeWritten, Actor: "a", WrittenAt: verifiedAt.UnixNano()}})
	untouched("failback written, not yet verified at every server")
	fc.Step(t, failover.Command{Payload: failover.ActionResult{Gen: failback, Outcome: failover.OutcomeVerified, Actor: "a", VerifiedAt: verifiedAt.UnixNano()}})
	now = verifiedAt.Add(59 * time.Second)
	untouched("verified 59s ago, TTL 60s")

	now = verifiedAt.Add(60 * time.Second)
	want := []string{"planned scale-down deployment/" + ns + "/web", "applied scale-down deployment/" + ns + "/web"}
	if got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on)); !slices.Equal(got, want) {
		t.Fatalf("one TTL after verification: got %q, want %q", got, want)
	}
	if s, _, _ := replicas(t, c, web); s != 1 {
		t.Fatalf("web: got %d replicas, want idle 1", s)
	}
	if got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on)); len(got) != 0 {
		t.Fatalf("repeated pass: got %q, want nothing", got)
	}
}

// A scale-down planned after a settled failback is not applied once a new
// failover to the backup has been decided since.
func TestBackupWarmupScaleDownRechecksTheDecision(t *testing.T) {
	c, web, fc := failedBack(t)
	ctx := context.Background()
	verifiedAt := time.Now().Truncate(time.Second)
	fc.Step(t, failover.Command{Payload: failover.ActionResult{Gen: fc.M.Desired().Gen, Outcome: failover.OutcomeVerified, Actor: "a", VerifiedAt: verifiedAt.UnixNano()}})
	r := NewBackupWarmup(api(t), []Workload{web}, func() remediate.Decision { return remediate.NewDecision(fc.M.Desired(), fc.M.History()) }).
		WithScaleDown(true, func() time.Time { return verifiedAt.Add(time.Hour) })
	actions, err := r.Plan(ctx)
	if err != nil || len(actions) != 1 {
		t.Fatalf("got %d actions, %v; want the scale-down", len(actions), err)
	}
	fc.Step(t, failover.Command{Payload: failover.Failover{To: failover.Backup, Force: true, Actor: "bob", Reason: "primary down again"}})
	if err := r.Apply(ctx, actions[0]); !errors.Is(err, remediate.ErrPrecondition) {
		t.Fatalf("apply after a new failover: got %v, want ErrPrecondition", err)
	}
	if s, _, _ := replicas(t, c, web); s != 3 {
		t.Fatalf("web: got %d replicas, want its 3", s)
	}
}
