package probes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/internal/openstackauth"
	"github.com/drwatch/drwatch/test/openstacktest"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
)

// octaviaLoadTree reads a status tree fixture shaped like Octavia's
// GET /v2/lbaas/loadbalancers/{id}/status answer.
func octaviaLoadTree(t *testing.T, name string) *loadbalancers.LoadBalancer {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "octavia", name))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Statuses loadbalancers.StatusTree `json:"statuses"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v.Statuses.Loadbalancer
}

func TestOctaviaJudge(t *testing.T) {
	tests := []struct {
		name       string
		fixture    string
		healthy    []string
		wantClass  Class
		wantReason string
		wantDetail map[string]string
	}{
		{
			name: "online", fixture: "status_online.json", wantClass: ClassNone,
			wantDetail: map[string]string{"provisioning_status": "ACTIVE", "operating_status": "ONLINE",
				"listeners": "1", "pools": "1", "members": "ONLINE=2", "lb_name": "web-lb"},
		},
		{
			name: "degraded", fixture: "status_degraded.json", wantClass: ClassLBDegraded,
			wantReason: "load balancer web-lb: operating_status DEGRADED, want ONLINE; pools HTTP_pool(DEGRADED)",
			wantDetail: map[string]string{"operating_status": "DEGRADED", "listeners": "2", "pools": "1",
				"members":             "DRAINING=1,ERROR=1,ONLINE=1",
				"unhealthy_listeners": "HTTP_listener(DEGRADED),HTTPS_listener(DEGRADED)",
				"unhealthy_pools":     "HTTP_pool(DEGRADED)",
				"unhealthy_members":   "192.0.2.17:80(ERROR)"},
		},
		{
			name: "degraded allowed", fixture: "status_degraded.json", healthy: []string{"ONLINE", "DEGRADED"}, wantClass: ClassNone,
			wantDetail: map[string]string{"operating_status": "DEGRADED", "unhealthy_members": "192.0.2.17:80(ERROR)"},
		},
		{
			name: "provisioning error", fixture: "status_error.json", healthy: []string{"ONLINE", "DEGRADED", "ERROR"}, wantClass: ClassLBError,
			wantReason: "load balancer web-lb: provisioning_status ERROR",
			wantDetail: map[string]string{"provisioning_status": "ERROR", "listeners": "0", "pools": "0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := octaviaJudge(octaviaLoadTree(t, tt.fixture), tt.healthy, false)
			if res.Class != tt.wantClass || res.OK != (tt.wantClass == ClassNone) {
				t.Fatalf("got ok=%v class=%q reason=%q, want class %q", res.OK, res.Class, res.Reason, tt.wantClass)
			}
			if tt.wantReason != "" && res.Reason != tt.wantReason {
				t.Errorf("got reason %q, want %q", res.Reason, tt.wantReason)
			}
			for k, want := range tt.wantDetail {
				if got := res.Detail[k]; got != want {
					t.Errorf("got Detail[%q] %q, want %q", k, got, want)
				}
			}
		})
	}
}

func TestOctaviaJudgeBounded(t *testing.T) {
	lb := octaviaLoadTree(t, "status_degraded.json")
	pool := lb.Listeners[0].Pools[0]
	member := pool.Members[1]
	pool.Members = nil
	for i := range 50 {
		m := member
		m.Name = fmt.Sprintf("m%02d", i)
		m.ID = fmt.Sprintf("id-%d", i)
		pool.Members = append(pool.Members, m)
	}
	lb.Listeners[0].Pools[0] = pool
	res := octaviaJudge(lb, nil, false)
	if got, want := res.Detail["unhealthy_members"], "m00(ERROR),m01(ERROR),m02(ERROR),(+47 more)"; got != want {
		t.Errorf("got unhealthy_members %q, want %q", got, want)
	}
	if got, want := res.Detail["members"], "ERROR=50"; got != want {
		t.Errorf("got members %q, want %q", got, want)
	}
}

// octaviaFake serves the slice of Keystone v3 and Octavia v2 the prober
// uses, with the real APIs' JSON shapes. It is a simulator, not OpenStack.
type octaviaFake struct {
	srv *httptest.Server

	mu            sync.Mutex
	lbs           map[string]string // id -> status tree fixture
	names         map[string][]string
	vip           string
	keystoneCode  int // non-zero: answer token requests with this status
	octaviaCode   int // non-zero: answer Octavia requests with this status
	appCredID     string
	appCredSecret string
	password      string
}

func newOctaviaFake(t *testing.T) *octaviaFake {
	t.Helper()
	f := &octaviaFake{
		lbs:   map[string]string{},
		names: map[string][]string{},
		vip:   "192.0.2.10", appCredID: "ac-id", appCredSecret: "ac-secret-value", password: "pw-value",
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *octaviaFake) add(id, name, fixture string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lbs[id] = fixture
	f.names[name] = append(f.names[name], id)
}

func (f *octaviaFake) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/v3/auth/tokens" && r.Method == http.MethodPost:
		f.token(w, r)
	case r.URL.Path == "/lb/" || r.URL.Path == "/lb":
		// Octavia's unauthenticated version document.
		fmt.Fprintf(w, `{"versions": [{"id": "v2.0", "status": "SUPPORTED", "updated": "2016-12-11T00:00:00Z",
"links": [{"href": "%[1]s/lb/v2.0", "rel": "self"}]}, {"id": "v2", "status": "CURRENT", "updated": "2018-12-11T00:00:00Z",
"links": [{"href": "%[1]s/lb/v2", "rel": "self"}]}]}`, f.srv.URL)
	case strings.HasPrefix(r.URL.Path, "/lb/v2.0/lbaas/loadbalancers"):
		if r.Header.Get("X-Auth-Token") != "tok" {
			http.Error(w, `{"faultstring": "Unauthorized"}`, http.StatusUnauthorized)
			return
		}
		if f.octaviaCode != 0 {
			http.Error(w, `{"faultstring": "Service Unavailable"}`, f.octaviaCode)
			return
		}
		f.loadbalancers(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (f *octaviaFake) token(w http.ResponseWriter, r *http.Request) {
	if f.keystoneCode != 0 {
		w.WriteHeader(f.keystoneCode)
		fmt.Fprint(w, `{"error": {"code": 503, "message": "unavailable"}}`)
		return
	}
	var req struct {
		Auth struct {
			Identity struct {
				Methods  []string `json:"methods"`
				Password struct {
					User struct {
						Name     string `json:"name"`
						Password string `json:"password"`
					} `json:"user"`
				} `json:"password"`
				AppCred struct {
					ID     string `json:"id"`
					Secret string `json:"secret"`
				} `json:"application_credential"`
			} `json:"identity"`
		} `json:"auth"`
	}
	json.NewDecoder(r.Body).Decode(&req)
	id := req.Auth.Identity
	ok := (id.AppCred.ID == f.appCredID && id.AppCred.Secret == f.appCredSecret) ||
		(id.Password.User.Name == "demo" && id.Password.User.Password == f.password)
	if !ok {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error": {"code": 401, "message": "The request you have made requires authentication.", "title": "Unauthorized"}}`)
		return
	}
	w.Header().Set("X-Subject-Token", "tok")
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"token": {"methods": ["password"], "expires_at": "%s", "issued_at": "%s",
"user": {"id": "u1", "name": "demo", "domain": {"id": "default", "name": "Default"}},
"project": {"id": "p1", "name": "demo", "domain": {"id": "default", "name": "Default"}},
"catalog": [{"type": "load-balancer", "name": "octavia", "id": "s1", "endpoints": [
 {"id": "e1", "interface": "public", "region": "RegionOne", "region_id": "RegionOne", "url": "%s/lb"},
 {"id": "e2", "interface": "internal", "region": "RegionOne", "region_id": "RegionOne", "url": "%s/lb"}]}]}}`,
		time.Now().Add(time.Hour).UTC().Format(time.RFC3339), time.Now().UTC().Format(time.RFC3339), f.srv.URL, f.srv.URL)
}

func (f *octaviaFake) lbJSON(id string) string {
	tree := f.tree(id)
	return fmt.Sprintf(`{"id": %q, "name": %q, "description": "", "provisioning_status": %q, "operating_status": %q,
"admin_state_up": true, "project_id": "p1", "created_at": "2026-11-21T10:00:00", "updated_at": "2026-11-21T10:00:01",
"vip_address": %q, "vip_port_id": "vp", "vip_subnet_id": "vs", "vip_network_id": "vn", "listeners": [], "pools": [],
"provider": "amphora", "flavor_id": null, "availability_zone": null, "tags": []}`,
		id, tree.Name, tree.ProvisioningStatus, tree.OperatingStatus, f.vip)
}

func (f *octaviaFake) tree(id string) *loadbalancers.LoadBalancer {
	b, _ := os.ReadFile(filepath.Join("testdata", "octavia", f.lbs[id]))
	var v struct {
		Statuses loadbalancers.StatusTree `json:"statuses"`
	}
	json.Unmarshal(b, &v)
	lb := v.Statuses.Loadbalancer
	for name, ids := range f.names {
		for _, x := range ids {
			if x == id {
				lb.Name = name
			}
		}
	}
	return lb
}

func (f *octaviaFake) loadbalancers(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/lb/v2.0/lbaas/loadbalancers")
	rest = strings.Trim(rest, "/")
	if rest == "" {
		name := r.URL.Query().Get("name")
		var items []string
		for _, id := range f.names[name] {
			items = append(items, f.lbJSON(id))
		}
		fmt.Fprintf(w, `{"loadbalancers": [%s], "loadbalancers_links": []}`, strings.Join(items, ","))
		return
	}
	id, sub, _ := strings.Cut(rest, "/")
	if _, ok := f.lbs[id]; !ok {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"faultcode": "Client", "faultstring": "Load Balancer %s not found.", "debuginfo": null}`, id)
		return
	}
	switch sub {
	case "":
		fmt.Fprintf(w, `{"loadbalancer": %s}`, f.lbJSON(id))
	case "status":
		b, _ := os.ReadFile(filepath.Join("testdata", "octavia", f.lbs[id]))
		// Serve the fixture (the real API's shape) under this LB's name.
		w.Write(bytes.Replace(b, []byte(`"name": "web-lb"`), []byte(`"name": "`+f.tree(id).Name+`"`), 1))
	default:
		http.NotFound(w, r)
	}
}

