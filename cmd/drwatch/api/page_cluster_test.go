package api

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/monitor/clusterhealth"
)

// fxClusters is what node b last read of both clusters: the primary shows
// every condition of seed 004 (with a hostile string from the cluster in
// each free-text field), the backup has no kubeconfig.
func fxClusters() []clusterhealth.Site {
	return []clusterhealth.Site{{
		Site: "primary", Configured: true, ReadBy: "b", At: fxNow.Add(-12 * time.Second), Version: "v1.24.17",
		Nodes: &clusterhealth.Nodes{Total: 9, Unknown: 2, NotReady: 2, PLEG: 1, DiskPressure: 1, MemoryPressure: 0, PIDPressure: 0, NetworkUnavailable: 1,
			Problems: []clusterhealth.NodeProblem{
				{Name: "worker-1", Problems: []string{"DiskPressure"}},
				{Name: "worker-2" + fxXSS, Problems: []string{"PLEG is not healthy: pleg was last seen active 27h14m51s ago; threshold is 3m0s"}},
				{Name: "worker-3", Problems: []string{"NetworkUnavailable", "Unknown"}},
				{Name: "worker-4", Problems: []string{"NotReady: container runtime network not ready"}},
			}},
		Pods: &clusterhealth.Pods{Total: 40, Terminating: 1, TerminatingAfterSeconds: 600, StatefulOnUnknown: 1, Evicted: 0,
			Problems: []clusterhealth.PodProblem{
				{Namespace: "lms", Name: "db-0", Node: "worker-3", Problem: clusterhealth.PodStatefulUnknown, Since: fxNow.Add(-2 * time.Hour)},
				{Namespace: "lms", Name: "web-1" + fxXSS, Node: "worker-2", Problem: clusterhealth.PodTerminating, Since: fxNow.Add(-30 * time.Minute)},
			}},
		Events: &clusterhealth.Events{WindowSeconds: 3600,
			Counts: map[string]int{"ImageGCFailed": 3, "FreeDiskSpaceFailed": 0, "ContainerGCFailed": 0, "EvictionThresholdMet": 1,
				"SystemOOM": 2, "Evicted": 0, "FailedCreatePodSandBox": 5, "FailedMount": 0, "FailedAttachVolume": 0, "Multi-Attach": 1},
			Recent: []clusterhealth.Event{
				{Reason: "Multi-Attach", Object: "Pod/lms/db-0", Message: `Multi-Attach error for volume "pvc-1" ` + fxXSS, Count: 2, LastSeen: fxNow.Add(-3 * time.Minute)},
				{Reason: "ImageGCFailed", Object: "Node/worker-1", Message: "failed to garbage collect required amount of images", Count: 3, LastSeen: fxNow.Add(-5 * time.Minute)},
			}},
		Services: &clusterhealth.Services{LoadBalancers: 4, Pending: 1, PendingAfterSeconds: 600,
			Oldest:   []clusterhealth.PendingService{{Namespace: "lms", Name: "consul-web", Created: fxNow.Add(-25 * time.Minute)}},
			CCMLease: &clusterhealth.Lease{Name: "kube-system/cloud-controller-manager", Holder: "ccm-a" + fxXSS, RenewTime: fxNow.Add(-20 * time.Minute), DurationSeconds: 15, RenewAgeSeconds: 1188}},
		Routes: &clusterhealth.Routes{RouterID: "r-1", Used: 29, Limit: 31},
	}, {
		Site: "backup", ReadBy: "b", At: fxNow.Add(-12 * time.Second),
		RoutesUnknown: "unknown: remediations.openstack is for the primary site",
	}}
}

