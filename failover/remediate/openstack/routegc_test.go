package openstack

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"sync"
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

// fakeNodes is the cluster's Kubernetes nodes as the route GC reads them;
// err makes every read fail.
type fakeNodes struct {
	mu    sync.Mutex
	nodes []ClusterNode
	err   error
}

func (f *fakeNodes) ClusterNodes(context.Context) ([]ClusterNode, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.nodes), f.err
}

func (f *fakeNodes) fail(err error) { f.mu.Lock(); f.err = err; f.mu.Unlock() }

func kubeNode(name, id, ip string, cidrs ...string) ClusterNode {
	n := ClusterNode{Name: name, ProviderID: "openstack:///" + id, Addresses: []netip.Addr{netip.MustParseAddr(ip)}}
	for _, c := range cidrs {
		n.PodCIDRs = append(n.PodCIDRs, netip.MustParsePrefix(c))
	}
	return n
}

// routeGCWorld is seed 001's router: this cluster's nodes, a neighbouring
// cluster in the same project sharing 198.19.0.0/16, and a live instance
// that belongs to no cluster.
func routeGCWorld(t *testing.T) (*openstacksim.Sim, *Clients, *fakeNodes) {
	t.Helper()
	s, c := simClients(t)
	node(s, "vm4", "k-node-4", "ACTIVE", "10.180.0.4", t0, nil)
	node(s, "vm5", "k-node-5", "SHUTOFF", "10.180.0.5", t0, nil)
	node(s, "vm6", "k-node-6", "ACTIVE", "10.180.0.6", t0, nil)
	// The neighbour: its name even starts like ours, its metadata says
	// it is cluster n's; its node holds the same pod CIDR as our node 5.
	s.PutServer(openstacksim.Server{ID: "vmn1", Name: "k-node-n1", Status: "ACTIVE", Metadata: map[string]string{"kluster": "n"}, Created: t0})
	s.PutPort(openstacksim.Port{ID: "port-n1", DeviceID: "vmn1", FixedIPs: []string{"10.180.1.1"}})
	// Not a cluster instance at all, and live.
	s.PutServer(openstacksim.Server{ID: "vmx", Name: "other-9", Status: "ACTIVE", Created: t0})
	s.PutPort(openstacksim.Port{ID: "port-x", DeviceID: "vmx", FixedIPs: []string{"10.180.0.9"}})
	s.PutRouter(openstacksim.Router{ID: "r1", Revision: 10, Routes: []openstacksim.Route{
		{Destination: "198.19.1.0/24", NextHop: "10.180.0.3"}, // stale: node 5's pod CIDR, via a deleted node's address
		{Destination: "198.19.1.0/24", NextHop: "10.180.0.5"}, // node 5's route (SHUTOFF, still a node)
		{Destination: "198.19.2.0/24", NextHop: "10.180.0.4"}, // node 4's route
		{Destination: "198.19.9.0/24", NextHop: "10.180.0.9"}, // via a live non-cluster instance
		{Destination: "198.19.2.0/24", NextHop: "10.180.0.9"}, // our pod CIDR, but via a live non-cluster instance
		{Destination: "198.19.6.0/24", NextHop: "10.180.0.6"}, // node 6's route
		{Destination: "198.19.3.0/24", NextHop: "10.180.0.6"}, // stale: a deleted node's pod CIDR via its address, now node 6's
		{Destination: "198.19.1.0/24", NextHop: "10.180.1.1"}, // the neighbour's node
		{Destination: "198.19.7.0/24", NextHop: "10.180.1.7"}, // the neighbour's stale route: nothing says it is ours
		{Destination: "10.0.0.0/8", NextHop: "10.180.0.1"},    // outside the pod CIDR
	}})
	nodes := &fakeNodes{nodes: []ClusterNode{
		kubeNode("k-node-4", "vm4", "10.180.0.4", "198.19.2.0/24"),
		kubeNode("k-node-5", "vm5", "10.180.0.5", "198.19.1.0/24"),
		kubeNode("k-node-6", "vm6", "10.180.0.6", "198.19.6.0/24"),
	}}
	return s, c, nodes
}

// untouched are the routes of routeGCWorld that no pass may remove.
var untouched = []string{"198.19.1.0/24>10.180.0.5", "198.19.2.0/24>10.180.0.4", "198.19.9.0/24>10.180.0.9",
	"198.19.2.0/24>10.180.0.9", "198.19.6.0/24>10.180.0.6", "198.19.1.0/24>10.180.1.1", "198.19.7.0/24>10.180.1.7",
	"10.0.0.0/8>10.180.0.1"}

