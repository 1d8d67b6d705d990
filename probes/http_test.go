package probes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drwatch/drwatch/internal/field"
	"github.com/drwatch/drwatch/test/caddytest"
)

var hpLog = slog.New(slog.DiscardHandler)

func hpCheck(t *testing.T, got Result, wantClass Class, wantPhase, wantReason string) {
	t.Helper()
	if wantClass == ClassNone {
		if !got.OK || got.Class != ClassNone || got.Reason != "" {
			t.Fatalf("got ok=%v class=%q phase=%q reason=%q, want ok", got.OK, got.Class, got.Phase, got.Reason)
		}
		return
	}
	if got.OK || got.Class != wantClass || got.Phase != wantPhase || !strings.Contains(got.Reason, wantReason) {
		t.Fatalf("got ok=%v class=%q phase=%q reason=%q, want class %q phase %q reason containing %q",
			got.OK, got.Class, got.Phase, got.Reason, wantClass, wantPhase, wantReason)
	}
}

// TestHTTPAgainstCaddy runs the http prober against a real Caddy with its
// own local CA, reached through connect_to while the URL names the site.
func TestHTTPAgainstCaddy(t *testing.T) {
	c := caddytest.Start(t, caddytest.Options{Name: "primary", Hosts: []string{"lms.example.test"}})
	site := func(path string) string { return c.URL("lms.example.test", path) }
	tests := []struct {
		name       string
		spec       HTTPSpec
		wantClass  Class
		wantPhase  string
		wantReason string
	}{
		{"healthy via connect_to", HTTPSpec{URL: site("/heartbeat"), ConnectTo: c.Addr, CAFile: c.CAFile}, ClassNone, "", ""},
		{"connect_to without port keeps the url port", HTTPSpec{URL: site("/heartbeat"), ConnectTo: "127.0.0.1", CAFile: c.CAFile}, ClassNone, "", ""},
		{"healthy by ip", HTTPSpec{URL: c.URL("", "/heartbeat"), CAFile: c.CAFile}, ClassNone, "", ""},
		{"body matches", HTTPSpec{URL: site("/heartbeat"), ConnectTo: c.Addr, CAFile: c.CAFile, BodyMatch: `^ok primary$`}, ClassNone, "", ""},
		{"wrong status", HTTPSpec{URL: site("/broken"), ConnectTo: c.Addr, CAFile: c.CAFile}, ClassStatus, "status", "status 503, want [200]"},
		{"expected 503", HTTPSpec{URL: site("/broken"), ConnectTo: c.Addr, CAFile: c.CAFile, ExpectStatus: []int{503}}, ClassNone, "", ""},
		{"redirect not followed", HTTPSpec{URL: site("/redirect"), ConnectTo: c.Addr, CAFile: c.CAFile}, ClassStatus, "status", "status 302, want [200]"},
		{"redirect followed on same host", HTTPSpec{URL: site("/redirect"), ConnectTo: c.Addr, CAFile: c.CAFile, FollowRedirects: true, BodyMatch: "^ok"}, ClassNone, "", ""},
		{"redirect to another host never followed", HTTPSpec{URL: site("/redirect-away"), ConnectTo: c.Addr, CAFile: c.CAFile, FollowRedirects: true},
			ClassStatus, "status", "status 302, want [200] (redirect to another host not followed)"},
		{"body mismatch", HTTPSpec{URL: site("/heartbeat"), ConnectTo: c.Addr, CAFile: c.CAFile, BodyMatch: `^ok backup`}, ClassBody, "body", `body does not match "^ok backup" (starts "ok primary")`},
		{"untrusted ca", HTTPSpec{URL: site("/heartbeat"), ConnectTo: c.Addr}, ClassTLS, "tls", "tls handshake: x509: certificate signed by unknown authority"},
		{"name caddy has no certificate for", HTTPSpec{URL: c.URL("other.example.test", "/heartbeat"), ConnectTo: c.Addr, CAFile: c.CAFile}, ClassTLS, "tls", "tls handshake: "},
		{"leaf lives 12h, want 72h", HTTPSpec{URL: site("/heartbeat"), ConnectTo: c.Addr, CAFile: c.CAFile, CertMinValidity: 72 * time.Hour}, ClassCertExpiry, "tls", "certificate expires in "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ProbeHTTP(context.Background(), hpSpec(tt.spec, 10*time.Second), hpLog)
			hpCheck(t, got, tt.wantClass, tt.wantPhase, tt.wantReason)
			if got.Duration <= 0 {
				t.Fatalf("got duration %s, want > 0", got.Duration)
			}
			if tt.wantClass == ClassNone || tt.wantPhase != "tls" {
				for _, ph := range []string{"connect", "tls"} {
					if _, ok := got.Phases[ph]; !ok {
						t.Fatalf("got phases %v, want %q", got.Phases, ph)
					}
				}
			}
			if tt.spec.ConnectTo != "" {
				// The URL's name was never looked up: connect_to is an address.
				if _, ok := got.Phases["dns"]; ok {
					t.Fatalf("got a dns phase with connect_to %s, want none", tt.spec.ConnectTo)
				}
			}
			if tt.wantClass != ClassTLS || strings.Contains(tt.wantReason, "x509") {
				if left := time.Until(got.CertExpiry); left < time.Hour || left > 13*time.Hour {
					t.Fatalf("got cert expiry in %s, want Caddy's ~12h leaf", left)
				}
			}
		})
	}
}

