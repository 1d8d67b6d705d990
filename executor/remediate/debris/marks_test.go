package debris

import (
	"errors"
	"slices"
	"testing"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/remediatetest"
	"github.com/drwatch/drwatch/test/openstacktest"
)

// Against real Octavia, Cinder and kube-apiserver: a resource is debris
// only when it carries every mark cloud-provider-openstack and Cinder CSI
// write, each naming this cluster, and no Service refers to it. Look-alikes
// with the right name but a mark missing or naming another cluster (the
// neighbour a shared name prefix or a hand-made resource looks like), and
// a load balancer a Service of another name adopted by its ID, stay; the
// fully marked orphans still go.
func TestDebrisCarriesEveryMarkOfTheCluster(t *testing.T) {
	s := osStack(t)
	kc := kubeClient(t, "")
	ctx := ctxT(t)
	lb := func(svc string, m func(name string) lbMarks) string {
		name := "kube_service_mk_shop_" + svc
		return createMarkedLB(t, s, s.Member, name, m(name))
	}
	full := func(svc string) func(string) lbMarks {
		return func(name string) lbMarks { return cpoMarks(name, "mk", "shop", svc) }
	}
	orphanLB := lb("gone", full("gone"))
	adopted := lb("adopted", full("adopted"))
	lookalikes := []string{
		lb("other", func(name string) lbMarks { return cpoMarks(name, "mk2", "shop", "other") }),
		lb("notag", func(string) lbMarks { return lbMarks{Description: cpoMarks("", "mk", "shop", "notag").Description} }),
		lb("nodesc", func(name string) lbMarks { return lbMarks{Tags: []string{name}} }),
		lb("wrongsvc", func(name string) lbMarks { return cpoMarks(name, "mk", "shop", "else") }),
		adopted,
	}
	createLBService(t, "shop", "adopter", map[string]string{"loadbalancer.openstack.org/load-balancer-id": adopted}, "")

	r := remediator(t, s, kc, "mk", nil)
	vol := func(pv string, meta map[string]string) string {
		id, err := s.CreateVolume(ctx, s.Member, pv, meta)
		if err != nil {
			t.Fatal(err)
		}
		sawPVAskDeletion(t, r, pv, id)
		return id
	}
	orphanVol := vol("pvc-mk-gone", csiMeta("mk", "pvc-mk-gone"))
	noPVC := csiMeta("mk", "pvc-mk-nopvc")
	delete(noPVC, CSIPVCNameKey)
	noPV := csiMeta("mk", "pvc-mk-nopv")
	delete(noPV, CSIPVNameKey)
	lookalikeVols := []string{vol("pvc-mk-nopvc", noPVC), vol("pvc-mk-nopv", noPV), vol("pvc-mk-other", csiMeta("mk2", "pvc-mk-other"))}

	planWant(t, r, "loadbalancer/"+orphanLB, "volume/"+orphanVol)
	c := remediatetest.NewLog()
	got := remediatetest.Summary(remediatetest.Pass(t, c, r, remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5}))
	if w := []string{"planned delete loadbalancer/" + orphanLB, "applied delete loadbalancer/" + orphanLB,
		"planned delete volume/" + orphanVol, "applied delete volume/" + orphanVol}; !slices.Equal(got, w) {
		t.Fatalf("pass: got %q, want %q", got, w)
	}
	if lb, err := s.LBStatus(ctx, orphanLB); err == nil && lb.ProvisioningStatus != "DELETED" {
		t.Fatalf("load balancer %s: got %s after apply, want gone", orphanLB, lb.ProvisioningStatus)
	}
	if _, err := s.VolumeStatus(ctx, s.Member, orphanVol); !errors.Is(err, openstacktest.ErrNotFound) {
		t.Fatalf("volume %s after apply: got %v, want not found", orphanVol, err)
	}
	for _, id := range lookalikes {
		if lb, err := s.LBStatus(ctx, id); err != nil || lb.ProvisioningStatus != "ACTIVE" {
			t.Errorf("look-alike load balancer %s: got %+v %v, want ACTIVE", id, lb, err)
		}
	}
	for _, id := range lookalikeVols {
		if v, err := s.VolumeStatus(ctx, s.Member, id); err != nil || v.Status != "available" {
			t.Errorf("look-alike volume %s: got %+v %v, want available", id, v, err)
		}
	}
	// Apply rereads the marks: a load balancer whose description no
	// longer names the cluster is refused.
	kept := lb("relabelled", full("relabelled"))
	acts := planWant(t, r, "loadbalancer/"+kept)
	markLB(t, s, s.Member, kept, cpoMarks("kube_service_mk_shop_relabelled", "mk2", "shop", "relabelled"))
	if err := r.Apply(ctx, acts[0]); !errors.Is(err, remediate.ErrPrecondition) {
		t.Fatalf("apply after the marks changed: got %v, want ErrPrecondition", err)
	}
}