func TestRouteGC(t *testing.T) {
	s, c, nodes := routeGCWorld(t)
	r := NewRouteGC(c, "r1", podCIDR, cluster, nodes, 31, 3)
	fc := remediatetest.NewLog()

	t.Run("dry-run writes nothing", func(t *testing.T) {
		w := s.Writes()
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, remediate.Settings{Mode: remediate.ModeDryRun, MaxPerPass: 5}))
		check(t, "records", got, []string{
			"dry_run remove-route router/r1/route/198.19.1.0/24/10.180.0.3",
			"dry_run remove-route router/r1/route/198.19.3.0/24/10.180.0.6"})
		if s.Writes() != w {
			t.Fatalf("got %d writes after dry-run, want %d", s.Writes(), w)
		}
	})
	t.Run("reasons name the node whose pod CIDR decided", func(t *testing.T) {
		acts, err := r.Plan(context.Background())
		if err != nil || len(acts) != 2 {
			t.Fatalf("got %v, %v; want two actions", acts, err)
		}
		for i, want := range [][]string{{"k-node-5", "10.180.0.5"}, {"k-node-6", "198.19.6.0/24"}} {
			for _, w := range want {
				if !strings.Contains(acts[i].Reason, w) {
					t.Errorf("action %d: got reason %q, want it to name %s", i, acts[i].Reason, w)
				}
			}
		}
	})
	on := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 1, MaxPerHour: 10}
	t.Run("acts within the cap", func(t *testing.T) {
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on))
		check(t, "first pass", got, []string{
			"planned remove-route router/r1/route/198.19.1.0/24/10.180.0.3",
			"applied remove-route router/r1/route/198.19.1.0/24/10.180.0.3",
			"skipped_cap remove-route router/r1/route/198.19.3.0/24/10.180.0.6"})
		got = remediatetest.Summary(remediatetest.Pass(t, fc, r, on))
		check(t, "second pass", got, []string{
			"planned remove-route router/r1/route/198.19.3.0/24/10.180.0.6",
			"applied remove-route router/r1/route/198.19.3.0/24/10.180.0.6"})
		check(t, "routes", routesOf(s), untouched)
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
		rt.Routes = append(rt.Routes, openstacksim.Route{Destination: "198.19.3.0/24", NextHop: "10.180.0.6"})
		rt.Revision++
		s.PutRouter(rt)
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on))
		check(t, "records", got, []string{
			"planned remove-route router/r1/route/198.19.3.0/24/10.180.0.6",
			"applied remove-route router/r1/route/198.19.3.0/24/10.180.0.6"})
	})
	t.Run("warns near the limit, once", func(t *testing.T) {
		near := NewRouteGC(c, "r1", podCIDR, cluster, nodes, 10, 2)
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
		wrong := NewRouteGC(c, "r1", podCIDR, Selector{NamePrefix: "nope-"}, nodes, 31, 3)
		if _, err := wrong.Plan(context.Background()); err == nil || !strings.Contains(err.Error(), "no live cluster instance") {
			t.Fatalf("got %v, want a refusal", err)
		}
	})
	t.Run("next hop taken by a non-cluster instance before apply is a precondition", func(t *testing.T) {
		rt := s.Router("r1")
		rt.Routes = append(rt.Routes, openstacksim.Route{Destination: "198.19.2.0/24", NextHop: "10.180.0.7"})
		s.PutRouter(rt)
		acts, err := r.Plan(context.Background())
		if err != nil || len(acts) != 1 {
			t.Fatalf("got %v %v, want one action", acts, err)
		}
		s.PutServer(openstacksim.Server{ID: "vmy", Name: "other-7", Status: "ACTIVE", Created: t0})
		s.PutPort(openstacksim.Port{ID: "port-y", DeviceID: "vmy", FixedIPs: []string{"10.180.0.7"}})
		if err := r.Apply(context.Background(), acts[0]); !errorsIsPrecondition(err) {
			t.Fatalf("got %v, want ErrPrecondition", err)
		}
		check(t, "routes", routesOf(s), append(slices.Clone(untouched), "198.19.2.0/24>10.180.0.7"))
	})
}

