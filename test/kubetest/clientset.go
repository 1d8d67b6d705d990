package kubetest

import (
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Clientset returns client-go's full typed clientset for the cluster, as
// its kubeconfig's current context ("admin"), for tests to build and
// inspect fixtures with (namespaces, status subresources, storage objects):
// the code under test calls the cluster through its own, leaner client.
// The clientset is built once per cluster.
func (c *Cluster) Clientset(t testing.TB) kubernetes.Interface {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.clientset == nil {
		rc, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
		if err != nil {
			t.Fatalf("kubeconfig %s: %v", c.Kubeconfig, err)
		}
		if c.clientset, err = kubernetes.NewForConfig(rc); err != nil {
			t.Fatalf("clientset: %v", err)
		}
	}
	return c.clientset
}
