package openstack

import (
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/remediatetest"
)

// identityConfig is a remediations config whose cluster instances are
// named prefix* and, when key is set, carry key=value. Building its
// entries touches no cloud: the tests hand Entries their own clients.
func identityConfig(prefix, key, value string) config {
	var cfg config
	o := &cfg.OpenStack
	o.AuthURL = "https://keystone.example:5000/v3"
	o.ApplicationCredentialIDFile, o.ApplicationCredentialSecretFile = "/etc/drwatch/id", "/etc/drwatch/secret"
	o.RouterID, o.PodCIDR = "r1", podCIDR.String()
	o.InstanceNamePrefix, o.InstanceMetadataKey, o.InstanceMetadataValue = prefix, key, value
	return cfg
}

// onlyEntry builds cfg's entries and returns the one it must hold.
func onlyEntry(t *testing.T, cfg config, c *Clients, nodes NodeReader, now func() time.Time) remediate.Entry {
	t.Helper()
	es, err := entries(cfg, c, nodes, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 {
		t.Fatalf("got %d entries, want 1", len(es))
	}
	return es[0]
}

// refusesPrefixAlone checks that Entries refuses cfg (a repair on, the
// cluster named by a prefix alone) and names the selector's field.
func refusesPrefixAlone(t *testing.T, cfg config, c *Clients, nodes NodeReader) {
	t.Helper()
	es, err := entries(cfg, c, nodes, nil)
	if err == nil || !strings.Contains(err.Error(), "remediations.openstack.instance_metadata_key") {
		t.Fatalf("mode on with instance_name_prefix alone: got %d entries and %v, want an error naming remediations.openstack.instance_metadata_key", len(es), err)
	}
}

// With a name prefix alone, never-ready-instances would reboot the
// neighbouring cluster's instance and a kubespray etcd VM, which share the
// prefix and have no Ready node: mode on needs the cluster's metadata.
// With it, only this cluster's young node is rebooted; its old instance,
// long past any failed first boot, is left alone too.
func TestNeverReadyRebootsOnlyYoungInstancesOfThisCluster(t *testing.T) {
	s, c := novaClients(t, "member-appcred")
	recent := launchedAt(time.Now().Add(-30 * time.Minute))
	ids := mkServers(t, s,
		server{name: "idnr-node-1", meta: inCluster, then: recent},
		// Look-alikes: the neighbour's node, an etcd VM with no
		// metadata, and this cluster's instance launched 3h ago.
		server{name: "idnr-node-n1", meta: map[string]string{"kluster": "n"}, then: recent},
		server{name: "idnr-etcd-1", then: recent},
		server{name: "idnr-old", meta: inCluster, then: launchedAt(time.Now().Add(-3 * time.Hour))},
	)
	// No Node is Ready for any of them.
	nodes := struct {
		*fakeReadiness
		*fakeNodes
	}{&fakeReadiness{ready: map[string]bool{"idnr-node-1": false, "idnr-node-n1": false, "idnr-etcd-1": false, "idnr-old": false}}, &fakeNodes{}}
	on := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 10}

	alone := identityConfig("idnr-", "", "")
	alone.OpenStack.NeverReadyInstances.Settings = on
	refusesPrefixAlone(t, alone, c, nodes)

	cfg := identityConfig("idnr-", "kluster", "k")
	cfg.OpenStack.NeverReadyInstances.Settings = on
	e := onlyEntry(t, cfg, c, nodes, time.Now)
	got := remediatetest.Summary(remediatetest.Pass(t, remediatetest.NewLog(), e.Remediator, e.Settings))
	node := ids["idnr-node-1"]
	check(t, "records", got, []string{"planned reboot-soft server/" + node, "applied reboot-soft server/" + node})
	for _, name := range []string{"idnr-node-n1", "idnr-etcd-1", "idnr-old"} {
		if n := reboots(t, s, ids[name]); n != 0 {
			t.Errorf("look-alike %s: got %d reboots, want none", name, n)
		}
	}
}

// With a name prefix alone, security-groups would add this cluster's
// group to the neighbouring cluster's instance and to an etcd VM named
// like the nodes: mode on needs the cluster's metadata, and with it only
// this cluster's node is repaired.
func TestSecurityGroupsRepairOnlyInstancesOfThisCluster(t *testing.T) {
	w := newWorld(t)
	sgDefault := w.defaultGroup()
	w.group("k-nodes")
	w.bulk(func() {
		w.node("vm1", "k-node-1", "ACTIVE", "10.180.0.21", []string{sgDefault}, podCIDR.String())
		w.instance("vmn", "k-node-n1", map[string]string{"kluster": "n"}, "ACTIVE", "10.180.0.22", []string{sgDefault}, podCIDR.String())
		w.instance("vme", "k-etcd-1", nil, "ACTIVE", "10.180.0.23", []string{sgDefault}, podCIDR.String())
	})
	revs := map[string]int{}
	for _, vm := range []string{"vmn", "vme"} {
		revs[vm] = w.getPort(w.ports[w.id(vm)]).RevisionNumber
	}
	on := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 10}

	alone := identityConfig("k-", "", "")
	alone.OpenStack.SecurityGroups.Settings = on
	alone.OpenStack.SecurityGroups.RequiredGroup = w.groupName("k-nodes")
	refusesPrefixAlone(t, alone, w.c, nil)

	cfg := identityConfig("k-", "kluster", "k")
	cfg.OpenStack.SecurityGroups.Settings = on
	cfg.OpenStack.SecurityGroups.RequiredGroup = w.groupName("k-nodes")
	e := onlyEntry(t, cfg, w.c, nil, nil)
	got := remediatetest.Summary(remediatetest.Pass(t, remediatetest.NewLog(), e.Remediator, e.Settings))
	vm1 := w.id("vm1")
	check(t, "records", got, []string{"planned add-security-group server/" + vm1, "applied add-security-group server/" + vm1})
	for vm, rev := range revs {
		if got := w.getPort(w.ports[w.id(vm)]).RevisionNumber; got != rev {
			t.Errorf("look-alike %s: port revision %d, want %d (untouched)", vm, got, rev)
		}
	}
}

// With a name prefix alone, an etcd VM named like the nodes is a cluster
// instance that is no node, and neutron-route-gc would remove the route
// through it: mode on needs the cluster's metadata, and with it the route
// stays while a stale route of this cluster's still goes.
func TestRouteGCJudgesClusterInstancesByMetadata(t *testing.T) {
	routes := []string{"198.19.1.0/24>10.180.0.3", "198.19.1.0/24>10.180.0.5", "198.19.2.0/24>10.180.0.4",
		"198.19.6.0/24>10.180.0.6", "198.19.11.0/24>10.180.0.11"}
	w, nodes := routeGCWorld(t, routes...)
	w.instance("vme", "k-etcd-1", nil, "ACTIVE", "10.180.0.11", nil)
	reader := struct {
		*fakeReadiness
		*fakeNodes
	}{&fakeReadiness{}, nodes}
	on := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 10}

	alone := identityConfig("k-", "", "")
	alone.OpenStack.RouterID = w.router
	alone.OpenStack.NeutronRouteGC.Settings = on
	refusesPrefixAlone(t, alone, w.c, reader)

	cfg := identityConfig("k-", "kluster", "k")
	cfg.OpenStack.RouterID = w.router
	cfg.OpenStack.NeutronRouteGC.Settings = on
	e := onlyEntry(t, cfg, w.c, reader, nil)
	remediatetest.Pass(t, remediatetest.NewLog(), e.Remediator, e.Settings)
	check(t, "routes", w.routes(), sorted(routes[1:]))
}
