package demo

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// A site's endpoints, each on its own port. The LMS and the wiki are the
// two platforms' Caddies (each a failover group of its own); the
// Kubernetes API and the OpenStack APIs are the region's, shared by both.
const (
	EndpointLMS       = "lms"
	EndpointWiki      = "wiki"
	EndpointKube      = "kube"
	EndpointOpenStack = "openstack"
)

// Endpoints lists a site's endpoints in a fixed order.
var Endpoints = []string{EndpointLMS, EndpointWiki, EndpointKube, EndpointOpenStack}

// ErrNoEndpoint is returned for an endpoint a site does not have.
var ErrNoEndpoint = errors.New("no such endpoint")

// Site is one simulated site.
type Site struct {
	Name string

	tlsCfg *tls.Config
	token  string // bearer token its kube-apiserver accepts
	appID  string // application credential its Keystone accepts
	appSec string

	mu      sync.Mutex
	servers map[string]*listener // by endpoint name (Endpoints)
}

type listener struct {
	addr string
	srv  *http.Server
	h    http.Handler
	up   bool
}

// newSite starts a site's three endpoints on loopback with free ports.
func newSite(name string, cert tls.Certificate, token, appID, appSecret string) (*Site, error) {
	s := &Site{Name: name, tlsCfg: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		token: token, appID: appID, appSec: appSecret, servers: map[string]*listener{}}
	handlers := map[string]http.Handler{EndpointLMS: http.HandlerFunc(s.heartbeat), EndpointWiki: http.HandlerFunc(s.heartbeat),
		EndpointKube: http.HandlerFunc(s.readyz), EndpointOpenStack: http.HandlerFunc(s.openstack)}
	for _, name := range Endpoints {
		l := &listener{addr: "127.0.0.1:0", h: handlers[name], up: true}
		if err := s.listen(l); err != nil {
			s.Close()
			return nil, err
		}
		s.servers[name] = l
	}
	return s, nil
}

func (s *Site) listen(l *listener) error {
	ln, err := net.Listen("tcp", l.addr)
	if err != nil {
		return fmt.Errorf("site %s listen: %w", s.Name, err)
	}
	l.addr = ln.Addr().String()
	// Probes that hang up mid-handshake are routine here; do not log them.
	l.srv = &http.Server{Handler: l.h, ReadHeaderTimeout: 5 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = l.srv.Serve(tls.NewListener(ln, s.tlsCfg)) }()
	return nil
}

// Addr returns the address of one endpoint (one of Endpoints).
func (s *Site) Addr(part string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.servers[part].addr
}

// Up reports whether every endpoint of the site is serving.
func (s *Site) Up() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.servers {
		if !l.up {
			return false
		}
	}
	return true
}

// SetUp brings the whole site down (every endpoint closed: connection
// refused, as in a region meltdown) or back up on the same ports.
func (s *Site) SetUp(up bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, name := range Endpoints {
		errs = append(errs, s.setUp(s.servers[name], up))
	}
	return errors.Join(errs...)
}

// SetEndpointUp brings one endpoint down or back up on the same port, the
// others untouched: one platform's Caddy dying alone, or the region's
// Kubernetes API with every platform still serving.
func (s *Site) SetEndpointUp(endpoint string, up bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.servers[endpoint]
	if !ok {
		return fmt.Errorf("site %s endpoint %q: %w", s.Name, endpoint, ErrNoEndpoint)
	}
	return s.setUp(l, up)
}

// setUp opens or closes l; s.mu is held.
func (s *Site) setUp(l *listener, up bool) error {
	if l.up == up {
		return nil
	}
	if up {
		if err := s.listen(l); err != nil {
			return err
		}
		l.up = true
		return nil
	}
	l.up = false
	return l.srv.Close()
}

// Close stops the site.
func (s *Site) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.servers {
		if l.srv != nil {
			_ = l.srv.Close()
		}
	}
}

func (s *Site) heartbeat(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/heartbeat" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"site": %q, "status": "ok"}`+"\n", s.Name)
}

