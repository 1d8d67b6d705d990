package debris

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/remediatetest"
	"github.com/drwatch/drwatch/test/openstacktest"
)

func targets(acts []remediate.Action) []string {
	out := []string{}
	for _, a := range acts {
		out = append(out, a.Target)
	}
	return out
}

// planWant plans with r and fails t unless the targets are want, in
// order.
func planWant(t *testing.T, r *Debris, want ...string) []remediate.Action {
	t.Helper()
	acts, err := r.Plan(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := targets(acts); !slices.Equal(got, want) {
		t.Fatalf("plan: got %q, want %q", got, want)
	}
	return acts
}

// Against real Octavia, Cinder and kube-apiserver: only cluster k's
// resources whose Service or PV is absent are debris. Look-alikes (cluster
// k2 and k_x with the same Service, a plain name, another project, a volume
// of cluster k2 or without metadata, a volume a PV of another name holds)
// are never planned; a dry run writes nothing; in mode on each delete is
// followed until OpenStack answers 404, and the look-alikes survive.
func TestDeletesOnlyTheClustersOrphans(t *testing.T) {
	s := osStack(t)
	kc := kubeClient(t, "")
	ctx := ctxT(t)
	createService(t, "shop", "kept")
	createPV(t, "pvc-kept", "handle-of-another-volume")

	// Each with the marks the cloud provider of its cluster writes.
	mustLB := func(c openstacktest.Credentials, cluster, svc string) string {
		name := "kube_service_" + cluster + "_shop_" + svc
		return createMarkedLB(t, s, c, name, cpoMarks(name, cluster, "shop", svc))
	}
	orphanLB := mustLB(s.Member, "k", "gone")
	keptLB := mustLB(s.Member, "k", "kept")
	lookalikes := []string{
		mustLB(s.Member, "k2", "gone"),
		mustLB(s.Member, "k_x", "gone"),
		createMarkedLB(t, s, s.Member, "shop_gone", lbMarks{}),
		mustLB(s.Admin, "k", "gone"), // another project
	}
	mustVol := func(name string, meta map[string]string) string {
		id, err := s.CreateVolume(ctx, s.Member, name, meta)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	orphanVol := mustVol("pvc-gone", csiMeta("k", "pvc-gone"))
	keptVol := mustVol("pvc-kept", csiMeta("k", "pvc-kept"))
	heldVol := mustVol("pvc-renamed", csiMeta("k", "pvc-renamed"))
	createPV(t, "static-pv", heldVol)
	otherVols := []string{mustVol("pvc-gone", csiMeta("k2", "pvc-gone")), mustVol("pvc-gone", csiMeta("", "pvc-gone"))}

	r := remediator(t, s, kc, "k", nil)
	sawPVAskDeletion(t, r, "pvc-gone", orphanVol)
	acts := planWant(t, r, "loadbalancer/"+orphanLB, "volume/"+orphanVol)
	if !strings.Contains(acts[0].Reason, "shop/gone") {
		t.Errorf("reason %q does not name the Service", acts[0].Reason)
	}

	c := remediatetest.NewLog()
	dry := remediatetest.Summary(remediatetest.Pass(t, c, r, remediate.Settings{Mode: remediate.ModeDryRun, MaxPerPass: 5}))
	if w := []string{"dry_run delete loadbalancer/" + orphanLB, "dry_run delete volume/" + orphanVol}; !slices.Equal(dry, w) {
		t.Fatalf("dry run: got %q, want %q", dry, w)
	}
	if lb, err := s.LBStatus(ctx, orphanLB); err != nil || lb.ProvisioningStatus != "ACTIVE" {
		t.Fatalf("dry run touched the load balancer: %+v %v", lb, err)
	}

	on := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5}
	got := remediatetest.Summary(remediatetest.Pass(t, c, r, on))
	if w := []string{"planned delete loadbalancer/" + orphanLB, "applied delete loadbalancer/" + orphanLB,
		"planned delete volume/" + orphanVol, "applied delete volume/" + orphanVol}; !slices.Equal(got, w) {
		t.Fatalf("pass: got %q, want %q", got, w)
	}
	if _, err := s.LBStatus(ctx, orphanLB); err == nil {
		if lb, _ := s.LBStatus(ctx, orphanLB); lb.ProvisioningStatus != "DELETED" {
			t.Fatalf("load balancer %s: got %s after apply, want gone", orphanLB, lb.ProvisioningStatus)
		}
	}
	if _, err := s.VolumeStatus(ctx, s.Member, orphanVol); !errors.Is(err, openstacktest.ErrNotFound) {
		t.Fatalf("volume %s after apply: got %v, want not found", orphanVol, err)
	}
	for _, id := range append(lookalikes, keptLB) {
		if lb, err := s.LBStatus(ctx, id); err != nil || lb.ProvisioningStatus != "ACTIVE" {
			t.Errorf("look-alike load balancer %s: got %+v %v, want ACTIVE", id, lb, err)
		}
	}
	for _, id := range append(otherVols, keptVol, heldVol) {
		if v, err := s.VolumeStatus(ctx, s.Member, id); err != nil || v.Status != "available" {
			t.Errorf("look-alike volume %s: got %+v %v, want available", id, v, err)
		}
	}
	if got := remediatetest.Summary(remediatetest.Pass(t, c, r, on)); len(got) != 0 {
		t.Fatalf("pass after clean-up: got %q, want no records", got)
	}

	// Decommissioned: the Service and PV no longer matter, the naming and
	// metadata still do.
	dec := remediator(t, s, nil, "k", func(c *CloudDebrisConfig) { c.Decommissioned = true })
	acts, err := dec.Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"loadbalancer/" + keptLB, "volume/" + keptVol, "volume/" + heldVol}
	slices.Sort(want)
	if got := targets(acts); !slices.Equal(got, want) {
		t.Fatalf("decommissioned plan: got %q, want %q", got, want)
	}
}

