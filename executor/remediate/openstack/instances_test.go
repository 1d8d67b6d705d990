package openstack

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/kube"
	"github.com/drwatch/drwatch/executor/remediate/remediatetest"
	"github.com/drwatch/drwatch/test/openstacktest"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNovaInstances(t *testing.T) {
	s, c := novaClients(t, "member-appcred")
	ids := mkServers(t, s,
		server{name: "ni-a"},
		server{name: "ni-s", then: stop},
		// A failed resize or migration: ERROR, the guest running.
		server{name: "ni-e", then: resetError},
		// Nova's status is not the guest's state: the power state is.
		server{name: "ni-e-off", then: then(stop, resetError)},
		server{name: "ni-named", then: stop},
		// A flavor no hypervisor fits: Nova's scheduler leaves the server in
		// ERROR with power state NOSTATE, a guest that never ran.
		server{name: "ni-nostate", noValidHost: true},
		server{name: "ni-paused", then: act("pause", nil, "PAUSED")},
		server{name: "ni-susp", then: act("suspend", nil, "SUSPENDED")},
		server{name: "ni-twin", meta: inCluster},
		server{name: "ni-twin", meta: map[string]string{"kluster": "other"}, then: stop},
		// The fake virt driver never crashes a guest, never leaves a server
		// in BUILD and always reports a power state: those three states are
		// written into the cell database, as Nova records them.
		server{name: "ni-crash", then: dbWrite(6, "", "")},             // CRASHED
		server{name: "ni-b", then: dbWrite(0, "building", "spawning")}, // BUILD, NOSTATE
		server{name: "ni-nopower", then: dbWrite(-1, "", "")},          // NULL
	)
	ni := NewNovaInstances(c)
	const gone = "0a0a0a0a-0000-4000-8000-00000000dead" // a server Nova never had
	pid := func(name string) string { return "openstack:///" + ids[name] }
	tests := []struct {
		node, provider string
		want           kube.InstanceState
		wantErr        bool
	}{
		{"ni-a", pid("ni-a"), kube.InstanceActive, false},
		{"ni-s", pid("ni-s"), kube.InstanceShutoff, false},
		{"ni-e", "openstack://RegionOne/" + ids["ni-e"], kube.InstanceError, false},
		{"ni-e-off", pid("ni-e-off"), kube.InstanceShutoff, false},
		{"ni-crash", pid("ni-crash"), kube.InstanceCrashed, false},
		{"ni-nostate", pid("ni-nostate"), kube.InstanceNoState, false},
		// Paused and suspended guests are not down.
		{"ni-paused", pid("ni-paused"), kube.InstanceUnknown, false},
		{"ni-susp", pid("ni-susp"), kube.InstanceUnknown, false},
		// No power state is not NOSTATE.
		{"ni-nopower", pid("ni-nopower"), kube.InstanceUnknown, false},
		// Without a providerID, a name two servers carry (one of them
		// another cluster's, powered off) proves nothing.
		{"ni-twin", "", kube.InstanceUnknown, false},
		{"ni-gone", "openstack:///" + gone, kube.InstanceGone, false},
		{"ni-b", pid("ni-b"), kube.InstanceUnknown, false},
		{"ni-named", "", kube.InstanceShutoff, false},
		{"ni-nameless", "", kube.InstanceUnknown, false},
		{"ni-aws", "aws:///eu-west-1a/i-1", kube.InstanceUnknown, true},
		{"ni-empty", "openstack:///", kube.InstanceUnknown, true},
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
		s.StopNovaAPI()
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			if err := s.StartNovaAPI(ctx); err != nil {
				t.Fatalf("restart nova-api: %v", err)
			}
		})
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ni-s"}, Spec: corev1.NodeSpec{ProviderID: pid("ni-s")}}
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
	s, c := novaClients(t, "member-appcred")
	ids := mkServers(t, s, server{name: "nf-s", then: stop})
	const gone = "0a0a0a0a-0000-4000-8000-00000000dead"
	nova, err := url.Parse(strings.TrimSuffix(s.ComputeURL, "/v2.1"))
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(nova)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/servers/"+ids["nf-s"]) || strings.HasSuffix(r.URL.Path, "/servers/"+gone) {
			http.Error(w, "404 page not found", http.StatusNotFound)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	compute := *c.Compute
	compute.Endpoint = proxy.URL + "/v2.1/"
	compute.ResourceBase = ""
	ni := &NovaInstances{compute: &compute}
	for _, id := range []string{ids["nf-s"], gone} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "nf-" + id}, Spec: corev1.NodeSpec{ProviderID: "openstack:///" + id}}
		if got, err := ni.InstanceState(context.Background(), n); got != kube.InstanceUnknown || err == nil {
			t.Errorf("%s behind a 404 that is not Nova's: got %s %v, want UNKNOWN with an error", id, got, err)
		}
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "nf-gone"}, Spec: corev1.NodeSpec{ProviderID: "openstack:///" + gone}}
	if got, err := NewNovaInstances(c).InstanceState(context.Background(), n); got != kube.InstanceGone || err != nil {
		t.Errorf("Nova's own 404: got %s %v, want GONE", got, err)
	}
}

