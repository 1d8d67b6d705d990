package openstack

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/remediatetest"
	"github.com/drwatch/drwatch/test/openstacktest"
	"github.com/gophercloud/gophercloud/v2"
)

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

// allRoutes are routeGCWorld's routes.
var allRoutes = []string{
	"198.19.1.0/24>10.180.0.3", // stale: node 5's pod CIDR, via a deleted node's address
	"198.19.1.0/24>10.180.0.5", // node 5's route (SHUTOFF, still a node)
	"198.19.2.0/24>10.180.0.4", // node 4's route
	"198.19.9.0/24>10.180.0.9", // via a live non-cluster instance
	"198.19.2.0/24>10.180.0.9", // our pod CIDR, but via a live non-cluster instance
	"198.19.6.0/24>10.180.0.6", // node 6's route
	"198.19.3.0/24>10.180.0.6", // stale: a deleted node's pod CIDR via its address, now node 6's
	"198.19.1.0/24>10.180.1.1", // the neighbour's node
	"198.19.7.0/24>10.180.1.7", // the neighbour's stale route: nothing says it is ours
	"10.0.0.0/8>10.180.0.1",    // outside the pod CIDR
}

// routeGCWorld is seed 001's router in the real Neutron: this cluster's
// nodes, a neighbouring cluster in the same project sharing 198.19.0.0/16,
// and a live instance that belongs to no cluster. The router gets exactly
// routes (allRoutes when none are given) through add_extraroutes, which
// Neutron validates: every next hop lies in the router's subnet
// 10.180.0.0/16.
//
// The network, router and servers are routeGCBase, booted by the first
// route GC test and shared by the next ones: the test gets a fork (its
// own recorders; servers and ports it adds are deleted when it ends), and
// the router's routes are reset to routes.
func routeGCWorld(t *testing.T, routes ...string) (*world, *fakeNodes) {
	t.Helper()
	w := routeGCBaseWorld(t).fork(t)
	if routes == nil {
		routes = allRoutes
	}
	w.resetRoutes(routes...)
	nodes := &fakeNodes{nodes: []ClusterNode{
		kubeNode("k-node-4", w.id("vm4"), "10.180.0.4", "198.19.2.0/24"),
		kubeNode("k-node-5", w.id("vm5"), "10.180.0.5", "198.19.1.0/24"),
		kubeNode("k-node-6", w.id("vm6"), "10.180.0.6", "198.19.6.0/24"),
	}}
	return w, nodes
}

// routeGCBase is the route GC tests' world. Booting its five servers with
// their ports costs more than most of those tests: they share it, one
// after the other. Its servers carry the cluster's names and addresses,
// so any other world deletes them before it boots a server of its own
// (releaseRouteGCBase), and the next route GC test boots them again.
var routeGCBase struct {
	mu sync.Mutex
	w  *world
}

// routeGCBaseWorld returns routeGCBase, building it when there is none.
func routeGCBaseWorld(t *testing.T) *world {
	t.Helper()
	routeGCBase.mu.Lock()
	defer routeGCBase.mu.Unlock()
	if routeGCBase.w != nil {
		return routeGCBase.w
	}
	w := buildWorld(t)
	w.shared = true
	w.bulk(func() {
		w.node("vm4", "k-node-4", "ACTIVE", "10.180.0.4", nil)
		w.node("vm5", "k-node-5", "SHUTOFF", "10.180.0.5", nil)
		w.node("vm6", "k-node-6", "ACTIVE", "10.180.0.6", nil)
		// The neighbour: its name even starts like ours, its metadata
		// says it is cluster n's; its node holds the same pod CIDR as
		// our node 5.
		w.instance("vmn1", "k-node-n1", map[string]string{"kluster": "n"}, "ACTIVE", "10.180.1.1", nil)
		// Not a cluster instance at all, and live.
		w.instance("vmx", "other-9", nil, "ACTIVE", "10.180.0.9", nil)
	})
	routeGCBase.w = w
	return w
}

// releaseRouteGCBase deletes routeGCBase's servers, if it has any, on
// behalf of t.
func releaseRouteGCBase(t *testing.T) {
	t.Helper()
	routeGCBase.mu.Lock()
	defer routeGCBase.mu.Unlock()
	if routeGCBase.w == nil {
		return
	}
	w := routeGCBase.w
	routeGCBase.w = nil
	w.t = t
	w.deleteServers()
}

