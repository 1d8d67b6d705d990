package config

import (
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/monitor/clusterhealth"
)

func TestClusterHealthSectionDefaultsAndBounds(t *testing.T) {
	c, ps := loadString(t, validYAML(t))
	if ps != nil {
		t.Fatalf("got problems:\n%v", ps)
	}
	want := clusterhealth.Config{Interval: time.Minute, Timeout: 20 * time.Second, LBPendingAfter: 10 * time.Minute, TerminatingAfter: 10 * time.Minute, CCMLease: "kube-system/cloud-controller-manager", EventWindow: time.Hour}
	if c.ClusterHealth != want {
		t.Fatalf("got defaults %+v, want %+v", c.ClusterHealth, want)
	}
	c, ps = loadString(t, validYAML(t)+"cluster_health: { lb_pending_after: 30m, interval: 2m }\n")
	if ps != nil || c.ClusterHealth.LBPendingAfter != 30*time.Minute || c.ClusterHealth.Interval != 2*time.Minute {
		t.Fatalf("got %+v (problems %v), want lb_pending_after 30m, interval 2m", c.ClusterHealth, ps)
	}
	_, ps = loadString(t, validYAML(t)+"cluster_health: { interval: 1s, timeout: 5s, lb_pending_after: -1m, terminating_after: -2m, ccm_lease: kube-system/, event_window: -1h, nodes: 3 }\n")
	for _, want := range []string{
		"cluster_health.interval: 1s must be >= 10s",
		"cluster_health.timeout: 5s must be > 0 and below interval (1s)",
		"cluster_health.lb_pending_after: -1m0s must be > 0",
		"cluster_health.terminating_after: -2m0s must be > 0",
		"cluster_health.ccm_lease: \"kube-system/\" must be namespace/name",
		"cluster_health.event_window: -1h0m0s must be > 0",
		"cluster_health.nodes: unknown key",
	} {
		if ps == nil || !strings.Contains(ps.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, ps)
		}
	}
}

// In remediations and cluster_health a zero written in the file means
// unset, as the reference says, so it gets the tag's default; elsewhere a
// written zero is kept for the rules to refuse (policy.fall: 0).
func TestWrittenZeroGetsTheDefaultInRepairSections(t *testing.T) {
	c, ps := loadString(t, validYAML(t)+"remediations: { interval: 0s, orphaned_pods: { max_per_hour: 0 } }\ncluster_health: { interval: 0s }\n")
	if ps != nil {
		t.Fatalf("got problems:\n%v", ps)
	}
	if c.Remediations.Interval != 30*time.Second || c.Remediations.OrphanedPods.MaxPerHour != 10 || c.ClusterHealth.Interval != time.Minute {
		t.Errorf("got remediations.interval %s, orphaned_pods.max_per_hour %d, cluster_health.interval %s; want the defaults 30s, 10, 1m",
			c.Remediations.Interval, c.Remediations.OrphanedPods.MaxPerHour, c.ClusterHealth.Interval)
	}
	if _, ps := loadString(t, strings.Replace(validYAML(t), "fall: 3", "fall: 0", 1)); ps == nil || !strings.Contains(ps.Error(), "policy.fall") {
		t.Errorf("policy.fall: 0: got %v, want it refused", ps)
	}
}