func TestRouteGCNeverTouchesLookAlikes(t *testing.T) {
	_, c, nodes := routeGCWorld(t)
	r := NewRouteGC(c, "r1", podCIDR, cluster, nodes, 31, 3)
	acts, err := r.Plan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	planned := map[string]bool{}
	for _, a := range acts {
		planned[a.Target] = true
	}
	for _, tt := range []struct{ name, dest, hop string }{
		{"a route through a live instance outside the cluster", "198.19.9.0/24", "10.180.0.9"},
		{"our node's pod CIDR through a live instance outside the cluster", "198.19.2.0/24", "10.180.0.9"},
		{"the neighbouring cluster's route to the same pod CIDR as ours", "198.19.1.0/24", "10.180.1.1"},
		{"the neighbouring cluster's stale route", "198.19.7.0/24", "10.180.1.7"},
		{"a healthy route to a node that is SHUTOFF", "198.19.1.0/24", "10.180.0.5"},
		{"a route outside the pod CIDR", "10.0.0.0/8", "10.180.0.1"},
	} {
		if planned["router/r1/route/"+tt.dest+"/"+tt.hop] {
			t.Errorf("%s (%s via %s): got a remove-route, want it untouched", tt.name, tt.dest, tt.hop)
		}
	}
	if len(acts) != 2 {
		t.Errorf("got %d actions, want the two stale routes only", len(acts))
	}
}

func TestRouteGCNoDeletesFromAPartialListing(t *testing.T) {
	on := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 10}
	all := []string{"198.19.1.0/24>10.180.0.3", "198.19.1.0/24>10.180.0.5", "198.19.2.0/24>10.180.0.4",
		"198.19.9.0/24>10.180.0.9", "198.19.2.0/24>10.180.0.9", "198.19.6.0/24>10.180.0.6", "198.19.3.0/24>10.180.0.6",
		"198.19.1.0/24>10.180.1.1", "198.19.7.0/24>10.180.1.7", "10.0.0.0/8>10.180.0.1"}
	for _, tt := range []struct {
		name   string
		spoil  func(*openstacksim.Sim, *fakeNodes)
		reason string // a recorded warn says this; empty: Plan fails
	}{
		{"a cluster server in a down cell", func(s *openstacksim.Sim, _ *fakeNodes) { s.SetCellDown("vm4", true) }, "down cell"},
		{"a server of another cluster in a down cell", func(s *openstacksim.Sim, _ *fakeNodes) { s.SetCellDown("vmn1", true) }, "down cell"},
		{"a listing in several pages", func(s *openstacksim.Sim, _ *fakeNodes) { s.SetMaxLimit(3) }, "pages"},
		{"a page that fails", func(s *openstacksim.Sim, _ *fakeNodes) { s.SetMaxLimit(3); s.SetPageFault(true) }, ""},
		{"pod CIDRs that cannot be read", func(_ *openstacksim.Sim, n *fakeNodes) { n.fail(errors.New("kube: 503")) }, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, c, nodes := routeGCWorld(t)
			check(t, "routes before", routesOf(s), all)
			r := NewRouteGC(c, "r1", podCIDR, cluster, nodes, 31, 3)
			tt.spoil(s, nodes)
			w := s.Writes()
			if tt.reason == "" {
				if acts, err := r.Plan(context.Background()); err == nil {
					t.Fatalf("got actions %v and no error, want Plan to fail", acts)
				}
			} else {
				fc := remediatetest.NewLog()
				recs := remediatetest.Pass(t, fc, r, on)
				check(t, "records", remediatetest.Summary(recs), []string{"planned warn router/r1", "applied warn router/r1"})
				if !strings.Contains(recs[0].Reason, tt.reason) || !strings.Contains(recs[0].Reason, "no route removed") {
					t.Fatalf("got reason %q, want it to say no route removed because of %s", recs[0].Reason, tt.reason)
				}
			}
			if s.Writes() != w {
				t.Fatalf("got %d writes, want %d", s.Writes(), w)
			}
			check(t, "routes after", routesOf(s), all)
		})
	}
	t.Run("a down cell between plan and apply is a precondition", func(t *testing.T) {
		s, c, nodes := routeGCWorld(t)
		r := NewRouteGC(c, "r1", podCIDR, cluster, nodes, 31, 3)
		acts, err := r.Plan(context.Background())
		if err != nil || len(acts) == 0 {
			t.Fatalf("got %v %v, want actions", acts, err)
		}
		s.SetCellDown("vm6", true)
		if err := r.Apply(context.Background(), acts[0]); !errorsIsPrecondition(err) {
			t.Fatalf("got %v, want ErrPrecondition", err)
		}
		check(t, "routes", routesOf(s), all)
	})
}

