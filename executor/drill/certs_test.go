package drill

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/probes"
	"github.com/drwatch/drwatch/test/caddytest"
)

func httpProbe(name, rawURL, connectTo, ca string) probes.Spec {
	return probes.Spec{Name: name, Type: "http", HTTP: &probes.HTTPSpec{URL: rawURL, ConnectTo: connectTo, CAFile: ca}}
}

// The public names are the hosts of the https probes of both sites; the
// backup's address comes from its probe's connect_to, else the records'
// backup values; a name with neither is listed without an address.
func TestCertTargetsFindTheBackupAddressOfEveryPublicName(t *testing.T) {
	sites := []probes.SiteSpec{
		{Site: "primary", Probes: []probes.Spec{
			httpProbe("lms", "https://LMS.example.org/heartbeat", "203.0.113.10:443", "/etc/primary-ca.pem"),
			httpProbe("studio", "https://studio.example.org:8443/", "203.0.113.10", ""),
			httpProbe("wiki", "https://wiki.example.org/", "203.0.113.10", ""),
			httpProbe("plain", "http://plain.example.org/", "203.0.113.10:80", ""),
			{Name: "kube", Type: "tcp", TCP: &probes.TCPSpec{Address: "203.0.113.20:6443"}},
		}},
		{Site: "backup", Probes: []probes.Spec{
			httpProbe("lms", "https://lms.example.org/heartbeat", "198.51.100.10", "/etc/backup-ca.pem"),
			httpProbe("wiki-resolved", "https://wiki.example.org/", "", ""),
		}},
	}
	pol := failover.Policy{Zone: "example.org.", Records: []failover.Record{
		{Name: "studio", Type: "A", TTL: 60, Primary: []string{"203.0.113.10"}, Backup: []string{"198.51.100.11", "198.51.100.12"}},
		{Name: "lms", Type: "A", TTL: 60, Primary: []string{"203.0.113.10"}, Backup: []string{"198.51.100.99"}},
	}}
	got := CertTargets(sites, pol)
	want := []CertTarget{
		{Name: "lms.example.org", Address: "198.51.100.10:443", CAFile: "/etc/backup-ca.pem"},
		{Name: "studio.example.org", Address: "198.51.100.11:8443"},
		{Name: "studio.example.org", Address: "198.51.100.12:8443"},
		{Name: "wiki.example.org"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

// writeCert writes a PEM certificate for host, valid from notBefore to
// notAfter and signed by a new CA, and its key; it returns their paths and
// the CA's.
func writeCert(t *testing.T, host string, notBefore, notAfter time.Time) (certFile, keyFile, caFile string) {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "drill test CA"},
		NotBefore: time.Now().Add(-time.Hour * 24 * 30), NotAfter: time.Now().Add(time.Hour * 24 * 30),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: notBefore, NotAfter: notAfter, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("cert.pem", "CERTIFICATE", der), write("key.pem", "EC PRIVATE KEY", keyDER), write("ca.pem", "CERTIFICATE", caDER)
}

func wantReason(t *testing.T, c Check, pass bool, parts ...string) {
	t.Helper()
	if c.Pass != pass {
		t.Errorf("%s: got pass %v, want %v (%s)", c.Name, c.Pass, pass, c.Reason)
	}
	for _, p := range parts {
		if !strings.Contains(c.Reason, p) {
			t.Errorf("%s: reason %q lacks %q", c.Name, c.Reason, p)
		}
	}
}

// Against a real Caddy as the backup: its `tls internal` certificate
// passes while it has cert_min_validity left and fails when it has less;
// an expired certificate fails; a name with no address fails; and with
// Caddy down every name fails, naming the address.
func TestCertificateChecksAgainstRealCaddy(t *testing.T) {
	expCert, expKey, expCA := writeCert(t, "expired.example.test", time.Now().Add(-72*time.Hour), time.Now().Add(-24*time.Hour))
	caddy := caddytest.Start(t, caddytest.Options{Name: "backup", Hosts: []string{"lms.example.test"},
		Manual: []caddytest.ManualCert{{Host: "expired.example.test", CertFile: expCert, KeyFile: expKey}}})
	now := time.Now()
	good := CertTarget{Name: "lms.example.test", Address: caddy.Addr, CAFile: caddy.CAFile}
	expired := CertTarget{Name: "expired.example.test", Address: caddy.Addr, CAFile: expCA}
	ctx := t.Context()

	cs := CertificateChecks(ctx, []CertTarget{good, expired, {Name: "wiki.example.test"}}, time.Hour, 5*time.Second, now)
	for _, c := range cs {
		t.Logf("%s: pass=%v: %s", c.Name, c.Pass, c.Reason)
	}
	if len(cs) != 3 {
		t.Fatalf("got %d checks, want one per target: %+v", len(cs), cs)
	}
	wantReason(t, cs[0], true, "lms.example.test", caddy.Addr, "certificate expires", "want at least 1h0m0s")
	wantReason(t, cs[1], false, "expired.example.test", caddy.Addr, "expired at", "cert_expiry")
	wantReason(t, cs[2], false, "wiki.example.test", "no backup address known")
	if cs[0].Name != "certificate lms.example.test" {
		t.Errorf("got name %q, want %q", cs[0].Name, "certificate lms.example.test")
	}

	// Caddy's internal leaves live 12 hours: a day is more than they have.
	long := CertificateChecks(ctx, []CertTarget{good}, 24*time.Hour, 5*time.Second, now)
	wantReason(t, long[0], false, "lms.example.test", caddy.Addr, "want at least 24h0m0s")

	// The wrong CA fails the chain, as the probes would.
	wrongCA := CertificateChecks(ctx, []CertTarget{{Name: good.Name, Address: good.Address, CAFile: expCA}}, time.Hour, 5*time.Second, now)
	wantReason(t, wrongCA[0], false, "lms.example.test", caddy.Addr, "tls")

	if err := caddy.Stop(); err != nil {
		t.Fatal(err)
	}
	down := CertificateChecks(ctx, []CertTarget{good}, time.Hour, 5*time.Second, now)
	t.Logf("caddy down: %s", down[0].Reason)
	wantReason(t, down[0], false, "lms.example.test", caddy.Addr, "refused")
}

// No https probe, no name to check: that fails rather than passing empty.
func TestCertificateChecksWithoutPublicNamesFail(t *testing.T) {
	cs := CertificateChecks(t.Context(), nil, time.Hour, time.Second, time.Now())
	if len(cs) != 1 || cs[0].Pass {
		t.Errorf("got %+v, want one failing check", cs)
	}
}
