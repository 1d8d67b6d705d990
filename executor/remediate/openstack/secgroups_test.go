package openstack

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/remediatetest"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/portsecurity"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

func TestSecurityGroups(t *testing.T) {
	w := newWorld(t)
	sgDefault, sgK := w.defaultGroup(), w.group("k-nodes")
	w.bulk(func() {
		// Healthy look-alike: has the group and the pod CIDR pair.
		w.node("vm4", "k-node-4", "ACTIVE", "10.180.0.4", []string{sgK}, "198.19.0.0/16")
		// Covered by a wider pair: healthy too.
		w.node("vm6", "k-node-6", "ACTIVE", "10.180.0.6", []string{sgDefault, sgK}, "198.16.0.0/12")
		// Broken: without the group, without the pair.
		w.node("vm5", "k-node-5", "ACTIVE", "10.180.0.5", []string{sgDefault})
	})
	vm5, port5 := w.id("vm5"), w.ports[w.id("vm5")]
	lookAlikes := map[string]int{}
	for _, vm := range []string{"vm4", "vm6"} {
		id := w.ports[w.id(vm)]
		lookAlikes[id] = w.getPort(id).RevisionNumber
	}
	r := NewSecurityGroups(w.c, cluster, w.groupName("k-nodes"), podCIDR)
	fc := remediatetest.NewLog()

	t.Run("dry-run writes nothing", func(t *testing.T) {
		n, rev := w.writes(), w.getPort(port5).RevisionNumber
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, remediate.Settings{Mode: remediate.ModeDryRun, MaxPerPass: 5}))
		check(t, "records", got, []string{"dry_run add-security-group server/" + vm5, "dry_run add-address-pair port/" + port5})
		if w.writes() != n {
			t.Fatalf("got %d writes after dry-run, want %d", w.writes(), n)
		}
		if got := w.getPort(port5).RevisionNumber; got != rev {
			t.Fatalf("port revision %d after dry-run, want %d", got, rev)
		}
	})
	on := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 1, MaxPerHour: 10}
	t.Run("group added back within the cap", func(t *testing.T) {
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on))
		check(t, "records", got, []string{"planned add-security-group server/" + vm5, "applied add-security-group server/" + vm5,
			"skipped_cap add-address-pair port/" + port5})
		if g := w.getPort(port5).SecurityGroups; !slices.Contains(g, sgK) {
			t.Fatalf("got groups %v, want %s", g, sgK)
		}
	})
	t.Run("pair added with the revision as CAS", func(t *testing.T) {
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on))
		check(t, "records", got, []string{"planned add-address-pair port/" + port5, "applied add-address-pair port/" + port5})
		p := w.getPort(port5)
		if len(p.AllowedAddressPairs) != 1 || p.AllowedAddressPairs[0].IPAddress != "198.19.0.0/16" {
			t.Fatalf("got pairs %v, want 198.19.0.0/16", p.AllowedAddressPairs)
		}
	})
	t.Run("repeated pass is a no-op", func(t *testing.T) {
		n := w.writes()
		if got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on)); len(got) != 0 {
			t.Fatalf("got records %q, want none", got)
		}
		if w.writes() != n {
			t.Fatalf("got %d writes, want %d", w.writes(), n)
		}
		for id, rev := range lookAlikes {
			if p := w.getPort(id); p.RevisionNumber != rev {
				t.Fatalf("look-alike %s: got revision %d, want %d (untouched)", id, p.RevisionNumber, rev)
			}
		}
	})
	t.Run("stale revision is a precondition and re-planned", func(t *testing.T) {
		w.node("vm7", "k-node-7", "ACTIVE", "10.180.0.7", []string{sgK})
		port7 := w.ports[w.id("vm7")]
		acts, err := r.Plan(context.Background())
		if err != nil || len(acts) != 1 || acts[0].Verb != "add-address-pair" {
			t.Fatalf("got %+v %v, want one add-address-pair", acts, err)
		}
		// Someone else changes the port: Neutron bumps its revision.
		name := "renamed"
		if _, err := ports.Update(context.Background(), w.member, port7, ports.UpdateOpts{Name: &name}).Extract(); err != nil {
			t.Fatal(err)
		}
		err = r.Apply(context.Background(), acts[0])
		if !errorsIsPrecondition(err) || !strings.Contains(err.Error(), "412") {
			t.Fatalf("got %v, want ErrPrecondition from a 412", err)
		}
		if p := w.getPort(port7); len(p.AllowedAddressPairs) != 0 {
			t.Fatalf("got pairs %v after a refused CAS, want none", p.AllowedAddressPairs)
		}
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on))
		check(t, "re-planned", got, []string{"planned add-address-pair port/" + port7, "applied add-address-pair port/" + port7})
	})
	t.Run("one pass with both actions: the group bumps the revision", func(t *testing.T) {
		vm8 := w.node("vm8", "k-node-8", "ACTIVE", "10.180.0.8", []string{sgDefault})
		port8 := w.ports[vm8]
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 10}))
		check(t, "records", got, []string{"planned add-security-group server/" + vm8, "applied add-security-group server/" + vm8,
			"planned add-address-pair port/" + port8, "failed add-address-pair port/" + port8})
		got = remediatetest.Summary(remediatetest.Pass(t, fc, r, remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 10}))
		check(t, "next pass", got, []string{"planned add-address-pair port/" + port8, "applied add-address-pair port/" + port8})
	})
}

