package openstack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/test/openstacktest"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/extraroutes"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
)

// These tests run on the package's one real stack (stackOptions): real
// neutron-server and real Nova. A test's servers boot with ports made in
// Neutron beforehand (openstacktest.ServerOpts.Ports), as a cluster's
// nodes do: Nova binds each port, sets its device_id and keeps it in its
// network info cache, from which server views take "addresses" (a port
// made later with the server's device_id would not show there: Nova
// refreshes that cache only on its own attach, on a network-changed event
// for a port already cached, or by the periodic heal, one server per run).

// neutronClients are the package's authenticated Neutron clients of the
// shared stack: the member project's (whose resources the remediators
// repair) and the admin's.
var neutronClients struct {
	once          sync.Once
	member, admin *gophercloud.ServiceClient
	err           error
}

// realNeutron returns the shared stack and its member and admin Neutron
// clients, starting the stack on first use.
func realNeutron(t *testing.T) (*openstacktest.Stack, *gophercloud.ServiceClient, *gophercloud.ServiceClient) {
	t.Helper()
	st := openstacktest.SharedWith(t, stackOptions)
	neutronClients.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		client := func(who string, ao gophercloud.AuthOptions) (*gophercloud.ServiceClient, error) {
			ao.IdentityEndpoint, ao.AllowReauth = st.AuthURL, true
			p, err := openstack.AuthenticatedClient(ctx, ao)
			if err != nil {
				return nil, fmt.Errorf("keystone as %s: %w", who, err)
			}
			return openstack.NewNetworkV2(p, gophercloud.EndpointOpts{Region: st.Region})
		}
		n := &neutronClients
		// The member project's application credential, as a watcher
		// node authenticates. Every test builds its own network and
		// router there: the stack's Neutron keeps no quotas.
		if n.member, n.err = client("the member's application credential", gophercloud.AuthOptions{
			ApplicationCredentialID: st.MemberAppCredID, ApplicationCredentialSecret: st.MemberAppCredSecret}); n.err != nil {
			return
		}
		a := st.Admin
		n.admin, n.err = client(a.Username, gophercloud.AuthOptions{Username: a.Username, Password: a.Password, DomainName: a.Domain,
			Scope: &gophercloud.AuthScope{ProjectName: a.ProjectName, DomainName: a.Domain}})
	})
	if neutronClients.err != nil {
		t.Fatalf("neutron clients: %v", neutronClients.err)
	}
	return st, neutronClients.member, neutronClients.admin
}

// recorder is a reverse proxy in front of the real Neutron or Nova that
// the remediator under test talks to: it counts the writes and the full
// route replaces (PUT /v2.0/routers/{id} with "routes"), which Neutron
// itself cannot tell apart from a remove_extraroutes afterwards. In front
// of Nova it can page server lists (limit) and fail the later pages, which
// real Nova does only past its max_limit (1000) servers.
type recorder struct {
	srv      *httptest.Server
	mu       sync.Mutex
	writes   []string
	replaces int
	// limit, when set, is added to server lists that carry none; then
	// failPaged answers 500 to every list that carries a marker (the
	// second and later pages).
	limit     int
	failPaged bool
}

func newRecorder(t *testing.T, target string) *recorder {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = ""
	rec := &recorder{}
	proxy := httputil.NewSingleHostReverseProxy(u)
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && (strings.HasSuffix(r.URL.Path, "/servers") || strings.HasSuffix(r.URL.Path, "/servers/detail")) {
			rec.mu.Lock()
			limit, fail := rec.limit, rec.failPaged
			rec.mu.Unlock()
			q := r.URL.Query()
			if fail && q.Has("marker") {
				http.Error(w, `{"computeFault": {"code": 500, "message": "page fault (test)"}}`, http.StatusInternalServerError)
				return
			}
			if limit > 0 && !q.Has("limit") {
				q.Set("limit", fmt.Sprint(limit))
				r.URL.RawQuery = q.Encode()
			}
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
			var in struct {
				Router map[string]json.RawMessage `json:"router"`
			}
			_ = json.Unmarshal(body, &in)
			rec.mu.Lock()
			rec.writes = append(rec.writes, r.Method+" "+r.URL.Path)
			if r.Method == http.MethodPut && len(parts) == 3 && parts[1] == "routers" && in.Router["routes"] != nil {
				rec.replaces++
			}
			rec.mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

// page makes server lists come in pages of limit, the later ones failing
// when fail is set.
func (r *recorder) page(limit int, fail bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.limit, r.failPaged = limit, fail
}

// Writes counts the write requests that went through the proxy.
func (r *recorder) Writes() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.writes) }

