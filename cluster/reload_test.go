package cluster

import (
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// issue returns PEM for node id from ca, valid for ttl.
func (ca *testCA) issue(t *testing.T, id string, ttl time.Duration) (certPEM, keyPEM []byte) {
	t.Helper()
	cert, key, err := ParseCA(ca.certPEM, ca.keyP)
	if err != nil {
		t.Fatal(err)
	}
	cp, kp, err := IssueNodeCert(cert, key, id, []string{"127.0.0.1"}, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return cp, kp
}

// credFiles writes one node's TLS files; each write moves the mtime
// forward, as a renewal would.
type credFiles struct {
	t             *testing.T
	ca, cert, key string
	tick          time.Time
}

func (f *credFiles) write(caPEM, certPEM, keyPEM []byte) {
	f.t.Helper()
	f.tick = f.tick.Add(time.Minute)
	for _, w := range []struct {
		path string
		b    []byte
	}{{f.ca, caPEM}, {f.cert, certPEM}, {f.key, keyPEM}} {
		if w.b == nil {
			continue
		}
		if err := os.WriteFile(w.path, w.b, 0o600); err != nil {
			f.t.Fatal(err)
		}
		if err := os.Chtimes(w.path, f.tick, f.tick); err != nil {
			f.t.Fatal(err)
		}
	}
}

// handshake connects client to server's serverTLS over a pipe and returns
// the server's error and the certificate the client saw.
func handshake(t *testing.T, server, client *Credentials) (serverErr error, seen time.Time) {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	srv := tls.Server(a, server.serverTLS(func(string) bool { return true }))
	cl := tls.Client(b, client.clientTLS(server.NodeID()))
	done := make(chan error, 1)
	go func() { done <- srv.Handshake() }()
	if err := cl.Handshake(); err == nil {
		seen = cl.ConnectionState().PeerCertificates[0].NotAfter
	}
	_ = b.Close() // unblocks a server still waiting for a refused client
	return <-done, seen
}

// TestCredentialsReload: a renewed certificate is taken into use by the
// next handshake; a certificate for another node, or a broken pair, is
// refused and the current credentials stay; a CA bundle with a new CA
// lets peers with certificates from it in (the rotation's first step).
func TestCredentialsReload(t *testing.T) {
	dir := t.TempDir()
	f := &credFiles{t: t, ca: filepath.Join(dir, "ca.crt"), cert: filepath.Join(dir, "a.crt"), key: filepath.Join(dir, "a.key"), tick: time.Now().Add(-time.Hour)}
	ca1, ca2 := newTestCA(t, "ca-1"), newTestCA(t, "ca-2")
	cp, kp := ca1.issue(t, "a", time.Hour)
	f.write(ca1.certPEM, cp, kp)
	a, err := LoadCredentials(f.ca, f.cert, f.key)
	if err != nil {
		t.Fatal(err)
	}
	if changed, err := a.Reload(); changed || err != nil {
		t.Fatalf("unchanged files: got %v, %v, want false, nil", changed, err)
	}
	b1 := ca1.creds(t, "b")
	if err, _ := handshake(t, a, b1); err != nil {
		t.Fatalf("first handshake: %v", err)
	}
	first := a.NotAfter()

	// Renewal: same node, longer validity.
	cp, kp = ca1.issue(t, "a", 48*time.Hour)
	f.write(nil, cp, kp)
	if changed, err := a.Reload(); !changed || err != nil {
		t.Fatalf("renewed certificate: got %v, %v, want true, nil", changed, err)
	}
	renewed := a.NotAfter()
	if !renewed.After(first.Add(24 * time.Hour)) {
		t.Fatalf("NotAfter after renewal: got %v, want about 48h from now (was %v)", renewed, first)
	}
	if err, seen := handshake(t, a, b1); err != nil || !seen.Equal(renewed) {
		t.Fatalf("handshake after renewal: err %v, peer saw NotAfter %v, want nil and %v", err, seen, renewed)
	}

	// Another node's certificate, then a key that does not match: refused.
	cp, kp = ca1.issue(t, "c", time.Hour)
	f.write(nil, cp, kp)
	if changed, err := a.Reload(); changed || err == nil || !strings.Contains(err.Error(), `for node "c"`) {
		t.Fatalf("certificate for c: got %v, %v, want an error naming node c", changed, err)
	}
	_, otherKey := ca1.issue(t, "a", time.Hour)
	cp, _ = ca1.issue(t, "a", time.Hour)
	f.write(nil, cp, otherKey)
	if changed, err := a.Reload(); changed || err == nil || !strings.Contains(err.Error(), "kept the current credentials") {
		t.Fatalf("mismatched key: got %v, %v, want an error that keeps the current credentials", changed, err)
	}
	if !a.NotAfter().Equal(renewed) {
		t.Fatalf("NotAfter after refused reloads: got %v, want %v", a.NotAfter(), renewed)
	}
	if err, _ := handshake(t, a, b1); err != nil {
		t.Fatalf("handshake after refused reloads: %v", err)
	}

	// Rotation: every node trusts both CAs, then b moves to a certificate
	// from ca-2. a keeps its certificate from ca-1 and only reloads the
	// bundle.
	bundle := append(append([]byte{}, ca1.certPEM...), ca2.certPEM...)
	cp2, kp2 := ca2.issue(t, "b", time.Hour)
	b2, err := CredentialsFromPEM(bundle, cp2, kp2)
	if err != nil {
		t.Fatal(err)
	}
	if err, _ := handshake(t, a, b2); err == nil {
		t.Fatal("a peer with a certificate from ca-2 got in before a trusts ca-2")
	}
	cp, kp = ca1.issue(t, "a", 48*time.Hour)
	f.write(bundle, cp, kp)
	if changed, err := a.Reload(); !changed || err != nil {
		t.Fatalf("bundle with ca-2: got %v, %v, want true, nil", changed, err)
	}
	if err, _ := handshake(t, a, b2); err != nil {
		t.Fatalf("a peer with a certificate from ca-2, once a trusts it: %v", err)
	}
	if err, _ := handshake(t, a, b1); err != nil {
		t.Fatalf("a peer with a certificate from ca-1 during the rotation: %v", err)
	}
}

// TestCredentialsFromPEMNeverReload: credentials built from bytes have no
// files to read again.
func TestCredentialsFromPEMNeverReload(t *testing.T) {
	c := newTestCA(t, "ca").creds(t, "a")
	if changed, err := c.Reload(); changed || err != nil {
		t.Fatalf("got %v, %v, want false, nil", changed, err)
	}
}