// bootWithoutPortSecurity boots a cluster instance (key) on a port with
// port security off (and so no security group), and returns the
// instance's and the port's IDs.
func bootWithoutPortSecurity(t *testing.T, w *world, key, name, ip string) (string, string) {
	t.Helper()
	off, none := false, []string{}
	opts := portsecurity.PortCreateOptsExt{PortSecurityEnabled: &off, CreateOptsBuilder: ports.CreateOpts{NetworkID: w.net,
		Name: "port-" + name, SecurityGroups: &none, FixedIPs: []ports.IP{{SubnetID: w.subnet, IPAddress: ip}}}}
	p, err := ports.Create(context.Background(), w.member, opts).Extract()
	if err != nil {
		t.Fatalf("create port without port security: %v", err)
	}
	w.boot([]string{key}, []server{{name: name, meta: inCluster}}, []string{p.ID})
	return w.ids[key], p.ID
}

// Neutron refuses security groups and allowed_address_pairs on a port
// with port security off, which filters nothing: such a port needs
// neither, and the remediator plans neither.
func TestSecurityGroupsLeavePortsWithoutPortSecurity(t *testing.T) {
	w := newWorld(t)
	sgK := w.group("k-nodes")
	_, port5 := bootWithoutPortSecurity(t, w, "vm5", "k-node-5", "10.180.0.5")
	w.node("vm4", "k-node-4", "ACTIVE", "10.180.0.4", []string{sgK}, "198.19.0.0/16")
	ctx := context.Background()

	pairs := []ports.AddressPair{{IPAddress: podCIDR.String()}}
	_, err := ports.Update(ctx, w.member, port5, ports.UpdateOpts{AllowedAddressPairs: &pairs}).Extract()
	if !gophercloud.ResponseCodeIs(err, 409) || !strings.Contains(err.Error(), "AddressPairAndPortSecurityRequired") {
		t.Fatalf("pair on a port without port security: got %v, want Neutron's 409 AddressPairAndPortSecurityRequired", err)
	}
	groupsK := []string{sgK}
	_, err = ports.Update(ctx, w.member, port5, ports.UpdateOpts{SecurityGroups: &groupsK}).Extract()
	if !gophercloud.ResponseCodeIs(err, 400) || !strings.Contains(err.Error(), "PortSecurityAndIPRequiredForSecurityGroups") {
		t.Fatalf("group on a port without port security: got %v, want Neutron's 400 PortSecurityAndIPRequiredForSecurityGroups", err)
	}

	r := NewSecurityGroups(w.c, cluster, w.groupName("k-nodes"), podCIDR)
	if acts, err := r.Plan(ctx); err != nil || len(acts) != 0 {
		t.Fatalf("got %v %v, want nothing to do", acts, err)
	}

	t.Run("port security turned off between plan and apply is a precondition", func(t *testing.T) {
		vm6 := w.node("vm6", "k-node-6", "ACTIVE", "10.180.0.6", []string{sgK})
		port6 := w.ports[vm6]
		acts, err := r.Plan(ctx)
		if err != nil || len(acts) != 1 || acts[0].Target != "port/"+port6 {
			t.Fatalf("got %+v %v, want one add-address-pair for %s", acts, err, port6)
		}
		off, none := false, []string{}
		if _, err := ports.Update(ctx, w.member, port6, portsecurity.PortUpdateOptsExt{PortSecurityEnabled: &off,
			UpdateOptsBuilder: ports.UpdateOpts{SecurityGroups: &none}}).Extract(); err != nil {
			t.Fatal(err)
		}
		if err := r.Apply(ctx, acts[0]); !errorsIsPrecondition(err) || !strings.Contains(err.Error(), "port security was turned off") {
			t.Fatalf("got %v, want ErrPrecondition saying port security was turned off", err)
		}
		if acts, err := r.Plan(ctx); err != nil || len(acts) != 0 {
			t.Fatalf("next plan: got %v %v, want nothing to do", acts, err)
		}
	})
}

