package api

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cluster"
)

// TestServerTLSServesReloadedCertificate: once the node's credentials are
// reloaded, the next connection to the API gets the new certificate; no
// restart.
func TestServerTLSServesReloadedCertificate(t *testing.T) {
	pki := newTestPKI(t, "api-test")
	dir := t.TempDir()
	caFile, certFile, keyFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "a.crt"), filepath.Join(dir, "a.key")
	stamp := time.Now().Add(-time.Hour)
	write := func(ttl time.Duration) {
		cp, kp := pki.node("a", ttl)
		stamp = stamp.Add(time.Minute)
		for path, b := range map[string][]byte{caFile: pki.pem, certFile: cp, keyFile: kp} {
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(path, stamp, stamp); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(time.Hour)
	creds, err := cluster.LoadCredentials(caFile, certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	srv.TLS = ServerTLS(creds, false)
	srv.StartTLS()
	defer srv.Close()

	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pki.roots}, DisableKeepAlives: true}}
	served := func() time.Time {
		t.Helper()
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.TLS.PeerCertificates[0].NotAfter
	}
	if got := served(); !got.Equal(creds.NotAfter()) {
		t.Fatalf("served NotAfter %v, want the loaded %v", got, creds.NotAfter())
	}
	write(48 * time.Hour)
	if changed, err := creds.Reload(); !changed || err != nil {
		t.Fatalf("reload: got %v, %v, want true, nil", changed, err)
	}
	if got := served(); !got.Equal(creds.NotAfter()) || got.Before(time.Now().Add(24*time.Hour)) {
		t.Fatalf("served NotAfter %v after the reload, want the renewed %v", got, creds.NotAfter())
	}
}

// TestServerTLSRequiredClientCert: with api.client_certs: required a
// connection without a client certificate is refused in the handshake; a
// client certificate from the cluster CA gets through, and the handler
// sees whose it is. Optional mode lets the anonymous reader in.
func TestServerTLSRequiredClientCert(t *testing.T) {
	pki := newTestPKI(t, "api-test")
	np, nk := pki.node("a", time.Hour)
	creds, err := cluster.CredentialsFromPEM(pki.pem, np, nk)
	if err != nil {
		t.Fatal(err)
	}
	alice, mallory := pki.client("alice"), newTestPKI(t, "other").client("mallory")
	// get presents cert whatever CAs the server asks for (a Go client
	// would otherwise keep a certificate from another CA to itself).
	get := func(url string, cert ...tls.Certificate) (string, error) {
		present := func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			if len(cert) == 0 {
				return &tls.Certificate{}, nil
			}
			return &cert[0], nil
		}
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pki.roots, GetClientCertificate: present}, DisableKeepAlives: true}}
		resp, err := c.Get(url)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	for _, required := range []bool{false, true} {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "identity="+clientIdentity(r))
		}))
		srv.TLS = ServerTLS(creds, required)
		srv.StartTLS()
		body, err := get(srv.URL)
		if required && err == nil {
			t.Errorf("required: a client without a certificate got %q, want the handshake refused", body)
		}
		if !required && (err != nil || body != "identity=") {
			t.Errorf("optional: anonymous reader got %q, %v, want an anonymous answer", body, err)
		}
		if body, err := get(srv.URL, alice); err != nil || body != "identity=client/alice" {
			t.Errorf("required=%v: alice got %q, %v, want identity=client/alice", required, body, err)
		}
		if body, err := get(srv.URL, mallory); err == nil {
			t.Errorf("required=%v: a certificate from another CA got %q, want the handshake refused", required, body)
		}
		srv.Close()
	}
}

// testPKI is a CA for one test, issuing what the API meets.
type testPKI struct {
	t     *testing.T
	pem   []byte
	cert  *x509.Certificate
	key   crypto.Signer
	roots *x509.CertPool
}

func newTestPKI(t *testing.T, name string) *testPKI {
	t.Helper()
	caPEM, caKeyPEM, err := cluster.NewCA(name, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := cluster.ParseCA(caPEM, caKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	return &testPKI{t: t, pem: caPEM, cert: cert, key: key, roots: roots}
}

// node returns watcher id's PEM pair.
func (p *testPKI) node(id string, ttl time.Duration) (certPEM, keyPEM []byte) {
	p.t.Helper()
	cp, kp, err := cluster.IssueNodeCert(p.cert, p.key, id, []string{"127.0.0.1"}, ttl)
	if err != nil {
		p.t.Fatal(err)
	}
	return cp, kp
}

// client returns API client name's key pair.
func (p *testPKI) client(name string) tls.Certificate {
	p.t.Helper()
	cp, kp, err := cluster.IssueClientCert(p.cert, p.key, name, time.Hour)
	if err != nil {
		p.t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(cp, kp)
	if err != nil {
		p.t.Fatal(err)
	}
	return pair
}