// A Kubernetes API that refuses the read plans nothing: without the list,
// nothing is proven absent.
func TestKubeErrorPlansNothing(t *testing.T) {
	s := osStack(t)
	ctx := ctxT(t)
	if _, err := s.CreateVolume(ctx, s.Member, "pvc-fc", csiMeta("fc", "pvc-fc")); err != nil {
		t.Fatal(err)
	}
	r := remediator(t, s, kubeClient(t, "bad-token"), "fc", nil)
	acts, err := r.Plan(ctx)
	if err == nil || len(acts) != 0 {
		t.Fatalf("got %d actions, err %v; want none and an error", len(acts), err)
	}
	c := remediatetest.NewLog()
	run, err := remediate.NewRunner(remediate.RunnerConfig{Node: "a", Cluster: c, State: c.M,
		Remediators: []remediate.Entry{{Remediator: r, Settings: remediate.Settings{Mode: remediate.ModeOn}}}})
	if err != nil {
		t.Fatal(err)
	}
	if rep := run.Pass(ctx); rep.Err == nil || len(c.M.Remediations()) != 0 {
		t.Fatalf("pass: got err %v and %d records, want an error and none", rep.Err, len(c.M.Remediations()))
	}
}

// A volume whose delete never completes (stuck deleting, as a dead backend
// leaves it) is followed until the delete timeout, then recorded as needing
// an admin with the command to run, and parked: the next passes never try
// it again. Found stuck for longer than the timeout, or error_deleting, it
// is report-only from the start.
func TestStuckVolumeIsReportedNotRetried(t *testing.T) {
	s := osStack(t)
	kc := kubeClient(t, "")
	ctx := ctxT(t)
	id, err := s.CreateVolume(ctx, s.Member, "pvc-stuck", csiMeta("stuck", "pvc-stuck"))
	if err != nil {
		t.Fatal(err)
	}
	r := remediator(t, s, kc, "stuck", func(c *CloudDebrisConfig) { c.DeleteTimeout = 3 * time.Second })
	sawPVAskDeletion(t, r, "pvc-stuck", id)
	if err := s.SetVolumeStatus(ctx, id, "deleting", time.Time{}); err != nil {
		t.Fatal(err)
	}
	c := remediatetest.NewLog()
	on := remediate.Settings{Mode: remediate.ModeOn}
	recs := remediatetest.Pass(t, c, r, on)
	if got, w := remediatetest.Summary(recs), []string{"planned delete volume/" + id, "failed delete volume/" + id}; !slices.Equal(got, w) {
		t.Fatalf("got %q, want %q", got, w)
	}
	if d := recs[1].Detail; !recs[1].NeedsAdmin || !strings.Contains(d, "stuck deleting") || !strings.Contains(d, "openstack volume set --state error "+id) {
		t.Fatalf("got detail %q needs_admin %v, want the stuck state and the admin's command", d, recs[1].NeedsAdmin)
	}
	for i := 0; i < 2; i++ {
		if got := remediatetest.Summary(remediatetest.Pass(t, c, r, on)); len(got) != 0 {
			t.Fatalf("pass %d after: got %q, want nothing (parked)", i+2, got)
		}
	}

	for _, st := range []struct {
		status string
		at     time.Time
	}{{"deleting", time.Now().Add(-time.Hour)}, {"error_deleting", time.Time{}}} {
		if err := s.SetVolumeStatus(ctx, id, st.status, st.at); err != nil {
			t.Fatal(err)
		}
		acts, err := r.Plan(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(acts) != 1 || acts[0].ReportOnly == "" || !strings.Contains(acts[0].ReportOnly, "stuck "+st.status) {
			t.Fatalf("%s: got %+v, want one report-only action naming the state", st.status, acts)
		}
		var se *StuckError
		if err := r.Apply(ctx, acts[0]); st.status == "error_deleting" && (!errors.As(err, &se) || !errors.Is(err, remediate.ErrNeedsAdmin)) {
			t.Fatalf("apply on error_deleting: got %v, want a StuckError needing an admin", err)
		}
	}
	if v, err := s.VolumeStatus(ctx, s.Member, id); err != nil || v.Status != "error_deleting" {
		t.Fatalf("got %+v %v, want the volume left error_deleting", v, err)
	}
}

// The runner's caps hold for cloud-debris as for every remediator: with a
// per-pass cap of 1, one of two orphans is deleted and the other recorded
// skipped_cap; with a per-hour cap of 1 (counted from the replicated
// records), the other waits out the hour whatever the per-pass cap.
func TestCaps(t *testing.T) {
	s := osStack(t)
	kc := kubeClient(t, "")
	ctx := ctxT(t)
	var ids []string
	r := remediator(t, s, kc, "cap", nil)
	for _, pv := range []string{"pvc-cap-1", "pvc-cap-2"} {
		id, err := s.CreateVolume(ctx, s.Member, pv, csiMeta("cap", pv))
		if err != nil {
			t.Fatal(err)
		}
		sawPVAskDeletion(t, r, pv, id)
		ids = append(ids, id)
	}
	slices.Sort(ids)
	c := remediatetest.NewLog()
	got := remediatetest.Summary(remediatetest.Pass(t, c, r, remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 1}))
	if w := []string{"planned delete volume/" + ids[0], "applied delete volume/" + ids[0], "skipped_cap delete volume/" + ids[1]}; !slices.Equal(got, w) {
		t.Fatalf("got %q, want %q", got, w)
	}
	if v, err := s.VolumeStatus(context.Background(), s.Member, ids[1]); err != nil || v.Status != "available" {
		t.Fatalf("capped volume: got %+v %v, want available", v, err)
	}
	hour := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 1}
	recs := remediatetest.Pass(t, c, r, hour)
	if got, w := remediatetest.Summary(recs), []string{"skipped_cap delete volume/" + ids[1]}; !slices.Equal(got, w) || !strings.Contains(recs[0].Detail, "per-hour cap 1") {
		t.Fatalf("hour cap: got %q (%+v), want %q for the per-hour cap", got, recs, w)
	}
	if v, err := s.VolumeStatus(context.Background(), s.Member, ids[1]); err != nil || v.Status != "available" {
		t.Fatalf("volume past the hour cap: got %+v %v, want available", v, err)
	}
}

