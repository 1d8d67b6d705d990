package clusterhealth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

func TestClientRefusesEveryWrite(t *testing.T) {
	admin, cluster := fixtures(t)
	c := readClient(t, cluster)
	ctx := context.Background()
	node(t, admin, "existing", ready)
	writes := map[string]error{}
	n, err := c.CoreV1().Nodes().Get(ctx, "existing", metav1.GetOptions{}) // reading works
	if err != nil {
		t.Fatalf("get node through the read-only client: %v", err)
	}
	n.Spec.Unschedulable = true
	_, writes["update"] = c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	writes["delete"] = c.CoreV1().Nodes().Delete(ctx, "existing", metav1.DeleteOptions{})
	writes["evict"] = c.PolicyV1().Evictions("default").Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p"}})
	_, writes["update scale"] = c.AppsV1().Deployments("default").UpdateScale(ctx, "d", &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "d"}}, metav1.UpdateOptions{})
	// The client has no other writing verb; the transport under it refuses
	// every method but GET whatever calls it.
	rc, err := restConfigOf(cluster)
	if err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(readOnlyConfig(rc, MaxResponseBytes))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		body := `{"apiVersion":"v1","kind":"Node","metadata":{"name":"created"},"spec":{"unschedulable":true}}`
		path := "/api/v1/nodes"
		if m != http.MethodPost {
			path += "/existing"
		}
		req, err := http.NewRequestWithContext(ctx, m, rc.Host+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		writes["raw "+m] = err
	}
	for what, err := range writes {
		if !errors.Is(err, ErrNotRead) {
			t.Errorf("%s: got error %v, want ErrNotRead", what, err)
		}
	}
	got, err := admin.CoreV1().Nodes().Get(ctx, "existing", metav1.GetOptions{})
	if err != nil || got.Spec.Unschedulable || got.ResourceVersion != n.ResourceVersion {
		t.Fatalf("got node %v (err %v), want it untouched at resourceVersion %s", got, err, n.ResourceVersion)
	}
	if _, err := admin.CoreV1().Nodes().Get(ctx, "created", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("got %v for the node the read-only client tried to create, want not found", err)
	}
}

func TestAnswerOverTheByteCapIsAnErrorForItsPartOnly(t *testing.T) {
	admin, cluster := fixtures(t)
	for i := range 30 {
		node(t, admin, fmt.Sprintf("big-%02d", i), ready, noDisk, noMem)
	}
	rc, err := restConfigOf(cluster)
	if err != nil {
		t.Fatal(err)
	}
	small, err := newClient(rc, 8<<10) // /version fits, 30 nodes do not
	if err != nil {
		t.Fatal(err)
	}
	s := Read(context.Background(), Config{}.Defaulted(), "w1", Target{Site: "primary", Client: small}, time.Now())
	if s.Nodes != nil || !strings.Contains(s.NodesError, "too large") {
		t.Fatalf("got nodes %+v, error %q, want no figures and a too-large error", s.Nodes, s.NodesError)
	}
	if s.Version == "" || s.VersionError != "" {
		t.Fatalf("got version %q, error %q, want the version read despite the nodes", s.Version, s.VersionError)
	}
}

// hostile answers every list with what a broken or hostile API server
// might send.
func hostile(t *testing.T, maxBytes int64, h http.HandlerFunc) Target {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := newClient(&rest.Config{Host: srv.URL}, maxBytes)
	if err != nil {
		t.Fatal(err)
	}
	return Target{Site: "primary", Client: c}
}

