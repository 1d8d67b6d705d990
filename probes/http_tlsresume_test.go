package probes

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/test/caddytest"
)

// trServer is a Go HTTPS server that records, for each handshake, whether
// it resumed a session and the key exchange groups the client offered;
// it accepts X25519 only, as a server without the post-quantum hybrid
// does, and its certificate can be swapped.
type trServer struct {
	*hpTLSServer
	mu      sync.Mutex
	cert    tls.Certificate
	resumed []bool
	offered [][]tls.CurveID
}

func trStart(t *testing.T, cert tls.Certificate) *trServer {
	t.Helper()
	s := &trServer{cert: cert}
	s.hpTLSServer = hpStartTLS(t, cert, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.resumed = append(s.resumed, r.TLS.DidResume)
		s.mu.Unlock()
		io.WriteString(w, "ok")
	}))
	s.TLS.CurvePreferences = []tls.CurveID{tls.X25519}
	s.TLS.Certificates = nil
	s.TLS.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		c := s.cert
		return &c, nil
	}
	s.TLS.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		s.mu.Lock()
		s.offered = append(s.offered, slices.Clone(hello.SupportedCurves))
		s.mu.Unlock()
		return nil, nil
	}
	return s
}

func (s *trServer) setCert(c tls.Certificate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cert = c
}

// handshakes returns, per request served, whether it resumed, and per
// ClientHello the groups offered.
func (s *trServer) handshakes() ([]bool, [][]tls.CurveID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.resumed), slices.Clone(s.offered)
}

// trClock replaces the session store with one on a clock the test moves.
func trClock(t *testing.T) *time.Time {
	t.Helper()
	now := time.Now()
	old := tlsSessions
	tlsSessions = &tlsSessionStore{now: func() time.Time { return now }, m: map[tlsEndpoint]*tlsMemory{}}
	t.Cleanup(func() { tlsSessions = old })
	return &now
}

// trSetup is a trServer with a valid certificate of a fresh CA, the spec
// of a probe of it with tls_resume resume, and the session store's clock.
func trSetup(t *testing.T, resume time.Duration) (*time.Time, *hpPKI, *trServer, Spec) {
	t.Helper()
	now := trClock(t)
	pki := hpNewPKI(t)
	srv := trStart(t, pki.leaf(t, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour), "lms.example.test"))
	spec := hpSpec(HTTPSpec{URL: "https://lms.example.test/", ConnectTo: srv.Listener.Addr().String(), CAFile: pki.caFile,
		TLSResume: resume}, 5*time.Second)
	return now, pki, srv, spec
}

// TestHTTPProbeResumesForTLSResumeThenHandshakesInFull: within tls_resume
// of the last full handshake the probe resumes it and offers only the
// group the server chose; past it, the next probe makes a full handshake
// with the default groups, and resumes from that one.
func TestHTTPProbeResumesForTLSResumeThenHandshakesInFull(t *testing.T) {
	now, _, srv, spec := trSetup(t, 10*time.Second)
	probe := func(after time.Duration) {
		t.Helper()
		*now = now.Add(after)
		hpCheck(t, ProbeHTTP(context.Background(), spec, hpLog), ClassNone, "", "")
	}
	probe(0)
	probe(2 * time.Second)
	probe(7 * time.Second) // 9 s after the full handshake
	probe(time.Second)     // 10 s: a full one again
	probe(2 * time.Second)

	resumed, offered := srv.handshakes()
	if want := []bool{false, true, true, false, true}; !slices.Equal(resumed, want) {
		t.Fatalf("got resumed %v, want %v", resumed, want)
	}
	for i, o := range offered {
		if learned := slices.Equal(o, []tls.CurveID{tls.X25519}); learned != resumed[i] {
			t.Fatalf("handshake %d (resumed %v): offered %v; want only X25519 exactly when resuming", i, resumed[i], o)
		}
		if !resumed[i] && !slices.Contains(o, tls.X25519MLKEM768) {
			t.Fatalf("full handshake %d offered %v, want the default groups with X25519MLKEM768", i, o)
		}
	}
	if n := srv.accepted.Load(); n != 5 {
		t.Fatalf("got %d connections for 5 probes, want a new one each", n)
	}
}

// TestHTTPProbeWithoutTLSResumeHandshakesInFullEveryRun: 0 keeps the
// probe's old behaviour.
func TestHTTPProbeWithoutTLSResumeHandshakesInFullEveryRun(t *testing.T) {
	_, _, srv, spec := trSetup(t, 0)
	for range 3 {
		hpCheck(t, ProbeHTTP(context.Background(), spec, hpLog), ClassNone, "", "")
	}
	resumed, offered := srv.handshakes()
	if want := []bool{false, false, false}; !slices.Equal(resumed, want) {
		t.Fatalf("got resumed %v, want %v", resumed, want)
	}
	for i, o := range offered {
		if !slices.Contains(o, tls.X25519MLKEM768) {
			t.Fatalf("handshake %d offered %v, want the default groups", i, o)
		}
	}
}

