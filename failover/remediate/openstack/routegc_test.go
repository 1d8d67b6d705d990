package openstack

import (
	"context"
	"strings"
	"testing"

	"github.com/drwatch/drwatch/failover/remediate"
	"github.com/drwatch/drwatch/failover/remediate/remediatetest"
	"github.com/drwatch/drwatch/test/openstacksim"
)

func routesOf(s *openstacksim.Sim) []string {
	out := []string{}
	for _, r := range s.Router("r1").Routes {
		out = append(out, r.Destination+">"+r.NextHop)
	}
	return out
}

func TestRouteGC(t *testing.T) {
	s, c := simClients(t)
	node(s, "vm4", "k-node-4", "ACTIVE", "10.180.0.4", t0, nil)
	node(s, "vm5", "k-node-5", "SHUTOFF", "10.180.0.5", t0, nil)
	// Not a cluster instance: its address is no live next hop for us.
	s.PutServer(openstacksim.Server{ID: "vmx", Name: "other-9", Status: "ACTIVE", Created: t0})
	s.PutPort(openstacksim.Port{ID: "port-x", DeviceID: "vmx", FixedIPs: []string{"10.180.0.9"}})
	s.PutRouter(openstacksim.Router{ID: "r1", Revision: 10, Routes: []openstacksim.Route{
		{Destination: "198.19.1.0/24", NextHop: "10.180.0.3"}, // duplicate, dead
		{Destination: "198.19.1.0/24", NextHop: "10.180.0.5"}, // duplicate, live (SHUTOFF still exists)
		{Destination: "198.19.2.0/24", NextHop: "10.180.0.4"}, // healthy look-alike
		{Destination: "198.19.3.0/24", NextHop: "10.180.0.9"}, // orphan: not the cluster's
		{Destination: "10.0.0.0/8", NextHop: "10.180.0.1"},    // outside the pod CIDR
	}})
	r := NewRouteGC(c, "r1", podCIDR, cluster, 31, 3)
	fc := remediatetest.NewLog()

	t.Run("dry-run writes nothing", func(t *testing.T) {
		w := s.Writes()
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, remediate.Settings{Mode: remediate.ModeDryRun, MaxPerPass: 5}))
		check(t, "records", got, []string{
			"dry_run remove-route router/r1/route/198.19.1.0/24/10.180.0.3",
			"dry_run remove-route router/r1/route/198.19.3.0/24/10.180.0.9"})
		if s.Writes() != w {
			t.Fatalf("got %d writes after dry-run, want %d", s.Writes(), w)
		}
	})
	t.Run("duplicate reason names the live node", func(t *testing.T) {
		acts, err := r.Plan(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(acts[0].Reason, "duplicate") || !strings.Contains(acts[0].Reason, "10.180.0.5") {
			t.Fatalf("got reason %q, want a duplicate kept via 10.180.0.5", acts[0].Reason)
		}
	})
	on := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 1, MaxPerHour: 10}
	t.Run("acts within the cap", func(t *testing.T) {
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on))
		check(t, "first pass", got, []string{
			"planned remove-route router/r1/route/198.19.1.0/24/10.180.0.3",
			"applied remove-route router/r1/route/198.19.1.0/24/10.180.0.3",
			"skipped_cap remove-route router/r1/route/198.19.3.0/24/10.180.0.9"})
		check(t, "routes", routesOf(s), []string{"198.19.1.0/24>10.180.0.5", "198.19.2.0/24>10.180.0.4",
			"198.19.3.0/24>10.180.0.9", "10.0.0.0/8>10.180.0.1"})
		got = remediatetest.Summary(remediatetest.Pass(t, fc, r, on))
		check(t, "second pass", got, []string{
			"planned remove-route router/r1/route/198.19.3.0/24/10.180.0.9",
			"applied remove-route router/r1/route/198.19.3.0/24/10.180.0.9"})
		check(t, "routes", routesOf(s), []string{"198.19.1.0/24>10.180.0.5", "198.19.2.0/24>10.180.0.4", "10.0.0.0/8>10.180.0.1"})
	})
	t.Run("repeated pass is a no-op", func(t *testing.T) {
		w := s.Writes()
		if got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on)); len(got) != 0 {
			t.Fatalf("got records %q, want none", got)
		}
		if s.Writes() != w {
			t.Fatalf("got %d writes, want %d", s.Writes(), w)
		}
	})
	t.Run("a route that comes back is removed again", func(t *testing.T) {
		rt := s.Router("r1")
		rt.Routes = append(rt.Routes, openstacksim.Route{Destination: "198.19.3.0/24", NextHop: "10.180.0.9"})
		rt.Revision++
		s.PutRouter(rt)
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on))
		check(t, "records", got, []string{
			"planned remove-route router/r1/route/198.19.3.0/24/10.180.0.9",
			"applied remove-route router/r1/route/198.19.3.0/24/10.180.0.9"})
	})
	t.Run("warns near the limit, once", func(t *testing.T) {
		near := NewRouteGC(c, "r1", podCIDR, cluster, 5, 2)
		w := s.Writes()
		got := remediatetest.Summary(remediatetest.Pass(t, fc, near, on))
		check(t, "records", got, []string{"planned warn router/r1", "applied warn router/r1"})
		if got := remediatetest.Summary(remediatetest.Pass(t, fc, near, on)); len(got) != 0 {
			t.Fatalf("repeated warn: got records %q, want none", got)
		}
		if s.Writes() != w {
			t.Fatalf("warn wrote: got %d writes, want %d", s.Writes(), w)
		}
	})
	t.Run("never a full route replace", func(t *testing.T) {
		if n := s.RouteReplaces(); n != 0 {
			t.Fatalf("got %d full route replaces, want 0", n)
		}
	})
	t.Run("refuses without cluster instances", func(t *testing.T) {
		wrong := NewRouteGC(c, "r1", podCIDR, Selector{NamePrefix: "nope-"}, 31, 3)
		if _, err := wrong.Plan(context.Background()); err == nil || !strings.Contains(err.Error(), "no live cluster instance") {
			t.Fatalf("got %v, want a refusal", err)
		}
	})
	t.Run("next hop live again is a precondition", func(t *testing.T) {
		rt := s.Router("r1")
		rt.Routes = append(rt.Routes, openstacksim.Route{Destination: "198.19.7.0/24", NextHop: "10.180.0.7"})
		s.PutRouter(rt)
		acts, err := r.Plan(context.Background())
		if err != nil || len(acts) != 1 {
			t.Fatalf("got %v %v, want one action", acts, err)
		}
		node(s, "vm7", "k-node-7", "ACTIVE", "10.180.0.7", t0, nil)
		if err := r.Apply(context.Background(), acts[0]); !errorsIsPrecondition(err) {
			t.Fatalf("got %v, want ErrPrecondition", err)
		}
	})
}