// TestNovaInstancesComputeHost: a dead hypervisor leaves its instances
// ACTIVE and RUNNING; only the nova-compute service of the instance's host
// (OS-EXT-SRV-ATTR:host and os-services, both admin-only) shows it. A
// service that missed its heartbeats is HOST_DOWN, which may still run
// its guests; only one an operator forced down (through the real
// os-services API) is HOST_FORCED_DOWN. A host that is merely disabled,
// or not listed, is not down; without admin credentials the check is
// unavailable, never guessed.
func TestNovaInstancesComputeHost(t *testing.T) {
	s, member := novaClients(t, "member-appcred")
	_, admin := novaClients(t, "demo-admin")
	ids := deadHost(t)
	for k, v := range mkServers(t, s,
		server{name: "ch-victim", host: hostVictim},
		server{name: "ch-ok", host: hostOK},
		server{name: "ch-err", host: hostOK, then: resetError},
		// No host Nova lists a compute service for: the record is moved to
		// one in the cell database, as nothing in Nova's API can.
		server{name: "ch-nosvc", host: hostOK, then: func(ctx context.Context, s *openstacktest.Stack, id string) error {
			return s.ExecNova(ctx, "nova", fmt.Sprintf("UPDATE instances SET host='cmp-unlisted', node='cmp-unlisted' WHERE uuid='%s'", id))
		}},
	) {
		ids[k] = v
	}
	ctx := context.Background()
	// Another binary on the healthy host is down, long gone: not
	// nova-compute. (A stale service row; Nova keeps them until deleted.)
	if err := s.ExecNova(ctx, "nova", fmt.Sprintf(`INSERT INTO services (created_at, updated_at, host, `+"`binary`"+`, topic,
report_count, disabled, deleted, forced_down, version, uuid, last_seen_up)
SELECT UTC_TIMESTAMP() - INTERVAL 1 DAY, UTC_TIMESTAMP() - INTERVAL 1 DAY, '%s', 'nova-conductor', 'conductor', 1, 0, 0, 0, version, UUID(),
UTC_TIMESTAMP() - INTERVAL 1 DAY FROM services WHERE `+"`binary`"+`='nova-conductor' LIMIT 1`, hostOK)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.ExecNova(context.Background(), "nova", fmt.Sprintf("DELETE FROM services WHERE host='%s' AND `binary`='nova-conductor'", hostOK))
		if err := s.SetService(context.Background(), hostVictim, false, false); err != nil {
			t.Errorf("restore %s: %v", hostVictim, err)
		}
	})
	type row struct {
		node, provider string
		admin, member  kube.InstanceState
	}
	pid := func(name string) string { return "openstack:///" + ids[name] }
	common := []row{
		{"ch-hv", pid("ch-hv"), kube.InstanceHostDown, kube.InstanceActive},
		{"ch-hv", "", kube.InstanceHostDown, kube.InstanceActive},
		{"ch-ok", pid("ch-ok"), kube.InstanceActive, kube.InstanceActive},
		{"ch-err", pid("ch-err"), kube.InstanceError, kube.InstanceError},
		{"ch-nosvc", pid("ch-nosvc"), kube.InstanceActive, kube.InstanceActive},
	}
	for _, phase := range []struct {
		name             string
		disabled, forced bool
		victimAdminWant  kube.InstanceState
	}{
		{"disabled", true, false, kube.InstanceActive},
		{"forced down", false, true, kube.InstanceHostForcedDown},
	} {
		if err := s.SetService(ctx, hostVictim, phase.disabled, phase.forced); err != nil {
			t.Fatal(err)
		}
		for _, tt := range append(common, row{"ch-victim", pid("ch-victim"), phase.victimAdminWant, kube.InstanceActive}) {
			for _, as := range []struct {
				who  string
				c    *Clients
				want kube.InstanceState
			}{{"admin", admin, tt.admin}, {"member", member, tt.member}} {
				t.Run(phase.name+"/"+tt.node+"/"+tt.provider+"/"+as.who, func(t *testing.T) {
					n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: tt.node}, Spec: corev1.NodeSpec{ProviderID: tt.provider}}
					got, err := NewNovaInstances(as.c).InstanceState(context.Background(), n)
					if got != as.want || err != nil {
						t.Fatalf("got %s %v, want %s", got, err, as.want)
					}
				})
			}
		}
	}
	// An admin of another project finds the server by its providerID, but
	// Nova lists only the token's own project: by name it finds nothing
	// and proves nothing.
	_, other := novaClients(t, "admin")
	for _, tt := range []row{
		{"ch-hv", pid("ch-hv"), kube.InstanceHostDown, ""},
		{"ch-hv", "", kube.InstanceUnknown, ""},
	} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: tt.node}, Spec: corev1.NodeSpec{ProviderID: tt.provider}}
		if got, err := NewNovaInstances(other).InstanceState(ctx, n); got != tt.admin || err != nil {
			t.Errorf("admin of another project, %s %q: got %s %v, want %s", tt.node, tt.provider, got, err, tt.admin)
		}
	}
	// The advice for a HOST_DOWN instance names its host and the command
	// that records the fence; without admin credentials no host is seen.
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ch-hv"}, Spec: corev1.NodeSpec{ProviderID: pid("ch-hv")}}
	want := "openstack compute service set --down " + hostDead + " nova-compute"
	if got := NewNovaInstances(admin).FenceAdvice(ctx, n); !strings.Contains(got, want) || !strings.Contains(got, "fence host "+hostDead) {
		t.Errorf("fence advice as admin: got %q, want it to name %s and %q", got, hostDead, want)
	}
	if got := NewNovaInstances(member).FenceAdvice(ctx, n); got != "" {
		t.Errorf("fence advice as a member: got %q, want none", got)
	}
}

