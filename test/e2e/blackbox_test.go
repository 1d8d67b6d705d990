package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/drwatch/drwatch/test/caddytest"
	"github.com/drwatch/drwatch/test/dnsservers"
)

// blackbox is a running prometheus-blackbox-exporter whose module
// "https_site" probes one Caddy over HTTPS as drwatch's lms probe does:
// GET https://lms.example.test/heartbeat dialled at the Caddy's address,
// the certificate checked against the Caddy's CA, 200 expected.
type blackbox struct {
	cmd    *exec.Cmd
	addr   string // the exporter's web address
	target string // the probe target URL
}

// startBlackbox starts the exporter on a free loopback port. The test fails,
// naming the Debian package, when the binary is missing.
func startBlackbox(tb testing.TB, site *caddytest.Caddy, timeout time.Duration) *blackbox {
	tb.Helper()
	bin, err := exec.LookPath("prometheus-blackbox-exporter")
	if err != nil {
		if bin, err = exec.LookPath("blackbox_exporter"); err != nil {
			tb.Fatal("prometheus-blackbox-exporter not found in PATH: install Debian package prometheus-blackbox-exporter (make install-test-deps)")
		}
	}
	dir := tb.TempDir()
	host := strings.TrimSuffix(Name, ".")
	conf := fmt.Sprintf(`modules:
  https_site:
    prober: http
    timeout: %s
    http:
      method: GET
      valid_status_codes: [200]
      preferred_ip_protocol: ip4
      headers: { Host: %q }
      tls_config: { ca_file: %q, server_name: %q }
`, timeout, host, site.CAFile, host)
	cfg := filepath.Join(dir, "blackbox.yml")
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		tb.Fatal(err)
	}
	port, err := dnsservers.FreePort()
	if err != nil {
		tb.Fatal(err)
	}
	bb := &blackbox{addr: fmt.Sprintf("127.0.0.1:%d", port), target: "https://" + site.Addr + "/heartbeat"}
	logf, err := os.Create(filepath.Join(dir, "blackbox.log"))
	if err != nil {
		tb.Fatal(err)
	}
	bb.cmd = exec.Command(bin, "--config.file="+cfg, "--web.listen-address="+bb.addr, "--log.level=warn")
	bb.cmd.Stdout, bb.cmd.Stderr = logf, logf
	bb.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := bb.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = bb.cmd.Wait(); logf.Close(); close(done) }()
	tb.Cleanup(func() { _ = syscall.Kill(-bb.cmd.Process.Pid, syscall.SIGKILL); <-done })
	var last string
	if !Within(20*time.Second, func() bool {
		ok, msg := bb.probe(http.DefaultClient)
		last = msg
		return ok
	}) {
		b, _ := os.ReadFile(filepath.Join(dir, "blackbox.log"))
		tb.Fatalf("blackbox exporter never probed %s successfully: %s\n%s", bb.target, last, tail(string(b), 20))
	}
	return bb
}

// probe asks the exporter for one probe of the target and reports whether
// it succeeded (probe_success 1).
func (bb *blackbox) probe(c *http.Client) (bool, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	u := "http://" + bb.addr + "/probe?module=https_site&target=" + url.QueryEscape(bb.target)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := c.Do(req)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Sprintf("http %d", resp.StatusCode)
	}
	if !strings.Contains(string(body), "\nprobe_success 1\n") {
		// The phases' durations say where it failed (a timeout shows as
		// a phase that ran to the module's timeout).
		var phases []string
		for _, l := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(l, "probe_http_duration_seconds{") || strings.HasPrefix(l, "probe_http_status_code ") {
				phases = append(phases, l)
			}
		}
		return false, "probe_success not 1: " + strings.Join(phases, "; ")
	}
	return true, ""
}

// driven counts the probes drive asked for, and keeps the first failure's
// reason.
type driven struct {
	ok, failed atomic.Int64
	mu         sync.Mutex
	first      string
}

func (d *driven) firstFailure() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.first
}

// drive probes the target through the exporter at rate probes per second
// until ctx ends, the way Prometheus drives it (one /probe request each),
// and counts how many succeeded and failed. The benchmark's own CPU for
// this is not counted: only the exporter's process is measured.
func (bb *blackbox) drive(ctx context.Context, rate int) (d *driven, wait func()) {
	d = &driven{}
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: rate}}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// Probe i is due at start + i/rate; a late loop catches up, so a
		// busy machine does not lower the rate (a ticker would drop ticks).
		start := time.Now()
		t := time.NewTimer(0)
		defer t.Stop()
		for i := 0; ; i++ {
			due := start.Add(time.Duration(i) * time.Second / time.Duration(rate))
			t.Reset(time.Until(due))
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				good, why := bb.probe(c)
				if good {
					d.ok.Add(1)
					return
				}
				d.failed.Add(1)
				d.mu.Lock()
				if d.first == "" {
					d.first = why
				}
				d.mu.Unlock()
			}()
		}
	}()
	return d, wg.Wait
}
