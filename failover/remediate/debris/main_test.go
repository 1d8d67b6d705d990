package debris

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover/remediate"
	"github.com/drwatch/drwatch/failover/remediate/kube"
	"github.com/drwatch/drwatch/failover/remediate/kubeapi"
	"github.com/drwatch/drwatch/test/kubetest"
	"github.com/drwatch/drwatch/test/openstacktest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// One real Keystone + Octavia + Neutron + Cinder stack and one real kube-apiserver
// for the package, started on first use and stopped after every test ran.
func TestMain(m *testing.M) {
	code := m.Run()
	openstacktest.CloseShared()
	kubetest.CloseShared()
	os.Exit(code)
}

// osStack returns the package's OpenStack stack, with Neutron and Cinder.
func osStack(t *testing.T) *openstacktest.Stack {
	t.Helper()
	return openstacktest.SharedWith(t, openstacktest.Options{Neutron: true, Cinder: true})
}

// kubeClient is the node's client of the package's cluster, as context
// ctxName ("" for the current one, admin).
func kubeClient(t *testing.T, ctxName string) kubeapi.Interface {
	t.Helper()
	c := kubetest.Shared(t)
	kc, err := kube.NewClient(remediate.KubeCluster{Kubeconfig: c.Kubeconfig, Context: ctxName})
	if err != nil {
		t.Fatal(err)
	}
	return kc
}

// remediator is cloud-debris for cluster (CSI cluster the same) in the
// member project, with the member's credentials.
func remediator(t *testing.T, s *openstacktest.Stack, kc kubeapi.Interface, cluster string, tune func(*remediate.CloudDebrisConfig), opts ...Option) *Debris {
	t.Helper()
	cfg := remediate.CloudDebrisConfig{
		OpenStackAuth: remediate.OpenStackAuth{Cloud: "member", CloudsFile: s.CloudsFile},
		ClusterName:   cluster,
		DeleteTimeout: 2 * time.Minute,
		Site:          "primary",
	}
	if tune != nil {
		tune(&cfg)
	}
	d, err := New(cfg, kc, nil, append([]Option{WithPollInterval(200 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func createService(t *testing.T, ns, name string) {
	kc := kubetest.Shared(t).Clientset(t)
	t.Helper()
	ctx := ctxT(t)
	_, _ = kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	_, err := kc.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

func createPV(t *testing.T, name, handle string) {
	kc := kubetest.Shared(t).Clientset(t)
	t.Helper()
	_, err := kc.CoreV1().PersistentVolumes().Create(ctxT(t), &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "cinder.csi.openstack.org", VolumeHandle: handle}},
		}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

func csiMeta(cluster, pv string) map[string]string {
	m := map[string]string{CSIPVNameKey: pv, "csi.storage.k8s.io/pvc/name": "data", "csi.storage.k8s.io/pvc/namespace": "ns"}
	if cluster != "" {
		m[CSIClusterKey] = cluster
	}
	return m
}