// untouched are the routes of routeGCWorld that no pass may remove.
var untouched = []string{"198.19.1.0/24>10.180.0.5", "198.19.2.0/24>10.180.0.4", "198.19.9.0/24>10.180.0.9",
	"198.19.2.0/24>10.180.0.9", "198.19.6.0/24>10.180.0.6", "198.19.1.0/24>10.180.1.1", "198.19.7.0/24>10.180.1.7",
	"10.0.0.0/8>10.180.0.1"}

// sorted returns a sorted copy.
func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

func TestRouteGC(t *testing.T) {
	w, nodes := routeGCWorld(t)
	rt := "router/" + w.router
	r := NewRouteGC(w.c, w.router, podCIDR, cluster, nodes, 31, 3)
	fc := remediatetest.NewLog()

	t.Run("dry-run writes nothing", func(t *testing.T) {
		n, rev := w.writes(), w.getRouter().RevisionNumber
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, remediate.Settings{Mode: remediate.ModeDryRun, MaxPerPass: 5}))
		check(t, "records", got, []string{
			"dry_run remove-route " + rt + "/route/198.19.1.0/24/10.180.0.3",
			"dry_run remove-route " + rt + "/route/198.19.3.0/24/10.180.0.6"})
		if w.writes() != n {
			t.Fatalf("got %d writes after dry-run, want %d", w.writes(), n)
		}
		if got := w.getRouter().RevisionNumber; got != rev {
			t.Fatalf("router revision %d after dry-run, want %d", got, rev)
		}
	})
	t.Run("reasons name the node whose pod CIDR decided", func(t *testing.T) {
		acts, err := r.Plan(context.Background())
		if err != nil || len(acts) != 2 {
			t.Fatalf("got %v, %v; want two actions", acts, err)
		}
		for i, want := range [][]string{{"k-node-5", "10.180.0.5"}, {"k-node-6", "198.19.6.0/24"}} {
			for _, word := range want {
				if !strings.Contains(acts[i].Reason, word) {
					t.Errorf("action %d: got reason %q, want it to name %s", i, acts[i].Reason, word)
				}
			}
		}
	})
	on := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 1, MaxPerHour: 10}
	t.Run("acts within the cap", func(t *testing.T) {
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on))
		check(t, "first pass", got, []string{
			"planned remove-route " + rt + "/route/198.19.1.0/24/10.180.0.3",
			"applied remove-route " + rt + "/route/198.19.1.0/24/10.180.0.3",
			"skipped_cap remove-route " + rt + "/route/198.19.3.0/24/10.180.0.6"})
		got = remediatetest.Summary(remediatetest.Pass(t, fc, r, on))
		check(t, "second pass", got, []string{
			"planned remove-route " + rt + "/route/198.19.3.0/24/10.180.0.6",
			"applied remove-route " + rt + "/route/198.19.3.0/24/10.180.0.6"})
		check(t, "routes", w.routes(), sorted(untouched))
	})
	t.Run("repeated pass is a no-op", func(t *testing.T) {
		n := w.writes()
		if got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on)); len(got) != 0 {
			t.Fatalf("got records %q, want none", got)
		}
		if w.writes() != n {
			t.Fatalf("got %d writes, want %d", w.writes(), n)
		}
	})
	t.Run("a route that comes back is removed again", func(t *testing.T) {
		if err := w.addRoutes("198.19.3.0/24>10.180.0.6"); err != nil {
			t.Fatal(err)
		}
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on))
		check(t, "records", got, []string{
			"planned remove-route " + rt + "/route/198.19.3.0/24/10.180.0.6",
			"applied remove-route " + rt + "/route/198.19.3.0/24/10.180.0.6"})
		check(t, "routes", w.routes(), sorted(untouched))
	})
	t.Run("warns near the limit, once", func(t *testing.T) {
		near := NewRouteGC(w.c, w.router, podCIDR, cluster, nodes, 10, 2)
		n := w.writes()
		got := remediatetest.Summary(remediatetest.Pass(t, fc, near, on))
		check(t, "records", got, []string{"planned warn " + rt, "applied warn " + rt})
		if got := remediatetest.Summary(remediatetest.Pass(t, fc, near, on)); len(got) != 0 {
			t.Fatalf("repeated warn: got records %q, want none", got)
		}
		if w.writes() != n {
			t.Fatalf("warn wrote: got %d writes, want %d", w.writes(), n)
		}
	})
	t.Run("never a full route replace", func(t *testing.T) {
		if n := w.rec.RouteReplaces(); n != 0 {
			t.Fatalf("got %d full route replaces, want 0", n)
		}
		for _, wr := range w.rec.Requests() {
			if !strings.HasSuffix(wr, "/remove_extraroutes") {
				t.Errorf("got write %s, want only remove_extraroutes", wr)
			}
		}
	})
	t.Run("refuses without cluster instances", func(t *testing.T) {
		wrong := NewRouteGC(w.c, w.router, podCIDR, Selector{NamePrefix: "nope-"}, nodes, 31, 3)
		if _, err := wrong.Plan(context.Background()); err == nil || !strings.Contains(err.Error(), "no live cluster instance") {
			t.Fatalf("got %v, want a refusal", err)
		}
	})
	t.Run("next hop taken by a non-cluster instance before apply is a precondition", func(t *testing.T) {
		if err := w.addRoutes("198.19.2.0/24>10.180.0.7"); err != nil {
			t.Fatal(err)
		}
		acts, err := r.Plan(context.Background())
		if err != nil || len(acts) != 1 {
			t.Fatalf("got %v %v, want one action", acts, err)
		}
		w.instance("vmy", "other-7", nil, "ACTIVE", "10.180.0.7", nil)
		if err := r.Apply(context.Background(), acts[0]); !errorsIsPrecondition(err) {
			t.Fatalf("got %v, want ErrPrecondition", err)
		}
		check(t, "routes", w.routes(), sorted(append(slices.Clone(untouched), "198.19.2.0/24>10.180.0.7")))
	})
}

