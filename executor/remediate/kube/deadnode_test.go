package kube

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/remediatetest"
	"github.com/drwatch/drwatch/internal/kubeapi"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes"
)

// fakeInstances is the cloud's answer per node name; a missing name errors.
type fakeInstances map[string]InstanceState

func (f fakeInstances) InstanceState(_ context.Context, n *corev1.Node) (InstanceState, error) {
	s, ok := f[n.Name]
	if !ok {
		return "", errors.New("nova: 503")
	}
	return s, nil
}

func nodeVersions(t *testing.T, c kubernetes.Interface, names ...string) map[string]string {
	return versions(t, func(n string) (metav1.Object, error) {
		return c.CoreV1().Nodes().Get(context.Background(), n, metav1.GetOptions{})
	}, names...)
}

func taintOf(t *testing.T, c kubernetes.Interface, name string) (bool, string) {
	t.Helper()
	n, err := c.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range n.Spec.Taints {
		if tt.Key == TaintOutOfService {
			return true, tt.Value + ":" + string(tt.Effect)
		}
	}
	return false, ""
}

func TestDeadNode(t *testing.T) {
	c := client(t)
	now := time.Now()
	long := now.Add(-10 * time.Minute)
	node(t, c, "dead-shutoff", corev1.ConditionFalse, long, false)
	node(t, c, "dead-gone", corev1.ConditionUnknown, long, false)
	// Healthy look-alikes: each must never be tainted.
	node(t, c, "recent", corev1.ConditionFalse, now.Add(-time.Minute), false)
	node(t, c, "nova-unknown", corev1.ConditionUnknown, long, false)
	node(t, c, "nova-error-check", corev1.ConditionUnknown, long, false)
	node(t, c, "instance-active", corev1.ConditionFalse, long, false)
	node(t, c, "ready", corev1.ConditionTrue, long, false)
	all := []string{"dead-shutoff", "dead-gone", "recent", "nova-unknown", "nova-error-check", "instance-active", "ready"}
	cloud := fakeInstances{"dead-shutoff": InstanceShutoff, "dead-gone": InstanceGone, "recent": InstanceShutoff,
		"nova-unknown": InstanceUnknown, "instance-active": InstanceActive, "ready": InstanceGone}
	r := NewDeadNode(api(t), cloud, 5*time.Minute, nil)
	fc := remediatetest.NewLog()

	dryRunWritesNothing(t, fc, r, []string{"dry_run taint node/dead-gone", "dry_run taint node/dead-shutoff"},
		func() map[string]string { return nodeVersions(t, c, all...) })
	on := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 1, MaxPerHour: 10}
	t.Run("acts within the cap", func(t *testing.T) {
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on))
		want := []string{"planned taint node/dead-gone", "applied taint node/dead-gone", "skipped_cap taint node/dead-shutoff"}
		if !slices.Equal(got, want) {
			t.Fatalf("got %q, want %q", got, want)
		}
		if ok, v := taintOf(t, c, "dead-gone"); !ok || v != "nodeshutdown:NoExecute" {
			t.Fatalf("dead-gone: got taint %v %q, want nodeshutdown:NoExecute", ok, v)
		}
		if ok, _ := taintOf(t, c, "dead-shutoff"); ok {
			t.Fatal("dead-shutoff tainted past the per-pass cap")
		}
		got = remediatetest.Summary(remediatetest.Pass(t, fc, r, on))
		want = []string{"planned taint node/dead-shutoff", "applied taint node/dead-shutoff"}
		if !slices.Equal(got, want) {
			t.Fatalf("second pass: got %q, want %q", got, want)
		}
		for _, n := range all[2:] {
			if ok, _ := taintOf(t, c, n); ok {
				t.Fatalf("look-alike %s was tainted", n)
			}
		}
	})
	t.Run("repeated pass is a no-op", func(t *testing.T) {
		before := nodeVersions(t, c, all...)
		if got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on)); len(got) != 0 {
			t.Fatalf("got records %q, want none", got)
		}
		if after := nodeVersions(t, c, all...); !maps.Equal(before, after) {
			t.Fatalf("got resourceVersions %v, want unchanged %v", after, before)
		}
	})
	t.Run("taint removed when the node returns", func(t *testing.T) {
		n, err := c.CoreV1().Nodes().Get(context.Background(), "dead-gone", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		setReady(t, c, n, corev1.ConditionTrue, time.Now())
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on))
		want := []string{"planned untaint node/dead-gone", "applied untaint node/dead-gone"}
		if !slices.Equal(got, want) {
			t.Fatalf("got %q, want %q", got, want)
		}
		if ok, _ := taintOf(t, c, "dead-gone"); ok {
			t.Fatal("dead-gone still tainted")
		}
		n, _ = c.CoreV1().Nodes().Get(context.Background(), "dead-gone", metav1.GetOptions{})
		if _, ok := n.Annotations[AnnotationTainted]; ok {
			t.Fatal("annotation left behind")
		}
	})
	t.Run("an operator's taint is left alone", func(t *testing.T) {
		n := node(t, c, "operator-tainted", corev1.ConditionTrue, long, false)
		n.Spec.Taints = []corev1.Taint{{Key: TaintOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}}
		if _, err := c.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on)); len(got) != 0 {
			t.Fatalf("got records %q, want none", got)
		}
		if ok, _ := taintOf(t, c, "operator-tainted"); !ok {
			t.Fatal("operator's taint removed")
		}
	})
	t.Run("without a cloud check it never taints", func(t *testing.T) {
		acts, err := NewDeadNode(api(t), nil, time.Minute, nil).Plan(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range acts {
			if a.Verb == "taint" {
				t.Fatalf("got %s %s with no instance checker, want none", a.Verb, a.Target)
			}
		}
	})
	t.Run("apply refuses a node that came back", func(t *testing.T) {
		n := node(t, c, "flapping", corev1.ConditionFalse, long, false)
		cloud["flapping"] = InstanceShutoff
		acts, err := r.Plan(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var a *remediate.Action
		for i := range acts {
			if acts[i].Target == "node/flapping" {
				a = &acts[i]
			}
		}
		if a == nil {
			t.Fatalf("got actions %v, want one for flapping", acts)
		}
		setReady(t, c, n, corev1.ConditionTrue, time.Now())
		if err := r.Apply(context.Background(), *a); !errors.Is(err, remediate.ErrPrecondition) || !strings.Contains(err.Error(), "Ready again") {
			t.Fatalf("got %v, want ErrPrecondition (Ready again)", err)
		}
	})
}

// olderServer is the package's real API server, except that /version
// answers git (as an older cluster would; "" fails the call). Only the
// version is faked: nodes are read and written for real.
type olderServer struct {
	kubeapi.Interface
	git string
}

func (o olderServer) ServerVersion(context.Context) (*version.Info, error) {
	if o.git == "" {
		return nil, errors.New("GET /version: 503 Service Unavailable")
	}
	return &version.Info{GitVersion: o.git}, nil
}

// TestDeadNodeTaintsOnlyConfirmedDown: the cloud must confirm the guest
// is not running (powered off, crashed, no state, its compute host forced
// down by an operator, or the server gone). An instance in ERROR whose
// guest runs (a failed resize or migration) and a running instance behind
// a partitioned node look the same from Kubernetes, and are never
// tainted. Nor is one whose host only missed its heartbeats: its taint is
// reported, naming the fence that would allow it.
func TestDeadNodeTaintsOnlyConfirmedDown(t *testing.T) {
	c := client(t)
	long := time.Now().Add(-10 * time.Minute)
	cloud := fakeInstances{
		"off": InstanceShutoff, "crashed": InstanceCrashed, "nostate": InstanceNoState,
		"host-forced-down": InstanceHostForcedDown, "gone": InstanceGone,
		// Look-alikes.
		"error-running": InstanceError, "partitioned": InstanceActive, "unknown": InstanceUnknown,
		"host-down": InstanceHostDown,
	}
	names := slices.Sorted(maps.Keys(cloud))
	for _, n := range names {
		node(t, c, n, corev1.ConditionUnknown, long, false)
	}
	// Healthy nodes too, so that the five dead ones are under the
	// disruption brake's default share, as in a real cluster.
	for _, n := range []string{"ready-0", "ready-1", "ready-2"} {
		node(t, c, n, corev1.ConditionTrue, long, false)
	}
	r := NewDeadNode(api(t), cloud, 5*time.Minute, nil)
	acts, err := r.Plan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got, reported []string
	for _, a := range acts {
		if a.ReportOnly != "" {
			reported = append(reported, a.Verb+" "+a.Target)
			if !strings.Contains(a.ReportOnly, "not forced down") || !strings.Contains(a.ReportOnly, "fence its host") {
				t.Errorf("%s: got report-only reason %q, want it to say the host is not forced down and to fence it", a.Target, a.ReportOnly)
			}
			continue
		}
		got = append(got, a.Verb+" "+a.Target)
	}
	want := []string{"taint node/crashed", "taint node/gone", "taint node/host-forced-down", "taint node/nostate", "taint node/off"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if want := []string{"taint node/host-down"}; !slices.Equal(reported, want) {
		t.Fatalf("got report-only %q, want %q", reported, want)
	}
	lookAlikes := []string{"error-running", "partitioned", "unknown", "host-down", "ready-0", "ready-1", "ready-2"}
	before := nodeVersions(t, c, lookAlikes...)
	remediatetest.Pass(t, remediatetest.NewLog(), r, remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 10})
	for _, n := range []string{"crashed", "gone", "host-forced-down", "nostate", "off"} {
		if ok, _ := taintOf(t, c, n); !ok {
			t.Errorf("%s: not tainted", n)
		}
	}
	if after := nodeVersions(t, c, lookAlikes...); !maps.Equal(before, after) {
		t.Fatalf("look-alikes written: resourceVersions %v, want unchanged %v", after, before)
	}
}

// TestDeadNodeNeedsOutOfServiceSupport: the out-of-service taint does
// its work from Kubernetes 1.26 on (NodeOutOfServiceVolumeDetach beta, on
// by default; alpha and off by default in 1.24 and 1.25; absent before).
// On an older cluster the remediator says what it would do and why it
// cannot, and never taints; if the version cannot be read it plans
// nothing.
func TestDeadNodeNeedsOutOfServiceSupport(t *testing.T) {
	c := client(t)
	node(t, c, "off", corev1.ConditionFalse, time.Now().Add(-10*time.Minute), false)
	cloud := fakeInstances{"off": InstanceShutoff}
	for _, tt := range []struct {
		git string
		// gate: the operator says kube-controller-manager has the
		// alpha gate on (alpha_gate_on).
		gate bool
		want string // a word of the report-only reason; "" means it taints
	}{
		{"v1.21.14", false, "v1.21.14"},
		{"v1.24.17", false, "NodeOutOfServiceVolumeDetach"},
		{"v1.25.16+k3s1", false, "NodeOutOfServiceVolumeDetach"},
		{"not-a-version", false, "not-a-version"},
		{"v1.26.0", false, ""},
		{"v1.28.3-gke.1286000", false, ""},
		{"v1.24.17", true, ""},
		{"v1.25.16+k3s1", true, ""},
		{"v1.23.17", true, "v1.23.17"},
	} {
		t.Run(fmt.Sprintf("%s gate %v", tt.git, tt.gate), func(t *testing.T) {
			r := NewDeadNode(olderServer{api(t), tt.git}, cloud, 5*time.Minute, nil)
			if tt.gate {
				r.WithAlphaGate()
			}
			acts, err := r.Plan(context.Background())
			if err != nil || len(acts) != 1 || acts[0].Verb != "taint" || acts[0].Target != "node/off" {
				t.Fatalf("got %+v %v, want one taint of node/off", acts, err)
			}
			if got := acts[0].ReportOnly; (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Fatalf("got report-only %q, want it to say %q", got, tt.want)
			}
			if tt.want == "" {
				return
			}
			before := nodeVersions(t, c, "off")
			recs := remediatetest.Pass(t, remediatetest.NewLog(), r, remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 1})
			if len(recs) != 1 || recs[0].Result != "dry_run" || !strings.Contains(recs[0].Detail, tt.want) {
				t.Fatalf("got records %+v, want one dry_run saying %q", recs, tt.want)
			}
			if err := r.Apply(context.Background(), acts[0]); err == nil {
				t.Fatal("Apply of a report-only taint: got nil, want a refusal")
			}
			if after := nodeVersions(t, c, "off"); !maps.Equal(before, after) {
				t.Fatalf("node written on %s: resourceVersion %v, want %v", tt.git, after, before)
			}
		})
	}
	t.Run("version unreadable", func(t *testing.T) {
		acts, err := NewDeadNode(olderServer{api(t), ""}, cloud, 5*time.Minute, nil).Plan(context.Background())
		if err == nil || len(acts) != 0 {
			t.Fatalf("got %v %v, want no actions and an error", acts, err)
		}
	})
}