// TestPageClusterHealth: each site's Cluster health shows the conditions,
// events, pending Services, route quota and version as node b read them,
// marks what needs attention, and says when a site has nothing to read.
func TestPageClusterHealth(t *testing.T) {
	_, body := pageGet(t, pageServer(t, fxFailedOver(), nil), "/")
	prim := regexp.MustCompile(`(?s)<div class="site" id="cluster-primary">(.*?)\n</div>`).FindSubmatch(body)
	back := regexp.MustCompile(`(?s)<div class="site" id="cluster-backup">(.*?)\n</div>`).FindSubmatch(body)
	if prim == nil || back == nil {
		t.Fatalf("got no cluster-primary or cluster-backup block in the page")
	}
	p := text(prim[1])
	for _, want := range []string{
		"primary cluster attention", "read 12s ago by b",
		"Kubernetes v1.24.17", "nodes 9", "Unknown 2", "NotReady (any reason) 2", "PLEG is not healthy 1",
		"pods Terminating over 10m 0s 1", "StatefulSet pods on Unknown nodes 1", "Evicted pods 0",
		"lms/db-0 on worker-3: StatefulSet pod on Unknown node for 2h 0m", "lms/web-1" + fxXSS + " on worker-2: Terminating for 30m 0s",
		"worker-4: NotReady: container runtime network not ready", "DiskPressure 1", "MemoryPressure 0",
		"PIDPressure 0", "NetworkUnavailable 1",
		"ImageGCFailed events (last 1h 0m) 3", "EvictionThresholdMet events (last 1h 0m) 1", "Multi-Attach events (last 1h 0m) 1",
		"SystemOOM events (last 1h 0m) 2", "FailedCreatePodSandBox events (last 1h 0m) 5", "Evicted events (last 1h 0m) 0",
		"FailedMount events (last 1h 0m) 0",
		"FreeDiskSpaceFailed events (last 1h 0m) 0", "ContainerGCFailed events (last 1h 0m) 0", "FailedAttachVolume events (last 1h 0m) 0",
		"LoadBalancer Services pending over 10m 0s 1 of 4", "lms/consul-web: no address for 25m 0s",
		"route quota 29 of 31 routes on router r-1",
		"cloud-controller-manager lease kube-system/cloud-controller-manager held by ccm-a" + fxXSS + ", renewed 20m 0s ago (past its 15s lease)",
		"worker-1: DiskPressure", "worker-2" + fxXSS + ": PLEG is not healthy: pleg was last seen active 27h14m51s ago",
		"worker-3: NetworkUnavailable, Unknown",
		"3m 0s ago Multi-Attach ×2 Pod/lms/db-0", "5m 0s ago ImageGCFailed ×3 Node/worker-1",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("primary cluster lacks %q in:\n%s", want, p)
		}
	}
	for _, warn := range []string{`<span class="pill warn">2</span>`, `<span class="pill warn">29 of 31 routes on router r-1</span>`, `<span class="pill warn">1 of 4</span>`} {
		if !strings.Contains(string(prim[1]), warn) {
			t.Errorf("primary cluster: %s is not marked for attention", warn)
		}
	}
	if !strings.Contains(string(prim[1]), `<span class="pill warn">held by ccm-a`) {
		t.Errorf("primary cluster: a lease not renewed for longer than its duration is not marked for attention")
	}
	if strings.Contains(string(prim[1]), `<span class="pill warn">0</span>`) {
		t.Errorf("primary cluster: a zero count is marked for attention")
	}
	b := text(back[1])
	for _, want := range []string{"backup cluster not configured", "set remediations.kubernetes.backup.kubeconfig_file",
		"route quota unknown: remediations.openstack is for the primary site"} {
		if !strings.Contains(b, want) {
			t.Errorf("backup cluster lacks %q in:\n%s", want, b)
		}
	}
	if strings.Contains(string(body), "worker-2"+fxXSS) {
		t.Fatal("a node name from the cluster was rendered unescaped")
	}
	if !strings.Contains(text(body), "None of this moves traffic or triggers a repair.") {
		t.Error("the section does not say it never acts")
	}
}

// TestPageClusterHealthVerdicts: a clear site, a site with an unreadable
// part, and one not read yet each say so, and an unreadable part never
// reads as zero.
func TestPageClusterHealthVerdicts(t *testing.T) {
	clear := clusterhealth.Site{Site: "primary", Configured: true, ReadBy: "a", At: fxNow, Version: "v1.31.14",
		Nodes:    &clusterhealth.Nodes{Total: 3},
		Pods:     &clusterhealth.Pods{Total: 40, TerminatingAfterSeconds: 600},
		Events:   &clusterhealth.Events{WindowSeconds: 3600, Counts: map[string]int{}},
		Services: &clusterhealth.Services{PendingAfterSeconds: 600},
		Routes:   &clusterhealth.Routes{RouterID: "r", Used: 5, Limit: 31}}
	broken := clear
	broken.Site, broken.Nodes, broken.NodesError = "backup", nil, `list nodes: nodes is forbidden: User "drwatch" cannot list resource "nodes"`
	broken.Pods, broken.PodsError = nil, "needs the node list, which is unreadable"
	for _, tt := range []struct {
		site        clusterhealth.Site
		want, class string
	}{
		{clear, "clear", "ok"},
		{broken, "partly unreadable", "unknown"},
		{clusterhealth.Site{Site: "primary", Configured: true}, "not read yet", "unknown"},
	} {
		m := clusterOf(tt.site, fxNow)
		if m.Verdict != tt.want || m.Class != tt.class {
			t.Errorf("%s: got %q (%s), want %q (%s)", tt.want, m.Verdict, m.Class, tt.want, tt.class)
		}
	}
	m := clusterOf(broken, fxNow)
	var found bool
	for _, r := range m.Rows {
		if r.Label == "nodes" {
			found = strings.HasPrefix(r.Value, "unreadable: list nodes: nodes is forbidden") && r.Class == "unknown"
		}
		if r.Label == "Unknown" || r.Label == "DiskPressure" {
			t.Errorf("got row %q = %q for unreadable nodes, want no figure", r.Label, r.Value)
		}
	}
	if !found {
		t.Errorf("got rows %+v, want nodes unreadable with the error", m.Rows)
	}
}
