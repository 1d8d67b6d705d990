package debris

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/remediatetest"
	"github.com/drwatch/drwatch/test/openstacktest"
)

// Against real Neutron, Octavia and kube-apiserver: an orphaned load
// balancer goes with the floating IP on its VIP port and the VIP port
// Octavia left behind (the noop network driver never deletes it, as a
// broken Octavia would not); a floating IP on no port goes when drwatch saw
// its Service without loadbalancer.openstack.org/keep-floatingip and the
// Service is gone. Look-alikes stay: a floating IP its Service asked to
// keep (on the VIP port of a load balancer that goes, or on no port), one
// of a Service drwatch never saw (reported), one another Service asks for
// by address, and those of cluster net2 or of a Service that exists.
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

	// Two orphaned load balancers, each on a VIP port. Octavia's noop
	// network driver invents the VIP port's ID (and cannot take a real
	// port: it knows no fixed IPs); a real Octavia's VIP port is a Neutron
	// port. Point each load balancer at one, in Octavia's database, named
	// and owned as Octavia does.
	orphanLB := func(svc string) (lbID, port string) {
		name := "kube_service_net_web_" + svc
		port = id(call(s.Member, http.MethodPost, "/v2.0/ports", map[string]any{"port": map[string]any{"network_id": tenant}}), "port")
		lbID = createMarkedLB(t, s, s.Member, name, cpoMarks(name, "net", "web", svc))
		if err := s.Exec(ctx, "octavia", fmt.Sprintf("UPDATE vip SET port_id='%s' WHERE load_balancer_id='%s'", port, lbID)); err != nil {
			t.Fatal(err)
		}
		call(s.Member, http.MethodPut, "/v2.0/ports/"+port, map[string]any{"port": map[string]any{"name": "octavia-lb-" + lbID, "device_owner": "Octavia"}})
		return lbID, port
	}
	lbID, vipPort := orphanLB("gone")
	keepLB, keepPort := orphanLB("keeplb")

	fipAt := func(desc, port string) (fid, addr string) {
		body := map[string]any{"floating_network_id": public, "description": desc}
		if port != "" {
			body["port_id"] = port
		}
		f := call(s.Member, http.MethodPost, "/v2.0/floatingips", map[string]any{"floatingip": body})["floatingip"].(map[string]any)
		return f["id"].(string), f["floating_ip_address"].(string)
	}
	fip := func(desc, port string) string { f, _ := fipAt(desc, port); return f }
	desc := func(svc string) string {
		return "Floating IP for Kubernetes external service web/" + svc + " from cluster net"
	}
	onVIP := fip(desc("gone"), vipPort)
	stray := fip(desc("old"), "")
	// Kept by their Service's annotation, on a VIP port or on none.
	onKeptVIP := fip(desc("keeplb"), keepPort)
	keptFree := fip(desc("keep"), "")
	// Of a Service drwatch never saw: it may have asked to keep it.
	unseen := fip(desc("unseen"), "")
	// Kept by address: a Service of another name asks for it.
	moved, movedAddr := fipAt(desc("moved"), "")
	kept := []string{
		fip("Floating IP for Kubernetes external service web/old from cluster net2", ""),
		fip(desc("kept"), ""),
		fip("Floating IP for something else", ""),
		moved,
	}

	r := remediator(t, s, kc, "net", nil)
	sawServiceGo(t, r, "web", "gone", nil)
	sawServiceGo(t, r, "web", "old", map[string]string{KeepFloatingIPAnnotation: "false"})
	sawServiceGo(t, r, "web", "keeplb", map[string]string{KeepFloatingIPAnnotation: "true"})
	sawServiceGo(t, r, "web", "keep", map[string]string{KeepFloatingIPAnnotation: "true"})
	sawServiceGo(t, r, "web", "moved", nil)
	createLBService(t, "web", "adopter", nil, movedAddr)

	acts, err := r.Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byTarget := map[string]remediate.Action{}
	for _, a := range acts {
		byTarget[a.Target] = a
	}
	want := []string{"floatingip/" + stray, "floatingip/" + keptFree, "floatingip/" + unseen, "loadbalancer/" + lbID, "loadbalancer/" + keepLB}
	slices.Sort(want)
	if got := targets(acts); !slices.Equal(got, want) {
		t.Fatalf("plan: got %q, want %q", got, want)
	}
	for target, report := range map[string]string{"floatingip/" + stray: "", "loadbalancer/" + lbID: "", "loadbalancer/" + keepLB: "",
		"floatingip/" + keptFree: "asked for it with " + KeepFloatingIPAnnotation, "floatingip/" + unseen: "never saw its Service web/unseen"} {
		if got := byTarget[target].ReportOnly; (report == "") != (got == "") || !strings.Contains(got, report) {
			t.Errorf("%s: got report-only %q, want %q", target, got, report)
		}
	}
	if r := byTarget["loadbalancer/"+lbID].Reason; !strings.Contains(r, "with floating IP "+onVIP) {
		t.Errorf("load balancer reason %q does not name the floating IP %s on its VIP port", r, onVIP)
	}
	if r := byTarget["loadbalancer/"+keepLB].Reason; !strings.Contains(r, onKeptVIP+" (kept: its Service web/keeplb asked for it") {
		t.Errorf("load balancer reason %q does not say its floating IP %s stays", r, onKeptVIP)
	}
	// Apply checks the record itself: a delete of a kept one is refused.
	kept1 := byTarget["floatingip/"+keptFree]
	kept1.ReportOnly = ""
	if err := r.Apply(ctx, kept1); !errors.Is(err, remediate.ErrPrecondition) {
		t.Fatalf("apply to a kept floating IP: got %v, want ErrPrecondition", err)
	}
	c := remediatetest.NewLog()
	got := remediatetest.Summary(remediatetest.Pass(t, c, r, remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5}))
	slices.Sort(got)
	w := []string{"planned delete floatingip/" + stray, "applied delete floatingip/" + stray,
		"planned delete loadbalancer/" + lbID, "applied delete loadbalancer/" + lbID,
		"planned delete loadbalancer/" + keepLB, "applied delete loadbalancer/" + keepLB,
		"dry_run delete floatingip/" + keptFree, "dry_run delete floatingip/" + unseen}
	slices.Sort(w)
	if !slices.Equal(got, w) {
		t.Fatalf("pass: got %q, want %q", got, w)
	}
	gone := func(path string) bool {
		return s.NeutronCall(ctx, s.Member, http.MethodGet, path, nil, nil) != nil
	}
	for _, p := range []string{"/v2.0/floatingips/" + onVIP, "/v2.0/floatingips/" + stray, "/v2.0/ports/" + vipPort, "/v2.0/ports/" + keepPort} {
		if !gone(p) {
			t.Errorf("%s still there after the pass", p)
		}
	}
	for _, f := range append(kept, onKeptVIP, keptFree, unseen) {
		if gone("/v2.0/floatingips/" + f) {
			t.Errorf("floating IP %s that must stay was deleted", f)
		}
	}
}