// TestHTTPCaddyKilled proves a killed Caddy shows as refused on connect,
// and a restarted one as healthy again.
func TestHTTPCaddyKilled(t *testing.T) {
	c := caddytest.Start(t, caddytest.Options{Name: "primary"})
	spec := hpSpec(HTTPSpec{URL: c.URL("lms.example.test", "/heartbeat"), ConnectTo: c.Addr, CAFile: c.CAFile}, 5*time.Second)
	hpCheck(t, ProbeHTTP(context.Background(), spec, hpLog), ClassNone, "", "")
	if err := c.Stop(); err != nil {
		t.Fatalf("stop caddy: %v", err)
	}
	hpCheck(t, ProbeHTTP(context.Background(), spec, hpLog), ClassRefused, "connect", "connect "+c.Addr+": connection refused")
	if err := c.Start(); err != nil {
		t.Fatalf("restart caddy: %v", err)
	}
	hpCheck(t, ProbeHTTP(context.Background(), spec, hpLog), ClassNone, "", "")
}

func TestHTTPNetworkFailures(t *testing.T) {
	hole := hpBlackhole(t)
	closed := hpClosedPort(t)
	tests := []struct {
		name       string
		spec       HTTPSpec
		wantClass  Class
		wantPhase  string
		wantReason string
	}{
		{"blackholed https", HTTPSpec{URL: "https://lms.example.test/heartbeat", ConnectTo: hole}, ClassTimeout, "tls", "tls handshake: timeout"},
		{"blackholed http", HTTPSpec{URL: "http://" + hole + "/heartbeat"}, ClassTimeout, "first_byte", "waiting for response: timeout"},
		{"refused", HTTPSpec{URL: "https://lms.example.test/heartbeat", ConnectTo: closed}, ClassRefused, "connect", "connect " + closed + ": connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ProbeHTTP(context.Background(), hpSpec(tt.spec, 300*time.Millisecond), hpLog)
			hpCheck(t, got, tt.wantClass, tt.wantPhase, tt.wantReason)
		})
	}
	t.Run("ctx deadline wins over spec timeout", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		got := ProbeHTTP(ctx, hpSpec(HTTPSpec{URL: "https://lms.example.test/", ConnectTo: hole}, time.Hour), hpLog)
		hpCheck(t, got, ClassTimeout, "tls", "timeout")
	})
	// However long it took, a timeout reads the same, so that a watcher's
	// lean reports need not resend a probe that keeps timing out.
	t.Run("timeouts of different lengths give the same result", func(t *testing.T) {
		spec := HTTPSpec{URL: "https://lms.example.test/", ConnectTo: hole}
		a := ProbeHTTP(context.Background(), hpSpec(spec, 200*time.Millisecond), hpLog)
		b := ProbeHTTP(context.Background(), hpSpec(spec, 350*time.Millisecond), hpLog)
		if a.Class != b.Class || a.Phase != b.Phase || a.Reason != b.Reason || a.Reason != "tls handshake: timeout" {
			t.Fatalf("got %q/%q/%q and %q/%q/%q, want both tls handshake: timeout", a.Class, a.Phase, a.Reason, b.Class, b.Phase, b.Reason)
		}
	})
}

