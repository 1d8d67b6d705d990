package debris

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/remediatetest"
	"github.com/drwatch/drwatch/test/kubetest"
	"github.com/drwatch/drwatch/test/openstacktest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
)

// Against real Cinder and kube-apiserver, on a live cluster: a volume
// whose PV is gone is deleted only when drwatch saw that PV ask for its
// deletion (reclaim policy Delete). Look-alikes with the same metadata are
// kept and reported: a PV with Retain, Released and still there, or
// deleted by hand; a PV switched from Delete to Retain before it went; a
// volume drwatch never saw with a PV. The record survives a restart in
// its file, and a remediator without it keeps everything.
func TestVolumeGoesOnlyWhenItsPVAskedForDeletion(t *testing.T) {
	s := osStack(t)
	kc := kubeClient(t, "")
	admin := kubetest.Shared(t).Clientset(t)
	ctx := ctxT(t)
	mustVol := func(pv string) string {
		id, err := s.CreateVolume(ctx, s.Member, pv, csiMeta("rc", pv))
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	asked, retained, released, flipped, unseen := mustVol("pvc-rc-del"), mustVol("pvc-rc-ret"), mustVol("pvc-rc-rel"), mustVol("pvc-rc-flip"), mustVol("pvc-rc-unseen")
	createPVWithPolicy(t, "pvc-rc-del", asked, corev1.PersistentVolumeReclaimDelete)
	createPVWithPolicy(t, "pvc-rc-ret", retained, corev1.PersistentVolumeReclaimRetain)
	createPVWithPolicy(t, "pvc-rc-rel", released, corev1.PersistentVolumeReclaimRetain)
	createPVWithPolicy(t, "pvc-rc-flip", flipped, corev1.PersistentVolumeReclaimDelete)
	// Released: its claim is gone, the PV (Retain) stays.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pv, err := admin.CoreV1().PersistentVolumes().Get(ctx, "pvc-rc-rel", metav1.GetOptions{})
		if err != nil {
			return err
		}
		pv.Status.Phase = corev1.VolumeReleased
		_, err = admin.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}

	file := filepath.Join(t.TempDir(), "reclaim.json")
	r := remediator(t, s, kc, "rc", nil, WithReclaimFile(file))
	acts, err := r.Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := targets(acts), []string{"volume/" + unseen}; !slices.Equal(got, want) || acts[0].ReportOnly == "" {
		t.Fatalf("every PV present: got %+v, want only the report of %q", acts, want)
	}
	if _, err := admin.CoreV1().PersistentVolumes().Patch(ctx, "pvc-rc-flip", types.MergePatchType,
		[]byte(`{"spec":{"persistentVolumeReclaimPolicy":"Retain"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Plan(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"pvc-rc-del", "pvc-rc-ret", "pvc-rc-flip"} {
		deletePV(t, name)
	}

	acts, err = r.Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kept := []string{retained, flipped, unseen}
	want := []string{"volume/" + asked}
	for _, id := range kept {
		want = append(want, "volume/"+id)
	}
	slices.Sort(want)
	if got := targets(acts); !slices.Equal(got, want) {
		t.Fatalf("plan: got %q, want %q (the Released PV's volume never)", got, want)
	}
	for _, a := range acts {
		switch {
		case a.Target == "volume/"+asked && a.ReportOnly != "":
			t.Errorf("%s: got report-only %q, want a delete", a.Target, a.ReportOnly)
		case a.Target == "volume/"+unseen && !strings.Contains(a.ReportOnly, "never saw its PersistentVolume"):
			t.Errorf("%s: got %q, want kept: never seen with a PV", a.Target, a.ReportOnly)
		case a.Target != "volume/"+asked && a.Target != "volume/"+unseen && !strings.Contains(a.ReportOnly, "reclaim policy Retain"):
			t.Errorf("%s: got %q, want kept for reclaim policy Retain", a.Target, a.ReportOnly)
		}
	}

	// A restarted node reads the record from its file; without the file
	// nothing is proven deletable.
	restarted := remediator(t, s, kc, "rc", nil, WithReclaimFile(file))
	again, err := restarted.Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(again, acts, func(a, b remediate.Action) bool { return a.Target == b.Target && a.ReportOnly == b.ReportOnly }) {
		t.Fatalf("restarted: got %+v, want %+v", again, acts)
	}
	blank, err := remediator(t, s, kc, "rc", nil).Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range blank {
		if a.ReportOnly == "" {
			t.Fatalf("without the record: %s is a delete, want every volume kept", a.Target)
		}
	}

	c := remediatetest.NewLog()
	got := remediatetest.Summary(remediatetest.Pass(t, c, r, remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5}))
	if !slices.Contains(got, "applied delete volume/"+asked) || slices.ContainsFunc(got, func(s string) bool {
		return strings.HasPrefix(s, "applied") && s != "applied delete volume/"+asked
	}) {
		t.Fatalf("pass: got %q, want only volume/%s applied", got, asked)
	}
	if _, err := s.VolumeStatus(ctx, s.Member, asked); !errors.Is(err, openstacktest.ErrNotFound) {
		t.Fatalf("volume %s: got %v, want not found", asked, err)
	}
	for _, id := range append(kept, released) {
		if v, err := s.VolumeStatus(ctx, s.Member, id); err != nil || v.Status != "available" {
			t.Errorf("kept volume %s: got %+v %v, want available", id, v, err)
		}
	}
	// Apply checks the record itself: a delete of a kept volume is refused.
	if err := r.Apply(ctx, remediate.Action{Target: "volume/" + retained, Data: volData{ID: retained, PV: "pvc-rc-ret"}}); !errors.Is(err, remediate.ErrPrecondition) {
		t.Fatalf("apply to a retained volume: got %v, want ErrPrecondition", err)
	}
}
