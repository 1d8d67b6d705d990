package main

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cluster"
)

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("stat %s: %v", path, err)
	}
	return fi.Mode().Perm()
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := parseCertPEM(b)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	return c
}

func TestCertsInitAndIssue(t *testing.T) {
	// The modes must hold under an operator's restrictive umask too.
	old := syscall.Umask(0o077)
	t.Cleanup(func() { syscall.Umask(old) })
	dir := filepath.Join(t.TempDir(), "pki")
	if out, stderr, code := run(t, "certs", "init", "--dir", dir); code != 0 {
		t.Fatalf("certs init: got exit %d, want 0: %s %s", code, out, stderr)
	}
	for name, want := range map[string]os.FileMode{"ca.key": 0o600, "ca.crt": 0o644} {
		if got := mode(t, filepath.Join(dir, name)); got != want {
			t.Errorf("%s: got mode %o, want %o", name, got, want)
		}
	}
	if got := mode(t, dir); got != 0o700 {
		t.Errorf("certs dir: got mode %o, want 700", got)
	}
	ca := readCert(t, filepath.Join(dir, "ca.crt"))
	if !ca.IsCA || ca.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Errorf("ca.crt: got IsCA %v usage %v, want a signing CA", ca.IsCA, ca.KeyUsage)
	}
	if life := ca.NotAfter.Sub(time.Now()); life < (defaultCADays-1)*day || life > (defaultCADays+1)*day {
		t.Errorf("ca lifetime: got %s, want about %d days", life, defaultCADays)
	}

	out, stderr, code := run(t, "certs", "issue", "a", "--dir", dir, "--host", "10.1.0.5", "--host", "watcher-a.example.net", "--host", "::1")
	if code != 0 {
		t.Fatalf("certs issue: got exit %d, want 0: %s %s", code, out, stderr)
	}
	if !strings.Contains(out, "drwatch://node/a") {
		t.Errorf("issue output does not name the identity:\n%s", out)
	}
	crtPath, keyPath := filepath.Join(dir, "node-a.crt"), filepath.Join(dir, "node-a.key")
	for _, p := range []string{crtPath, keyPath} {
		if got := mode(t, p); got != 0o600 {
			t.Errorf("%s: got mode %o, want 600", filepath.Base(p), got)
		}
	}
	leaf := readCert(t, crtPath)

	t.Run("chains to the CA for server and client auth", func(t *testing.T) {
		roots := x509.NewCertPool()
		roots.AddCert(ca)
		for _, u := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{u}}); err != nil {
				t.Errorf("verify for usage %v: %v", u, err)
			}
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "watcher-a.example.net"}); err != nil {
			t.Errorf("verify host name watcher-a.example.net: %v", err)
		}
	})
	t.Run("carries the identity and the SANs", func(t *testing.T) {
		id, err := cluster.NodeIDFromCert(leaf)
		if err != nil || id != "a" {
			t.Errorf("identity: got %q, %v; want a", id, err)
		}
		if !slices.Equal(leaf.DNSNames, []string{"watcher-a.example.net"}) {
			t.Errorf("DNS SANs: got %v, want [watcher-a.example.net]", leaf.DNSNames)
		}
		want := []net.IP{net.ParseIP("10.1.0.5"), net.ParseIP("::1")}
		if len(leaf.IPAddresses) != 2 || !leaf.IPAddresses[0].Equal(want[0]) || !leaf.IPAddresses[1].Equal(want[1]) {
			t.Errorf("IP SANs: got %v, want %v", leaf.IPAddresses, want)
		}
		if life := leaf.NotAfter.Sub(time.Now()); life < (defaultNodeDays-1)*day || life > (defaultNodeDays+1)*day {
			t.Errorf("node lifetime: got %s, want about %d days", life, defaultNodeDays)
		}
	})
	t.Run("loads as cluster credentials and as a TLS key pair", func(t *testing.T) {
		creds, err := cluster.LoadCredentials(filepath.Join(dir, "ca.crt"), crtPath, keyPath)
		if err != nil || creds.NodeID() != "a" {
			t.Fatalf("LoadCredentials: got %v, %v; want node a", creds, err)
		}
		if _, err := tls.LoadX509KeyPair(crtPath, keyPath); err != nil {
			t.Errorf("LoadX509KeyPair: %v", err)
		}
	})

	t.Run("refuses to overwrite without --force", func(t *testing.T) {
		before, _ := os.ReadFile(crtPath)
		caBefore, _ := os.ReadFile(filepath.Join(dir, "ca.key"))
		cases := [][]string{
			{"certs", "init", "--dir", dir},
			{"certs", "issue", "a", "--dir", dir, "--host", "10.1.0.5"},
		}
		for _, args := range cases {
			_, stderr, code := run(t, args...)
			if code != exitFailed || !strings.Contains(stderr, "already exists") || !strings.Contains(stderr, "--force") {
				t.Errorf("%v: got exit %d, stderr %q; want 1 naming 'already exists' and --force", args, code, stderr)
			}
		}
		after, _ := os.ReadFile(crtPath)
		caAfter, _ := os.ReadFile(filepath.Join(dir, "ca.key"))
		if string(before) != string(after) || string(caBefore) != string(caAfter) {
			t.Error("a refused command changed a file")
		}
	})

	t.Run("--force rotates the node certificate and keeps mode 0600", func(t *testing.T) {
		if err := os.Chmod(keyPath, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, stderr, code := run(t, "certs", "issue", "a", "--dir", dir, "--host", "10.1.0.6", "--force"); code != 0 {
			t.Fatalf("issue --force: got exit %d: %s", code, stderr)
		}
		rotated := readCert(t, crtPath)
		if rotated.SerialNumber.Cmp(leaf.SerialNumber) == 0 || !rotated.IPAddresses[0].Equal(net.ParseIP("10.1.0.6")) {
			t.Errorf("rotated certificate: got serial %v IPs %v, want a new serial and 10.1.0.6", rotated.SerialNumber, rotated.IPAddresses)
		}
		if got := mode(t, keyPath); got != 0o600 {
			t.Errorf("rotated key: got mode %o, want 600", got)
		}
		matches, _ := filepath.Glob(filepath.Join(dir, ".*tmp*"))
		if len(matches) > 0 {
			t.Errorf("temporary files left behind: %v", matches)
		}
	})
}