// TestHTTPProbeSeesANewCertificateWithinTLSResume: a certificate the
// probe does not trust, served from one moment on, fails the first full
// handshake, at most tls_resume later; and every probe after a failure
// is a full handshake, so the failure stays until the certificate is
// fixed.
func TestHTTPProbeSeesANewCertificateWithinTLSResume(t *testing.T) {
	now, pki, srv, spec := trSetup(t, 10*time.Second)
	other := hpNewPKI(t)
	valid := func(p *hpPKI) tls.Certificate {
		return p.leaf(t, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour), "lms.example.test")
	}
	run := func(after time.Duration) Result {
		*now = now.Add(after)
		return ProbeHTTP(context.Background(), spec, hpLog)
	}
	hpCheck(t, run(0), ClassNone, "", "")
	srv.setCert(valid(other))
	// Resumed: the server shows no certificate. This is the delay
	// tls_resume bounds.
	hpCheck(t, run(5*time.Second), ClassNone, "", "")
	hpCheck(t, run(5*time.Second), ClassTLS, "tls", "certificate signed by unknown authority")
	hpCheck(t, run(time.Second), ClassTLS, "tls", "certificate signed by unknown authority")
	srv.setCert(valid(pki))
	hpCheck(t, run(time.Second), ClassNone, "", "")
	hpCheck(t, run(time.Second), ClassNone, "", "")

	resumed, _ := srv.handshakes()
	// Requests only reach the handler when the handshake succeeded.
	if want := []bool{false, true, false, true}; !slices.Equal(resumed, want) {
		t.Fatalf("got resumed %v for the served requests, want %v", resumed, want)
	}
}

// TestHTTPProbeFailureMakesTheNextHandshakeFull: a probe that fails for a
// reason outside TLS (here a status) still makes the next one a full
// handshake with the default groups.
func TestHTTPProbeFailureMakesTheNextHandshakeFull(t *testing.T) {
	now, _, srv, ok := trSetup(t, 10*time.Second)
	bad := ok
	h := *ok.HTTP
	h.ExpectStatus = []int{204}
	bad.HTTP = &h
	for _, s := range []Spec{ok, bad, ok, ok} {
		*now = now.Add(time.Second)
		ProbeHTTP(context.Background(), s, hpLog)
	}
	resumed, offered := srv.handshakes()
	if want := []bool{false, true, false, true}; !slices.Equal(resumed, want) {
		t.Fatalf("got resumed %v, want %v", resumed, want)
	}
	if !slices.Contains(offered[2], tls.X25519MLKEM768) {
		t.Fatalf("the handshake after a failure offered %v, want the default groups", offered[2])
	}
}

// TestHTTPProbeSessionsAreTheirEndpointsOwn: a site's primary and backup
// share the URL (and so the server name) but not the address; neither
// resumes the other's session, and each resumes its own.
func TestHTTPProbeSessionsAreTheirEndpointsOwn(t *testing.T) {
	trClock(t)
	pki := hpNewPKI(t)
	cert := pki.leaf(t, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour), "lms.example.test")
	a, b := trStart(t, cert), trStart(t, cert)
	spec := func(s *trServer) Spec {
		return hpSpec(HTTPSpec{URL: "https://lms.example.test/", ConnectTo: s.Listener.Addr().String(), CAFile: pki.caFile,
			TLSResume: time.Minute}, 5*time.Second)
	}
	for range 3 {
		for _, s := range []*trServer{a, b} {
			hpCheck(t, ProbeHTTP(context.Background(), spec(s), hpLog), ClassNone, "", "")
		}
	}
	for name, s := range map[string]*trServer{"a": a, "b": b} {
		if resumed, _ := s.handshakes(); !slices.Equal(resumed, []bool{false, true, true}) {
			t.Fatalf("server %s: got resumed %v, want one full handshake then resumptions", name, resumed)
		}
	}
}

// TestHTTPProbeResumesWithRealCaddy: Caddy issues tickets and takes them
// back, and a killed and restarted Caddy (new ticket keys) costs a full
// handshake, not a failure.
func TestHTTPProbeResumesWithRealCaddy(t *testing.T) {
	trClock(t)
	var resumed []bool
	tlsSessions.observe = func(st tls.ConnectionState) { resumed = append(resumed, st.DidResume) }
	c := caddytest.Start(t, caddytest.Options{Name: "primary"})
	spec := hpSpec(HTTPSpec{URL: c.URL("lms.example.test", "/heartbeat"), ConnectTo: c.Addr, CAFile: c.CAFile,
		TLSResume: time.Minute}, 5*time.Second)
	probe := func() {
		t.Helper()
		hpCheck(t, ProbeHTTP(context.Background(), spec, hpLog), ClassNone, "", "")
	}
	probe()
	probe()
	if err := c.Stop(); err != nil {
		t.Fatalf("stop caddy: %v", err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("restart caddy: %v", err)
	}
	probe()
	probe()
	if want := []bool{false, true, false, true}; !slices.Equal(resumed, want) {
		t.Fatalf("got resumed %v, want %v", resumed, want)
	}
}
