package openstack

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover/remediate"
	"github.com/drwatch/drwatch/failover/remediate/kube"
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
	ni := NewNovaInstances(c)
	tests := []struct {
		node, provider string
		want           kube.InstanceState
		wantErr        bool
	}{
		{"k-a", "openstack:///vm-a", kube.InstanceActive, false},
		{"k-s", "openstack:///vm-s", kube.InstanceShutoff, false},
		{"k-e", "openstack://RegionOne/vm-e", kube.InstanceError, false},
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
