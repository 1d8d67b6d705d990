package openstack

import (
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/remediatetest"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/fakeclock"
)

// never-ready-instances reboots within its cluster's node disruption
// budget: of two never-ready instances, one is rebooted; the other waits,
// recorded as skipped naming the first, until the first's node is Ready;
// then it goes. The Ready instances of the cluster are left alone.
func TestNeverReadyRebootsOneNodeAtATime(t *testing.T) {
	s, c := novaClients(t, "member-appcred")
	long := launchedAt(time.Now().Add(-time.Hour))
	ids := mkServers(t, s,
		server{name: "nb-1", meta: inCluster, then: long},
		server{name: "nb-2", meta: inCluster, then: long},
		server{name: "nb-ok-1", meta: inCluster, then: long},
		server{name: "nb-ok-2", meta: inCluster, then: long},
		server{name: "nb-ok-3", meta: inCluster, then: long},
	)
	clk := fakeclock.At(time.Now())
	sel := Selector{NamePrefix: "nb-", MetadataKey: "kluster", MetadataValue: "k"}
	rd := &fakeReadiness{ready: map[string]bool{"nb-1": false, "nb-2": false, "nb-ok-1": true, "nb-ok-2": true, "nb-ok-3": true}}
	r := NewNeverReady(c, sel, rd, 15*time.Minute, 0, clk.Now)
	fc := remediatetest.NewLog()
	on := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 10}
	pass := func() []failover.RemediationRecord {
		t.Helper()
		return remediatetest.PassEntries(t, fc, nil, remediate.Entry{Remediator: r, Settings: on, Cluster: "primary"})
	}
	rebooted := func() map[string]int {
		t.Helper()
		return map[string]int{"nb-1": reboots(t, s, ids["nb-1"]), "nb-2": reboots(t, s, ids["nb-2"])}
	}

	// Which of the two goes first is Nova's listing order.
	recs := pass()
	first, second := "nb-1", "nb-2"
	if rebooted()["nb-2"] == 1 {
		first, second = second, first
	}
	if got := rebooted(); got[first] != 1 || got[second] != 0 {
		t.Fatalf("first pass: got reboots %v; want exactly one of the two rebooted", got)
	}
	var detail string
	for _, rec := range recs {
		if rec.Target == "server/"+ids[second] && rec.Result == failover.RemediationSkippedCap {
			detail = rec.Detail
		}
	}
	if !strings.Contains(detail, "node disruption budget of cluster primary") || !strings.Contains(detail, "node "+first) {
		t.Fatalf("%s: got detail %q, want skipped by the budget naming %s", second, detail, first)
	}
	waitActive(t, s, ids[first])
	pass()
	if got := rebooted(); got[second] != 0 {
		t.Fatalf("%s not Ready: got reboots %v, want none of %s", first, got, second)
	}
	rd.set(first, true)
	pass()
	if got := rebooted(); got[first] != 1 || got[second] != 1 {
		t.Fatalf("%s Ready: got reboots %v; want one each", first, got)
	}
	waitActive(t, s, ids[second])
	for _, ok := range []string{"nb-ok-1", "nb-ok-2", "nb-ok-3"} {
		if n := reboots(t, s, ids[ok]); n != 0 {
			t.Fatalf("Ready instance %s rebooted %d times", ok, n)
		}
	}
}
