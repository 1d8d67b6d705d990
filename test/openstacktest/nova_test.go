package openstacktest

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"
)

// TestNovaStack starts Keystone, Placement and Nova with fake-driver
// computes, and drives one server the real way: scheduled to ACTIVE, a
// flavor no host fits to ERROR, and a stopped compute goes down.
func TestNovaStack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	s := stack(t)
	id, err := s.CreateServer(ctx, ServerOpts{Name: "smoke", Host: NovaHosts[1]})
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.WaitServer(ctx, id, "ACTIVE")
	if err != nil {
		t.Fatal(err)
	}
	if v.Host != NovaHosts[1] || v.PowerState == nil || *v.PowerState != 1 {
		t.Fatalf("got host %q power %v, want %s running", v.Host, v.PowerState, NovaHosts[1])
	}
	huge, err := s.CreateServer(ctx, ServerOpts{Name: "huge", Flavor: FlavorHuge})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := s.WaitServer(ctx, huge, "ERROR"); err != nil || v.Fault == nil {
		t.Fatalf("huge flavor: got %+v %v, want ERROR with a fault", v, err)
	}
	t0 := time.Now()
	s.StopCompute(NovaHosts[2])
	if err := s.WaitService(ctx, NovaHosts[2], "down"); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped compute down after %s", time.Since(t0))
}

// TestNovaServerOnNeutronPort boots a server with a Neutron port: Nova
// binds it (vif_type "ovs" through the stack's agent rows), sets its
// device_id, shows its address and security groups in the server view, and
// addSecurityGroup (given the group's ID) updates the port. A port made
// afterwards with the server's device_id is not in the view's addresses but
// is in its security groups: Nova takes addresses from its network info
// cache, which only Nova's own attach, a network-changed event for a port
// it already has, or the periodic heal (off here) refresh, and security
// groups from Neutron's ports by device_id on every read.
func TestNovaServerOnNeutronPort(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	s := stack(t)
	call := func(method, path string, in, out any) {
		t.Helper()
		if err := s.NeutronCall(ctx, s.Member, method, path, in, out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	type idOnly struct{ ID string }
	var net, sub struct {
		Network idOnly `json:"network"`
		Subnet  idOnly `json:"subnet"`
	}
	call(http.MethodPost, "/v2.0/networks", map[string]any{"network": map[string]any{"name": "n"}}, &net)
	call(http.MethodPost, "/v2.0/subnets", map[string]any{"subnet": map[string]any{"network_id": net.Network.ID,
		"cidr": "10.9.0.0/24", "ip_version": 4, "enable_dhcp": false}}, &sub)
	mkPort := func(ip, device string) string {
		var p struct{ Port idOnly }
		call(http.MethodPost, "/v2.0/ports", map[string]any{"port": map[string]any{"network_id": net.Network.ID,
			"device_id": device, "fixed_ips": []any{map[string]any{"subnet_id": sub.Subnet.ID, "ip_address": ip}}}}, &p)
		return p.Port.ID
	}
	var sg struct {
		SecurityGroup struct{ ID, Name string } `json:"security_group"`
	}
	call(http.MethodPost, "/v2.0/security-groups", map[string]any{"security_group": map[string]any{"name": "extra"}}, &sg)
	port := mkPort("10.9.0.4", "")
	id, err := s.CreateServer(ctx, ServerOpts{Name: "on-port", Host: NovaHosts[0], Ports: []string{port}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.WaitServer(ctx, id, "ACTIVE"); err != nil {
		t.Fatal(err)
	}
	var p struct {
		Port struct {
			DeviceID       string   `json:"device_id"`
			DeviceOwner    string   `json:"device_owner"`
			VIFType        string   `json:"binding:vif_type"`
			SecurityGroups []string `json:"security_groups"`
		} `json:"port"`
	}
	// binding:vif_type is for admins only (Neutron's policy).
	if err := s.NeutronCall(ctx, s.Admin, http.MethodGet, "/v2.0/ports/"+port, nil, &p); err != nil {
		t.Fatal(err)
	}
	if p.Port.DeviceID != id || p.Port.DeviceOwner != "compute:nova" || p.Port.VIFType != "ovs" {
		t.Fatalf("port after boot: got %+v, want device_id %s, owner compute:nova, vif_type ovs", p.Port, id)
	}
	// A second port, made out of band for the running server.
	mkPort("10.9.0.5", id)
	view := func() (addrs, groups []string) {
		var v struct {
			Server struct {
				Addresses map[string][]struct {
					Addr string `json:"addr"`
				} `json:"addresses"`
				SecurityGroups []struct{ Name string } `json:"security_groups"`
			} `json:"server"`
		}
		if err := s.Nova(ctx, s.Member, http.MethodGet, "/servers/"+id, nil, &v); err != nil {
			t.Fatal(err)
		}
		for _, l := range v.Server.Addresses {
			for _, a := range l {
				addrs = append(addrs, a.Addr)
			}
		}
		for _, g := range v.Server.SecurityGroups {
			groups = append(groups, g.Name)
		}
		return addrs, groups
	}
	// Addresses come from the info cache, security groups from every
	// port Neutron has with the server's device_id: one "default" each.
	if addrs, groups := view(); !slices.Equal(addrs, []string{"10.9.0.4"}) || !slices.Equal(groups, []string{"default", "default"}) {
		t.Fatalf("server view: got addresses %v groups %v, want [10.9.0.4] (not the out-of-band port's) and [default default] (both ports')", addrs, groups)
	}
	if err := s.Nova(ctx, s.Member, http.MethodPost, "/servers/"+id+"/action",
		map[string]any{"addSecurityGroup": map[string]any{"name": sg.SecurityGroup.ID}}, nil); err != nil {
		t.Fatalf("addSecurityGroup by ID: %v", err)
	}
	call(http.MethodGet, "/v2.0/ports/"+port, nil, &p)
	if !slices.Contains(p.Port.SecurityGroups, sg.SecurityGroup.ID) {
		t.Fatalf("port groups after addSecurityGroup: got %v, want %s", p.Port.SecurityGroups, sg.SecurityGroup.ID)
	}
	if _, groups := view(); !slices.Contains(groups, "extra") {
		t.Fatalf("server view groups after addSecurityGroup: got %v, want extra", groups)
	}
}