func TestRouteGCNeverTouchesLookAlikes(t *testing.T) {
	w, nodes := routeGCWorld(t)
	r := NewRouteGC(w.c, w.router, podCIDR, cluster, nodes, 31, 3)
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
		if planned["router/"+w.router+"/route/"+tt.dest+"/"+tt.hop] {
			t.Errorf("%s (%s via %s): got a remove-route, want it untouched", tt.name, tt.dest, tt.hop)
		}
	}
	if len(acts) != 2 {
		t.Errorf("got %d actions, want the two stale routes only", len(acts))
	}
}

func TestRouteGCNoDeletesFromAPartialListing(t *testing.T) {
	on := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 10}
	all := sorted(allRoutes)
	// No case writes to Neutron: they share its objects and servers, each
	// with its own recorders and nodes (fork), one after the other, since
	// a down cell is down for the whole stack.
	base, baseNodes := routeGCWorld(t)
	// A server of the neighbouring cluster that no host took: it lives in
	// cell0, the only cell but cell1 the stack has.
	nv := mkServers(t, base.stack, server{name: "k-node-n2", meta: map[string]string{"kluster": "n"}, noValidHost: true})
	base.booted = append(base.booted, nv["k-node-n2"])
	forked := func(t *testing.T) (*world, *fakeNodes) {
		return base.fork(t), &fakeNodes{nodes: slices.Clone(baseNodes.nodes)}
	}
	cellDown := func(cell string) func(*world, *fakeNodes) {
		return func(w *world, _ *fakeNodes) {
			set := w.stack.SetCellDown
			if cell == "cell0" {
				set = w.stack.SetCell0Down
			}
			set(true)
			w.t.Cleanup(func() { set(false) })
		}
	}
	for _, tt := range []struct {
		name   string
		spoil  func(*world, *fakeNodes)
		reason string // a recorded warn says this; empty: Plan fails
	}{
		// cell1 holds every server that runs: the cluster's among them.
		{"a cluster server in a down cell", cellDown("cell1"), "down cell"},
		{"a server of another cluster in a down cell", cellDown("cell0"), "down cell"},
		{"a listing in several pages", func(w *world, _ *fakeNodes) { w.nova.page(3, false) }, "pages"},
		{"a page that fails", func(w *world, _ *fakeNodes) { w.nova.page(3, true) }, ""},
		{"pod CIDRs that cannot be read", func(_ *world, n *fakeNodes) { n.fail(errors.New("kube: 503")) }, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w, nodes := forked(t)
			check(t, "routes before", w.routes(), all)
			r := NewRouteGC(w.c, w.router, podCIDR, cluster, nodes, 31, 3)
			tt.spoil(w, nodes)
			n := w.writes()
			if tt.reason == "" {
				if acts, err := r.Plan(context.Background()); err == nil {
					t.Fatalf("got actions %v and no error, want Plan to fail", acts)
				}
			} else {
				fc := remediatetest.NewLog()
				recs := remediatetest.Pass(t, fc, r, on)
				check(t, "records", remediatetest.Summary(recs), []string{"planned warn router/" + w.router, "applied warn router/" + w.router})
				if !strings.Contains(recs[0].Reason, tt.reason) || !strings.Contains(recs[0].Reason, "no route removed") {
					t.Fatalf("got reason %q, want it to say no route removed because of %s", recs[0].Reason, tt.reason)
				}
			}
			if w.writes() != n {
				t.Fatalf("got %d writes, want %d", w.writes(), n)
			}
			check(t, "routes after", w.routes(), all)
		})
	}
	t.Run("a down cell between plan and apply is a precondition", func(t *testing.T) {
		w, nodes := forked(t)
		r := NewRouteGC(w.c, w.router, podCIDR, cluster, nodes, 31, 3)
		acts, err := r.Plan(context.Background())
		if err != nil || len(acts) == 0 {
			t.Fatalf("got %v %v, want actions", acts, err)
		}
		cellDown("cell1")(w, nodes)
		if err := r.Apply(context.Background(), acts[0]); !errorsIsPrecondition(err) {
			t.Fatalf("got %v, want ErrPrecondition", err)
		}
		check(t, "routes", w.routes(), all)
	})
}

