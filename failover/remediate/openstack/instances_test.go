package openstack

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover/remediate"
	"github.com/drwatch/drwatch/failover/remediate/kube"
	"github.com/drwatch/drwatch/failover/remediate/remediatetest"
	"github.com/drwatch/drwatch/test/openstacksim"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNovaInstances(t *testing.T) {
	s, c := simClients(t)
	node(s, "vm-a", "k-a", "ACTIVE", "10.180.0.1", t0, nil)
	node(s, "vm-s", "k-s", "SHUTOFF", "10.180.0.2", t0, nil)
	node(s, "vm-e", "k-e", "ERROR", "10.180.0.3", t0, nil)
	node(s, "vm-b", "k-b", "BUILD", "10.180.0.4", t0, nil)
	node(s, "vm-n", "k-named", "SHUTOFF", "10.180.0.5", t0, nil)
	// Nova's status is not the guest's state: the power state is.
	node(s, "vm-e-off", "k-e-off", "ERROR", "10.180.0.6", t0, nil)
	s.SetPower("vm-e-off", openstacksim.PowerShutdown)
	node(s, "vm-crash", "k-crash", "ACTIVE", "10.180.0.7", t0, nil)
	s.SetPower("vm-crash", openstacksim.PowerCrashed)
	node(s, "vm-nostate", "k-nostate", "ERROR", "10.180.0.8", t0, nil)
	s.SetPower("vm-nostate", openstacksim.PowerNoState)
	node(s, "vm-paused", "k-paused", "PAUSED", "10.180.0.9", t0, nil)
	node(s, "vm-susp", "k-susp", "SUSPENDED", "10.180.0.10", t0, nil)
	node(s, "vm-nopower", "k-nopower", "ACTIVE", "10.180.0.11", t0, nil)
	s.SetPower("vm-nopower", openstacksim.PowerOmitted)
	node(s, "vm-twin1", "k-twin", "ACTIVE", "10.180.0.12", t0, nil)
	node(s, "vm-twin2", "k-twin", "SHUTOFF", "10.180.0.13", t0, nil)
	ni := NewNovaInstances(c)
	tests := []struct {
		node, provider string
		want           kube.InstanceState
		wantErr        bool
	}{
		{"k-a", "openstack:///vm-a", kube.InstanceActive, false},
		{"k-s", "openstack:///vm-s", kube.InstanceShutoff, false},
		// A failed resize or migration: ERROR, the guest running.
		{"k-e", "openstack://RegionOne/vm-e", kube.InstanceError, false},
		{"k-e-off", "openstack:///vm-e-off", kube.InstanceShutoff, false},
		{"k-crash", "openstack:///vm-crash", kube.InstanceCrashed, false},
		{"k-nostate", "openstack:///vm-nostate", kube.InstanceNoState, false},
		// Paused and suspended guests are not down.
		{"k-paused", "openstack:///vm-paused", kube.InstanceUnknown, false},
		{"k-susp", "openstack:///vm-susp", kube.InstanceUnknown, false},
		// No power state is not NOSTATE.
		{"k-nopower", "openstack:///vm-nopower", kube.InstanceUnknown, false},
		// Without a providerID, a name two servers carry (one of them
		// another cluster's, powered off) proves nothing.
		{"k-twin", "", kube.InstanceUnknown, false},
		{"k-gone", "openstack:///vm-gone", kube.InstanceGone, false},
		{"k-b", "openstack:///vm-b", kube.InstanceUnknown, false},
		{"k-named", "", kube.InstanceShutoff, false},
		{"k-nameless", "", kube.InstanceUnknown, false},
		{"k-aws", "aws:///eu-west-1a/i-1", kube.InstanceUnknown, true},
		{"k-empty", "openstack:///", kube.InstanceUnknown, true},
	}
	for _, tt := range tests {
		t.Run(tt.node, func(t *testing.T) {
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: tt.node}, Spec: corev1.NodeSpec{ProviderID: tt.provider}}
			got, err := ni.InstanceState(context.Background(), n)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Fatalf("%s %q: got %s %v, want %s (error %v)", tt.node, tt.provider, got, err, tt.want, tt.wantErr)
			}
		})
	}
	t.Run("cloud down is unknown", func(t *testing.T) {
		s.Close()
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "k-s"}, Spec: corev1.NodeSpec{ProviderID: "openstack:///vm-s"}}
		got, err := ni.InstanceState(context.Background(), n)
		if got != kube.InstanceUnknown || err == nil {
			t.Fatalf("got %s %v, want UNKNOWN with an error", got, err)
		}
	})
}