// TestDeadNodeWithNova runs dead-node-out-of-service against a real
// kube-apiserver with real Nova as its instance check. A node whose guest
// Nova shows powered off is tainted, on a healthy host or a dead one. The
// node on a dead hypervisor (its nova-compute stopped, so Nova shows the
// service down) may still run its guest: its taint is only reported,
// naming the host and the command that records its fence, until an
// operator forces the service down through the os-services API; then it
// is tainted. The look-alikes (ERROR with a running guest, a partitioned
// node on a healthy host, a name shared with another cluster's powered-off
// server) are never written. Without admin credentials the dead
// hypervisor cannot be seen at all.
func TestDeadNodeWithNova(t *testing.T) {
	s, member := novaClients(t, "member-appcred")
	_, admin := novaClients(t, "demo-admin")
	ids := deadHost(t)
	for k, v := range mkServers(t, s,
		server{name: "dn-off", then: stop},
		server{name: "dn-err", then: resetError},
		server{name: "dn-part"},
		server{name: "dn-twin", meta: inCluster},
		server{name: "dn-twin", meta: map[string]string{"kluster": "other"}, then: stop},
	) {
		ids[k] = v
	}

	c := realKube(t)
	for _, name := range []string{"dn-hv", "dn-hv-off", "dn-off", "dn-err"} {
		mkNode(t, name, "openstack:///"+ids[name], corev1.ConditionUnknown, 0)
	}
	mkNode(t, "dn-part", "openstack:///"+ids["dn-part"], corev1.ConditionFalse, 0)
	mkNode(t, "dn-twin", "", corev1.ConditionUnknown, 0)
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

	// A member reads power states, not hosts.
	recs := remediatetest.Pass(t, remediatetest.NewLog(), kube.NewDeadNode(c, NewNovaInstances(member), 5*time.Minute, later), on)
	check(t, "member credentials", remediatetest.Summary(recs), []string{
		"planned taint node/dn-hv-off", "applied taint node/dn-hv-off", "planned taint node/dn-off", "applied taint node/dn-off"})

	fc := remediatetest.NewLog()
	dn := kube.NewDeadNode(c, NewNovaInstances(admin), 5*time.Minute, later)
	recs = remediatetest.Pass(t, fc, dn, on)
	check(t, "admin credentials, host down", remediatetest.Summary(recs), []string{"dry_run taint node/dn-hv"})
	fence := "openstack compute service set --down " + hostDead + " nova-compute"
	if !strings.Contains(recs[0].Detail, "report-only") || !strings.Contains(recs[0].Detail, fence) {
		t.Fatalf("dn-hv: got detail %q, want report-only naming %q", recs[0].Detail, fence)
	}
	if tainted("dn-hv") {
		t.Fatal("dn-hv tainted while its host is only down: its guest may still run")
	}

	// The operator fences the host and says so.
	ctx := context.Background()
	if err := s.SetService(ctx, hostDead, false, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.SetService(context.Background(), hostDead, false, false); err != nil {
			t.Errorf("restore %s: %v", hostDead, err)
		}
	})
	recs = remediatetest.Pass(t, fc, dn, on)
	check(t, "admin credentials, host forced down", remediatetest.Summary(recs), []string{"planned taint node/dn-hv", "applied taint node/dn-hv"})
	for _, n := range []string{"dn-hv", "dn-hv-off", "dn-off"} {
		if !tainted(n) {
			t.Errorf("%s: not tainted", n)
		}
	}
	for _, n := range []string{"dn-err", "dn-part", "dn-twin"} {
		if tainted(n) {
			t.Errorf("look-alike %s tainted", n)
		}
	}
}

