package caddytest

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"github.com/drwatch/drwatch/test/daemon"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// ErrNotInstalled is returned when caddy is not in PATH.
var ErrNotInstalled = errors.New("caddy not found in PATH: install Debian package caddy (make install-test-deps)")

// readyTimeout bounds one start: the first start creates the local CA.
const readyTimeout = 30 * time.Second

// Options configure one Caddy.
type Options struct {
	// Name appears in the response bodies ("ok <Name>"). Default "caddy".
	Name string
	// Hosts are the site's names besides 127.0.0.1, each with a certificate
	// from Caddy's local CA. Default ["lms.example.test"]. They need not
	// resolve: probes reach them through a connect-to address.
	Hosts []string
	// Port is the HTTPS port; 0 picks a free one.
	Port int
	// Dir holds the Caddyfile, storage and log; empty makes a temp dir that
	// Close removes.
	Dir string
	// Directives are extra Caddyfile lines for the site block, e.g.
	// `respond /slow "slow" 200`. Caddy orders directives itself; a path
	// matcher wins over the catch-all respond.
	Directives []string
	// Manual are extra names served on the same port with a certificate
	// and key of the test's own (an expired one, say) instead of one from
	// the local CA. Each answers /heartbeat with "ok <Name>" too. Start
	// waits only for the local-CA site, so a manual certificate need not
	// be valid.
	Manual []ManualCert
}

// ManualCert is one name served with the given PEM certificate and key files.
type ManualCert struct {
	Host     string
	CertFile string
	KeyFile  string
}

// Caddy is one running (or stopped) Caddy process.
type Caddy struct {
	// Name is Options.Name.
	Name string
	// Addr is 127.0.0.1:Port, where the site listens.
	Addr string
	// Port is the HTTPS port.
	Port int
	// Hosts are the site's names besides 127.0.0.1.
	Hosts []string
	// CAFile is the PEM root of Caddy's local CA, which signs the site's
	// certificates. It survives Stop and Start.
	CAFile string
	// Dir holds Caddyfile, storage/ and caddy.log.
	Dir string

	directives []string
	manual     []ManualCert
	bin        string
	ownDir     bool
	mu         sync.Mutex
	proc       *daemon.Process // nil while stopped
	closed     bool
}

// Start starts a Caddy for t and stops it (killing its process group) in
// t.Cleanup. It fails t when caddy is missing or does not become ready.
func Start(t testing.TB, opts Options) *Caddy {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	c, err := New(opts)
	if err != nil {
		t.Fatalf("caddytest: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("caddytest: close: %v", err)
		}
	})
	return c
}

// New starts a Caddy and waits until it serves /heartbeat over TLS. The
// caller must Close it. It is for TestMain and shared fixtures; tests use Start.
func New(opts Options) (*Caddy, error) {
	bin, err := exec.LookPath("caddy")
	if err != nil {
		return nil, ErrNotInstalled
	}
	if opts.Name == "" {
		opts.Name = "caddy"
	}
	if len(opts.Hosts) == 0 {
		opts.Hosts = []string{"lms.example.test"}
	}
	c := &Caddy{Name: opts.Name, Hosts: opts.Hosts, Dir: opts.Dir, bin: bin, directives: opts.Directives, manual: opts.Manual}
	if c.Dir == "" {
		if c.Dir, err = os.MkdirTemp("", "caddytest-"); err != nil {
			return nil, fmt.Errorf("temp dir: %w", err)
		}
		c.ownDir = true
	}
	c.Port = opts.Port
	if c.Port == 0 {
		if c.Port, err = freePort(); err != nil {
			c.cleanupDir()
			return nil, err
		}
	}
	// Caddy binds its HTTP port too (for the ACME challenge); give it a free
	// one so it never takes :80.
	httpPort, err := freePort()
	if err != nil {
		c.cleanupDir()
		return nil, err
	}
	c.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Port))
	c.CAFile = filepath.Join(c.Dir, "storage", "pki", "authorities", "local", "root.crt")
	if err := os.WriteFile(filepath.Join(c.Dir, "Caddyfile"), []byte(c.caddyfile(httpPort)), 0o644); err != nil {
		c.cleanupDir()
		return nil, fmt.Errorf("write Caddyfile: %w", err)
	}
	if err := c.Start(); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Caddy) caddyfile(httpPort int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "{\n\tadmin off\n\tstorage file_system %s\n", filepath.Join(c.Dir, "storage"))
	fmt.Fprintf(&b, "\tskip_install_trust\n\tauto_https disable_redirects\n\tlocal_certs\n")
	fmt.Fprintf(&b, "\thttp_port %d\n\thttps_port %d\n}\n", httpPort, c.Port)
	addrs := []string{fmt.Sprintf("https://127.0.0.1:%d", c.Port)}
	for _, h := range c.Hosts {
		addrs = append(addrs, fmt.Sprintf("https://%s:%d", h, c.Port))
	}
	fmt.Fprintf(&b, "%s {\n", strings.Join(addrs, ", "))
	// Without bind, Caddy listens on every interface; the site address only matches Host.
	b.WriteString("\tbind 127.0.0.1\n\ttls internal\n")
	fmt.Fprintf(&b, "\trespond /heartbeat \"ok %s\" 200\n", c.Name)
	b.WriteString("\trespond /broken \"broken\" 503\n")
	b.WriteString("\tredir /redirect /heartbeat 302\n")
	b.WriteString("\tredir /redirect-away https://elsewhere.example.test/heartbeat 302\n")
	for _, d := range c.directives {
		fmt.Fprintf(&b, "\t%s\n", d)
	}
	fmt.Fprintf(&b, "\trespond \"hello from %s\" 200\n}\n", c.Name)
	for _, m := range c.manual {
		fmt.Fprintf(&b, "https://%s:%d {\n\tbind 127.0.0.1\n\ttls %s %s\n", m.Host, c.Port, m.CertFile, m.KeyFile)
		fmt.Fprintf(&b, "\trespond /heartbeat \"ok %s\" 200\n\trespond \"hello from %s\" 200\n}\n", c.Name, c.Name)
	}
	return b.String()
}

