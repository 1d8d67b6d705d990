package openstack

import (
	"strings"
	"testing"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/remediatetest"
)

// allHeld checks that every record of a pass is a skipped action.
func allHeld(t *testing.T, got []string) {
	t.Helper()
	if len(got) == 0 {
		t.Fatal("got no records, want the held actions recorded")
	}
	for _, r := range got {
		if !strings.HasPrefix(r, "skipped_cap ") {
			t.Errorf("got record %q, want every action held by the brake", r)
		}
	}
}

// When most of the router's routes into the pod CIDR look stale at once,
// drwatch's view of the nodes is the likelier fault: neutron-route-gc
// removes none. (TestRouteGC is the look-alike: two stale routes among
// many are removed.)
func TestRouteGCHoldsWhenMostRoutesLookStale(t *testing.T) {
	routes := []string{
		"198.19.1.0/24>10.180.0.3", "198.19.2.0/24>10.180.0.3", "198.19.6.0/24>10.180.0.3", // stale: nobody holds .3
		"198.19.1.0/24>10.180.0.5", "198.19.2.0/24>10.180.0.4", // the nodes' own
	}
	w, nodes := routeGCWorld(t, routes...)
	r := NewRouteGC(w.c, w.router, podCIDR, cluster, nodes, 31, 3)
	allHeld(t, remediatetest.Summary(remediatetest.Pass(t, remediatetest.NewLog(), r,
		remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 10})))
	check(t, "routes", w.routes(), sorted(routes))
}

// When most cluster instances miss the required group at once, the group
// or the ports changed under the cluster: security-groups adds it to none.
// (TestSecurityGroups is the look-alike: one instance of three is fixed.)
func TestSecurityGroupsHoldWhenMostInstancesLackTheGroup(t *testing.T) {
	w := newWorld(t)
	sgDefault, sgK := w.defaultGroup(), w.group("k-nodes")
	w.bulk(func() {
		w.node("vm1", "k-node-1", "ACTIVE", "10.180.0.31", []string{sgDefault}, podCIDR.String())
		w.node("vm2", "k-node-2", "ACTIVE", "10.180.0.32", []string{sgDefault}, podCIDR.String())
		w.node("vm3", "k-node-3", "ACTIVE", "10.180.0.33", []string{sgDefault}, podCIDR.String())
		w.node("vm4", "k-node-4", "ACTIVE", "10.180.0.34", []string{sgK}, podCIDR.String())
	})
	r := NewSecurityGroups(w.c, cluster, w.groupName("k-nodes"), podCIDR)
	n := w.writes()
	allHeld(t, remediatetest.Summary(remediatetest.Pass(t, remediatetest.NewLog(), r,
		remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 10})))
	if got := w.writes(); got != n {
		t.Fatalf("got %d writes, want %d (none while the brake holds)", got, n)
	}
}