func TestRouteGCJudgesByPodCIDR(t *testing.T) {
	for _, tt := range []struct {
		name   string
		route  openstacksim.Route
		change func(*openstacksim.Sim, *fakeNodes)
		want   []string // words of the one remove-route's reason; nil: untouched
	}{
		{name: "the old pod CIDR, now another node's, via a reused address",
			route: openstacksim.Route{Destination: "198.19.2.0/24", NextHop: "10.180.0.6"},
			want:  []string{"pod CIDR of node k-node-4", "10.180.0.4", "10.180.0.6 is the address of node k-node-6"}},
		{name: "the old pod CIDR, now nobody's, via a reused address",
			route: openstacksim.Route{Destination: "198.19.3.0/24", NextHop: "10.180.0.6"},
			want:  []string{"198.19.3.0/24 is no node's pod CIDR", "node k-node-6, whose pod CIDR is 198.19.6.0/24"}},
		{name: "a cluster instance that is no node",
			route: openstacksim.Route{Destination: "198.19.8.0/24", NextHop: "10.180.0.8"},
			change: func(s *openstacksim.Sim, _ *fakeNodes) {
				node(s, "vm8", "k-node-8", "SHUTOFF", "10.180.0.8", t0, nil)
			},
			want: []string{"cluster instance k-node-8 (SHUTOFF), which is no node"}},
		{name: "a node with no pod CIDR yet is not judged",
			route: openstacksim.Route{Destination: "198.19.3.0/24", NextHop: "10.180.0.6"},
			change: func(_ *openstacksim.Sim, n *fakeNodes) {
				n.nodes[2].PodCIDRs = nil
			}},
		{name: "a pod CIDR whose node has no known address is not judged",
			route: openstacksim.Route{Destination: "198.19.7.0/24", NextHop: "10.180.0.3"},
			change: func(_ *openstacksim.Sim, n *fakeNodes) {
				n.nodes = append(n.nodes, ClusterNode{Name: "k-node-7", PodCIDRs: []netip.Prefix{netip.MustParsePrefix("198.19.7.0/24")}})
			}},
		{name: "a pod CIDR two nodes claim is not judged",
			route: openstacksim.Route{Destination: "198.19.2.0/24", NextHop: "10.180.0.3"},
			change: func(_ *openstacksim.Sim, n *fakeNodes) {
				n.nodes[2].PodCIDRs = append(n.nodes[2].PodCIDRs, netip.MustParsePrefix("198.19.2.0/24"))
			}},
		{name: "a dead next hop toward no node's pod CIDR is not provably ours",
			route: openstacksim.Route{Destination: "198.19.8.0/24", NextHop: "10.180.0.8"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, c, nodes := routeGCWorld(t)
			s.PutRouter(openstacksim.Router{ID: "r1", Revision: 3, Routes: []openstacksim.Route{tt.route}})
			if tt.change != nil {
				tt.change(s, nodes)
			}
			acts, err := NewRouteGC(c, "r1", podCIDR, cluster, nodes, 31, 3).Plan(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == nil {
				if len(acts) != 0 {
					t.Fatalf("got %v, want the route untouched", acts)
				}
				return
			}
			if len(acts) != 1 || acts[0].Verb != "remove-route" {
				t.Fatalf("got %v, want one remove-route", acts)
			}
			for _, w := range tt.want {
				if !strings.Contains(acts[0].Reason, w) {
					t.Errorf("got reason %q, want it to say %q", acts[0].Reason, w)
				}
			}
		})
	}
}

func TestRouteGCRefusesNodesOfAnotherCluster(t *testing.T) {
	_, c, _ := routeGCWorld(t)
	other := &fakeNodes{nodes: []ClusterNode{kubeNode("n-node-1", "vmn9", "10.180.2.1", "198.19.1.0/24")}}
	if _, err := NewRouteGC(c, "r1", podCIDR, cluster, other, 31, 3).Plan(context.Background()); err == nil ||
		!strings.Contains(err.Error(), "no Kubernetes node matches a cluster instance") {
		t.Fatalf("got %v, want a refusal", err)
	}
	empty := &fakeNodes{}
	if _, err := NewRouteGC(c, "r1", podCIDR, cluster, empty, 31, 3).Plan(context.Background()); err == nil {
		t.Fatal("got no error without nodes, want a refusal")
	}
	if _, err := NewRouteGC(c, "r1", podCIDR, cluster, nil, 31, 3).Plan(context.Background()); err == nil {
		t.Fatal("got no error without a node reader, want a refusal")
	}
}
