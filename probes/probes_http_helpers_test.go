package probes

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drwatch/drwatch/test/caddytest"
)

// hpPKI is a throwaway CA for Go TLS servers in tests.
type hpPKI struct {
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	caFile string
	serial int64
}

func hpNewPKI(t testing.TB) *hpPKI {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("ca key: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "drwatch test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("ca cert: %v", err)
	}
	cert, _ := x509.ParseCertificate(der)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatalf("write ca: %v", err)
	}
	return &hpPKI{cert: cert, key: key, caFile: caFile, serial: 1}
}

// leaf issues a server certificate for 127.0.0.1 and names, valid from
// notBefore to notAfter.
func (p *hpPKI) leaf(t testing.TB, notBefore, notAfter time.Time, names ...string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("leaf key: %v", err)
	}
	p.serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial),
		Subject:      pkix.Name{CommonName: "drwatch test server"},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		DNSNames:     names,
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.cert, &key.PublicKey, p.key)
	if err != nil {
		t.Fatalf("leaf cert: %v", err)
	}
	leaf, _ := x509.ParseCertificate(der)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// hpTLSServer is a Go HTTPS server on 127.0.0.1 serving cert, counting the
// connections it accepts.
type hpTLSServer struct {
	*httptest.Server
	accepted atomic.Int64
}

func hpStartTLS(t testing.TB, cert tls.Certificate, h http.Handler) *hpTLSServer {
	t.Helper()
	s := &hpTLSServer{Server: httptest.NewUnstartedServer(h)}
	s.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.accepted.Add(1)
		}
	}
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

// hpBlackhole accepts connections and never answers, like a load balancer
// whose backends vanished without resetting. It holds them until cleanup.
func hpBlackhole(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	done := make(chan struct{})
	conns := make(chan net.Conn, 64)
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns <- c
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		close(conns)
		for c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}

// hpClosedPort is a 127.0.0.1 port nothing listens on.
func hpClosedPort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// hpSpec wraps an HTTPSpec in a Spec.
func hpSpec(h HTTPSpec, timeout time.Duration) Spec {
	return Spec{Name: "lms", Type: "http", Timeout: timeout, HTTP: &h}
}

// caddytestStart starts a real Caddy for one test.
func caddytestStart(t *testing.T) *caddytest.Caddy {
	t.Helper()
	return caddytest.Start(t, caddytest.Options{Name: "primary", Hosts: []string{"lms.example.test"}})
}