func TestRouteGCJudgesByPodCIDR(t *testing.T) {
	// The cases share one world, one after the other: each sets its
	// route on the router and gets its own recorders and nodes; a server
	// a case boots is deleted when it ends.
	base, baseNodes := routeGCWorld(t, "198.19.2.0/24>10.180.0.4")
	for _, tt := range []struct {
		name   string
		route  string
		change func(*world, *fakeNodes)
		want   []string // words of the one remove-route's reason; nil: untouched
	}{
		{name: "the old pod CIDR, now another node's, via a reused address",
			route: "198.19.2.0/24>10.180.0.6",
			want:  []string{"pod CIDR of node k-node-4", "10.180.0.4", "10.180.0.6 is the address of node k-node-6"}},
		{name: "the old pod CIDR, now nobody's, via a reused address",
			route: "198.19.3.0/24>10.180.0.6",
			want:  []string{"198.19.3.0/24 is no node's pod CIDR", "node k-node-6, whose pod CIDR is 198.19.6.0/24"}},
		{name: "a cluster instance that is no node",
			route: "198.19.8.0/24>10.180.0.8",
			change: func(w *world, _ *fakeNodes) {
				w.node("vm8", "k-node-8", "SHUTOFF", "10.180.0.8", nil)
			},
			want: []string{"cluster instance k-node-8 (SHUTOFF), which is no node"}},
		{name: "a node with no pod CIDR yet is not judged",
			route: "198.19.3.0/24>10.180.0.6",
			change: func(_ *world, n *fakeNodes) {
				n.nodes[2].PodCIDRs = nil
			}},
		{name: "a pod CIDR whose node has no known address is not judged",
			route: "198.19.7.0/24>10.180.0.3",
			change: func(_ *world, n *fakeNodes) {
				n.nodes = append(n.nodes, ClusterNode{Name: "k-node-7", PodCIDRs: []netip.Prefix{netip.MustParsePrefix("198.19.7.0/24")}})
			}},
		{name: "a pod CIDR two nodes claim is not judged",
			route: "198.19.2.0/24>10.180.0.3",
			change: func(_ *world, n *fakeNodes) {
				n.nodes[2].PodCIDRs = append(n.nodes[2].PodCIDRs, netip.MustParsePrefix("198.19.2.0/24"))
			}},
		{name: "a dead next hop toward no node's pod CIDR is not provably ours",
			route: "198.19.8.0/24>10.180.0.8"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w, nodes := base.fork(t), &fakeNodes{nodes: slices.Clone(baseNodes.nodes)}
			w.setRoutes(tt.route)
			if tt.change != nil {
				tt.change(w, nodes)
			}
			acts, err := NewRouteGC(w.c, w.router, podCIDR, cluster, nodes, 31, 3).Plan(context.Background())
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
			for _, word := range tt.want {
				if !strings.Contains(acts[0].Reason, word) {
					t.Errorf("got reason %q, want it to say %q", acts[0].Reason, word)
				}
			}
		})
	}
}

