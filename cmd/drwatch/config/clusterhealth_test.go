package config

import (
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover/remediate/clusterhealth"
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