func TestCertsUsageErrors(t *testing.T) {
	dir := t.TempDir()
	if _, stderr, code := run(t, "certs", "init", "--dir", dir, "--days", "30"); code != 0 {
		t.Fatalf("certs init: exit %d: %s", code, stderr)
	}
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"init without --dir", []string{"certs", "init"}, exitUsage, "--dir"},
		{"issue without --dir", []string{"certs", "issue", "a", "--host", "h"}, exitUsage, "--dir"},
		{"issue without node", []string{"certs", "issue", "--dir", dir, "--host", "h"}, exitUsage, "one node ID"},
		{"issue without host", []string{"certs", "issue", "a", "--dir", dir}, exitUsage, "--host"},
		{"bad node id", []string{"certs", "issue", "a/b", "--dir", dir, "--host", "h"}, exitUsage, "bad node id"},
		{"node id the config refuses", []string{"certs", "issue", "Node_A", "--dir", dir, "--host", "h"}, exitUsage, "lower-case"},
		{"outlives the CA", []string{"certs", "issue", "a", "--dir", dir, "--host", "h", "--days", "31"}, exitUsage, "outlives the CA"},
		{"no CA", []string{"certs", "issue", "a", "--dir", t.TempDir(), "--host", "h"}, exitFailed, "certs init"},
		{"zero days", []string{"certs", "init", "--dir", t.TempDir(), "--days", "0"}, exitUsage, "--days"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := run(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("%v: got exit %d, stderr %q; want exit %d naming %q", tc.args, code, stderr, tc.code, tc.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "node-a.crt")); err == nil {
		t.Error("a refused issue wrote node-a.crt")
	}
}

// The CA rotation in docs/operations.md: while every watcher trusts a
// bundle of the old and the new CA, certificates from either are accepted;
// after the old CA is dropped, only the new ones are.
func TestCertsCARotationBundle(t *testing.T) {
	oldDir, newDir := t.TempDir(), t.TempDir()
	for _, args := range [][]string{
		{"certs", "init", "--dir", oldDir},
		{"certs", "issue", "a", "--dir", oldDir, "--host", "127.0.0.1"},
		{"certs", "init", "--dir", newDir},
		{"certs", "issue", "a", "--dir", newDir, "--host", "127.0.0.1"},
	} {
		if _, stderr, code := run(t, args...); code != 0 {
			t.Fatalf("%v: got exit %d: %s", args, code, stderr)
		}
	}
	read := func(dir, name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	bundle := append(read(oldDir, "ca.crt"), read(newDir, "ca.crt")...)
	cases := []struct {
		name    string
		ca      []byte
		certDir string
		ok      bool
	}{
		{"bundle accepts the old CA's certificate", bundle, oldDir, true},
		{"bundle accepts the new CA's certificate", bundle, newDir, true},
		{"new CA alone accepts the new certificate", read(newDir, "ca.crt"), newDir, true},
		{"new CA alone refuses the old certificate", read(newDir, "ca.crt"), oldDir, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			creds, err := cluster.CredentialsFromPEM(tc.ca, read(tc.certDir, "node-a.crt"), read(tc.certDir, "node-a.key"))
			if got := err == nil; got != tc.ok {
				t.Fatalf("got accepted=%v (%v), want %v", got, err, tc.ok)
			}
			if tc.ok && creds.NodeID() != "a" {
				t.Errorf("got node %q, want a", creds.NodeID())
			}
		})
	}
}