func TestRouteGCRefusesNodesOfAnotherCluster(t *testing.T) {
	w, _ := routeGCWorld(t)
	other := &fakeNodes{nodes: []ClusterNode{kubeNode("n-node-1", "vmn9", "10.180.2.1", "198.19.1.0/24")}}
	if _, err := NewRouteGC(w.c, w.router, podCIDR, cluster, other, 31, 3).Plan(context.Background()); err == nil ||
		!strings.Contains(err.Error(), "no Kubernetes node matches a cluster instance") {
		t.Fatalf("got %v, want a refusal", err)
	}
	empty := &fakeNodes{}
	if _, err := NewRouteGC(w.c, w.router, podCIDR, cluster, empty, 31, 3).Plan(context.Background()); err == nil {
		t.Fatal("got no error without nodes, want a refusal")
	}
	if _, err := NewRouteGC(w.c, w.router, podCIDR, cluster, nil, 31, 3).Plan(context.Background()); err == nil {
		t.Fatal("got no error without a node reader, want a refusal")
	}
}

// Neutron validates extra routes, which a simulator would have to guess:
// a next hop must lie in a subnet of one of the router's ports and must
// not be one of the router's own addresses.
func TestNeutronValidatesExtraRouteNextHops(t *testing.T) {
	w := newWorld(t)
	for _, tt := range []struct{ route, want string }{
		{"198.19.4.0/24>10.99.0.1", "the nexthop is not connected with router"},
		{"198.19.4.0/24>10.180.255.254", "the nexthop is used by router"},
	} {
		if err := w.addRoutes(tt.route); err == nil || !strings.Contains(err.Error(), "InvalidRoutes") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("add route %s: got %v, want Neutron's InvalidRoutes saying %q", tt.route, err, tt.want)
		}
	}
	check(t, "routes", w.routes(), []string{})
}

// insertRoutes writes routes straight into Neutron's database, as a route
// that today's validation refuses or a lowered max_routes leaves them: an
// older release or a restored database.
func insertRoutes(t *testing.T, w *world, routes ...string) {
	t.Helper()
	var vals []string
	for _, r := range routes {
		d, h, _ := strings.Cut(r, ">")
		vals = append(vals, fmt.Sprintf("('%s','%s','%s')", d, h, w.router))
	}
	if err := w.stack.Exec(context.Background(), "neutron",
		"INSERT INTO routerroutes (destination, nexthop, router_id) VALUES "+strings.Join(vals, ",")); err != nil {
		t.Fatal(err)
	}
}

// remove_extraroutes re-validates every route the router keeps: one
// invalid route left on the router makes Neutron refuse every removal,
// and the failure names that route.
func TestRouteGCReportsARouteNeutronNoLongerAccepts(t *testing.T) {
	w, nodes := routeGCWorld(t)
	insertRoutes(t, w, "198.19.50.0/24>10.99.0.1")
	before := w.routes()
	r := NewRouteGC(w.c, w.router, podCIDR, cluster, nodes, 31, 3)
	acts, err := r.Plan(context.Background())
	if err != nil || len(acts) != 2 {
		t.Fatalf("got %v %v, want the two stale routes (the invalid one is not provably ours)", acts, err)
	}
	err = r.Apply(context.Background(), acts[0])
	if err == nil || errorsIsPrecondition(err) {
		t.Fatalf("got %v, want a failure that is no precondition (the next pass cannot do better)", err)
	}
	for _, want := range []string{"198.19.50.0/24 via 10.99.0.1 (next hop outside the router's subnets 10.180.0.0/16)",
		"the nexthop is not connected with router", "re-validates every route left"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want it to say %q", err, want)
		}
	}
	check(t, "routes", w.routes(), before)
}

