package debris_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/all"
	"github.com/drwatch/drwatch/executor/remediate/debris"
	"github.com/drwatch/drwatch/executor/remediate/repair"
	"github.com/drwatch/drwatch/internal/kubeconfig"
	"github.com/drwatch/drwatch/test/kubetest"
	"github.com/drwatch/drwatch/test/openstacktest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The remediations section turns cloud-debris on as `drwatch remediate
// plan` and the node build it (all.Build), and PlanAll,
// what the plan command prints, lists its action against the real
// services (a volume no PV was seen to delete: kept and reported) and
// records the PVs it saw in the reclaim file the node gives it; off, it is
// not built at all.
func TestPlanFromConfig(t *testing.T) {
	discard := slog.New(slog.DiscardHandler)
	s := openstacktest.SharedWith(t, openstacktest.Options{Neutron: true, Cinder: true})
	kc := kubetest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	vol, err := s.CreateVolume(ctx, s.Member, "pvc-wired", map[string]string{debris.CSIClusterKey: "wired", debris.CSIPVNameKey: "pvc-wired",
		debris.CSIPVCNameKey: "data", debris.CSIPVCNamespaceKey: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := all.Config{
		Config: remediate.Config{Kubernetes: kubeconfig.Sites{Primary: kubeconfig.Cluster{Kubeconfig: kc.Kubeconfig}}},
		CloudDebris: debris.CloudDebrisConfig{Settings: remediate.Settings{Mode: remediate.ModeDryRun},
			OpenStackAuth: remediate.OpenStackAuth{Cloud: "member", CloudsFile: s.CloudsFile}, ClusterName: "wired"},
	}
	// The node hands cloud-debris its reclaim record's file: a plan records
	// there the PVs it saw.
	record := filepath.Join(t.TempDir(), debris.ReclaimFileName)
	entries, err := all.Build(cfg, all.Options{Env: repair.Env{Log: discard, DataDir: filepath.Dir(record)}})
	if err != nil {
		t.Fatal(err)
	}
	admin := kc.Clientset(t)
	if _, err := admin.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-wired-seen"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "cinder.csi.openstack.org", VolumeHandle: "vol-wired-seen"}},
		}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	planned, err := remediate.PlanAll(ctx, entries)
	if err != nil {
		t.Fatal(err)
	}
	if len(planned) != 1 || planned[0].Remediation != debris.Name || planned[0].Target != "volume/"+vol || planned[0].Held != "" {
		t.Fatalf("got %+v, want one cloud-debris delete of volume/%s", planned, vol)
	}
	if !strings.Contains(planned[0].Reason, "PersistentVolume pvc-wired") {
		t.Errorf("reason %q does not name the PV", planned[0].Reason)
	}
	if !strings.Contains(planned[0].ReportOnly, "never saw its PersistentVolume") {
		t.Errorf("got report-only %q, want the volume kept: no PV was ever seen asking for its deletion", planned[0].ReportOnly)
	}

	if b, err := os.ReadFile(record); err != nil || !strings.Contains(string(b), "vol-wired-seen") {
		t.Fatalf("reclaim record: got %q %v, want the PV's volume recorded", b, err)
	}

	cfg.CloudDebris.Mode = remediate.ModeOff
	if entries, err = all.Build(cfg, all.Options{Env: repair.Env{Log: discard}}); err != nil || len(entries) != 0 {
		t.Fatalf("off: got %d entries, %v; want none", len(entries), err)
	}
	cfg.CloudDebris.Mode = remediate.ModeOn
	cfg.Kubernetes = kubeconfig.Sites{} // no kube client
	if _, err := all.Build(cfg, all.Options{Env: repair.Env{Log: discard}}); err == nil || !strings.Contains(err.Error(), "remediations.kubernetes.primary") {
		t.Fatalf("no kube client: got %v, want an error naming remediations.kubernetes.primary", err)
	}
}