// With admin credentials, which list every project's resources, only the
// configured project's are planned: an identical load balancer and volume
// of the admin project are left alone.
func TestAdminCredentialsStayInTheProject(t *testing.T) {
	s := osStack(t)
	kc := kubeClient(t, "")
	ctx := ctxT(t)
	var mine []string
	r := remediator(t, s, kc, "adm", func(c *CloudDebrisConfig) {
		c.OpenStackAuth.Cloud = "admin"
		c.ProjectID = s.Member.ProjectID
	})
	for i, c := range []openstacktest.Credentials{s.Member, s.Admin} {
		lb := createMarkedLB(t, s, c, "kube_service_adm_ns_web", cpoMarks("kube_service_adm_ns_web", "adm", "ns", "web"))
		vol, err := s.CreateVolume(ctx, c, "pvc-adm", csiMeta("adm", "pvc-adm"))
		if err != nil {
			t.Fatal(err)
		}
		// Both volumes' PVs asked for their deletion: only the project
		// tells them apart.
		sawPVAskDeletion(t, r, fmt.Sprintf("pvc-adm-%d", i), vol)
		if c == s.Member {
			mine = []string{"loadbalancer/" + lb, "volume/" + vol}
		}
	}
	acts, err := r.Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := targets(acts); !slices.Equal(got, mine) {
		t.Fatalf("got %q, want only the member project's %q", got, mine)
	}
}
