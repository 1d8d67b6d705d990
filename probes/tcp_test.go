package probes

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/test/caddytest"
)

func tcpSpec(ts TCPSpec, timeout time.Duration) Spec {
	return Spec{Name: "lms-tcp", Type: "tcp", Timeout: timeout, TCP: &ts}
}

func TestTCPProbe(t *testing.T) {
	pki := hpNewPKI(t)
	now := time.Now()
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	good := hpStartTLS(t, pki.leaf(t, now.Add(-time.Hour), now.Add(30*24*time.Hour), "lms.example.test"), ok)
	expired := hpStartTLS(t, pki.leaf(t, now.Add(-48*time.Hour), now.Add(-time.Hour), "lms.example.test"), ok)
	hole := hpBlackhole(t)
	closed := hpClosedPort(t)
	addr := good.Listener.Addr().String()
	tests := []struct {
		name       string
		spec       TCPSpec
		wantClass  Class
		wantPhase  string
		wantReason string
		wantPhases []string
	}{
		{"plain connect", TCPSpec{Address: addr}, ClassNone, "", "", []string{"connect"}},
		{"plain to blackhole connects", TCPSpec{Address: hole}, ClassNone, "", "", []string{"connect"}},
		{"refused", TCPSpec{Address: closed}, ClassRefused, "connect", "connect " + closed + ": connection refused", nil},
		{"tls ok", TCPSpec{Address: addr, TLS: true, ServerName: "lms.example.test", CAFile: pki.caFile, CertMinValidity: 72 * time.Hour}, ClassNone, "", "", []string{"connect", "tls"}},
		{"tls by ip", TCPSpec{Address: addr, TLS: true, CAFile: pki.caFile}, ClassNone, "", "", []string{"connect", "tls"}},
		{"tls untrusted", TCPSpec{Address: addr, TLS: true, ServerName: "lms.example.test"}, ClassTLS, "tls", "tls handshake: x509: certificate signed by unknown authority", nil},
		{"tls wrong name", TCPSpec{Address: addr, TLS: true, ServerName: "other.example.test", CAFile: pki.caFile}, ClassTLS, "tls", "tls handshake: x509: certificate is valid for lms.example.test", nil},
		{"tls expired", TCPSpec{Address: expired.Listener.Addr().String(), TLS: true, ServerName: "lms.example.test", CAFile: pki.caFile}, ClassCertExpiry, "tls", "certificate expired at", nil},
		{"tls blackholed", TCPSpec{Address: hole, TLS: true, ServerName: "lms.example.test"}, ClassTimeout, "tls", "tls handshake: timeout", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			timeout := 10 * time.Second
			if tt.wantClass == ClassTimeout {
				timeout = 300 * time.Millisecond
			}
			got := ProbeTCP(context.Background(), tcpSpec(tt.spec, timeout), hpLog)
			hpCheck(t, got, tt.wantClass, tt.wantPhase, tt.wantReason)
			for _, ph := range tt.wantPhases {
				if _, ok := got.Phases[ph]; !ok {
					t.Fatalf("got phases %v, want %q", got.Phases, ph)
				}
			}
			if tt.spec.TLS && tt.wantClass != ClassTimeout && got.CertExpiry.IsZero() {
				t.Fatalf("got no cert expiry, want the leaf's NotAfter")
			}
		})
	}
}

func TestTCPAgainstCaddy(t *testing.T) {
	c := caddytest.Start(t, caddytest.Options{Name: "primary"})
	got := ProbeTCP(context.Background(), tcpSpec(TCPSpec{Address: c.Addr, TLS: true, ServerName: "lms.example.test", CAFile: c.CAFile}, 5*time.Second), hpLog)
	hpCheck(t, got, ClassNone, "", "")
	got = ProbeTCP(context.Background(), tcpSpec(TCPSpec{Address: c.Addr, TLS: true, ServerName: "lms.example.test", CAFile: c.CAFile, CertMinValidity: 72 * time.Hour}, 5*time.Second), hpLog)
	hpCheck(t, got, ClassCertExpiry, "tls", "want at least 72h0m0s")
}

func TestTCPSpecValidate(t *testing.T) {
	tests := []struct {
		name string
		spec TCPSpec
		want string
	}{
		{"valid", TCPSpec{Address: "203.0.113.10:443", TLS: true, ServerName: "lms.example.org", CertMinValidity: time.Hour}, ""},
		{"no address", TCPSpec{}, "address: required"},
		{"no port", TCPSpec{Address: "203.0.113.10"}, "not host:port"},
		{"server name without tls", TCPSpec{Address: "a:1", ServerName: "x"}, "server_name: set only with tls: true"},
		{"ca without tls", TCPSpec{Address: "a:1", CAFile: "x"}, "ca_file: needs tls"},
		{"cert min without tls", TCPSpec{Address: "a:1", CertMinValidity: time.Hour}, "cert_min_validity: needs tls"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.spec.Validate()
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("Validate(%+v): got %v, want %q", tt.spec, err, tt.want)
			}
		})
	}
	hpCheck(t, ProbeTCP(context.Background(), Spec{Name: "x", Type: "tcp"}, hpLog), ClassConfig, "config", "without a tcp spec")
}
