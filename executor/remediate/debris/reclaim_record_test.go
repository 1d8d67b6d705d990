package debris

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pvHolding(name, vol string, policy corev1.PersistentVolumeReclaimPolicy) corev1.PersistentVolume {
	return corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
		PersistentVolumeReclaimPolicy: policy,
		PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{VolumeHandle: vol}}}}
}

func lbService(ns, name string, annotations map[string]string) corev1.Service {
	return corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
}

// The reclaim record keeps a volume unless a PV holding it was seen with
// Delete and never with Retain, and a Service's floating IP unless the
// Service was seen and never asked to keep it (any value but a false one
// counts as asking); past its bound the oldest entries go, which only
// keeps more; a record it cannot read stops the node.
func TestReclaimRecordKeepsUnlessDeleteWasSeen(t *testing.T) {
	file := filepath.Join(t.TempDir(), ReclaimFileName)
	r, err := loadReclaimRecord(file)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1700000000, 0)
	if err := r.observe([]corev1.PersistentVolume{pvHolding("a", "vol-a", corev1.PersistentVolumeReclaimDelete),
		pvHolding("b", "vol-b", corev1.PersistentVolumeReclaimRetain), pvHolding("nfs", "", corev1.PersistentVolumeReclaimDelete)}, []corev1.Service{
		lbService("shop", "plain", nil), lbService("shop", "keeps", map[string]string{KeepFloatingIPAnnotation: "true"}),
		lbService("shop", "odd", map[string]string{KeepFloatingIPAnnotation: "yes"}), lbService("shop", "flips", nil),
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "internal"}}}, t0); err != nil {
		t.Fatal(err)
	}
	// Retain is sticky: a later Delete does not undo it.
	if err := r.observe([]corev1.PersistentVolume{pvHolding("b", "vol-b", corev1.PersistentVolumeReclaimDelete)}, []corev1.Service{
		lbService("shop", "flips", map[string]string{KeepFloatingIPAnnotation: "true"})}, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := r.observe(nil, []corev1.Service{lbService("shop", "flips", map[string]string{KeepFloatingIPAnnotation: "false"})}, t0.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		vol            string
		decommissioned bool
		want           string // substring of the reason to keep; "" means debris
	}{
		{"vol-a", false, ""},
		{"vol-b", false, "reclaim policy Retain"},
		{"vol-b", true, "reclaim policy Retain"},
		{"vol-never", false, "never saw"},
		{"vol-never", true, ""},
	} {
		got := r.keepReason(c.vol, c.decommissioned)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("keepReason(%s, decommissioned %v): got %q, want %q", c.vol, c.decommissioned, got, c.want)
		}
	}
	for _, c := range []struct {
		svc            string
		decommissioned bool
		want           string
	}{
		{"plain", false, ""},
		{"keeps", false, "asked for it"},
		{"keeps", true, "asked for it"},
		{"odd", false, "asked for it"},
		{"flips", false, "asked for it"},
		{"internal", false, "never saw"},
		{"never", false, "never saw"},
		{"never", true, ""},
	} {
		got := r.keepFIPReason(ServiceRef{"shop", c.svc}, c.decommissioned)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("keepFIPReason(shop/%s, decommissioned %v): got %q, want %q", c.svc, c.decommissioned, got, c.want)
		}
	}
	again, err := loadReclaimRecord(file)
	if err != nil {
		t.Fatal(err)
	}
	if again.keepReason("vol-a", false) != "" || again.keepReason("vol-b", false) == "" ||
		again.keepFIPReason(ServiceRef{"shop", "plain"}, false) != "" || again.keepFIPReason(ServiceRef{"shop", "keeps"}, false) == "" {
		t.Fatalf("reloaded record lost what it saw: %+v", again.entries)
	}

	many := make([]corev1.PersistentVolume, MaxReclaimEntries+1)
	for i := range many {
		many[i] = pvHolding("p", "v"+strings.Repeat("x", 3)+time.Duration(i).String(), corev1.PersistentVolumeReclaimDelete)
	}
	if err := r.observe(many, nil, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n := len(r.entries); n != MaxReclaimEntries {
		t.Fatalf("got %d entries, want the bound %d", n, MaxReclaimEntries)
	}
	if r.keepReason("vol-a", false) == "" {
		t.Fatal("vol-a, the oldest, survived the bound; want it dropped and so kept")
	}

	if err := os.WriteFile(file, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadReclaimRecord(file); err == nil {
		t.Fatal("corrupt record: got nil, want an error")
	}
	if _, err := loadReclaimRecord(filepath.Join(t.TempDir(), "absent")); errors.Is(err, os.ErrNotExist) || err != nil {
		t.Fatalf("absent record: got %v, want an empty record", err)
	}
}