func TestHostileAnswersAreBounded(t *testing.T) {
	cfg := Config{}.Defaulted()
	t.Run("an endless body stops at the byte cap", func(t *testing.T) {
		var sent atomic.Int64
		const capBytes = 256 << 10
		tg := hostile(t, capBytes, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if r.URL.Path != "/api/v1/nodes" {
				_, _ = io.WriteString(w, `{"kind":"List","apiVersion":"v1","items":[]}`)
				return
			}
			_, _ = io.WriteString(w, `{"kind":"NodeList","apiVersion":"v1","items":[`)
			chunk := strings.Repeat(`{"metadata":{"name":"x"}},`, 1000)
			for sent.Load() < 64*capBytes {
				n, err := io.WriteString(w, chunk)
				sent.Add(int64(n))
				if err != nil {
					return
				}
			}
		})
		s := Read(context.Background(), cfg, "w1", tg, time.Now())
		if s.Nodes != nil || !strings.Contains(s.NodesError, "too large") {
			t.Fatalf("got nodes %+v, error %q, want no figures and a too-large error", s.Nodes, s.NodesError)
		}
	})
	t.Run("endless continue tokens stop at the page bound", func(t *testing.T) {
		var calls atomic.Int64
		tg := hostile(t, MaxResponseBytes, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if r.URL.Path == "/api/v1/nodes" {
				calls.Add(1)
				_, _ = io.WriteString(w, `{"kind":"NodeList","apiVersion":"v1","metadata":{"continue":"more"},"items":[]}`)
				return
			}
			_, _ = io.WriteString(w, `{"kind":"List","apiVersion":"v1","items":[]}`)
		})
		s := Read(context.Background(), cfg, "w1", tg, time.Now())
		if s.Nodes == nil || !s.Nodes.Truncated {
			t.Fatalf("got nodes %+v (error %q), want truncated figures", s.Nodes, s.NodesError)
		}
		if got, want := calls.Load(), int64(MaxNodes/PageSize+1); got != want {
			t.Fatalf("got %d node list calls, want %d", got, want)
		}
	})
	t.Run("endless pod pages stop at the pod bound and keep the oldest", func(t *testing.T) {
		var calls atomic.Int64
		base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		tg := hostile(t, MaxResponseBytes, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if r.URL.Path != "/api/v1/pods" {
				_, _ = io.WriteString(w, `{"kind":"List","apiVersion":"v1","items":[]}`)
				return
			}
			// Every pod stuck Terminating; the oldest, to be shown, are on
			// the second page, long before the last is read.
			page := calls.Add(1)
			items := make([]string, PageSize)
			for i := range items {
				minutes := int64(i) + 20
				if page == 2 {
					minutes += 100000
				}
				at := base.Add(-time.Duration(minutes) * time.Minute).Format(time.RFC3339)
				items[i] = fmt.Sprintf(`{"metadata":{"name":"p%d-%d","namespace":"ns","deletionTimestamp":%q},"spec":{"nodeName":"n1"}}`, page, i, at)
			}
			_, _ = fmt.Fprintf(w, `{"kind":"PodList","apiVersion":"v1","metadata":{"continue":"more"},"items":[%s]}`, strings.Join(items, ","))
		})
		s := Read(context.Background(), cfg, "w1", tg, base)
		p := s.Pods
		if p == nil || !p.Truncated || p.Total != MaxPods || p.Terminating != MaxPods {
			t.Fatalf("got pods %+v (error %q), want %d counted, all Terminating, truncated", p, s.PodsError, MaxPods)
		}
		if got, want := calls.Load(), int64(MaxPods/PageSize); got != want {
			t.Errorf("got %d pod list calls, want %d", got, want)
		}
		var got []string
		for _, q := range p.Problems {
			got = append(got, q.Name)
		}
		var want []string
		for i := range MaxShownPods {
			want = append(want, fmt.Sprintf("p2-%d", PageSize-1-i))
		}
		if !slices.Equal(got, want) {
			t.Errorf("got problems %q, want the %d oldest, oldest first: %q", got, MaxShownPods, want)
		}
	})
	t.Run("a hung server costs one timeout", func(t *testing.T) {
		release := make(chan struct{})
		tg := hostile(t, MaxResponseBytes, func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		})
		defer close(release)
		short := cfg
		short.Timeout = 300 * time.Millisecond
		start := time.Now()
		s := Read(context.Background(), short, "w1", tg, start)
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("read took %s, want about the 300ms timeout", took)
		}
		for part, err := range map[string]string{"nodes": s.NodesError, "pods": s.PodsError, "events": s.EventsError, "services": s.ServicesError, "version": s.VersionError} {
			if err == "" {
				t.Errorf("%s: got no error from a hung server", part)
			}
		}
		// The pods wait on the nodes: with those unreadable, they say so
		// rather than count StatefulSet pods against no Unknown node.
		if s.Pods != nil || !strings.HasPrefix(s.PodsError, "needs the node list, which is unreadable: ") {
			t.Errorf("got pods %+v (error %q), want none, naming the unreadable nodes", s.Pods, s.PodsError)
		}
	})
	t.Run("long strings are cut", func(t *testing.T) {
		long := strings.Repeat("é<script>", 10000)
		tg := hostile(t, MaxResponseBytes, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"kind":"NodeList","apiVersion":"v1","items":[{"metadata":{"name":%q},"status":{"conditions":[{"type":"Ready","status":"False","message":"PLEG is not healthy: %s"}]}}]}`, long, long)
		})
		s := Read(context.Background(), cfg, "w1", tg, time.Now())
		if s.Nodes == nil || len(s.Nodes.Problems) != 1 {
			t.Fatalf("got nodes %+v (error %q), want one problem", s.Nodes, s.NodesError)
		}
		p := s.Nodes.Problems[0]
		for _, str := range append([]string{p.Name}, p.Problems...) {
			if n := len([]rune(str)); n > MaxText {
				t.Fatalf("got a string of %d runes, want at most %d", n, MaxText)
			}
		}
	})
}
