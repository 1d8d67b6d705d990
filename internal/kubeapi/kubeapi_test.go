package kubeapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/drwatch/drwatch/test/kubetest"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// One real kube-apiserver (with etcd) for the package, started on first
// use and stopped by TestMain.
func TestMain(m *testing.M) {
	code := m.Run()
	kubetest.CloseShared()
	os.Exit(code)
}

// recorder notes the Accept header of every request that passes.
type recorder struct {
	mu     sync.Mutex
	accept map[string]string // "METHOD path" -> Accept
}

func (r *recorder) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		r.mu.Lock()
		r.accept[req.Method+" "+req.URL.Path] = req.Header.Get("Accept")
		r.mu.Unlock()
		return next.RoundTrip(req)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// clients returns the package's client of the shared cluster, what it
// sent, client-go's full clientset for fixtures, and a fresh namespace.
func clients(t *testing.T) (*Client, *recorder, *kubetest.Cluster, string) {
	t.Helper()
	cluster := kubetest.Shared(t)
	rc, err := clientcmd.BuildConfigFromFlags("", cluster.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{accept: map[string]string{}}
	rc.Wrap(rec.wrap)
	c, err := NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	// No controller manager runs: the namespace's default service account,
	// which pods need, is made by hand.
	fx, ctx := cluster.Clientset(t), context.Background()
	ns, err := fx.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "kubeapi-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fx.CoreV1().ServiceAccounts(ns.Name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return c, rec, cluster, ns.Name
}

func createPod(t *testing.T, cluster *kubetest.Cluster, ns, name string, labels map[string]string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/c"}}}}
	p, err := cluster.Clientset(t).CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The callers decide on apierrors' predicates: each must hold for the
// answer that means it, as with client-go's typed clients.
func TestAPIErrorsAreStatusErrors(t *testing.T) {
	c, _, cluster, ns := clients(t)
	ctx := context.Background()
	_, err := c.CoreV1().Nodes().Get(ctx, "no-such-node", metav1.GetOptions{})
	var se *apierrors.StatusError
	if !apierrors.IsNotFound(err) || !errors.As(err, &se) {
		t.Fatalf("get a missing node: got %v (%T), want a *StatusError that IsNotFound", err, err)
	}

	p := createPod(t, cluster, ns, "p", nil)
	stale := p.DeepCopy()
	p.Labels = map[string]string{"moved": "on"}
	if _, err := c.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update at the current resourceVersion: %v", err)
	}
	stale.Labels = map[string]string{"stale": "yes"}
	if _, err := c.CoreV1().Pods(ns).Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("update at a stale resourceVersion: got %v, want a conflict", err)
	}
	other := types.UID("not-" + string(p.UID))
	if err := c.CoreV1().Pods(ns).Delete(ctx, "p", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &other}}); !apierrors.IsConflict(err) {
		t.Fatalf("delete under another UID: got %v, want a conflict", err)
	}

	// A budget that allows no disruption refuses the eviction with 429. Its
	// status is written by hand, as the disruption controller would (none
	// runs here); an unobserved budget would answer 429 with Retry-After,
	// which client-go's REST client retries for ten times ten seconds.
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "hold", Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "held"}}}}
	pdb, err = cluster.Clientset(t).PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: 0, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}
	if _, err := cluster.Clientset(t).PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	held := createPod(t, cluster, ns, "held", map[string]string{"app": "held"})
	// A Pending pod is evicted whatever its budget says: make it run.
	held.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if _, err := cluster.Clientset(t).CoreV1().Pods(ns).UpdateStatus(ctx, held, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: ns}}
	if err := c.PolicyV1().Evictions(ns).Evict(ctx, ev); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("evict a pod its budget holds: got %v, want 429 too many requests", err)
	}
	ev.Name = "gone"
	if err := c.PolicyV1().Evictions(ns).Evict(ctx, ev); !apierrors.IsNotFound(err) {
		t.Fatalf("evict a missing pod: got %v, want not found", err)
	}
}

// List options reach the server as query parameters (the parameter codec
// knows meta/v1's options), and every call prefers protobuf as client-go's
// generated clients do for built-in types.
func TestListSendsItsOptionsAndPrefersProtobuf(t *testing.T) {
	c, rec, cluster, ns := clients(t)
	ctx := context.Background()
	createPod(t, cluster, ns, "a", map[string]string{"tier": "web"})
	createPod(t, cluster, ns, "b", map[string]string{"tier": "db"})
	pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "tier=web"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods.Items {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"a"}) {
		t.Fatalf("list tier=web: got %v, want [a]", names)
	}
	all, err := c.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "metadata.namespace=" + ns})
	if err != nil || len(all.Items) != 2 {
		t.Fatalf("list every namespace's pods of %s: got %d, %v; want 2", ns, len(all.Items), err)
	}
	if _, err := c.PolicyV1().PodDisruptionBudgets(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, path := range []string{"/api/v1/namespaces/" + ns + "/pods", "/api/v1/pods",
		"/apis/policy/v1/namespaces/" + ns + "/poddisruptionbudgets", "/apis/discovery.k8s.io/v1/namespaces/" + ns + "/endpointslices"} {
		if got := rec.accept["GET "+path]; !strings.HasPrefix(got, "application/vnd.kubernetes.protobuf") {
			t.Errorf("GET %s: got Accept %q, want protobuf first", path, got)
		}
	}
}

// NewForConfig fills in what kubernetes.NewForConfig does: the default
// user agent, and QPS with a burst to go with it.
func TestNewForConfigAsTheClientset(t *testing.T) {
	var mu sync.Mutex
	var agent string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		agent = r.UserAgent()
		mu.Unlock()
		if r.URL.Path != "/version" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`{"major":"1","minor":"34","gitVersion":"v1.34.4"}`))
	}))
	t.Cleanup(srv.Close)
	c, err := NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.ServerVersion(context.Background())
	if err != nil || v.GitVersion != "v1.34.4" {
		t.Fatalf("server version: got %+v, %v; want v1.34.4", v, err)
	}
	mu.Lock()
	if want := rest.DefaultKubernetesUserAgent(); agent != want {
		t.Errorf("got user agent %q, want %q", agent, want)
	}
	mu.Unlock()
	if _, err := NewForConfig(&rest.Config{Host: srv.URL, QPS: 5}); err == nil || !strings.Contains(err.Error(), "burst") {
		t.Fatalf("QPS without burst: got %v, want an error naming the burst", err)
	}
}