// Requests are the write requests that went through the proxy, as
// "METHOD path".
func (r *recorder) Requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.writes)
}

// RouteReplaces counts the full route-list replaces.
func (r *recorder) RouteReplaces() int { r.mu.Lock(); defer r.mu.Unlock(); return r.replaces }

// client is c with its endpoint moved to the proxy (same path).
func (r *recorder) client(c *gophercloud.ServiceClient) *gophercloud.ServiceClient {
	cp := *c
	move := func(s string) string {
		u, err := url.Parse(s)
		if err != nil || s == "" {
			return s
		}
		return r.srv.URL + u.Path
	}
	cp.Endpoint, cp.ResourceBase = move(c.Endpoint), move(c.ResourceBase)
	return &cp
}

// world is one test's cloud: a network 10.180.0.0/16 and a router on it
// in the real Neutron's member project, security groups named for the
// test, and real Nova servers booted with ports on that network. The
// remediators get c: Neutron and Nova, each through its recorder, as the
// member project's application credential.
//
// Every world's servers live in the one member project, whose whole server
// list the route GC reads: a world deletes the servers it booted when its
// test ends, so that the next world's lists hold only its own. The one
// exception is the route GC tests' world (routeGCWorld), whose servers
// outlive each test for the next route GC test, and are deleted before any
// other world boots a server (see routeGCBase).
type world struct {
	t      *testing.T
	stack  *openstacktest.Stack
	member *gophercloud.ServiceClient // straight to Neutron, for set-up and checks
	admin  *gophercloud.ServiceClient
	rec    *recorder // Neutron
	nova   *recorder // Nova
	c      *Clients
	tag    string
	net    string
	subnet string
	router string
	// ids are the Nova IDs of the servers by the test's key ("vm4").
	ids    map[string]string
	ports  map[string]string // server ID -> its port's ID
	queued *[]queuedServer
	// booted are the servers this world (or fork) booted, deleted when its
	// test ends.
	booted []string
	// shared marks routeGCBase and its forks: a fork deletes the ports it
	// made along with its servers, as the network outlives it.
	shared    bool
	madePorts []string
}

// queuedServer is a server bulk boots at the end, with its port.
type queuedServer struct {
	key  string
	spec server
	port ports.CreateOpts
}

// fork returns a world on the same network, router, ports and servers,
// with its own recorders: for subtests that share the world's objects.
// Servers a fork boots are deleted when its subtest ends.
func (w *world) fork(t *testing.T) *world {
	t.Helper()
	f := *w
	f.t, f.booted, f.madePorts = t, nil, nil
	f.ids, f.ports = maps.Clone(w.ids), maps.Clone(w.ports)
	f.clients()
	t.Cleanup(f.cleanup)
	return &f
}

// clients sets w.c: Neutron and Nova of the member project, each through
// a new recorder.
func (w *world) clients() {
	w.t.Helper()
	_, c := novaClients(w.t, "member-appcred")
	w.rec, w.nova = newRecorder(w.t, w.stack.NeutronURL), newRecorder(w.t, w.stack.ComputeURL)
	w.c = &Clients{Network: w.rec.client(w.member), Compute: w.nova.client(c.Compute)}
}

var worldSeq struct {
	sync.Mutex
	n int
}

