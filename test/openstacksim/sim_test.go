package openstacksim

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/instanceactions"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/secgroups"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/services"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/extraroutes"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

func clients(t *testing.T, s *Sim) (network, compute *gophercloud.ServiceClient) {
	return clientsAs(t, s, AppCredID, AppCredSecret)
}

func clientsAs(t *testing.T, s *Sim, id, secret string) (network, compute *gophercloud.ServiceClient) {
	t.Helper()
	ctx := context.Background()
	p, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: s.AuthURL(),
		ApplicationCredentialID: id, ApplicationCredentialSecret: secret})
	if err != nil {
		t.Fatalf("auth: %v", err)
	}
	eo := gophercloud.EndpointOpts{Region: Region}
	if network, err = openstack.NewNetworkV2(p, eo); err != nil {
		t.Fatal(err)
	}
	if compute, err = openstack.NewComputeV2(p, eo); err != nil {
		t.Fatal(err)
	}
	return network, compute
}

func seed(s *Sim) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s.PutRouter(Router{ID: "r1", Name: "cluster", Routes: []Route{{"198.19.1.0/24", "10.180.0.3"}}, Revision: 4})
	s.PutSecurityGroup(SecurityGroup{ID: "sg1", Name: "default"})
	s.PutServer(Server{ID: "vm1", Name: "k-node-1", Status: "ACTIVE", Metadata: map[string]string{"kluster": "k"}, Created: now, LaunchedAt: now})
	s.PutPort(Port{ID: "p1", NetworkID: "n1", DeviceID: "vm1", MACAddress: "fa:16:3e:00:00:01", FixedIPs: []string{"10.180.0.3"}, SecurityGroups: []string{"sg1"}, Revision: 7})
}

func TestAuth(t *testing.T) {
	s := Start()
	defer s.Close()
	_, err := openstack.AuthenticatedClient(context.Background(), gophercloud.AuthOptions{IdentityEndpoint: s.AuthURL(),
		ApplicationCredentialID: AppCredID, ApplicationCredentialSecret: "wrong"})
	if !gophercloud.ResponseCodeIs(err, http.StatusUnauthorized) {
		t.Fatalf("got %v, want 401", err)
	}
	resp, err := http.Get(s.srv.URL + "/network/v2.0/routers/r1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("got %d without a token, want 401", resp.StatusCode)
	}
}

func TestNeutron(t *testing.T) {
	s := Start()
	defer s.Close()
	seed(s)
	net, _ := clients(t, s)
	ctx := context.Background()

	r, err := routers.Get(ctx, net, "r1").Extract()
	if err != nil || r.RevisionNumber != 4 || len(r.Routes) != 1 || r.Routes[0].NextHop != "10.180.0.3" {
		t.Fatalf("got %+v %v, want r1 rev 4 with one route", r, err)
	}
	if _, err := routers.Get(ctx, net, "nope").Extract(); !gophercloud.ResponseCodeIs(err, 404) {
		t.Fatalf("got %v, want 404", err)
	}
	add := []routers.Route{{DestinationCIDR: "198.19.2.0/24", NextHop: "10.180.0.4"}}
	r, err = extraroutes.Add(ctx, net, "r1", extraroutes.Opts{Routes: &add}).Extract()
	if err != nil || len(r.Routes) != 2 || r.RevisionNumber != 5 {
		t.Fatalf("add: got %+v %v, want 2 routes rev 5", r, err)
	}
	// Adding again changes nothing.
	if r, _ = extraroutes.Add(ctx, net, "r1", extraroutes.Opts{Routes: &add}).Extract(); r.RevisionNumber != 5 {
		t.Fatalf("re-add: got rev %d, want 5", r.RevisionNumber)
	}
	r, err = extraroutes.Remove(ctx, net, "r1", extraroutes.Opts{Routes: &add}).Extract()
	if err != nil || len(r.Routes) != 1 || r.RevisionNumber != 6 {
		t.Fatalf("remove: got %+v %v, want 1 route rev 6", r, err)
	}
	s.SetMaxRoutes(1)
	if _, err := extraroutes.Add(ctx, net, "r1", extraroutes.Opts{Routes: &add}).Extract(); !gophercloud.ResponseCodeIs(err, 400) {
		t.Fatalf("past max_routes: got %v, want 400", err)
	}

	pl, err := ports.List(net, ports.ListOpts{DeviceID: "vm1"}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ps, _ := ports.ExtractPorts(pl)
	if len(ps) != 1 || ps[0].RevisionNumber != 7 || ps[0].FixedIPs[0].IPAddress != "10.180.0.3" {
		t.Fatalf("got ports %+v, want p1 rev 7", ps)
	}
	pairs := []ports.AddressPair{{IPAddress: "198.19.0.0/16"}}
	stale := 6
	if _, err := ports.Update(ctx, net, "p1", ports.UpdateOpts{AllowedAddressPairs: &pairs, RevisionNumber: &stale}).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusPreconditionFailed) {
		t.Fatalf("stale revision: got %v, want 412", err)
	}
	cur := 7
	p, err := ports.Update(ctx, net, "p1", ports.UpdateOpts{AllowedAddressPairs: &pairs, RevisionNumber: &cur}).Extract()
	if err != nil || p.RevisionNumber != 8 || len(p.AllowedAddressPairs) != 1 || p.AllowedAddressPairs[0].MACAddress != "fa:16:3e:00:00:01" {
		t.Fatalf("got %+v %v, want rev 8 with the pair", p, err)
	}
	if _, err := ports.Get(ctx, net, "nope").Extract(); !gophercloud.ResponseCodeIs(err, 404) {
		t.Fatalf("got %v, want 404", err)
	}
	if s.RouteReplaces() != 0 {
		t.Fatalf("got %d route replaces, want 0", s.RouteReplaces())
	}
}

