package debris

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/drwatch/drwatch/failover/remediate"
	"github.com/drwatch/drwatch/failover/remediate/remediatetest"
	"github.com/drwatch/drwatch/test/openstacktest"
)

// Against real Neutron, Octavia and kube-apiserver: an orphaned load
// balancer goes with the floating IP on its VIP port and the VIP port
// Octavia left behind (the noop network driver never deletes it, as a
// broken Octavia would not); a floating IP on no port goes when its
// Service is absent. Floating IPs of cluster net2, or of a Service that
// exists, stay.
func TestFloatingIPsAndVIPPortGoWithTheirLoadBalancer(t *testing.T) {
	s := osStack(t)
	kc := kubeClient(t, "")
	ctx := ctxT(t)
	createService(t, "web", "kept")
	call := func(c openstacktest.Credentials, method, path string, in any) map[string]any {
		t.Helper()
		var out map[string]any
		if err := s.NeutronCall(ctx, c, method, path, in, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	id := func(out map[string]any, kind string) string {
		return out[kind].(map[string]any)["id"].(string)
	}
	// An external network with a router to the tenant subnet: Neutron
	// associates a floating IP only with a port it can route to.
	public := id(call(s.Admin, http.MethodPost, "/v2.0/networks", map[string]any{"network": map[string]any{
		"name": "debris-public", "router:external": true, "provider:network_type": "flat", "provider:physical_network": "debris"}}), "network")
	call(s.Admin, http.MethodPost, "/v2.0/subnets", map[string]any{"subnet": map[string]any{
		"network_id": public, "cidr": "203.0.113.0/24", "ip_version": 4}})
	tenant := id(call(s.Member, http.MethodPost, "/v2.0/networks", map[string]any{"network": map[string]any{"name": "debris-tenant"}}), "network")
	subnet := id(call(s.Member, http.MethodPost, "/v2.0/subnets", map[string]any{"subnet": map[string]any{
		"network_id": tenant, "cidr": "10.77.0.0/24", "ip_version": 4}}), "subnet")
	router := id(call(s.Member, http.MethodPost, "/v2.0/routers", map[string]any{"router": map[string]any{
		"name": "debris-router", "external_gateway_info": map[string]any{"network_id": public}}}), "router")
	call(s.Member, http.MethodPut, "/v2.0/routers/"+router+"/add_router_interface", map[string]any{"subnet_id": subnet})

	vipPort := id(call(s.Member, http.MethodPost, "/v2.0/ports", map[string]any{"port": map[string]any{"network_id": tenant}}), "port")
	lbID, err := s.CreateLB(ctx, "kube_service_net_web_gone")
	if err != nil {
		t.Fatal(err)
	}
	// Octavia's noop network driver invents the VIP port's ID (and cannot
	// take a real port: it knows no fixed IPs); a real Octavia's VIP port is
	// a Neutron port. Point the load balancer at one, in Octavia's database.
	if err := s.Exec(ctx, "octavia", fmt.Sprintf("UPDATE vip SET port_id='%s' WHERE load_balancer_id='%s'", vipPort, lbID)); err != nil {
		t.Fatal(err)
	}
	lb := struct{ ID string }{lbID}
	// What Octavia names and owns its VIP ports.
	call(s.Member, http.MethodPut, "/v2.0/ports/"+vipPort, map[string]any{"port": map[string]any{"name": "octavia-lb-" + lb.ID, "device_owner": "Octavia"}})

	fip := func(desc, port string) string {
		body := map[string]any{"floating_network_id": public, "description": desc}
		if port != "" {
			body["port_id"] = port
		}
		return id(call(s.Member, http.MethodPost, "/v2.0/floatingips", map[string]any{"floatingip": body}), "floatingip")
	}
	onVIP := fip("Floating IP for Kubernetes external service web/gone from cluster net", vipPort)
	stray := fip("Floating IP for Kubernetes external service web/old from cluster net", "")
	kept := []string{
		fip("Floating IP for Kubernetes external service web/old from cluster net2", ""),
		fip("Floating IP for Kubernetes external service web/kept from cluster net", ""),
		fip("Floating IP for something else", ""),
	}

	r := remediator(t, s, kc, "net", nil)
	acts, err := r.Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"floatingip/" + stray, "loadbalancer/" + lb.ID}
	if got := targets(acts); !slices.Equal(got, want) {
		t.Fatalf("plan: got %q, want %q", got, want)
	}
	if !strings.Contains(acts[1].Reason, onVIP) {
		t.Errorf("load balancer reason %q does not name the floating IP %s on its VIP port", acts[1].Reason, onVIP)
	}
	c := remediatetest.NewLog()
	got := remediatetest.Summary(remediatetest.Pass(t, c, r, remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5}))
	if w := []string{"planned delete floatingip/" + stray, "applied delete floatingip/" + stray,
		"planned delete loadbalancer/" + lb.ID, "applied delete loadbalancer/" + lb.ID}; !slices.Equal(got, w) {
		t.Fatalf("pass: got %q, want %q", got, w)
	}
	gone := func(path string) bool {
		return s.NeutronCall(ctx, s.Member, http.MethodGet, path, nil, nil) != nil
	}
	for _, p := range []string{"/v2.0/floatingips/" + onVIP, "/v2.0/floatingips/" + stray, "/v2.0/ports/" + vipPort} {
		if !gone(p) {
			t.Errorf("%s still there after the pass", p)
		}
	}
	for _, f := range kept {
		if gone("/v2.0/floatingips/" + f) {
			t.Errorf("look-alike floating IP %s deleted", f)
		}
	}
}
