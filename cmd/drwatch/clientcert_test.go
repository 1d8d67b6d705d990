package main

import (
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cluster"
	"github.com/drwatch/drwatch/cmd/drwatch/api"
)

// TestClientCertificates: `certs issue NAME --client` writes a client-only
// certificate (mode 0600, 90 days, drwatch://client/NAME); an API that
// requires client certificates refuses the CLI without one and answers it
// with --cert-file/--key-file; half a pair is a usage error.
func TestClientCertificates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	if out, stderr, code := run(t, "certs", "init", "--dir", dir); code != 0 {
		t.Fatalf("certs init: exit %d: %s %s", code, out, stderr)
	}
	out, stderr, code := run(t, "certs", "issue", "alice", "--client", "--dir", dir)
	if code != 0 {
		t.Fatalf("certs issue --client: exit %d: %s %s", code, out, stderr)
	}
	if !strings.Contains(out, "drwatch://client/alice") {
		t.Errorf("output does not name the identity:\n%s", out)
	}
	certFile, keyFile := filepath.Join(dir, "client-alice.crt"), filepath.Join(dir, "client-alice.key")
	for _, p := range []string{certFile, keyFile} {
		if got := mode(t, p); got != 0o600 {
			t.Errorf("%s: got mode %o, want 600", filepath.Base(p), got)
		}
	}
	leaf := readCert(t, certFile)
	if name, err := cluster.ClientNameFromCert(leaf); err != nil || name != "alice" {
		t.Errorf("identity: got %q, %v, want alice", name, err)
	}
	if !slices.Equal(leaf.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) || len(leaf.DNSNames)+len(leaf.IPAddresses) != 0 {
		t.Errorf("got usages %v and SANs %v %v, want client authentication only and no host", leaf.ExtKeyUsage, leaf.DNSNames, leaf.IPAddresses)
	}
	if life := time.Until(leaf.NotAfter); life < (defaultClientDays-1)*day || life > (defaultClientDays+1)*day {
		t.Errorf("lifetime: got %s, want about %d days", life, defaultClientDays)
	}
	if _, stderr, code := run(t, "certs", "issue", "bob", "--client", "--dir", dir, "--host", "10.0.0.1"); code != exitUsage || !strings.Contains(stderr, "--host") {
		t.Errorf("--client with --host: got exit %d (%s), want a usage error naming --host", code, stderr)
	}

	// A watcher whose API requires client certificates.
	if _, stderr, code := run(t, "certs", "issue", "a", "--dir", dir, "--host", "127.0.0.1"); code != 0 {
		t.Fatalf("certs issue a: %s", stderr)
	}
	creds, err := cluster.LoadCredentials(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "node-a.crt"), filepath.Join(dir, "node-a.key"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(api.Status{})
	}))
	srv.TLS = api.ServerTLS(creds, true)
	srv.Config.ErrorLog = nil
	srv.StartTLS()
	defer srv.Close()
	conn := []string{"remediate", "records", "--endpoint", srv.URL, "--ca-file", filepath.Join(dir, "ca.crt")}

	if _, stderr, code := run(t, conn...); code == 0 || !strings.Contains(stderr, "certificate") {
		t.Errorf("without a client certificate: got exit %d (%s), want a failure naming the certificate", code, stderr)
	}
	if out, stderr, code := run(t, append(conn, "--cert-file", certFile, "--key-file", keyFile)...); code != 0 || !strings.Contains(out, "no remediation records") {
		t.Errorf("with alice's certificate: got exit %d (%s %s), want the answer", code, out, stderr)
	}
	// On a watcher, --config with client_certs: required presents the
	// watcher's own pair.
	valid, err := os.ReadFile("config/testdata/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfgText := strings.NewReplacer(
		"tls: { ca_file: /etc/drwatch/ca.crt, cert_file: /etc/drwatch/node.crt, key_file: /etc/drwatch/node.key }",
		"tls: { ca_file: "+filepath.Join(dir, "ca.crt")+", cert_file: "+filepath.Join(dir, "node-a.crt")+", key_file: "+filepath.Join(dir, "node-a.key")+" }",
		"api: { tokens_file: /etc/drwatch/tokens }", "api: { tokens_file: /etc/drwatch/tokens, client_certs: required }",
	).Replace(string(valid))
	if !strings.Contains(cfgText, "client_certs: required") || !strings.Contains(cfgText, "node-a.crt") {
		t.Fatal("test bug: valid.yaml changed shape")
	}
	cfgFile := filepath.Join(t.TempDir(), "drwatch.yaml")
	if err := os.WriteFile(cfgFile, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := run(t, "remediate", "records", "--endpoint", srv.URL, "--config", cfgFile); code != 0 {
		t.Errorf("with --config of a watcher requiring client certificates: got exit %d (%s), want 0", code, stderr)
	}

	t.Setenv("DRWATCH_CERT_FILE", certFile)
	t.Setenv("DRWATCH_KEY_FILE", keyFile)
	if _, stderr, code := run(t, conn...); code != 0 {
		t.Errorf("with the certificate from the environment: got exit %d (%s), want 0", code, stderr)
	}
	t.Setenv("DRWATCH_KEY_FILE", "")
	if _, stderr, code := run(t, conn...); code != exitUsage || !strings.Contains(stderr, "go together") {
		t.Errorf("certificate without key: got exit %d (%s), want a usage error", code, stderr)
	}
	if err := os.WriteFile(keyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DRWATCH_KEY_FILE", keyFile)
	// Named by what it is, never by its path: a file flag may hold a
	// secret pasted in the wrong place.
	if _, stderr, code := run(t, conn...); code == 0 || !strings.Contains(stderr, "client certificate and client key: ") || strings.Contains(stderr, certFile) {
		t.Errorf("broken key: got exit %d (%s), want an error naming the client certificate, not its path", code, stderr)
	}
}