func TestNova(t *testing.T) {
	s := Start()
	defer s.Close()
	seed(s)
	s.PutSecurityGroup(SecurityGroup{ID: "sg2", Name: "k-nodes"})
	s.PutServer(Server{ID: "vm2", Name: "other", Status: "SHUTOFF"})
	_, comp := clients(t, s)
	ctx := context.Background()

	pg, err := servers.List(comp, servers.ListOpts{Name: "^k-"}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all, err := servers.ExtractServers(pg)
	if err != nil || len(all) != 1 || all[0].ID != "vm1" || all[0].Metadata["kluster"] != "k" || all[0].LaunchedAt.IsZero() {
		t.Fatalf("got %+v %v, want vm1 with metadata and launched_at", all, err)
	}
	if len(all[0].SecurityGroups) != 1 || all[0].SecurityGroups[0]["name"] != "default" {
		t.Fatalf("got groups %v, want default", all[0].SecurityGroups)
	}
	if _, err := servers.Get(ctx, comp, "nope").Extract(); !gophercloud.ResponseCodeIs(err, 404) {
		t.Fatalf("got %v, want 404", err)
	}
	if err := servers.Reboot(ctx, comp, "vm2", servers.RebootOpts{Type: servers.SoftReboot}).ExtractErr(); !gophercloud.ResponseCodeIs(err, 409) {
		t.Fatalf("soft reboot of SHUTOFF: got %v, want 409", err)
	}
	if err := servers.Reboot(ctx, comp, "vm1", servers.RebootOpts{Type: servers.HardReboot}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	ap, err := instanceactions.List(comp, "vm1", nil).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	acts, err := instanceactions.ExtractInstanceActions(ap)
	if err != nil || len(acts) != 2 || acts[0].Action != "reboot" || acts[1].Action != "create" {
		t.Fatalf("got actions %+v %v, want reboot then create", acts, err)
	}
	if err := secgroups.AddServer(ctx, comp, "vm1", "k-nodes").ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if g := s.Port("p1").SecurityGroups; len(g) != 2 || g[1] != "sg2" {
		t.Fatalf("got port groups %v, want sg1 sg2", g)
	}
	if err := secgroups.AddServer(ctx, comp, "vm1", "nope").ExtractErr(); !gophercloud.ResponseCodeIs(err, 404) {
		t.Fatalf("got %v, want 404", err)
	}
}

// listAll lists every server through gophercloud's paging and returns
// their "id:status" and the number of pages requested.
func listAll(t *testing.T, comp *gophercloud.ServiceClient, opts servers.ListOpts) ([]string, int, error) {
	t.Helper()
	var got []string
	pages := 0
	err := servers.List(comp, opts).EachPage(context.Background(), func(_ context.Context, p pagination.Page) (bool, error) {
		pages++
		vs, err := servers.ExtractServers(p)
		for _, v := range vs {
			got = append(got, v.ID+":"+v.Status)
		}
		return true, err
	})
	return got, pages, err
}

func TestNovaPagingAndDownCells(t *testing.T) {
	s := Start()
	defer s.Close()
	_, comp := clients(t, s)
	for _, id := range []string{"vm1", "vm2", "vm3"} {
		s.PutServer(Server{ID: id, Name: "k-" + id, Status: "ACTIVE", Created: time.Now()})
	}
	s.SetMaxLimit(2)
	got, pages, err := listAll(t, comp, servers.ListOpts{})
	if err != nil || !slices.Equal(got, []string{"vm1:ACTIVE", "vm2:ACTIVE", "vm3:ACTIVE"}) || pages != 2 {
		t.Fatalf("paged list: got %q in %d pages, err %v; want all three in 2 pages", got, pages, err)
	}
	s.SetPageFault(true)
	if _, _, err := listAll(t, comp, servers.ListOpts{}); !gophercloud.ResponseCodeIs(err, 500) {
		t.Fatalf("page fault: got %v, want 500 on the second page", err)
	}
	s.SetPageFault(false)
	s.SetMaxLimit(1000)
	s.SetCellDown("vm2", true)
	v269 := *comp
	v269.Microversion = "2.69"
	for _, tt := range []struct {
		name string
		comp *gophercloud.ServiceClient
		opts servers.ListOpts
		want []string
	}{
		{"2.1 skips the down cell", comp, servers.ListOpts{}, []string{"vm1:ACTIVE", "vm3:ACTIVE"}},
		{"2.69 shows it as UNKNOWN", &v269, servers.ListOpts{}, []string{"vm1:ACTIVE", "vm2:UNKNOWN", "vm3:ACTIVE"}},
		{"2.69 with a filter skips it", &v269, servers.ListOpts{Name: "^k-"}, []string{"vm1:ACTIVE", "vm3:ACTIVE"}},
		{"2.69 with paging skips it", &v269, servers.ListOpts{Limit: 5}, []string{"vm1:ACTIVE", "vm3:ACTIVE"}},
	} {
		got, _, err := listAll(t, tt.comp, tt.opts)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}

// TestNovaPowerStateAndComputeServices: power_state follows the server
// (never guessed from absence), the host attribute and os-services are
// admin-only, and forced_down needs microversion 2.11.
func TestNovaPowerStateAndComputeServices(t *testing.T) {
	s := Start()
	defer s.Close()
	s.PutServer(Server{ID: "vm-on", Name: "on", Status: "ACTIVE", Host: "cmp-1"})
	s.PutServer(Server{ID: "vm-off", Name: "off", Status: "SHUTOFF"})
	s.PutServer(Server{ID: "vm-err", Name: "err", Status: "ERROR", Power: PowerCrashed})
	s.PutServer(Server{ID: "vm-none", Name: "none", Status: "ACTIVE", Power: PowerOmitted})
	s.PutService(ComputeService{ID: 1, Host: "cmp-1"})
	s.PutService(ComputeService{ID: 2, Host: "cmp-2", ForcedDown: true})
	s.PutService(ComputeService{ID: 3, Host: "cmp-1", Binary: "nova-conductor", Down: true})
	ctx := context.Background()
	_, member := clients(t, s)
	_, admin := clientsAs(t, s, AdminAppCredID, AdminAppCredSecret)

	type raw struct {
		Power *int    `json:"OS-EXT-STS:power_state"`
		Host  *string `json:"OS-EXT-SRV-ATTR:host"`
	}
	get := func(c *gophercloud.ServiceClient, id string) raw {
		t.Helper()
		var v raw
		if err := servers.Get(ctx, c, id).ExtractInto(&v); err != nil {
			t.Fatalf("get %s: %v", id, err)
		}
		return v
	}
	for id, want := range map[string]int{"vm-on": 1, "vm-off": 4, "vm-err": 6} {
		if got := get(member, id); got.Power == nil || *got.Power != want {
			t.Errorf("%s: got power_state %v, want %d", id, got.Power, want)
		}
	}
	if got := get(member, "vm-none"); got.Power != nil {
		t.Errorf("vm-none: got power_state %d, want the attribute absent", *got.Power)
	}
	if got := get(member, "vm-on"); got.Host != nil {
		t.Errorf("member token: got host %q, want no host attribute", *got.Host)
	}
	if got := get(admin, "vm-on"); got.Host == nil || *got.Host != "cmp-1" {
		t.Errorf("admin token: got host %v, want cmp-1", got.Host)
	}
	s.SetPower("vm-on", PowerSuspended)
	if got := get(admin, "vm-on"); got.Power == nil || *got.Power != 7 {
		t.Errorf("after SetPower: got %v, want 7", got.Power)
	}

	list := func(c *gophercloud.ServiceClient, host string) ([]services.Service, error) {
		pg, err := services.List(c, services.ListOpts{Binary: "nova-compute", Host: host}).AllPages(ctx)
		if err != nil {
			return nil, err
		}
		return services.ExtractServices(pg)
	}
	if _, err := list(member, "cmp-1"); !gophercloud.ResponseCodeIs(err, http.StatusForbidden) {
		t.Fatalf("member os-services: got %v, want 403", err)
	}
	got, err := list(admin, "cmp-1")
	if err != nil || len(got) != 1 || got[0].State != "up" || got[0].Binary != "nova-compute" {
		t.Fatalf("cmp-1: got %+v %v, want one nova-compute, up", got, err)
	}
	got, err = list(admin, "cmp-2")
	if err != nil || len(got) != 1 || got[0].State != "down" || got[0].ForcedDown {
		t.Fatalf("cmp-2 at 2.1: got %+v %v, want state down and no forced_down", got, err)
	}
	v211 := *admin
	v211.Microversion = "2.11"
	got, err = list(&v211, "cmp-2")
	if err != nil || len(got) != 1 || !got[0].ForcedDown {
		t.Fatalf("cmp-2 at 2.11: got %+v %v, want forced_down", got, err)
	}
}