// TestNovaInstancesGoneNeedsNovasNotFound: only Nova's own 404
// (itemNotFound) means the server is gone. A 404 from something else on
// the way, such as a proxy whose Nova back end is not back yet or a wrong
// endpoint, proves nothing about the server.
func TestNovaInstancesGoneNeedsNovasNotFound(t *testing.T) {
	s, c := simClients(t)
	node(s, "vm-s", "k-s", "SHUTOFF", "10.180.0.2", t0, nil)
	sim, err := url.Parse(strings.TrimSuffix(s.AuthURL(), "/identity/v3/"))
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(sim)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/servers/vm-s") || strings.HasSuffix(r.URL.Path, "/servers/vm-gone") {
			http.Error(w, "404 page not found", http.StatusNotFound)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	compute := *c.Compute
	compute.Endpoint = proxy.URL + "/compute/v2.1/"
	compute.ResourceBase = ""
	ni := &NovaInstances{compute: &compute}
	for _, id := range []string{"vm-s", "vm-gone"} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "k-" + id}, Spec: corev1.NodeSpec{ProviderID: "openstack:///" + id}}
		if got, err := ni.InstanceState(context.Background(), n); got != kube.InstanceUnknown || err == nil {
			t.Errorf("%s behind a 404 that is not Nova's: got %s %v, want UNKNOWN with an error", id, got, err)
		}
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "k-gone"}, Spec: corev1.NodeSpec{ProviderID: "openstack:///vm-gone"}}
	if got, err := NewNovaInstances(c).InstanceState(context.Background(), n); got != kube.InstanceGone || err != nil {
		t.Errorf("Nova's own 404: got %s %v, want GONE", got, err)
	}
}

// TestNovaInstancesComputeHost: a dead hypervisor leaves its instances
// ACTIVE and RUNNING; only the nova-compute service of the instance's host
// (OS-EXT-SRV-ATTR:host and os-services, both admin-only) shows it. A
// host that is merely disabled, or not listed, is not down; without admin
// credentials the check is unavailable, never guessed.
func TestNovaInstancesComputeHost(t *testing.T) {
	s, member := simClients(t)
	admin := simClientsAs(t, s, openstacksim.AdminAppCredID, openstacksim.AdminAppCredSecret)
	hosted := func(id, name, status, host string) {
		s.PutServer(openstacksim.Server{ID: id, Name: name, Status: status, Host: host, Created: t0, LaunchedAt: t0})
	}
	hosted("vm-hv", "k-hv", "ACTIVE", "cmp-dead")
	hosted("vm-fenced", "k-fenced", "ACTIVE", "cmp-fenced")
	hosted("vm-ok", "k-ok", "ACTIVE", "cmp-ok")
	hosted("vm-err", "k-err", "ERROR", "cmp-ok")
	hosted("vm-dis", "k-dis", "ACTIVE", "cmp-disabled")
	hosted("vm-nosvc", "k-nosvc", "ACTIVE", "cmp-unlisted")
	s.PutService(openstacksim.ComputeService{ID: 1, Host: "cmp-dead", Down: true})
	s.PutService(openstacksim.ComputeService{ID: 2, Host: "cmp-fenced", ForcedDown: true})
	s.PutService(openstacksim.ComputeService{ID: 3, Host: "cmp-ok"})
	s.PutService(openstacksim.ComputeService{ID: 4, Host: "cmp-disabled", Disabled: true})
	// Another binary on the healthy host is down: not nova-compute.
	s.PutService(openstacksim.ComputeService{ID: 5, Host: "cmp-ok", Binary: "nova-conductor", Down: true})
	tests := []struct {
		node, provider string
		admin, member  kube.InstanceState
	}{
		{"k-hv", "openstack:///vm-hv", kube.InstanceHostDown, kube.InstanceActive},
		{"k-fenced", "openstack:///vm-fenced", kube.InstanceHostDown, kube.InstanceActive},
		{"k-hv", "", kube.InstanceHostDown, kube.InstanceActive},
		{"k-ok", "openstack:///vm-ok", kube.InstanceActive, kube.InstanceActive},
		{"k-err", "openstack:///vm-err", kube.InstanceError, kube.InstanceError},
		{"k-dis", "openstack:///vm-dis", kube.InstanceActive, kube.InstanceActive},
		{"k-nosvc", "openstack:///vm-nosvc", kube.InstanceActive, kube.InstanceActive},
	}
	for _, tt := range tests {
		for _, as := range []struct {
			who  string
			c    *Clients
			want kube.InstanceState
		}{{"admin", admin, tt.admin}, {"member", member, tt.member}} {
			t.Run(tt.node+"/"+tt.provider+"/"+as.who, func(t *testing.T) {
				n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: tt.node}, Spec: corev1.NodeSpec{ProviderID: tt.provider}}
				got, err := NewNovaInstances(as.c).InstanceState(context.Background(), n)
				if got != as.want || err != nil {
					t.Fatalf("got %s %v, want %s", got, err, as.want)
				}
			})
		}
	}
}