// TestHTTPClosedByPeer: a listener that accepts and closes at once, as an
// LB with no backends may, is refused, not a TLS problem.
func TestHTTPClosedByPeer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	})
	t.Cleanup(func() { l.Close(); wg.Wait() })
	got := ProbeHTTP(context.Background(), hpSpec(HTTPSpec{URL: "https://lms.example.test/", ConnectTo: l.Addr().String()}, 5*time.Second), hpLog)
	if got.OK || got.Class != ClassRefused || got.Phase != "tls" {
		t.Fatalf("got class=%q phase=%q reason=%q, want refused in tls", got.Class, got.Phase, got.Reason)
	}
}

// TestHTTPCertExpiry uses Go TLS servers with short-lived certificates.
func TestHTTPCertExpiry(t *testing.T) {
	pki := hpNewPKI(t)
	now := time.Now()
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	tests := []struct {
		name       string
		notBefore  time.Time
		notAfter   time.Time
		min        time.Duration
		wantClass  Class
		wantReason string
	}{
		{"valid 30 days, want 72h", now.Add(-time.Hour), now.Add(30 * 24 * time.Hour), 72 * time.Hour, ClassNone, ""},
		{"expires in 1h, want 72h", now.Add(-time.Hour), now.Add(time.Hour), 72 * time.Hour, ClassCertExpiry, "certificate expires in "},
		{"expires in 1h, no minimum", now.Add(-time.Hour), now.Add(time.Hour), 0, ClassNone, ""},
		{"expired", now.Add(-48 * time.Hour), now.Add(-time.Hour), 72 * time.Hour, ClassCertExpiry, "tls handshake: certificate expired at "},
		{"expired, no minimum", now.Add(-48 * time.Hour), now.Add(-time.Hour), 0, ClassCertExpiry, "expired"},
		{"not yet valid", now.Add(time.Hour), now.Add(48 * time.Hour), 0, ClassTLS, "not yet valid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := hpStartTLS(t, pki.leaf(t, tt.notBefore, tt.notAfter, "lms.example.test"), ok)
			spec := hpSpec(HTTPSpec{URL: "https://lms.example.test/", ConnectTo: srv.Listener.Addr().String(),
				CAFile: pki.caFile, CertMinValidity: tt.min}, 5*time.Second)
			got := ProbeHTTP(context.Background(), spec, hpLog)
			hpCheck(t, got, tt.wantClass, map[bool]string{true: "", false: "tls"}[tt.wantClass == ClassNone], tt.wantReason)
			if !got.CertExpiry.Equal(tt.notAfter.Truncate(time.Second)) {
				t.Fatalf("got cert expiry %s, want %s", got.CertExpiry, tt.notAfter.Truncate(time.Second))
			}
		})
	}
	t.Run("tcp expires in 1h, want 72h", func(t *testing.T) {
		srv := hpStartTLS(t, pki.leaf(t, now.Add(-time.Hour), now.Add(time.Hour), "lms.example.test"), ok)
		got := ProbeTCP(context.Background(), Spec{Name: "t", Type: "tcp", TCP: &TCPSpec{Address: srv.Listener.Addr().String(),
			TLS: true, ServerName: "lms.example.test", CAFile: pki.caFile, CertMinValidity: 72 * time.Hour}}, hpLog)
		hpCheck(t, got, ClassCertExpiry, "tls", "certificate expires in ")
	})
}

