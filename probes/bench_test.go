package probes

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The benchmark's TLS server runs in a child process (this test binary
// re-executed), so the CPU time measured with getrusage is the client's only.
const benchServerEnv = "DRWATCH_BENCH_TLS_SERVER"

// TestBenchTLSServerProcess is the child's body; it does nothing unless
// started by benchStartServer.
func TestBenchTLSServerProcess(t *testing.T) {
	dir := os.Getenv(benchServerEnv)
	if dir == "" {
		return
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "load key pair:", err)
		os.Exit(1)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "listen:", err)
		os.Exit(1)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })}
	go srv.Serve(l)
	fmt.Println(l.Addr().String())
	// Exit when the parent closes stdin (or dies).
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// benchStartServer starts the child TLS server with a leaf for
// lms.example.test and returns its address and the CA file.
func benchStartServer(b *testing.B) (addr, caFile string) {
	b.Helper()
	pki := hpNewPKI(b)
	leaf := pki.leaf(b, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour), "lms.example.test")
	dir := b.TempDir()
	keyDER, err := x509.MarshalPKCS8PrivateKey(leaf.PrivateKey)
	if err != nil {
		b.Fatalf("marshal key: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cert.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Certificate[0]}), 0o600); err != nil {
		b.Fatalf("write cert: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "key.pem"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		b.Fatalf("write key: %v", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestBenchTLSServerProcess$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), benchServerEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatalf("stdin pipe: %v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatalf("stdout pipe: %v", err)
	}
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		b.Fatalf("start server: %v", err)
	}
	b.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("server address: %v", err)
	}
	return strings.TrimSpace(line), pki.caFile
}

func benchCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkHTTPSProbe measures HTTPS probes (new connection and full
// handshake each time) against a local Go TLS server, and their client CPU
// against a bare net/http loop doing the same GET on a new connection.
func BenchmarkHTTPSProbe(b *testing.B) {
	addr, caFile := benchStartServer(b)
	pem, err := os.ReadFile(caFile)
	if err != nil {
		b.Fatalf("read ca: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	const url = "https://lms.example.test/heartbeat"
	var d net.Dialer
	bare := func() {
		tr := &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: pool, ServerName: "lms.example.test"},
			DisableKeepAlives: true,
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return d.DialContext(ctx, network, addr)
			},
		}
		resp, err := (&http.Client{Transport: tr}).Get(url)
		if err != nil {
			b.Fatalf("bare GET: %v", err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
		tr.CloseIdleConnections()
	}
	spec := hpSpec(HTTPSpec{URL: url, ConnectTo: addr, CAFile: caFile}, 5*time.Second)
	logger := slog.New(slog.DiscardHandler)

	cpu0 := benchCPU()
	for range b.N {
		bare()
	}
	bareCPU := benchCPU() - cpu0

	b.ResetTimer()
	cpu0, t0 := benchCPU(), time.Now()
	for range b.N {
		if r := ProbeHTTP(context.Background(), spec, logger); !r.OK {
			b.Fatalf("probe: %s %s", r.Class, r.Reason)
		}
	}
	wall, probeCPU := time.Since(t0), benchCPU()-cpu0
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(n/wall.Seconds(), "probes/s")
	b.ReportMetric(n/probeCPU.Seconds(), "probes/cpu_s")
	b.ReportMetric(float64(probeCPU.Microseconds())/n, "cpu_us/probe")
	b.ReportMetric(float64(bareCPU.Microseconds())/n, "bare_cpu_us/op")
	b.ReportMetric(probeCPU.Seconds()/bareCPU.Seconds(), "x_vs_bare_nethttp")
}

// BenchmarkSchedulerJitter measures how late probes start against their
// intended time (tick + fixed jitter) with 1,000 no-op targets at a 1s
// interval, over at least 3 rounds, and compares the p99 with a bare loop
// of time.Timer waits for the same 1,000 offsets (the floor set by the Go
// runtime and the machine's load), run at the same time.
func BenchmarkSchedulerJitter(b *testing.B) {
	const interval = time.Second
	noop := func(context.Context, Spec, *slog.Logger) Result { return Result{OK: true} }
	sites := []SiteSpec{{Site: "primary"}, {Site: "backup"}}
	for i := range 1000 {
		s := &sites[i%2]
		s.Probes = append(s.Probes, Spec{Name: fmt.Sprintf("target-%04d", i), Type: "noop"})
	}
	opts := SchedulerOptions{Interval: interval, Probers: map[string]ProbeFunc{"noop": noop}}
	s, err := NewScheduler(sites, opts)
	if err != nil {
		b.Fatalf("NewScheduler: %v", err)
	}
	rounds := max(b.N, 3)

	// Baseline, run alongside so both see the same machine load: one
	// goroutine waking at each target's tick + offset.
	var offsets []time.Duration
	for _, p := range s.probes {
		offsets = append(offsets, p.offset)
	}
	slices.Sort(offsets)
	var bare []time.Duration
	bareDone := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	b.ResetTimer()
	go func() { done <- s.Run(ctx) }()
	go func() {
		defer close(bareDone)
		start := time.Now()
		timer := time.NewTimer(0)
		for k := range rounds {
			tick := start.Add(time.Duration(k) * interval)
			for _, off := range offsets {
				at := tick.Add(off)
				timer.Reset(time.Until(at))
				<-timer.C
				bare = append(bare, time.Since(at))
			}
		}
	}()
	var late []time.Duration
	for range rounds {
		r := <-s.Rounds()
		for _, nr := range r.Results {
			late = append(late, nr.Started.Sub(nr.Scheduled))
		}
	}
	cancel()
	<-done
	<-bareDone
	b.StopTimer()
	p := func(d []time.Duration, q float64) time.Duration {
		slices.Sort(d)
		return d[int(q*float64(len(d)-1))]
	}
	b.ReportMetric(float64(p(late, 0.5).Microseconds())/1000, "p50_late_ms")
	b.ReportMetric(float64(p(late, 0.99).Microseconds())/1000, "p99_late_ms")
	b.ReportMetric(float64(late[len(late)-1].Microseconds())/1000, "max_late_ms")
	b.ReportMetric(p(late, 0.99).Seconds()/interval.Seconds(), "p99_late_vs_interval")
	b.ReportMetric(float64(p(bare, 0.99).Microseconds())/1000, "bare_timer_p99_late_ms")
	b.ReportMetric(float64(p(late, 0.99))/float64(max(p(bare, 0.99), time.Microsecond)), "p99_x_vs_bare_timer")
	if st := s.Stats(); st.Dropped != 0 || st.Skipped != 0 {
		b.Fatalf("got stats %+v, want no dropped rounds or skipped ticks", st)
	}
}

// BenchmarkHTTPSProbeTLSResume measures the client CPU of HTTPS probes
// that resume their endpoint's session (tls_resume 1m: one full handshake,
// then resumptions with the learned group) against probes that make a
// full handshake every run, both on a new connection each time, in
// alternating batches against the same local Go TLS server, so that both
// see the same machine.
func BenchmarkHTTPSProbeTLSResume(b *testing.B) {
	addr, caFile := benchStartServer(b)
	const url = "https://lms.example.test/heartbeat"
	full := hpSpec(HTTPSpec{URL: url, ConnectTo: addr, CAFile: caFile}, 5*time.Second)
	resumed := hpSpec(HTTPSpec{URL: url, ConnectTo: addr, CAFile: caFile, TLSResume: time.Minute}, 5*time.Second)
	logger := slog.New(slog.DiscardHandler)
	run := func(spec Spec, n int) time.Duration {
		cpu0 := benchCPU()
		for range n {
			if r := ProbeHTTP(context.Background(), spec, logger); !r.OK {
				b.Fatalf("probe: %s %s", r.Class, r.Reason)
			}
		}
		return benchCPU() - cpu0
	}
	var fullCPU, resumedCPU time.Duration
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(50, b.N-done)
		fullCPU += run(full, n)
		resumedCPU += run(resumed, n)
		done += n
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(fullCPU.Microseconds())/n, "full_cpu_us/probe")
	b.ReportMetric(float64(resumedCPU.Microseconds())/n, "resumed_cpu_us/probe")
	b.ReportMetric(resumedCPU.Seconds()/fullCPU.Seconds(), "x_resumed_vs_full")
}
