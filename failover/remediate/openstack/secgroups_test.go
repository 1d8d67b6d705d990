package openstack

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/drwatch/drwatch/failover/remediate"
	"github.com/drwatch/drwatch/failover/remediate/remediatetest"
	"github.com/drwatch/drwatch/test/openstacksim"
)

func TestSecurityGroups(t *testing.T) {
	s, c := simClients(t)
	s.PutSecurityGroup(openstacksim.SecurityGroup{ID: "sg-default", Name: "default"})
	s.PutSecurityGroup(openstacksim.SecurityGroup{ID: "sg-k", Name: "k-nodes"})
	// Healthy look-alike: has the group and the pod CIDR pair.
	node(s, "vm4", "k-node-4", "ACTIVE", "10.180.0.4", t0, []string{"sg-k"}, "198.19.0.0/16")
	// Covered by a wider pair: healthy too.
	node(s, "vm6", "k-node-6", "ACTIVE", "10.180.0.6", t0, []string{"sg-default", "sg-k"}, "198.16.0.0/12")
	// Broken: without the group, without the pair.
	node(s, "vm5", "k-node-5", "ACTIVE", "10.180.0.5", t0, []string{"sg-default"})
	r := NewSecurityGroups(c, cluster, "k-nodes", podCIDR)
	fc := remediatetest.NewLog()

	t.Run("dry-run writes nothing", func(t *testing.T) {
		w := s.Writes()
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, remediate.Settings{Mode: remediate.ModeDryRun, MaxPerPass: 5}))
		check(t, "records", got, []string{"dry_run add-security-group server/vm5", "dry_run add-address-pair port/port-vm5"})
		if s.Writes() != w {
			t.Fatalf("got %d writes after dry-run, want %d", s.Writes(), w)
		}
	})
	on := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 1, MaxPerHour: 10}
	t.Run("group added back within the cap", func(t *testing.T) {
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on))
		check(t, "records", got, []string{"planned add-security-group server/vm5", "applied add-security-group server/vm5",
			"skipped_cap add-address-pair port/port-vm5"})
		if g := s.Port("port-vm5").SecurityGroups; !slices.Contains(g, "sg-k") {
			t.Fatalf("got groups %v, want sg-k", g)
		}
	})
	t.Run("pair added with the revision as CAS", func(t *testing.T) {
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on))
		check(t, "records", got, []string{"planned add-address-pair port/port-vm5", "applied add-address-pair port/port-vm5"})
		p := s.Port("port-vm5")
		if len(p.AllowedAddressPairs) != 1 || p.AllowedAddressPairs[0].IPAddress != "198.19.0.0/16" {
			t.Fatalf("got pairs %v, want 198.19.0.0/16", p.AllowedAddressPairs)
		}
	})
	t.Run("repeated pass is a no-op", func(t *testing.T) {
		w := s.Writes()
		if got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on)); len(got) != 0 {
			t.Fatalf("got records %q, want none", got)
		}
		if s.Writes() != w {
			t.Fatalf("got %d writes, want %d", s.Writes(), w)
		}
		for _, id := range []string{"port-vm4", "port-vm6"} {
			if p := s.Port(id); p.Revision != 3 {
				t.Fatalf("look-alike %s: got revision %d, want 3 (untouched)", id, p.Revision)
			}
		}
	})
	t.Run("stale revision is a precondition and re-planned", func(t *testing.T) {
		node(s, "vm7", "k-node-7", "ACTIVE", "10.180.0.7", t0, []string{"sg-k"})
		acts, err := r.Plan(context.Background())
		if err != nil || len(acts) != 1 || acts[0].Verb != "add-address-pair" {
			t.Fatalf("got %+v %v, want one add-address-pair", acts, err)
		}
		s.TouchPort("port-vm7")
		err = r.Apply(context.Background(), acts[0])
		if !errorsIsPrecondition(err) || !strings.Contains(err.Error(), "412") {
			t.Fatalf("got %v, want ErrPrecondition from a 412", err)
		}
		if p := s.Port("port-vm7"); len(p.AllowedAddressPairs) != 0 {
			t.Fatalf("got pairs %v after a refused CAS, want none", p.AllowedAddressPairs)
		}
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on))
		check(t, "re-planned", got, []string{"planned add-address-pair port/port-vm7", "applied add-address-pair port/port-vm7"})
	})
	t.Run("one pass with both actions: the group bumps the revision", func(t *testing.T) {
		node(s, "vm8", "k-node-8", "ACTIVE", "10.180.0.8", t0, []string{"sg-default"})
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 10}))
		check(t, "records", got, []string{"planned add-security-group server/vm8", "applied add-security-group server/vm8",
			"planned add-address-pair port/port-vm8", "failed add-address-pair port/port-vm8"})
		got = remediatetest.Summary(remediatetest.Pass(t, fc, r, remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 10}))
		check(t, "next pass", got, []string{"planned add-address-pair port/port-vm8", "applied add-address-pair port/port-vm8"})
	})
}