// TestHTTPNewConnectionPerProbe: a load balancer that stops accepting new
// connections must show up, so no probe may reuse a connection.
func TestHTTPNewConnectionPerProbe(t *testing.T) {
	pki := hpNewPKI(t)
	var gotHeader sync.Map
	srv := hpStartTLS(t, pki.leaf(t, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour), "lms.example.test"),
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			gotHeader.Store(r.Header.Get("X-Probe"), r.Host)
			w.WriteHeader(http.StatusTeapot)
		}))
	spec := hpSpec(HTTPSpec{URL: "https://lms.example.test/x", ConnectTo: srv.Listener.Addr().String(), CAFile: pki.caFile,
		Headers: map[string]string{"X-Probe": "not-a-secret-but-never-echoed"}}, 5*time.Second)
	for i := range 3 {
		got := ProbeHTTP(context.Background(), spec, hpLog)
		hpCheck(t, got, ClassStatus, "status", "status 418, want [200]")
		if strings.Contains(fmt.Sprint(got), "never-echoed") {
			t.Fatalf("probe %d: got header value in result %+v, want it absent", i, got)
		}
	}
	if n := srv.accepted.Load(); n != 3 {
		t.Fatalf("got %d connections for 3 probes, want 3", n)
	}
	host, ok := gotHeader.Load("not-a-secret-but-never-echoed")
	if !ok || host != "lms.example.test" {
		t.Fatalf("got header/host %v %v at the server, want the header sent and Host lms.example.test", ok, host)
	}
}

func TestHTTPSpecValidate(t *testing.T) {
	tests := []struct {
		name string
		spec HTTPSpec
		want string // substring of the error; "" for valid
	}{
		{"valid", HTTPSpec{URL: "https://lms.example.org/heartbeat", ConnectTo: "203.0.113.10:443", ExpectStatus: []int{200, 204}, BodyMatch: "ok", CertMinValidity: time.Hour}, ""},
		{"bare connect_to", HTTPSpec{URL: "https://lms.example.org/", ConnectTo: "203.0.113.10"}, ""},
		{"bare ipv6 connect_to", HTTPSpec{URL: "https://lms.example.org/", ConnectTo: "2001:db8::1"}, ""},
		{"no url", HTTPSpec{}, "url: required"},
		{"bad scheme", HTTPSpec{URL: "ftp://x/"}, `scheme "ftp"`},
		{"credentials", HTTPSpec{URL: "https://user:pw@x/"}, "must not carry credentials"},
		{"bad regexp", HTTPSpec{URL: "https://x/", BodyMatch: "(["}, "body_match: "},
		{"bad status", HTTPSpec{URL: "https://x/", ExpectStatus: []int{700}}, "expect_status: 700"},
		{"bad connect_to port", HTTPSpec{URL: "https://x/", ConnectTo: "1.2.3.4:99999"}, "connect_to: "},
		{"host header", HTTPSpec{URL: "https://x/", Headers: map[string]string{"host": "y"}}, "Host comes from the url"},
		{"bad header value", HTTPSpec{URL: "https://x/", Headers: map[string]string{"X-A": "a\r\nb: c"}}, "line break"},
		{"cert min on http", HTTPSpec{URL: "http://x/", CertMinValidity: time.Hour}, "needs an https url"},
		{"tls_resume negative", HTTPSpec{URL: "https://x/", TLSResume: -time.Second}, "tls_resume: -1s must not be negative"},
		{"tls_resume over an hour", HTTPSpec{URL: "https://x/", TLSResume: 2 * time.Hour}, "tls_resume: 2h0m0s is more than 1h0m0s"},
		{"tls_resume an hour", HTTPSpec{URL: "https://x/", TLSResume: time.Hour}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.spec.Validate()
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("Validate(%+v): got %v, want %q", tt.spec, err, tt.want)
			}
		})
	}
	got := ProbeHTTP(context.Background(), hpSpec(HTTPSpec{URL: "https://x/", BodyMatch: "(["}, time.Second), hpLog)
	hpCheck(t, got, ClassConfig, "config", "body_match")
	got = ProbeHTTP(context.Background(), Spec{Name: "x", Type: "http"}, hpLog)
	hpCheck(t, got, ClassConfig, "config", "without an http spec")
	got = ProbeHTTP(context.Background(), hpSpec(HTTPSpec{URL: "https://x/", CAFile: "/nonexistent/ca.pem"}, time.Second), hpLog)
	hpCheck(t, got, ClassConfig, "config", "ca_file")
}