// Neutron holds at most max_allowed_address_pair (10) pairs on a port and
// refuses a duplicate pair: a full port is reported as such, not retried
// as a precondition, and a port whose pair covers the pod CIDR under
// another MAC address gets no second one.
func TestSecurityGroupsAddressPairConflicts(t *testing.T) {
	w := newWorld(t)
	sgK := w.group("k-nodes")
	var ten []string
	for i := 1; i <= 10; i++ {
		ten = append(ten, fmt.Sprintf("10.200.0.%d/32", i))
	}
	vm4 := w.node("vm4", "k-node-4", "ACTIVE", "10.180.0.4", []string{sgK}, ten...)
	port4 := w.ports[vm4]
	ctx := context.Background()
	// The pod CIDR pair under a MAC address that is not the port's own.
	vm6 := w.node("vm6", "k-node-6", "ACTIVE", "10.180.0.6", []string{sgK})
	port6 := w.ports[vm6]
	macPair := []ports.AddressPair{{IPAddress: podCIDR.String(), MACAddress: "fa:16:3e:aa:bb:cc"}}
	if _, err := ports.Update(ctx, w.member, port6, ports.UpdateOpts{AllowedAddressPairs: &macPair}).Extract(); err != nil {
		t.Fatal(err)
	}
	dup := []ports.AddressPair{{IPAddress: podCIDR.String()}, {IPAddress: podCIDR.String()}}
	_, err := ports.Update(ctx, w.member, port6, ports.UpdateOpts{AllowedAddressPairs: &dup}).Extract()
	if !gophercloud.ResponseCodeIs(err, 400) || !strings.Contains(err.Error(), "DuplicateAddressPairInRequest") {
		t.Fatalf("duplicate pair: got %v, want Neutron's 400 DuplicateAddressPairInRequest", err)
	}

	r := NewSecurityGroups(w.c, cluster, w.groupName("k-nodes"), podCIDR)
	acts, err := r.Plan(ctx)
	if err != nil || len(acts) != 1 || acts[0].Target != "port/"+port4 {
		t.Fatalf("got %+v %v, want one add-address-pair for the full port %s only", acts, err, port4)
	}
	rev := w.getPort(port4).RevisionNumber
	err = r.Apply(ctx, acts[0])
	if err == nil || errorsIsPrecondition(err) {
		t.Fatalf("got %v, want a failure that is no precondition (the next pass would be refused the same way)", err)
	}
	for _, want := range []string{"AllowedAddressPairExhausted", "has 10 allowed address pairs", "port " + port4} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want it to say %q", err, want)
		}
	}
	if p := w.getPort(port4); p.RevisionNumber != rev || len(p.AllowedAddressPairs) != 10 {
		t.Fatalf("got revision %d and %d pairs, want the port untouched (%d, 10)", p.RevisionNumber, len(p.AllowedAddressPairs), rev)
	}
}