// newWorld builds a world whose servers are deleted when t ends.
func newWorld(t *testing.T) *world {
	t.Helper()
	w := buildWorld(t)
	t.Cleanup(w.cleanup)
	return w
}

// buildWorld builds a world: network, subnet and router.
func buildWorld(t *testing.T) *world {
	t.Helper()
	st, member, admin := realNeutron(t)
	worldSeq.Lock()
	worldSeq.n++
	tag := fmt.Sprintf("w%d", worldSeq.n)
	worldSeq.Unlock()
	w := &world{t: t, stack: st, member: member, admin: admin, tag: tag, ids: map[string]string{}, ports: map[string]string{}}
	w.clients()
	ctx := context.Background()
	n, err := networks.Create(ctx, member, networks.CreateOpts{Name: "k-net-" + tag}).Extract()
	if err != nil {
		t.Fatalf("create network: %v", err)
	}
	w.net = n.ID
	// The router takes the last address, so that the nodes' addresses
	// stay free for ports and next hops.
	gw, noDHCP := "10.180.255.254", false
	sn, err := subnets.Create(ctx, member, subnets.CreateOpts{NetworkID: n.ID, CIDR: "10.180.0.0/16", IPVersion: gophercloud.IPv4,
		GatewayIP: &gw, EnableDHCP: &noDHCP, Name: "k-subnet-" + tag}).Extract()
	if err != nil {
		t.Fatalf("create subnet: %v", err)
	}
	w.subnet = sn.ID
	r, err := routers.Create(ctx, member, routers.CreateOpts{Name: "k-router-" + tag}).Extract()
	if err != nil {
		t.Fatalf("create router: %v", err)
	}
	w.router = r.ID
	if _, err := routers.AddInterface(ctx, member, r.ID, routers.AddInterfaceOpts{SubnetID: sn.ID}).Extract(); err != nil {
		t.Fatalf("router interface: %v", err)
	}
	return w
}

// cleanup deletes what w made that would outlive it: its servers, and in
// a fork of routeGCBase the ports it made on the shared network, whose
// addresses a later fork may ask for again.
func (w *world) cleanup() {
	w.deleteServers()
	if !w.shared {
		return
	}
	for _, id := range w.madePorts {
		if err := ports.Delete(context.Background(), w.member, id).ExtractErr(); err != nil {
			w.t.Errorf("delete port %s: %v", id, err)
		}
	}
}

// deleteServers deletes the servers w booted and waits until Nova has
// none of them.
func (w *world) deleteServers() {
	if len(w.booted) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	errs := make(chan error, len(w.booted))
	for _, id := range w.booted {
		go func() {
			errs <- func() error {
				if err := w.stack.Nova(ctx, w.stack.Admin, http.MethodDelete, "/servers/"+id, nil, nil); err != nil {
					return err
				}
				return w.stack.WaitServerGone(ctx, id)
			}()
		}()
	}
	for range w.booted {
		if err := <-errs; err != nil {
			w.t.Errorf("delete servers: %v", err)
		}
	}
}

// id is the Nova ID of this world's server key.
func (w *world) id(key string) string {
	w.t.Helper()
	id, ok := w.ids[key]
	if !ok {
		w.t.Fatalf("world has no server %s", key)
	}
	return id
}

// group creates a security group of this world (name tagged) and returns
// its ID; w.groupName gives the tagged name.
func (w *world) group(name string) string {
	w.t.Helper()
	g, err := groups.Create(context.Background(), w.member, groups.CreateOpts{Name: w.groupName(name)}).Extract()
	if err != nil {
		w.t.Fatalf("create security group: %v", err)
	}
	return g.ID
}

func (w *world) groupName(name string) string { return name + "-" + w.tag }

