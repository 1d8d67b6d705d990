package demo

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cluster"
	"github.com/drwatch/drwatch/test/poll"
)

// TestCertificateRenewalWithoutRestart: the leader's certificate is renewed
// by writing its files, as an operator would. Without a restart its API
// serves the new certificate and its metric reports the new expiry; a
// follower restarted afterwards (so every Raft connection to the leader is
// new) rejoins and reaches the leader, which verifies the renewed
// certificate on both sides of each connection.
func TestCertificateRenewalWithoutRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d := startDemo(t, ctx, Options{Dir: t.TempDir(), Interval: 2 * time.Second, CredentialsReloadEvery: 100 * time.Millisecond})
	poll.Until(t, 60*time.Second, func() bool { return d.Leader() != nil }, "a leader is elected")
	li := -1
	for i, n := range d.Nodes {
		if n == d.Leader() {
			li = i
		}
	}
	if li < 0 {
		t.Fatal("the leader is not one of the demo's nodes")
	}
	cfg := d.cfgs[li]

	pem, err := os.ReadFile(d.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true}}
	get := func(path string) (notAfter time.Time, body string, err error) {
		resp, err := client.Get(d.APIURLs[li] + path)
		if err != nil {
			return time.Time{}, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.TLS.PeerCertificates[0].NotAfter, string(b), err
	}
	before, _, err := get("/livez")
	if err != nil {
		t.Fatal(err)
	}

	cert, key, err := cluster.IssueNodeCert(d.ca, d.caKey, cfg.Node.ID, []string{"127.0.0.1", "localhost"}, 72*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute)
	for _, f := range []struct {
		path string
		b    []byte
	}{{cfg.TLS.KeyFile, key}, {cfg.TLS.CertFile, cert}} {
		if err := os.WriteFile(f.path, f.b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(f.path, later, later); err != nil {
			t.Fatal(err)
		}
	}
	var renewed time.Time
	poll.Until(t, 30*time.Second, func() bool {
		na, _, err := get("/livez")
		renewed = na
		return err == nil && na.After(before.Add(24*time.Hour))
	}, "the leader's API serves the renewed certificate (was valid until %v)", before)
	_, metrics, err := get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("drwatch_tls_cert_expiry_timestamp_seconds %g", float64(renewed.Unix())); !strings.Contains(metrics, want) {
		t.Errorf("metrics lack %q", want)
	}

	fi := (li + 1) % len(d.Nodes)
	if err := d.StopNode(ctx, fi); err != nil {
		t.Fatal(err)
	}
	if err := d.StartNode(ctx, fi); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 60*time.Second, func() bool {
		f := d.Nodes[fi]
		if f == nil {
			return false
		}
		bctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return f.Cluster().Barrier(bctx) == nil
	}, "the restarted follower reaches the leader through a barrier")
}