// URL is https://host:Port/path; host "" means 127.0.0.1.
func (c *Caddy) URL(host, path string) string {
	if host == "" {
		host = "127.0.0.1"
	}
	return "https://" + net.JoinHostPort(host, strconv.Itoa(c.Port)) + path
}

// Start starts the (stopped) Caddy again with the same config, storage and
// CA, and waits until it serves. Starting a running Caddy is a no-op.
func (c *Caddy) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errors.New("caddy closed")
	}
	if c.proc != nil {
		return nil
	}
	proc, err := daemon.Start(c.bin, []string{"run", "--adapter", "caddyfile", "--config", filepath.Join(c.Dir, "Caddyfile")}, daemon.Options{
		LogPath: filepath.Join(c.Dir, "caddy.log"),
		// HOME and XDG_* keep autosave.json and any default storage out of the real home.
		Env: []string{"HOME=" + c.Dir, "XDG_DATA_HOME=" + filepath.Join(c.Dir, "data"), "XDG_CONFIG_HOME=" + filepath.Join(c.Dir, "config")},
	})
	if err != nil {
		return fmt.Errorf("caddy: %w", err)
	}
	c.proc = proc
	if err := c.waitReady(proc.Done()); err != nil {
		c.killLocked()
		return err
	}
	return nil
}

func (c *Caddy) waitReady(exited <-chan struct{}) error {
	deadline := time.Now().Add(readyTimeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("caddy exited during start-up: %s", c.logTail())
		default:
		}
		if last = c.check(); last == nil {
			return nil
		}
		// Polling, not synchronising: Caddy has no readiness signal with admin off.
		t := time.NewTimer(25 * time.Millisecond)
		select {
		case <-t.C:
		case <-exited:
			t.Stop()
		}
	}
	return fmt.Errorf("caddy not ready after %s: %v; log: %s", readyTimeout, last, c.logTail())
}

// check does one GET of /heartbeat for 127.0.0.1 and for every host name,
// trusting only the local CA: Caddy issues each name's certificate on its
// own, and a handshake for a name whose certificate is not issued yet
// fails ("tls: internal error").
func (c *Caddy) check() error {
	for _, host := range append([]string{""}, c.Hosts...) {
		if err := c.checkHost(host); err != nil {
			if host != "" {
				return fmt.Errorf("%s: %w", host, err)
			}
			return err
		}
	}
	return nil
}

func (c *Caddy) checkHost(host string) error {
	pem, err := os.ReadFile(c.CAFile)
	if err != nil || len(pem) == 0 {
		return fmt.Errorf("no root CA yet at %s", c.CAFile)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return errors.New("root CA not PEM yet")
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Port))
	var d net.Dialer
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		}}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.URL(host, "/heartbeat"), nil)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode != http.StatusOK || !bytes.HasPrefix(body, []byte("ok ")) {
		return fmt.Errorf("heartbeat: status %d", resp.StatusCode)
	}
	return nil
}

func (c *Caddy) logTail() string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, "caddy.log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// Stop kills Caddy's process group (SIGKILL: a crash, not a graceful stop)
// and waits for it to exit, so the port refuses connections. Stopping a
// stopped Caddy is a no-op.
func (c *Caddy) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.killLocked()
	return nil
}

func (c *Caddy) killLocked() {
	if c.proc == nil {
		return
	}
	c.proc.Kill() // our own process group only: caddy leads it
	c.proc = nil
}

// Running reports whether the process is up.
func (c *Caddy) Running() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.proc != nil
}

// Close stops Caddy for good and removes Dir when New made it. Idempotent.
func (c *Caddy) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.killLocked()
	c.closed = true
	return c.cleanupDir()
}

func (c *Caddy) cleanupDir() error {
	if !c.ownDir {
		return nil
	}
	c.ownDir = false
	return os.RemoveAll(c.Dir)
}

func freePort() (int, error) {
	p, err := daemon.FreePorts(1)
	if err != nil {
		return 0, err
	}
	return p[0], nil
}
