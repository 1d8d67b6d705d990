package api

import (
	"crypto/tls"
	"crypto/x509"
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
	caPEM, caKeyPEM, err := cluster.NewCA("api-test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ca, caKey, err := cluster.ParseCA(caPEM, caKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	caFile, certFile, keyFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "a.crt"), filepath.Join(dir, "a.key")
	stamp := time.Now().Add(-time.Hour)
	write := func(ttl time.Duration) {
		cp, kp, err := cluster.IssueNodeCert(ca, caKey, "a", []string{"127.0.0.1"}, ttl)
		if err != nil {
			t.Fatal(err)
		}
		stamp = stamp.Add(time.Minute)
		for path, b := range map[string][]byte{caFile: caPEM, certFile: cp, keyFile: kp} {
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
	srv.TLS = ServerTLS(creds)
	srv.StartTLS()
	defer srv.Close()

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true}}
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