// defaultGroup is the member project's "default" security group, which
// Neutron gives a port created without groups.
func (w *world) defaultGroup() string {
	w.t.Helper()
	pages, err := groups.List(w.member, groups.ListOpts{Name: "default", TenantID: w.stack.Member.ProjectID}).AllPages(context.Background())
	if err != nil {
		w.t.Fatal(err)
	}
	gs, err := groups.ExtractGroups(pages)
	if err != nil || len(gs) != 1 {
		w.t.Fatalf("default group: %v, %d found", err, len(gs))
	}
	return gs[0].ID
}

// portOpts describe a port holding ip, with the groups (nil: Neutron's
// default) and allowed address pairs. No device_id: Nova sets it when a
// server boots with the port.
func (w *world) portOpts(name, ip string, sgs []string, pairs ...string) ports.CreateOpts {
	opts := ports.CreateOpts{NetworkID: w.net, Name: "port-" + name, FixedIPs: []ports.IP{{SubnetID: w.subnet, IPAddress: ip}}}
	if sgs != nil {
		opts.SecurityGroups = &sgs
	}
	for _, p := range pairs {
		opts.AllowedAddressPairs = append(opts.AllowedAddressPairs, ports.AddressPair{IPAddress: p})
	}
	return opts
}

// createPorts creates ports, several in one bulk request: each Neutron
// write costs a fraction of a second on a busy machine. Neutron 21's bulk
// port create drops allowed_address_pairs (ml2 _create_port_bulk), so a
// port with pairs is made alone.
func (w *world) createPorts(opts []ports.CreateOpts) []string {
	w.t.Helper()
	ctx := context.Background()
	ids := make([]string, len(opts))
	var bulk []int
	for i, o := range opts {
		if len(o.AllowedAddressPairs) == 0 {
			bulk = append(bulk, i)
			continue
		}
		p, err := ports.Create(ctx, w.member, o).Extract()
		if err != nil {
			w.t.Fatalf("create port %s: %v", o.Name, err)
		}
		ids[i] = p.ID
		w.madePorts = append(w.madePorts, p.ID)
	}
	if len(bulk) == 0 {
		return ids
	}
	list := make([]any, len(bulk))
	for j, i := range bulk {
		m, err := opts[i].ToPortCreateMap()
		if err != nil {
			w.t.Fatal(err)
		}
		list[j] = m["port"]
	}
	var out struct {
		Ports []ports.Port `json:"ports"`
	}
	if _, err := w.member.Post(ctx, w.member.ServiceURL("ports"), map[string]any{"ports": list}, &out, nil); err != nil || len(out.Ports) != len(bulk) {
		w.t.Fatalf("create %d ports: got %d, %v", len(bulk), len(out.Ports), err)
	}
	for j, i := range bulk {
		ids[i] = out.Ports[j].ID
		w.madePorts = append(w.madePorts, ids[i])
	}
	return ids
}

// boot boots the servers, each with its port (ports[i]), and records them
// by key.
func (w *world) boot(keys []string, specs []server, portIDs []string) {
	w.t.Helper()
	if !w.shared {
		releaseRouteGCBase(w.t)
	}
	for i := range specs {
		specs[i].ports = []string{portIDs[i]}
	}
	ids := mkServers(w.t, w.stack, specs...)
	for i, sp := range specs {
		id := ids[sp.name]
		w.ids[keys[i]] = id
		w.ports[id] = portIDs[i]
		w.booted = append(w.booted, id)
	}
}

// bulk runs f, then creates the ports and boots the servers it asked for
// all at once, and returns nothing until they are up.
func (w *world) bulk(f func()) {
	w.t.Helper()
	var q []queuedServer
	w.queued = &q
	f()
	w.queued = nil
	if len(q) == 0 {
		return
	}
	opts, keys, specs := make([]ports.CreateOpts, len(q)), make([]string, len(q)), make([]server, len(q))
	for i, s := range q {
		opts[i], keys[i], specs[i] = s.port, s.key, s.spec
	}
	w.boot(keys, specs, w.createPorts(opts))
}