// TestConnClassifyDNS covers the dns class without sending any query (tests
// never leave 127.0.0.0/8).
func TestConnClassifyDNS(t *testing.T) {
	err := &url.Error{Op: "Get", URL: "https://lms.example.test/?token=x", Err: &net.OpError{Op: "dial", Net: "tcp",
		Err: &net.DNSError{Err: "no such host", Name: "lms.example.test", IsNotFound: true}}}
	timer := &connPhaseTimer{}
	timer.beginPhase("dns")
	got := connClassify(context.Background(), err, timer)
	hpCheck(t, got, ClassDNS, "dns", "dns lookup lms.example.test: no such host")
	if strings.Contains(got.Reason, "token") {
		t.Fatalf("got reason %q, want no URL in it", got.Reason)
	}
	got = connClassify(context.Background(), errors.New("something odd"), &connPhaseTimer{})
	hpCheck(t, got, ClassError, "connect", "connect: something odd")
}

// TestHTTPRedirectLoop: a redirect loop on the same host stops after 10 and
// is a status failure naming why.
func TestHTTPRedirectLoop(t *testing.T) {
	pki := hpNewPKI(t)
	srv := hpStartTLS(t, pki.leaf(t, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour), "lms.example.test"),
		http.RedirectHandler("/loop", http.StatusFound))
	got := ProbeHTTP(context.Background(), hpSpec(HTTPSpec{URL: "https://lms.example.test/loop", ConnectTo: srv.Listener.Addr().String(),
		CAFile: pki.caFile, FollowRedirects: true}, 10*time.Second), hpLog)
	hpCheck(t, got, ClassStatus, "status", "status 302, want [200] (more than 10 redirects)")
	if n := srv.accepted.Load(); n != 11 {
		t.Fatalf("got %d connections, want 11 (one per request, none reused)", n)
	}
}

// TestHTTPMethod: method HEAD sends HEAD and judges the status alone; the
// default is GET; any other method is refused, naming the field.
func TestHTTPMethod(t *testing.T) {
	pki := hpNewPKI(t)
	var seen atomic.Value
	srv := hpStartTLS(t, pki.leaf(t, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour), "lms.example.test"),
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen.Store(r.Method)
			io.WriteString(w, "ok")
		}))
	for _, tt := range []struct{ method, want string }{{"HEAD", "HEAD"}, {"", "GET"}, {"GET", "GET"}} {
		got := ProbeHTTP(context.Background(), hpSpec(HTTPSpec{URL: "https://lms.example.test/heartbeat", ConnectTo: srv.Listener.Addr().String(),
			CAFile: pki.caFile, Method: tt.method}, 5*time.Second), hpLog)
		hpCheck(t, got, ClassNone, "", "")
		if m, _ := seen.Load().(string); m != tt.want {
			t.Errorf("method %q: server got %s, want %s", tt.method, m, tt.want)
		}
	}
	for _, tt := range []struct {
		spec Spec
		want field.Errors
	}{
		{Spec{Name: "lms", Type: "http", Timeout: time.Second, HTTP: &HTTPSpec{URL: "https://x/", Method: "POST"}},
			field.Errors{{Path: "method", Msg: `"POST" must be GET or HEAD`}}},
		{Spec{Name: "lms", Type: "http", Timeout: time.Second, HTTP: &HTTPSpec{URL: "https://x/", Method: "HEAD", BodyMatch: "ok"}},
			field.Errors{{Path: "body_match", Msg: "needs method GET: a HEAD answer has no body"}}},
	} {
		if got := tt.spec.Validate(); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Validate(method %q): got %v, want %v", tt.spec.HTTP.Method, got, tt.want)
		}
	}
	got := ProbeHTTP(context.Background(), hpSpec(HTTPSpec{URL: "https://x/", Method: "DELETE"}, time.Second), hpLog)
	hpCheck(t, got, ClassConfig, "config", `method: "DELETE" must be GET or HEAD`)
}