// TestDeadNodeWithNova runs dead-node-out-of-service against a real
// kube-apiserver with Nova (the simulator) as its instance check: the
// node on a dead hypervisor is tainted; the look-alikes (ERROR with a
// running guest, a partitioned node on a healthy host, a name shared
// with another cluster's powered-off server) are never written. Without
// admin credentials the dead hypervisor cannot be seen, and nothing is
// tainted.
func TestDeadNodeWithNova(t *testing.T) {
	s, member := simClients(t)
	admin := simClientsAs(t, s, openstacksim.AdminAppCredID, openstacksim.AdminAppCredSecret)
	s.PutServer(openstacksim.Server{ID: "vm-hv", Name: "k-hv", Status: "ACTIVE", Host: "cmp-dead"})
	s.PutServer(openstacksim.Server{ID: "vm-err", Name: "k-err", Status: "ERROR", Host: "cmp-ok"})
	s.PutServer(openstacksim.Server{ID: "vm-part", Name: "k-part", Status: "ACTIVE", Host: "cmp-ok"})
	s.PutServer(openstacksim.Server{ID: "vm-twin1", Name: "k-twin", Status: "ACTIVE", Host: "cmp-ok"})
	s.PutServer(openstacksim.Server{ID: "vm-twin2", Name: "k-twin", Status: "SHUTOFF", Host: "cmp-ok"})
	s.PutService(openstacksim.ComputeService{ID: 1, Host: "cmp-dead", Down: true})
	s.PutService(openstacksim.ComputeService{ID: 2, Host: "cmp-ok"})

	c := realKube(t)
	mkNode(t, c, "k-hv", "openstack:///vm-hv", corev1.ConditionUnknown, 0)
	mkNode(t, c, "k-err", "openstack:///vm-err", corev1.ConditionUnknown, 0)
	mkNode(t, c, "k-part", "openstack:///vm-part", corev1.ConditionFalse, 0)
	mkNode(t, c, "k-twin", "", corev1.ConditionUnknown, 0)
	later := func() time.Time { return time.Now().Add(time.Hour) }
	tainted := func(name string) bool {
		n, err := c.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range n.Spec.Taints {
			if tt.Key == kube.TaintOutOfService {
				return true
			}
		}
		return false
	}
	on := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 10}

	recs := remediatetest.Pass(t, remediatetest.NewLog(), kube.NewDeadNode(c, NewNovaInstances(member), 5*time.Minute, later), on)
	if len(recs) != 0 {
		t.Fatalf("member credentials: got records %+v, want none", recs)
	}
	recs = remediatetest.Pass(t, remediatetest.NewLog(), kube.NewDeadNode(c, NewNovaInstances(admin), 5*time.Minute, later), on)
	check(t, "admin credentials", remediatetest.Summary(recs), []string{"planned taint node/k-hv", "applied taint node/k-hv"})
	if !tainted("k-hv") {
		t.Fatal("k-hv: not tainted")
	}
	for _, n := range []string{"k-err", "k-part", "k-twin"} {
		if tainted(n) {
			t.Errorf("look-alike %s tainted", n)
		}
	}
}

