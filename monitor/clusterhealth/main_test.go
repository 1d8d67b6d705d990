package clusterhealth

import (
	"context"
	"os"
	"testing"

	"github.com/drwatch/drwatch/internal/kubeconfig"
	"github.com/drwatch/drwatch/test/kubetest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// One real kube-apiserver (with etcd) for the package, started on first
// use and stopped by TestMain.
func TestMain(m *testing.M) {
	code := m.Run()
	kubetest.CloseShared()
	os.Exit(code)
}

// fixtures returns the admin client the tests build their objects with
// (client-go's full clientset), and the cluster, with no nodes left from
// earlier tests.
func fixtures(t *testing.T) (kubernetes.Interface, *kubetest.Cluster) {
	t.Helper()
	cluster := kubetest.Shared(t)
	admin := cluster.Clientset(t)
	deleteNodes := func() {
		if err := admin.CoreV1().Nodes().DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			t.Fatalf("delete nodes: %v", err)
		}
	}
	deleteNodes()
	t.Cleanup(deleteNodes)
	return admin, cluster
}

func restConfigOf(c *kubetest.Cluster) (*rest.Config, error) {
	return kubeconfig.Cluster{Kubeconfig: c.Kubeconfig}.RESTConfig()
}