func TestProbeOctaviaFake(t *testing.T) {
	f := newOctaviaFake(t)
	const (
		onlineID   = "84faceee-cb97-48d8-a3c1-4b1b2a1b2c3d"
		degradedID = "94faceee-cb97-48d8-a3c1-4b1b2a1b2c3d"
		errorID    = "a4faceee-cb97-48d8-a3c1-4b1b2a1b2c3d"
		dupA       = "b4faceee-cb97-48d8-a3c1-4b1b2a1b2c3d"
		dupB       = "c4faceee-cb97-48d8-a3c1-4b1b2a1b2c3d"
	)
	f.add(onlineID, "web-lb", "status_online.json")
	f.add(degradedID, "sad-lb", "status_degraded.json")
	f.add(errorID, "broken-lb", "status_error.json")
	f.add(dupA, "twin", "status_online.json")
	f.add(dupB, "twin", "status_online.json")

	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	idFile := write("ac-id", "ac-id\n")
	secretFile := write("ac-secret", "ac-secret-value\n")
	badSecret := write("ac-bad", "nope\n")
	cloudsFile := write("clouds.yaml", fmt.Sprintf(`clouds:
  pw:
    auth:
      auth_url: %[1]s/v3
      username: demo
      password: pw-value
      project_name: demo
      user_domain_name: Default
      project_domain_name: Default
    region_name: RegionOne
  appcred:
    auth_type: v3applicationcredential
    auth:
      auth_url: %[1]s/v3
      application_credential_id: ac-id
      application_credential_secret: ac-secret-value
    region_name: RegionOne
  wrongpw:
    auth:
      auth_url: %[1]s/v3
      username: demo
      password: wrong
      project_name: demo
      user_domain_name: Default
      project_domain_name: Default
  otherregion:
    auth:
      auth_url: %[1]s/v3
      application_credential_id: ac-id
      application_credential_secret: ac-secret-value
    region_name: Elsewhere
`, f.srv.URL))

	// A local listener stands in for the VIP; a closed port for a dead one.
	vip, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vip.Close() })
	go func() {
		for {
			c, err := vip.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	vipPort := vip.Addr().(*net.TCPAddr).Port
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadPort := dead.Addr().(*net.TCPAddr).Port
	dead.Close()

	appcred := func(lb string) OctaviaSpec {
		return OctaviaSpec{Credentials: openstackauth.Credentials{AuthURL: f.srv.URL + "/v3", ApplicationCredentialIDFile: idFile, ApplicationCredentialSecretFile: secretFile, Region: "RegionOne"}, LoadBalancer: lb}
	}
	with := func(s OctaviaSpec, mod func(*OctaviaSpec)) OctaviaSpec { mod(&s); return s }

	tests := []struct {
		name       string
		spec       OctaviaSpec
		keystone   int
		octavia    int
		wantClass  Class
		wantPhase  string
		wantReason string
	}{
		{name: "appcred files by id", spec: appcred(onlineID), wantClass: ClassNone},
		{name: "appcred files by name", spec: appcred("web-lb"), wantClass: ClassNone},
		{name: "clouds.yaml password", spec: OctaviaSpec{Credentials: openstackauth.Credentials{Cloud: "pw", CloudsFile: cloudsFile}, LoadBalancer: "web-lb"}, wantClass: ClassNone},
		{name: "clouds.yaml appcred", spec: OctaviaSpec{Credentials: openstackauth.Credentials{Cloud: "appcred", CloudsFile: cloudsFile}, LoadBalancer: onlineID}, wantClass: ClassNone},
		{name: "degraded", spec: appcred("sad-lb"), wantClass: ClassLBDegraded, wantPhase: "status"},
		{name: "degraded allowed", spec: with(appcred("sad-lb"), func(s *OctaviaSpec) { s.HealthyOperatingStatuses = []string{"ONLINE", "DEGRADED"} }), wantClass: ClassNone},
		{name: "provisioning error", spec: appcred(errorID), wantClass: ClassLBError, wantReason: "load balancer broken-lb: provisioning_status ERROR"},
		{name: "unknown name", spec: appcred("ghost"), wantClass: ClassLBError, wantReason: `load balancer "ghost" not found`},
		{name: "unknown id", spec: appcred("00000000-0000-0000-0000-000000000000"), wantClass: ClassLBError},
		{name: "ambiguous name", spec: appcred("twin"), wantClass: ClassConfig},
		{name: "wrong secret", spec: with(appcred(onlineID), func(s *OctaviaSpec) { s.ApplicationCredentialSecretFile = badSecret }), wantClass: ClassAuth, wantReason: "keystone: authentication failed"},
		{name: "wrong password", spec: OctaviaSpec{Credentials: openstackauth.Credentials{Cloud: "wrongpw", CloudsFile: cloudsFile}, LoadBalancer: onlineID}, wantClass: ClassAuth},
		{name: "keystone 503", spec: appcred(onlineID), keystone: http.StatusServiceUnavailable, wantClass: ClassAPIUnreachable, wantPhase: "auth"},
		{name: "octavia 503", spec: appcred(onlineID), octavia: http.StatusServiceUnavailable, wantClass: ClassAPIUnreachable, wantPhase: "api", wantReason: "octavia: status 503"},
		{name: "octavia 403", spec: appcred(onlineID), octavia: http.StatusForbidden, wantClass: ClassAuth},
		{name: "no endpoint in region", spec: OctaviaSpec{Credentials: openstackauth.Credentials{Cloud: "otherregion", CloudsFile: cloudsFile}, LoadBalancer: onlineID}, wantClass: ClassConfig},
		{name: "keystone refused", spec: with(appcred(onlineID), func(s *OctaviaSpec) { s.AuthURL = fmt.Sprintf("http://127.0.0.1:%d/v3", deadPort) }), wantClass: ClassAPIUnreachable, wantReason: "keystone: connection refused"},
		{name: "vip reachable", spec: with(appcred(onlineID), func(s *OctaviaSpec) { s.CheckVIP, s.VIPAddress, s.VIPPort = true, "127.0.0.1", vipPort }), wantClass: ClassNone},
		{name: "vip refused", spec: with(appcred(onlineID), func(s *OctaviaSpec) { s.CheckVIP, s.VIPAddress, s.VIPPort = true, "127.0.0.1", deadPort }), wantClass: ClassRefused, wantPhase: "vip"},
		{name: "vip port missing", spec: with(appcred(onlineID), func(s *OctaviaSpec) { s.CheckVIP = true }), wantClass: ClassConfig},
		{name: "no credentials", spec: OctaviaSpec{LoadBalancer: onlineID}, wantClass: ClassConfig},
		{name: "secret file missing", spec: with(appcred(onlineID), func(s *OctaviaSpec) { s.ApplicationCredentialSecretFile = filepath.Join(dir, "nope") }), wantClass: ClassConfig},
		{name: "unknown cloud", spec: OctaviaSpec{Credentials: openstackauth.Credentials{Cloud: "nope", CloudsFile: cloudsFile}, LoadBalancer: onlineID}, wantClass: ClassConfig},
		{name: "clouds file missing", spec: OctaviaSpec{Credentials: openstackauth.Credentials{Cloud: "pw", CloudsFile: filepath.Join(dir, "nope.yaml")}, LoadBalancer: onlineID}, wantClass: ClassConfig},
		{name: "no load balancer", spec: with(appcred(""), func(*OctaviaSpec) {}), wantClass: ClassConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.mu.Lock()
			f.keystoneCode, f.octaviaCode = tt.keystone, tt.octavia
			f.mu.Unlock()
			spec := tt.spec
			res := ProbeOctavia(t.Context(), Spec{Name: "lb", Type: "octavia", Timeout: 10 * time.Second, Octavia: &spec}, nil)
			if res.Class != tt.wantClass || res.OK != (tt.wantClass == ClassNone) {
				t.Fatalf("got ok=%v class=%q phase=%q reason=%q, want class %q", res.OK, res.Class, res.Phase, res.Reason, tt.wantClass)
			}
			if tt.wantPhase != "" && res.Phase != tt.wantPhase {
				t.Errorf("got phase %q, want %q", res.Phase, tt.wantPhase)
			}
			if tt.wantReason != "" && res.Reason != tt.wantReason {
				t.Errorf("got reason %q, want %q", res.Reason, tt.wantReason)
			}
			for _, secret := range []string{"ac-secret-value", "pw-value"} {
				if strings.Contains(res.Reason, secret) || strings.Contains(fmt.Sprint(res.Detail), secret) {
					t.Fatalf("result leaks a secret: %q %v", res.Reason, res.Detail)
				}
			}
			if res.OK {
				if _, ok := res.Phases["auth"]; !ok {
					t.Errorf("got phases %v, want auth timed", res.Phases)
				}
				if res.Detail["provisioning_status"] == "" {
					t.Errorf("got detail %v, want provisioning_status", res.Detail)
				}
			}
		})
	}
}