func TestEntries(t *testing.T) {
	_, c := simClients(t)
	base := remediate.Config{}
	base.OpenStack.AuthURL = "https://keystone.example:5000/v3"
	base.OpenStack.ApplicationCredentialIDFile = "/etc/drwatch/id"
	base.OpenStack.ApplicationCredentialSecretFile = "/etc/drwatch/secret"
	base.OpenStack.RouterID = "r1"
	base.OpenStack.PodCIDR = "198.19.0.0/16"
	base.OpenStack.InstanceNamePrefix = "k-"
	base.OpenStack.SecurityGroups.RequiredGroup = "k-nodes"

	t.Run("off builds nothing", func(t *testing.T) {
		es, err := Entries(base, nil, nil, nil)
		if err != nil || len(es) != 0 {
			t.Fatalf("got %d entries %v, want none", len(es), err)
		}
	})
	t.Run("enabled builds each", func(t *testing.T) {
		cfg := base
		cfg.OpenStack.NeutronRouteGC.Mode = remediate.ModeDryRun
		cfg.OpenStack.SecurityGroups.Mode = remediate.ModeOn
		cfg.OpenStack.NeverReadyInstances.Mode = remediate.ModeDryRun
		es, err := Entries(cfg, c, struct {
			*fakeReadiness
			*fakeNodes
		}{&fakeReadiness{}, &fakeNodes{}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range es {
			names = append(names, e.Remediator.Name()+"/"+string(e.Settings.Mode))
		}
		check(t, "entries", names, []string{"neutron-route-gc/dry-run", "security-groups/on", "never-ready-instances/dry-run"})
		if g := es[0].Remediator.(*RouteGC); g.limit != remediate.DefaultRouteLimit {
			t.Fatalf("got route limit %d, want %d", g.limit, remediate.DefaultRouteLimit)
		}
		if n := es[2].Remediator.(*NeverReady); n.after != 15*time.Minute {
			t.Fatalf("got active_for %s, want 15m", n.after)
		}
		if _, err := Entries(cfg, c, nil, nil); err == nil {
			t.Fatal("got no error without readiness, want one")
		}
	})
	t.Run("route gc refuses to build without the nodes' pod CIDRs", func(t *testing.T) {
		cfg := base
		cfg.OpenStack.NeutronRouteGC.Mode = remediate.ModeDryRun
		if _, err := Entries(cfg, c, nil, nil); err == nil || !strings.Contains(err.Error(), "remediations.openstack.neutron_route_gc") {
			t.Fatalf("got %v, want an error naming remediations.openstack.neutron_route_gc", err)
		}
	})
	t.Run("validation names every field", func(t *testing.T) {
		cfg := remediate.Config{}
		cfg.OpenStack.NeutronRouteGC.Mode = remediate.ModeOn
		cfg.OpenStack.SecurityGroups.Mode = "maybe"
		cfg.OpenStack.PodCIDR = "198.19.0.1/16"
		_, err := Entries(cfg, c, nil, nil)
		if err == nil {
			t.Fatal("got nil, want errors")
		}
		for _, want := range []string{"remediations.openstack.security_groups.mode", "remediations.openstack.cloud",
			"remediations.openstack.instance_name_prefix", "remediations.openstack.pod_cidr", "remediations.openstack.router_id"} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("got %v, want it to name %s", err, want)
			}
		}
	})
}

func TestNovaRebootNode(t *testing.T) {
	s, c := simClients(t)
	node(s, "vm-a", "k-a", "ACTIVE", "10.180.0.1", t0, nil)
	node(s, "vm-n", "k-named", "ACTIVE", "10.180.0.2", t0, nil)
	node(s, "vm-d1", "k-dup", "ACTIVE", "10.180.0.3", t0, nil)
	node(s, "vm-d2", "k-dup", "ACTIVE", "10.180.0.4", t0, nil)
	ni := NewNovaInstances(c)
	reboot := func(name, provider string) error {
		return ni.RebootNode(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: provider}})
	}
	if err := reboot("k-a", "openstack:///vm-a"); err != nil {
		t.Fatalf("by providerID: %v", err)
	}
	if err := reboot("k-named", ""); err != nil {
		t.Fatalf("by name: %v", err)
	}
	reboots := func(id string) int {
		n := 0
		for _, a := range s.Actions(id) {
			if a.Action == "reboot" {
				n++
			}
		}
		return n
	}
	for _, id := range []string{"vm-a", "vm-n"} {
		if n := reboots(id); n != 1 {
			t.Errorf("%s: got %d reboots, want 1", id, n)
		}
	}
	if err := reboot("k-dup", ""); err == nil {
		t.Error("two servers with the node's name: got nil error, want a refusal")
	}
	if err := reboot("k-aws", "aws:///eu-west-1a/i-1"); err == nil {
		t.Error("non-OpenStack providerID: got nil error")
	}
	if n := reboots("vm-d1") + reboots("vm-d2"); n != 0 {
		t.Errorf("an ambiguous name rebooted %d servers", n)
	}
}
