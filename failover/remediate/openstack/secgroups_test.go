package openstack

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/drwatch/drwatch/failover/remediate"
	"github.com/drwatch/drwatch/failover/remediate/remediatetest"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
)

func TestSecurityGroups(t *testing.T) {
	w := newWorld(t)
	sgDefault, sgK := w.defaultGroup(), w.group("k-nodes")
	w.bulk(func() {
		// Healthy look-alike: has the group and the pod CIDR pair.
		w.node("vm4", "k-node-4", "ACTIVE", "10.180.0.4", t0, []string{sgK}, "198.19.0.0/16")
		// Covered by a wider pair: healthy too.
		w.node("vm6", "k-node-6", "ACTIVE", "10.180.0.6", t0, []string{sgDefault, sgK}, "198.16.0.0/12")
		// Broken: without the group, without the pair.
		w.node("vm5", "k-node-5", "ACTIVE", "10.180.0.5", t0, []string{sgDefault})
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
		w.node("vm7", "k-node-7", "ACTIVE", "10.180.0.7", t0, []string{sgK})
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
		vm8 := w.node("vm8", "k-node-8", "ACTIVE", "10.180.0.8", t0, []string{sgDefault})
		port8 := w.ports[vm8]
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 10}))
		check(t, "records", got, []string{"planned add-security-group server/" + vm8, "applied add-security-group server/" + vm8,
			"planned add-address-pair port/" + port8, "failed add-address-pair port/" + port8})
		got = remediatetest.Summary(remediatetest.Pass(t, fc, r, remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 10}))
		check(t, "next pass", got, []string{"planned add-address-pair port/" + port8, "applied add-address-pair port/" + port8})
	})
}