// readyz answers like a kube-apiserver's /readyz?verbose.
func (s *Site) readyz(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+s.token {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintln(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`)
		return
	}
	if r.URL.Path != "/readyz" && r.URL.Path != "/livez" {
		http.NotFound(w, r)
		return
	}
	fmt.Fprint(w, "[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]informer-sync ok\n"+strings.TrimPrefix(r.URL.Path, "/")+" check passed\n")
}

// openstack is a tiny Keystone v3 + Octavia v2 simulator: a token for the
// site's application credential, a catalog naming the load-balancer
// endpoint, and one ACTIVE/ONLINE load balancer with its status tree.
func (s *Site) openstack(w http.ResponseWriter, r *http.Request) {
	base := "https://" + r.Host
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/v3/auth/tokens" && r.Method == http.MethodPost:
		var req struct {
			Auth struct {
				Identity struct {
					AppCred struct {
						ID     string `json:"id"`
						Secret string `json:"secret"`
					} `json:"application_credential"`
				} `json:"identity"`
			} `json:"auth"`
		}
		_ = json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req)
		if req.Auth.Identity.AppCred.ID != s.appID || req.Auth.Identity.AppCred.Secret != s.appSec {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error": {"code": 401, "message": "The request you have made requires authentication.", "title": "Unauthorized"}}`)
			return
		}
		now := time.Now().UTC()
		w.Header().Set("X-Subject-Token", "demo-token")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"token": {"methods": ["application_credential"], "expires_at": %q, "issued_at": %q,
"user": {"id": "u1", "name": "drwatch", "domain": {"id": "default", "name": "Default"}},
"project": {"id": "p1", "name": "tutor", "domain": {"id": "default", "name": "Default"}},
"catalog": [{"type": "load-balancer", "name": "octavia", "id": "s1", "endpoints": [
 {"id": "e1", "interface": "public", "region": "RegionOne", "region_id": "RegionOne", "url": "%s/lb"}]}]}}`,
			now.Add(time.Hour).Format(time.RFC3339), now.Format(time.RFC3339), base)
	case r.Header.Get("X-Auth-Token") != "demo-token" && strings.HasPrefix(r.URL.Path, "/lb/v2"):
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"faultcode": "Client", "faultstring": "Unauthorized"}`)
	case r.URL.Path == "/lb" || r.URL.Path == "/lb/":
		fmt.Fprintf(w, `{"versions": [{"id": "v2", "status": "CURRENT", "updated": "2018-12-11T00:00:00Z", "links": [{"href": "%s/lb/v2", "rel": "self"}]}]}`, base)
	case strings.HasSuffix(r.URL.Path, "/lbaas/loadbalancers/lb-ingress/status"):
		fmt.Fprint(w, `{"statuses": {"loadbalancer": {"id": "lb-ingress", "name": "ingress", "provisioning_status": "ACTIVE", "operating_status": "ONLINE",
"listeners": [{"id": "l1", "name": "https", "provisioning_status": "ACTIVE", "operating_status": "ONLINE",
 "pools": [{"id": "p1", "name": "caddy", "provisioning_status": "ACTIVE", "operating_status": "ONLINE",
  "members": [{"id": "m1", "name": "node-1", "address": "10.0.0.11", "protocol_port": 443, "provisioning_status": "ACTIVE", "operating_status": "ONLINE"}]}]}]}}}`)
	case strings.HasSuffix(r.URL.Path, "/lbaas/loadbalancers/lb-ingress"):
		fmt.Fprintf(w, `{"loadbalancer": %s}`, lbJSON)
	case strings.HasSuffix(r.URL.Path, "/lbaas/loadbalancers"):
		name := r.URL.Query().Get("name")
		if name != "" && name != "ingress" {
			fmt.Fprint(w, `{"loadbalancers": [], "loadbalancers_links": []}`)
			return
		}
		fmt.Fprintf(w, `{"loadbalancers": [%s], "loadbalancers_links": []}`, lbJSON)
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"faultcode": "Client", "faultstring": "Not Found"}`)
	}
}

const lbJSON = `{"id": "lb-ingress", "name": "ingress", "description": "", "provisioning_status": "ACTIVE", "operating_status": "ONLINE",
"admin_state_up": true, "project_id": "p1", "vip_address": "127.0.0.1", "vip_port_id": "vp1", "vip_subnet_id": "sn1", "vip_network_id": "n1",
"listeners": [{"id": "l1"}], "pools": [{"id": "p1"}], "provider": "amphora", "flavor_id": "", "availability_zone": "", "tags": []}`