// Neutron refuses any change that leaves more than max_routes routes,
// removals included: a router over the limit by two or more cannot lose
// a route through remove_extraroutes, and the failure says so; at the
// limit plus one it can.
func TestRouteGCReportsARouterOverMaxRoutes(t *testing.T) {
	w, nodes := routeGCWorld(t)
	var extra []string
	for i := len(allRoutes); i < openstacktest.NeutronMaxRoutes+2; i++ {
		extra = append(extra, fmt.Sprintf("10.%d.0.0/16>10.180.0.1", 100+i))
	}
	insertRoutes(t, w, extra...)
	before := w.routes()
	r := NewRouteGC(w.c, w.router, podCIDR, cluster, nodes, 31, 3)
	acts, err := r.Plan(context.Background())
	if err != nil || len(acts) < 2 || acts[0].Verb != "remove-route" {
		t.Fatalf("got %v %v, want the two stale routes", acts, err)
	}
	err = r.Apply(context.Background(), acts[0])
	if err == nil || errorsIsPrecondition(err) {
		t.Fatalf("got %v, want a failure that is no precondition", err)
	}
	for _, want := range []string{"RoutesExhausted", fmt.Sprintf("holds %d routes", openstacktest.NeutronMaxRoutes+2), "max_routes + 1",
		fmt.Sprintf("maximum %d", openstacktest.NeutronMaxRoutes)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want it to say %q", err, want)
		}
	}
	check(t, "routes", w.routes(), before)
	// One route fewer (by hand): the removal leaves max_routes, which
	// Neutron accepts.
	if err := w.stack.Exec(context.Background(), "neutron", fmt.Sprintf("DELETE FROM routerroutes WHERE router_id='%s' AND destination='%s'",
		w.router, strings.TrimSuffix(extra[0], ">10.180.0.1"))); err != nil {
		t.Fatal(err)
	}
	if err := r.Apply(context.Background(), acts[0]); err != nil {
		t.Fatalf("at max_routes + 1: got %v, want the removal to pass", err)
	}
	if n := len(w.routes()); n != openstacktest.NeutronMaxRoutes {
		t.Fatalf("got %d routes, want %d", n, openstacktest.NeutronMaxRoutes)
	}
}

// With route_limit set to Neutron's max_routes, the warning comes while
// Neutron still accepts routes, and Neutron really refuses the route past
// the limit with RoutesExhausted.
func TestRouteGCWarnsBeforeNeutronRefusesRoutes(t *testing.T) {
	const margin = 3
	limit := openstacktest.NeutronMaxRoutes
	var routes []string
	for i := 0; i < limit-margin; i++ {
		routes = append(routes, fmt.Sprintf("10.%d.0.0/16>10.180.0.1", 100+i))
	}
	w, nodes := routeGCWorld(t, routes...)
	r := NewRouteGC(w.c, w.router, podCIDR, cluster, nodes, limit, margin)
	acts, err := r.Plan(context.Background())
	if err != nil || len(acts) != 1 || acts[0].Verb != VerbWarn || !strings.Contains(acts[0].Reason, "400 RoutesExhausted") {
		t.Fatalf("at %d routes: got %v %v, want one warn naming Neutron's answer", limit-margin, acts, err)
	}
	var more []string
	for i := limit - margin; i < limit; i++ {
		more = append(more, fmt.Sprintf("10.%d.0.0/16>10.180.0.1", 100+i))
	}
	if err := w.addRoutes(more...); err != nil {
		t.Fatalf("up to max_routes: %v", err)
	}
	err = w.addRoutes("10.250.0.0/16>10.180.0.1")
	if !gophercloud.ResponseCodeIs(err, 400) || !strings.Contains(err.Error(), "RoutesExhausted") {
		t.Fatalf("past max_routes: got %v, want 400 RoutesExhausted", err)
	}
	if n := len(w.routes()); n != limit {
		t.Fatalf("got %d routes, want %d", n, limit)
	}
}