// TestProbeOctaviaRealStack runs the prober against real Keystone and
// Octavia (test/openstacktest). Error and degraded states are written into
// Octavia's database, as the noop drivers never produce them.
func TestProbeOctaviaRealStack(t *testing.T) {
	s := openstacktest.Shared(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	id, err := s.CreateLB(ctx, "probe-lb")
	if err != nil {
		t.Fatalf("create lb: %v", err)
	}
	dir := t.TempDir()
	idFile, secretFile, badSecret := filepath.Join(dir, "id"), filepath.Join(dir, "secret"), filepath.Join(dir, "bad")
	for p, v := range map[string]string{idFile: s.MemberAppCredID, secretFile: s.MemberAppCredSecret, badSecret: "wrong"} {
		if err := os.WriteFile(p, []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	appcred := OctaviaSpec{Credentials: openstackauth.Credentials{AuthURL: s.AuthURL, ApplicationCredentialIDFile: idFile, ApplicationCredentialSecretFile: secretFile, Region: s.Region}, LoadBalancer: id}
	byCloud := OctaviaSpec{Credentials: openstackauth.Credentials{Cloud: "member", CloudsFile: s.CloudsFile}, LoadBalancer: "probe-lb"}
	probe := func(o OctaviaSpec) Result {
		return ProbeOctavia(t.Context(), Spec{Name: "lb", Type: "octavia", Timeout: 30 * time.Second, Octavia: &o}, nil)
	}
	with := func(o OctaviaSpec, mod func(*OctaviaSpec)) OctaviaSpec { mod(&o); return o }

	tests := []struct {
		name         string
		provisioning string
		operating    string
		spec         OctaviaSpec
		wantClass    Class
	}{
		{"active online by id with app credential", "ACTIVE", "ONLINE", appcred, ClassNone},
		{"active online by name with clouds.yaml", "ACTIVE", "ONLINE", byCloud, ClassNone},
		{"app credential in clouds.yaml", "ACTIVE", "ONLINE", with(byCloud, func(o *OctaviaSpec) { o.Cloud = "member-appcred" }), ClassNone},
		{"provisioning error", "ERROR", "ONLINE", appcred, ClassLBError},
		{"operating degraded", "ACTIVE", "DEGRADED", appcred, ClassLBDegraded},
		{"operating degraded allowed", "ACTIVE", "DEGRADED", with(appcred, func(o *OctaviaSpec) { o.HealthyOperatingStatuses = []string{"ONLINE", "DEGRADED"} }), ClassNone},
		{"operating error", "ACTIVE", "ERROR", with(appcred, func(o *OctaviaSpec) { o.HealthyOperatingStatuses = []string{"ONLINE", "DEGRADED"} }), ClassLBDegraded},
		{"pending update while traffic flows", "PENDING_UPDATE", "ONLINE", appcred, ClassNone},
		{"pending update, require_active", "PENDING_UPDATE", "ONLINE", with(appcred, func(o *OctaviaSpec) { o.RequireActive = true }), ClassLBDegraded},
		{"active online, require_active", "ACTIVE", "ONLINE", with(appcred, func(o *OctaviaSpec) { o.RequireActive = true }), ClassNone},
		{"wrong secret", "ACTIVE", "ONLINE", with(appcred, func(o *OctaviaSpec) { o.ApplicationCredentialSecretFile = badSecret }), ClassAuth},
		{"unknown load balancer", "ACTIVE", "ONLINE", with(appcred, func(o *OctaviaSpec) { o.LoadBalancer = "no-such-lb" }), ClassLBError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.SetLBStatus(t.Context(), id, tt.provisioning, tt.operating); err != nil {
				t.Fatal(err)
			}
			res := probe(tt.spec)
			if res.Class != tt.wantClass || res.OK != (tt.wantClass == ClassNone) {
				t.Fatalf("got ok=%v class=%q phase=%q reason=%q detail=%v, want class %q", res.OK, res.Class, res.Phase, res.Reason, res.Detail, tt.wantClass)
			}
			if tt.name != "unknown load balancer" && tt.wantClass != ClassAuth {
				if got := res.Detail["provisioning_status"]; got != tt.provisioning {
					t.Errorf("got provisioning_status %q, want %q", got, tt.provisioning)
				}
				if got := res.Detail["operating_status"]; got != tt.operating {
					t.Errorf("got operating_status %q, want %q", got, tt.operating)
				}
			}
			if tt.wantClass == ClassLBError && tt.provisioning == "ERROR" && !strings.Contains(res.Reason, "provisioning_status ERROR") {
				t.Errorf("got reason %q, want it to say provisioning_status ERROR", res.Reason)
			}
		})
	}

	t.Run("status tree with listener pool and members", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		defer cancel()
		pool, err := s.AddListenerPool(ctx, id, "web", 80, "192.0.2.11", "192.0.2.12")
		if err != nil {
			t.Fatalf("add listener and pool: %v", err)
		}
		for _, st := range []struct{ table, id, status string }{
			{"member", pool.MemberIDs[0], "ONLINE"}, {"member", pool.MemberIDs[1], "ERROR"},
			{"pool", pool.PoolID, "DEGRADED"}, {"listener", pool.ListenerID, "DEGRADED"},
		} {
			if err := s.SetStatus(ctx, st.table, st.id, st.status); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.SetLBStatus(ctx, id, "ACTIVE", "DEGRADED"); err != nil {
			t.Fatal(err)
		}
		res := probe(appcred)
		if res.Class != ClassLBDegraded {
			t.Fatalf("got class %q reason %q, want %q", res.Class, res.Reason, ClassLBDegraded)
		}
		want := map[string]string{"listeners": "1", "pools": "1", "members": "ERROR=1,ONLINE=1",
			"unhealthy_listeners": "web(DEGRADED)", "unhealthy_pools": "web(DEGRADED)", "unhealthy_members": "web-2(ERROR)"}
		for k, v := range want {
			if res.Detail[k] != v {
				t.Errorf("got Detail[%q] %q, want %q", k, res.Detail[k], v)
			}
		}
	})

	t.Run("keystone stopped", func(t *testing.T) {
		if err := s.SetLBStatus(t.Context(), id, "ACTIVE", "ONLINE"); err != nil {
			t.Fatal(err)
		}
		if err := s.StopKeystone(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := s.StartKeystone(ctx); err != nil {
				t.Errorf("restart keystone: %v", err)
			}
		})
		for _, o := range []OctaviaSpec{appcred, byCloud} {
			res := probe(o)
			if res.Class != ClassAPIUnreachable || res.Phase != "auth" {
				t.Fatalf("got class %q phase %q reason %q, want %q in phase auth", res.Class, res.Phase, res.Reason, ClassAPIUnreachable)
			}
			if res.Reason != "keystone: connection refused" {
				t.Errorf("got reason %q, want %q", res.Reason, "keystone: connection refused")
			}
		}
	})
}

func TestOctaviaSpecValidate(t *testing.T) {
	ac := OctaviaSpec{Credentials: openstackauth.Credentials{AuthURL: "https://keystone:5000/v3", ApplicationCredentialIDFile: "/i", ApplicationCredentialSecretFile: "/s"}, LoadBalancer: "lb"}
	with := func(mod func(*OctaviaSpec)) OctaviaSpec { o := ac; mod(&o); return o }
	tests := []struct {
		name    string
		spec    OctaviaSpec
		wantErr string // substring; empty means valid
	}{
		{"app credential", ac, ""},
		{"cloud", OctaviaSpec{Credentials: openstackauth.Credentials{Cloud: "c", CloudsFile: "/c.yaml"}, LoadBalancer: "lb"}, ""},
		{"vip", with(func(o *OctaviaSpec) { o.CheckVIP, o.VIPPort, o.VIPAddress = true, 443, "127.0.0.1" }), ""},
		{"no lb", with(func(o *OctaviaSpec) { o.LoadBalancer = "" }), "loadbalancer: required"},
		{"no auth", OctaviaSpec{LoadBalancer: "lb"}, "auth_url: required"},
		{"both auths", with(func(o *OctaviaSpec) { o.Cloud = "c" }), "auth_url: set either cloud or application credentials, not both"},
		{"bad auth url", with(func(o *OctaviaSpec) { o.AuthURL = "keystone:5000" }), "auth_url"},
		{"missing secret file", with(func(o *OctaviaSpec) { o.ApplicationCredentialSecretFile = "" }), "application_credential_secret_file: required"},
		{"clouds file alone", with(func(o *OctaviaSpec) { o.CloudsFile = "/c.yaml" }), "clouds_file: needs cloud"},
		{"unknown status", with(func(o *OctaviaSpec) { o.HealthyOperatingStatuses = []string{"online"} }), "healthy_operating_statuses"},
		{"vip without port", with(func(o *OctaviaSpec) { o.CheckVIP = true }), "vip_port"},
		{"port without check", with(func(o *OctaviaSpec) { o.VIPPort = 80 }), "vip_port: needs check_vip"},
		{"bad vip address", with(func(o *OctaviaSpec) { o.CheckVIP, o.VIPPort, o.VIPAddress = true, 80, "lb.example" }), "not an IP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.spec.Validate()
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("got %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
}
