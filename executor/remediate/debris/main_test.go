package debris

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/kube"
	"github.com/drwatch/drwatch/internal/kubeapi"
	"github.com/drwatch/drwatch/internal/kubeconfig"
	"github.com/drwatch/drwatch/test/kubetest"
	"github.com/drwatch/drwatch/test/openstacktest"
	"github.com/drwatch/drwatch/test/poll"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/quotasets"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// One real Keystone + Octavia + Neutron + Cinder stack and one real kube-apiserver
// for the package, started on first use and stopped after every test ran.
func TestMain(m *testing.M) {
	code := m.Run()
	openstacktest.CloseShared()
	kubetest.CloseShared()
	os.Exit(code)
}

// osStack returns the package's OpenStack stack, with Neutron and Cinder,
// the member project allowed more volumes than Cinder's default 10: the
// package's tests keep their look-alikes.
func osStack(t *testing.T) *openstacktest.Stack {
	t.Helper()
	s := openstacktest.SharedWith(t, openstacktest.Options{Neutron: true, Cinder: true})
	volumeQuota.Do(func() {
		d := remediator(t, s, nil, "quota", func(cfg *CloudDebrisConfig) {
			cfg.Decommissioned = true
			cfg.OpenStackAuth.Cloud = "admin"
		})
		ctx := ctxT(t)
		cl, err := d.clients(ctx)
		if err != nil {
			volumeQuotaErr = err
			return
		}
		defer cl.done()
		n := 100
		_, volumeQuotaErr = quotasets.Update(ctx, cl.vol, s.Member.ProjectID, quotasets.UpdateOpts{Volumes: &n}).Extract()
	})
	if volumeQuotaErr != nil {
		t.Fatalf("raise the member's volume quota: %v", volumeQuotaErr)
	}
	return s
}

var (
	volumeQuota    sync.Once
	volumeQuotaErr error
)

// kubeClient is the node's client of the package's cluster, as context
// ctxName ("" for the current one, admin).
func kubeClient(t *testing.T, ctxName string) kubeapi.Interface {
	t.Helper()
	c := kubetest.Shared(t)
	kc, err := kube.NewClient(kubeconfig.Cluster{Kubeconfig: c.Kubeconfig, Context: ctxName})
	if err != nil {
		t.Fatal(err)
	}
	return kc
}

// remediator is cloud-debris for cluster (CSI cluster the same) in the
// member project, with the member's credentials.
func remediator(t *testing.T, s *openstacktest.Stack, kc kubeapi.Interface, cluster string, tune func(*CloudDebrisConfig), opts ...Option) *Debris {
	t.Helper()
	cfg := CloudDebrisConfig{
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
	t.Helper()
	createPVWithPolicy(t, name, handle, "")
}

// createPVWithPolicy creates a Cinder CSI PV with reclaim policy policy
// ("" for the API's default for a PV made by hand, Retain).
func createPVWithPolicy(t *testing.T, name, handle string, policy corev1.PersistentVolumeReclaimPolicy) {
	kc := kubetest.Shared(t).Clientset(t)
	t.Helper()
	_, err := kc.CoreV1().PersistentVolumes().Create(ctxT(t), &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: policy,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "cinder.csi.openstack.org", VolumeHandle: handle}},
		}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// deletePV deletes a PV and waits until the API no longer has it.
func deletePV(t *testing.T, name string) {
	t.Helper()
	kc := kubetest.Shared(t).Clientset(t)
	ctx := ctxT(t)
	if err := kc.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// No PV protection controller runs: lift its finalizer as it does for
	// a PV no claim is bound to.
	if _, err := kc.CoreV1().PersistentVolumes().Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	poll.Until(t, 2*time.Minute, func() bool {
		_, err := kc.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, "persistent volume %s is gone", name)
}

// sawPVAskDeletion shows r a PV named name with reclaim policy Delete
// holding vol (as the CSI provisioner makes one), then deletes the PV, as
// the provisioner does once it asked Cinder to delete the volume.
func sawPVAskDeletion(t *testing.T, r *Debris, name, vol string) {
	t.Helper()
	createPVWithPolicy(t, name, vol, corev1.PersistentVolumeReclaimDelete)
	if _, err := r.Plan(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	deletePV(t, name)
}

func csiMeta(cluster, pv string) map[string]string {
	m := map[string]string{CSIPVNameKey: pv, CSIPVCNameKey: "data", CSIPVCNamespaceKey: "ns"}
	if cluster != "" {
		m[CSIClusterKey] = cluster
	}
	return m
}

// lbMarks are the marks cloud-provider-openstack writes on a Service's
// load balancer besides its name.
type lbMarks struct {
	Description string
	Tags        []string
}

// cpoMarks are those it writes for name, made for Service ns/svc of
// cluster.
func cpoMarks(name, cluster, ns, svc string) lbMarks {
	return lbMarks{Description: "Kubernetes external service " + ns + "/" + svc + " from cluster " + cluster, Tags: []string{name}}
}

// createMarkedLB creates a load balancer named name in c's project and
// gives it marks through Octavia's API, as the cloud provider does, then
// waits until it is ACTIVE again.
func createMarkedLB(t *testing.T, s *openstacktest.Stack, c openstacktest.Credentials, name string, m lbMarks) string {
	t.Helper()
	ctx := ctxT(t)
	id, err := s.CreateLBAs(ctx, c, name)
	if err != nil {
		t.Fatal(err)
	}
	markLB(t, s, c, id, m)
	return id
}

// markLB sets a load balancer's description and tags in c's project.
func markLB(t *testing.T, s *openstacktest.Stack, c openstacktest.Credentials, id string, m lbMarks) {
	t.Helper()
	ctx := ctxT(t)
	cloud := "member"
	if c == s.Admin {
		cloud = "admin"
	}
	d := remediator(t, s, nil, "marks", func(cfg *CloudDebrisConfig) {
		cfg.Decommissioned = true
		cfg.OpenStackAuth.Cloud = cloud
	})
	cl, err := d.clients(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.done()
	tags := m.Tags
	if tags == nil {
		tags = []string{}
	}
	if _, err := loadbalancers.Update(ctx, cl.lb, id, loadbalancers.UpdateOpts{Description: &m.Description, Tags: &tags}).Extract(); err != nil {
		t.Fatalf("mark load balancer %s: %v", id, err)
	}
	if err := s.WaitLB(ctx, id, "ACTIVE"); err != nil {
		t.Fatal(err)
	}
}

// createLBService creates a Service of type LoadBalancer (no cloud
// controller runs: it stays pending) with annotations.
func createLBService(t *testing.T, ns, name string, annotations map[string]string, lbIP string) {
	kc := kubetest.Shared(t).Clientset(t)
	t.Helper()
	ctx := ctxT(t)
	_, _ = kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	_, err := kc.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerIP: lbIP, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// deleteService deletes a Service and waits until the API no longer has
// it.
func deleteService(t *testing.T, ns, name string) {
	t.Helper()
	kc := kubetest.Shared(t).Clientset(t)
	ctx := ctxT(t)
	if err := kc.CoreV1().Services(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 2*time.Minute, func() bool {
		_, err := kc.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, "service %s/%s is gone", ns, name)
}

// sawServiceGo shows r the LoadBalancer Service ns/name with annotations,
// then deletes it, as a user deleting a Service does.
func sawServiceGo(t *testing.T, r *Debris, ns, name string, annotations map[string]string) {
	t.Helper()
	createLBService(t, ns, name, annotations, "")
	if _, err := r.Plan(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	deleteService(t, ns, name)
}