func TestEntries(t *testing.T) {
	c := &Clients{} // building touches no cloud
	base := config{}
	base.OpenStack.AuthURL = "https://keystone.example:5000/v3"
	base.OpenStack.ApplicationCredentialIDFile = "/etc/drwatch/id"
	base.OpenStack.ApplicationCredentialSecretFile = "/etc/drwatch/secret"
	base.OpenStack.RouterID = "r1"
	base.OpenStack.PodCIDR = "198.19.0.0/16"
	base.OpenStack.InstanceNamePrefix = "k-"
	base.OpenStack.InstanceMetadataKey, base.OpenStack.InstanceMetadataValue = "kluster", "k"
	base.OpenStack.SecurityGroups.RequiredGroup = "k-nodes"

	t.Run("off builds nothing", func(t *testing.T) {
		es, err := entries(base, nil, nil, nil)
		if err != nil || len(es) != 0 {
			t.Fatalf("got %d entries %v, want none", len(es), err)
		}
	})
	t.Run("enabled builds each", func(t *testing.T) {
		cfg := base
		cfg.OpenStack.NeutronRouteGC.Mode = remediate.ModeDryRun
		cfg.OpenStack.SecurityGroups.Mode = remediate.ModeOn
		cfg.OpenStack.NeverReadyInstances.Mode = remediate.ModeDryRun
		es, err := entries(cfg, c, struct {
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
		if g := es[0].Remediator.(*RouteGC); g.limit != DefaultRouteLimit {
			t.Fatalf("got route limit %d, want %d", g.limit, DefaultRouteLimit)
		}
		if n := es[2].Remediator.(*NeverReady); n.after != 15*time.Minute || n.maxAge != time.Hour {
			t.Fatalf("got active_for %s and max_age %s, want 15m and 1h", n.after, n.maxAge)
		}
		if _, err := entries(cfg, c, nil, nil); err == nil {
			t.Fatal("got no error without readiness, want one")
		}
	})
	t.Run("dry-run builds with a name prefix alone", func(t *testing.T) {
		cfg := base
		cfg.OpenStack.InstanceMetadataKey, cfg.OpenStack.InstanceMetadataValue = "", ""
		cfg.OpenStack.SecurityGroups.Mode = remediate.ModeDryRun
		if es, err := entries(cfg, c, nil, nil); err != nil || len(es) != 1 {
			t.Fatalf("got %d entries %v, want security-groups in dry-run", len(es), err)
		}
	})
	t.Run("route gc refuses to build without the nodes' pod CIDRs", func(t *testing.T) {
		cfg := base
		cfg.OpenStack.NeutronRouteGC.Mode = remediate.ModeDryRun
		if _, err := entries(cfg, c, nil, nil); err == nil || !strings.Contains(err.Error(), "remediations.openstack.neutron_route_gc") {
			t.Fatalf("got %v, want an error naming remediations.openstack.neutron_route_gc", err)
		}
	})
	t.Run("validation names every field", func(t *testing.T) {
		cfg := config{}
		cfg.OpenStack.NeutronRouteGC.Mode = remediate.ModeOn
		cfg.OpenStack.SecurityGroups.Mode = "maybe"
		cfg.OpenStack.PodCIDR = "198.19.0.1/16"
		_, err := entries(cfg, c, nil, nil)
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
	s, c := novaClients(t, "member-appcred")
	ids := mkServers(t, s,
		server{name: "rn-a"},
		server{name: "rn-named"},
		server{name: "rn-dup"},
		server{name: "rn-dup"},
		server{name: "rn-err", then: resetError},
	)
	ni := NewNovaInstances(c)
	reboot := func(name, provider string) error {
		return ni.RebootNode(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: provider}})
	}
	if err := reboot("rn-a", "openstack:///"+ids["rn-a"]); err != nil {
		t.Fatalf("by providerID: %v", err)
	}
	if err := reboot("rn-named", ""); err != nil {
		t.Fatalf("by name: %v", err)
	}
	for _, name := range []string{"rn-a", "rn-named"} {
		if n := reboots(t, s, ids[name]); n != 1 {
			t.Errorf("%s: got %d reboots, want 1", name, n)
		}
	}
	if err := reboot("rn-dup", ""); err == nil {
		t.Error("two servers with the node's name: got nil error, want a refusal")
	}
	if err := reboot("rn-aws", "aws:///eu-west-1a/i-1"); err == nil {
		t.Error("non-OpenStack providerID: got nil error")
	}
	all, err := servers.List(c.Compute, servers.ListOpts{Name: "^rn-dup$"}).AllPages(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	dups, err := servers.ExtractServers(all)
	if err != nil || len(dups) != 2 {
		t.Fatalf("got %d rn-dup servers (%v), want 2", len(dups), err)
	}
	for _, d := range dups {
		if n := reboots(t, s, d.ID); n != 0 {
			t.Errorf("an ambiguous name rebooted %s %d times", d.ID, n)
		}
	}
	// Nova refuses a soft reboot of a server in ERROR (409, vm_state
	// error): the node is not rebooted, and the refusal is an error.
	err = reboot("rn-err", "openstack:///"+ids["rn-err"])
	if !gophercloud.ResponseCodeIs(err, http.StatusConflict) {
		t.Errorf("soft reboot of a server in ERROR: got %v, want Nova's 409", err)
	}
	if n := reboots(t, s, ids["rn-err"]); n != 0 {
		t.Errorf("server in ERROR: got %d reboots, want 0", n)
	}
}
