package openstack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/test/openstacksim"
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

// The Neutron side of these tests is a real neutron-server
// (openstacktest with Options.Neutron, one per test binary). Nova is still
// the simulator (openstacksim), put on the real Neutron with UseNeutron: it
// reads its servers' addresses and security groups from the real ports and
// applies addSecurityGroup to them, as Nova does.

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

// recorder is a reverse proxy in front of the real Neutron that the
// remediator under test talks to: it counts the writes and the full route
// replaces (PUT /v2.0/routers/{id} with "routes"), which Neutron itself
// cannot tell apart from a remove_extraroutes afterwards.
type recorder struct {
	srv      *httptest.Server
	mu       sync.Mutex
	writes   []string
	replaces int
}

func newRecorder(t *testing.T, target string) *recorder {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	proxy := httputil.NewSingleHostReverseProxy(u)
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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

// client is c with its endpoint moved to the proxy.
func (r *recorder) client(c *gophercloud.ServiceClient) *gophercloud.ServiceClient {
	cp := *c
	cp.Endpoint = r.srv.URL + "/"
	cp.ResourceBase = r.srv.URL + "/v2.0/"
	return &cp
}

// world is one test's cloud: a network 10.180.0.0/16 and a router on it
// in the real Neutron's member project, security groups named for the
// test, and the simulated Nova on top. The remediators get c: Neutron
// through the recorder, Nova from the simulator.
type world struct {
	t      *testing.T
	stack  *openstacktest.Stack
	member *gophercloud.ServiceClient // straight to Neutron, for set-up and checks
	admin  *gophercloud.ServiceClient
	rec    *recorder
	sim    *openstacksim.Sim
	c      *Clients
	tag    string
	net    string
	subnet string
	router string
	ports  map[string]string // server ID -> its port's ID
	queued *[]ports.CreateOpts
	// servers are the simulated Nova's servers, for fork.
	servers []openstacksim.Server
}

// fork returns a world on the same Neutron network, router and ports,
// with its own simulated Nova (holding the same servers) and recorder:
// for subtests that write nothing to Neutron and change only Nova or the
// nodes, so that they need not build their own.
func (w *world) fork(t *testing.T) *world {
	t.Helper()
	s, simc := simClients(t)
	f := *w
	f.t, f.sim, f.rec = t, s, newRecorder(t, w.stack.NeutronURL)
	f.c = &Clients{Network: f.rec.client(w.member), Compute: simc.Compute}
	f.servers = slices.Clone(w.servers)
	for _, v := range f.servers {
		s.PutServer(v)
	}
	s.UseNeutron(underlay{&f})
	return &f
}

var worldSeq struct {
	sync.Mutex
	n int
}

// newWorld builds a world. Server IDs are tagged with the world's number
// (w.id), since Neutron finds a server's ports by device_id in the whole
// project, which every test of the binary shares.
func newWorld(t *testing.T) *world {
	t.Helper()
	st, member, admin := realNeutron(t)
	worldSeq.Lock()
	worldSeq.n++
	tag := fmt.Sprintf("w%d", worldSeq.n)
	worldSeq.Unlock()
	s, simc := simClients(t)
	w := &world{t: t, stack: st, member: member, admin: admin, rec: newRecorder(t, st.NeutronURL), sim: s, tag: tag, ports: map[string]string{}}
	w.c = &Clients{Network: w.rec.client(member), Compute: simc.Compute}
	s.UseNeutron(underlay{w})
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

// id is a server ID of this world.
func (w *world) id(name string) string { return name + "-" + w.tag }

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

// port creates a port for server (device_id) holding ip, with the groups
// (nil: Neutron's default) and allowed address pairs, and returns its ID.
// Inside bulk it only queues a port without pairs and returns "".
func (w *world) port(server, ip string, sgs []string, pairs ...string) string {
	w.t.Helper()
	opts := ports.CreateOpts{NetworkID: w.net, Name: "port-" + server, DeviceID: server, DeviceOwner: "compute:nova",
		FixedIPs: []ports.IP{{SubnetID: w.subnet, IPAddress: ip}}}
	if sgs != nil {
		opts.SecurityGroups = &sgs
	}
	for _, p := range pairs {
		opts.AllowedAddressPairs = append(opts.AllowedAddressPairs, ports.AddressPair{IPAddress: p})
	}
	// Neutron 21's bulk port create drops allowed_address_pairs
	// (ml2 _create_port_bulk), so a port with pairs is made alone.
	if w.queued != nil && len(pairs) == 0 {
		*w.queued = append(*w.queued, opts)
		return ""
	}
	p, err := ports.Create(context.Background(), w.member, opts).Extract()
	if err != nil {
		w.t.Fatalf("create port for %s at %s: %v", server, ip, err)
	}
	w.ports[server] = p.ID
	return p.ID
}

// bulk runs f, creating the ports it asks for in one bulk request at the
// end: each Neutron write costs a fraction of a second on a busy machine.
func (w *world) bulk(f func()) {
	w.t.Helper()
	var q []ports.CreateOpts
	w.queued = &q
	f()
	w.queued = nil
	if len(q) == 0 {
		return
	}
	body := map[string]any{}
	list := make([]any, len(q))
	for i, o := range q {
		m, err := o.ToPortCreateMap()
		if err != nil {
			w.t.Fatal(err)
		}
		list[i] = m["port"]
	}
	body["ports"] = list
	var out struct {
		Ports []ports.Port `json:"ports"`
	}
	if _, err := w.member.Post(context.Background(), w.member.ServiceURL("ports"), body, &out, nil); err != nil {
		w.t.Fatalf("create %d ports: %v", len(q), err)
	}
	for _, p := range out.Ports {
		w.ports[p.DeviceID] = p.ID
	}
}

// node adds a cluster instance (ID w.id(id)) to the simulated Nova with
// one real port holding ip, and returns the instance's ID.
func (w *world) node(id, name, status, ip string, launched time.Time, sgs []string, pairs ...string) string {
	w.t.Helper()
	return w.instance(openstacksim.Server{ID: id, Name: name, Status: status, Metadata: map[string]string{"kluster": "k"},
		Created: launched, LaunchedAt: launched}, ip, sgs, pairs...)
}

// instance adds any instance (its ID tagged with w.id) with one real port
// holding ip, and returns the instance's ID.
func (w *world) instance(v openstacksim.Server, ip string, sgs []string, pairs ...string) string {
	w.t.Helper()
	v.ID = w.id(v.ID)
	w.sim.PutServer(v)
	w.servers = append(w.servers, v)
	w.port(v.ID, ip, sgs, pairs...)
	return v.ID
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

// writes counts every write the remediator made: to Neutron through the
// recorder, and to the simulated Nova.
func (w *world) writes() int { return w.rec.Writes() + w.sim.Writes() }

// underlay is the world's real Neutron under the simulated Nova.
type underlay struct{ w *world }

func (u underlay) Ports() ([]openstacksim.Port, error) {
	pages, err := ports.List(u.w.member, ports.ListOpts{NetworkID: u.w.net}).AllPages(context.Background())
	if err != nil {
		return nil, err
	}
	ps, err := ports.ExtractPorts(pages)
	if err != nil {
		return nil, err
	}
	out := make([]openstacksim.Port, 0, len(ps))
	for _, p := range ps {
		sp := openstacksim.Port{ID: p.ID, Name: p.Name, NetworkID: p.NetworkID, DeviceID: p.DeviceID, MACAddress: p.MACAddress,
			SecurityGroups: p.SecurityGroups, Revision: p.RevisionNumber}
		for _, ip := range p.FixedIPs {
			sp.FixedIPs = append(sp.FixedIPs, ip.IPAddress)
		}
		out = append(out, sp)
	}
	return out, nil
}

func (u underlay) SecurityGroups() ([]openstacksim.SecurityGroup, error) {
	pages, err := groups.List(u.w.member, groups.ListOpts{TenantID: u.w.stack.Member.ProjectID}).AllPages(context.Background())
	if err != nil {
		return nil, err
	}
	gs, err := groups.ExtractGroups(pages)
	if err != nil {
		return nil, err
	}
	out := make([]openstacksim.SecurityGroup, 0, len(gs))
	for _, g := range gs {
		out = append(out, openstacksim.SecurityGroup{ID: g.ID, Name: g.Name})
	}
	return out, nil
}

func (u underlay) SetSecurityGroups(port string, sgs []string) error {
	_, err := ports.Update(context.Background(), u.w.member, port, ports.UpdateOpts{SecurityGroups: &sgs}).Extract()
	return err
}
