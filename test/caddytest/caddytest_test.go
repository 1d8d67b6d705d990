package caddytest_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/drwatch/drwatch/test/caddytest"
)

func client(t *testing.T, caFile, host, addr string) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatalf("read CA: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	d := &net.Dialer{}
	tr := &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool, ServerName: host},
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		},
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t *testing.T, c *http.Client, url string) (int, string, error) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// TestTwoInstances proves two Caddys run side by side with their own ports,
// CAs and routes, and that Stop and Start simulate a crash and a restart.
func TestTwoInstances(t *testing.T) {
	a := caddytest.Start(t, caddytest.Options{Name: "primary"})
	b := caddytest.Start(t, caddytest.Options{Name: "backup", Hosts: []string{"lms.example.test", "studio.example.test"},
		Directives: []string{`respond /extra "extra" 201`}})
	if a.Port == b.Port || a.CAFile == b.CAFile {
		t.Fatalf("got shared port or CA: %d/%d %s/%s", a.Port, b.Port, a.CAFile, b.CAFile)
	}
	for _, c := range []*caddytest.Caddy{a, b} {
		cl := client(t, c.CAFile, "lms.example.test", c.Addr)
		tests := []struct {
			path   string
			status int
			body   string
		}{
			{"/heartbeat", 200, "ok " + c.Name},
			{"/broken", 503, "broken"},
			{"/redirect", 302, ""},
			{"/redirect-away", 302, ""},
			{"/", 200, "hello from " + c.Name},
		}
		for _, tt := range tests {
			t.Run(c.Name+tt.path, func(t *testing.T) {
				status, body, err := get(t, cl, c.URL("lms.example.test", tt.path))
				if err != nil {
					t.Fatalf("GET %s: %v", tt.path, err)
				}
				if status != tt.status || !strings.HasPrefix(body, tt.body) {
					t.Fatalf("GET %s: got %d %q, want %d %q", tt.path, status, body, tt.status, tt.body)
				}
			})
		}
	}
	if status, body, err := get(t, client(t, b.CAFile, "studio.example.test", b.Addr), b.URL("studio.example.test", "/extra")); err != nil || status != 201 || body != "extra" {
		t.Fatalf("b /extra on studio: got %d %q %v, want 201 extra", status, body, err)
	}
	// a's CA does not sign b's certificate.
	if _, _, err := get(t, client(t, a.CAFile, "lms.example.test", b.Addr), b.URL("lms.example.test", "/heartbeat")); err == nil {
		t.Fatalf("got a's CA trusting b, want an unknown authority error")
	}

	if err := a.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	_, _, err := get(t, client(t, a.CAFile, "lms.example.test", a.Addr), a.URL("", "/heartbeat"))
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("after Stop: got %v, want connection refused", err)
	}
	if status, _, err := get(t, client(t, b.CAFile, "lms.example.test", b.Addr), b.URL("", "/heartbeat")); err != nil || status != 200 {
		t.Fatalf("b after a stopped: got %d %v, want 200", status, err)
	}
	if err := a.Start(); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if status, _, err := get(t, client(t, a.CAFile, "lms.example.test", a.Addr), a.URL("", "/heartbeat")); err != nil || status != 200 {
		t.Fatalf("after restart: got %d %v, want 200", status, err)
	}
}

// TestMissingBinary: without caddy in PATH, New names the Debian package.
func TestMissingBinary(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := caddytest.New(caddytest.Options{})
	if !errors.Is(err, caddytest.ErrNotInstalled) || !strings.Contains(err.Error(), "install Debian package caddy") {
		t.Fatalf("got %v, want ErrNotInstalled naming the Debian package caddy", err)
	}
}