// node boots a cluster instance (key id) with one real port holding ip,
// and returns its Nova ID ("" inside bulk).
func (w *world) node(id, name, status, ip string, sgs []string, pairs ...string) string {
	w.t.Helper()
	return w.instance(id, name, inCluster, status, ip, sgs, pairs...)
}

// instance boots any instance (status ACTIVE or SHUTOFF) with one real
// port holding ip, and returns its Nova ID ("" inside bulk, which boots it
// at its end).
func (w *world) instance(key, name string, meta map[string]string, status, ip string, sgs []string, pairs ...string) string {
	w.t.Helper()
	sp := server{name: name, meta: meta}
	switch status {
	case "ACTIVE":
	case "SHUTOFF":
		sp.then = stop
	default:
		w.t.Fatalf("instance %s: status %s, want ACTIVE or SHUTOFF", name, status)
	}
	q := queuedServer{key: key, spec: sp, port: w.portOpts(name, ip, sgs, pairs...)}
	if w.queued != nil {
		*w.queued = append(*w.queued, q)
		return ""
	}
	w.boot([]string{key}, []server{sp}, w.createPorts([]ports.CreateOpts{q.port}))
	return w.ids[key]
}

// getPort reads a port straight from Neutron.
func (w *world) getPort(id string) *ports.Port {
	w.t.Helper()
	p, err := ports.Get(context.Background(), w.member, id).Extract()
	if err != nil {
		w.t.Fatalf("get port %s: %v", id, err)
	}
	return p
}

// getRouter reads the router straight from Neutron.
func (w *world) getRouter() *routers.Router {
	w.t.Helper()
	r, err := routers.Get(context.Background(), w.member, w.router).Extract()
	if err != nil {
		w.t.Fatalf("get router: %v", err)
	}
	return r
}

// routes are the router's extra routes as "dest>nexthop", sorted.
func (w *world) routes() []string {
	w.t.Helper()
	out := []string{}
	for _, r := range w.getRouter().Routes {
		out = append(out, r.DestinationCIDR+">"+r.NextHop)
	}
	slices.Sort(out)
	return out
}

// addRoutes adds routes ("dest>nexthop") with add_extraroutes, straight
// to Neutron (not through the recorder).
func (w *world) addRoutes(rs ...string) error {
	var list []routers.Route
	for _, r := range rs {
		d, h, _ := strings.Cut(r, ">")
		list = append(list, routers.Route{DestinationCIDR: d, NextHop: h})
	}
	_, err := extraroutes.Add(context.Background(), w.member, w.router, extraroutes.Opts{Routes: &list}).Extract()
	return err
}

// resetRoutes makes rs ("dest>nexthop") the router's only routes: the
// ones a test before left, valid or not (insertRoutes), are deleted from
// Neutron's database, and rs are added with add_extraroutes, which
// validates them.
func (w *world) resetRoutes(rs ...string) {
	w.t.Helper()
	if err := w.stack.Exec(context.Background(), "neutron", fmt.Sprintf("DELETE FROM routerroutes WHERE router_id='%s'", w.router)); err != nil {
		w.t.Fatalf("clear routes: %v", err)
	}
	if len(rs) == 0 {
		return
	}
	if err := w.addRoutes(rs...); err != nil {
		w.t.Fatalf("add routes: %v", err)
	}
}

// setRoutes makes rs ("dest>nexthop") the router's only routes, with
// remove_extraroutes and add_extraroutes straight to Neutron.
func (w *world) setRoutes(rs ...string) {
	w.t.Helper()
	old := w.getRouter().Routes
	if len(old) > 0 {
		if _, err := extraroutes.Remove(context.Background(), w.member, w.router, extraroutes.Opts{Routes: &old}).Extract(); err != nil {
			w.t.Fatalf("clear routes: %v", err)
		}
	}
	if err := w.addRoutes(rs...); err != nil {
		w.t.Fatalf("set routes %v: %v", rs, err)
	}
}

// writes counts every write the remediator made, to Neutron and to Nova.
func (w *world) writes() int { return w.rec.Writes() + w.nova.Writes() }
