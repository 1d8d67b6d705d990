package probes

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// HTTPSpec configures an http probe: one request on a new connection, with
// the TLS certificate, the status and optionally the body checked.
type HTTPSpec struct {
	// URL is the http or https URL to fetch. Its host gives the TLS server
	// name (SNI), the name verified in the certificate and the Host header.
	// It must not carry credentials.
	URL string
	// ConnectTo, when set, is the host:port (or a bare host, keeping the URL's
	// port) that the TCP connection goes to instead of the URL's host. It is
	// the site's own address: after a DNS flip the URL's name points at the
	// other site, and the primary's probe must still reach the primary.
	ConnectTo string
	// CAFile is a PEM bundle to trust instead of the system roots. It is
	// re-read when it changes on disk.
	CAFile string
	// ExpectStatus lists the statuses that count as up. Empty means [200].
	ExpectStatus []int
	// BodyMatch, when set, is a regular expression (RE2) the first
	// 64 KiB of the body must match.
	BodyMatch string
	// CertMinValidity fails the probe with ClassCertExpiry when the served
	// leaf certificate expires sooner than this. An expired certificate is
	// ClassCertExpiry whatever this is.
	CertMinValidity time.Duration
	// Headers are extra request headers. They must hold no secrets; their
	// values never appear in results. Host is not allowed: it comes from URL.
	Headers map[string]string
	// FollowRedirects follows redirects to the same scheme, host and port
	// (at most 10). Redirects elsewhere are never followed: the 3xx is then
	// the status checked. When false, any 3xx is the status checked.
	FollowRedirects bool
}

// httpMaxBody bounds how much of a body is read and matched.
const httpMaxBody = 64 << 10

// httpMaxRedirects bounds same-host redirects when FollowRedirects is set.
const httpMaxRedirects = 10

// probeDefaultTimeout applies when neither ctx nor Spec.Timeout sets a deadline.
const probeDefaultTimeout = 10 * time.Second

// httpPrepared is an HTTPSpec checked and compiled for one run.
type httpPrepared struct {
	url    *url.URL
	expect []int
	body   *regexp.Regexp
}

// Validate reports every problem with the spec at once (errors.Join). It is
// pure: it does not read CAFile or resolve names.
func (h *HTTPSpec) Validate() error {
	_, err := h.prepare()
	return err
}

func (h *HTTPSpec) prepare() (httpPrepared, error) {
	var p httpPrepared
	var errs []error
	u, err := url.Parse(h.URL)
	switch {
	case h.URL == "":
		errs = append(errs, errors.New("url: must be set"))
	case err != nil:
		errs = append(errs, fmt.Errorf("url: %w", err))
	case u.Scheme != "http" && u.Scheme != "https":
		errs = append(errs, fmt.Errorf("url: scheme %q must be http or https", u.Scheme))
	case u.Hostname() == "":
		errs = append(errs, errors.New("url: host must be set"))
	case u.User != nil:
		errs = append(errs, errors.New("url: must not carry credentials"))
	default:
		p.url = u
		if h.CertMinValidity > 0 && u.Scheme != "https" {
			errs = append(errs, errors.New("cert_min_validity: needs an https url"))
		}
	}
	if h.ConnectTo != "" {
		if err := connCheckHostPort(h.ConnectTo, true); err != nil {
			errs = append(errs, fmt.Errorf("connect_to: %w", err))
		}
	}
	p.expect = h.ExpectStatus
	if len(p.expect) == 0 {
		p.expect = []int{http.StatusOK}
	}
	for _, s := range h.ExpectStatus {
		if s < 100 || s > 599 {
			errs = append(errs, fmt.Errorf("expect_status: %d is not an http status", s))
		}
	}
	if h.BodyMatch != "" {
		re, err := httpCompile(h.BodyMatch)
		if err != nil {
			errs = append(errs, fmt.Errorf("body_match: %w", err))
		}
		p.body = re
	}
	if h.CertMinValidity < 0 {
		errs = append(errs, fmt.Errorf("cert_min_validity: %s must not be negative", h.CertMinValidity))
	}
	for k, v := range h.Headers {
		switch {
		case !httpValidHeaderName(k):
			errs = append(errs, fmt.Errorf("headers: %q is not a valid header name", k))
		case strings.EqualFold(k, "Host"):
			errs = append(errs, errors.New("headers: Host comes from the url"))
		case strings.ContainsAny(v, "\r\n\x00"):
			// The value is never echoed: headers may be close to secrets.
			errs = append(errs, fmt.Errorf("headers: value of %q contains a line break", k))
		}
	}
	return p, errors.Join(errs...)
}

// httpRegexps caches compiled BodyMatch patterns, so a probe does not compile
// its pattern every run. Patterns come from configuration, so it stays small.
var httpRegexps sync.Map // string -> *regexp.Regexp

func httpCompile(pattern string) (*regexp.Regexp, error) {
	if re, ok := httpRegexps.Load(pattern); ok {
		return re.(*regexp.Regexp), nil
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	httpRegexps.Store(pattern, re)
	return re, nil
}

func httpValidHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		// RFC 9110 §5.6.2 token characters.
		if r > 0x7e || r <= ' ' || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", r) {
			return false
		}
	}
	return true
}

// connCheckHostPort checks host:port, or a bare host when portOptional.
func connCheckHostPort(s string, portOptional bool) error {
	if host, port, err := net.SplitHostPort(s); err == nil {
		if host == "" {
			return fmt.Errorf("%q has no host", s)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q has an invalid port", s)
		}
		return nil
	}
	h := strings.Trim(s, "[]")
	if !portOptional || h == "" || strings.Contains(h, ":") && net.ParseIP(h) == nil {
		return fmt.Errorf("%q is not host:port", s)
	}
	return nil
}

// httpDialTarget is where the connection goes: ConnectTo, with the URL's port
// when ConnectTo has none.
func httpDialTarget(connectTo, addr string) string {
	if connectTo == "" {
		return addr
	}
	if _, _, err := net.SplitHostPort(connectTo); err == nil {
		return connectTo
	}
	_, port, _ := net.SplitHostPort(addr)
	return net.JoinHostPort(strings.Trim(connectTo, "[]"), port)
}

// ProbeHTTP is the http prober. It makes one request on a fresh connection
// (a fresh Transport with keep-alives off), so a load balancer that stopped
// accepting connections shows up, and it times the dns, connect, tls and
// first_byte phases. It honours ctx's deadline, or else spec.Timeout.
func ProbeHTTP(ctx context.Context, spec Spec, logger *slog.Logger) Result {
	start := time.Now()
	res := httpProbe(ctx, spec)
	res.Duration = time.Since(start)
	if res.OK {
		res.Class, res.Phase, res.Reason = ClassNone, "", ""
	}
	return res
}

func httpProbe(ctx context.Context, spec Spec) Result {
	h := spec.HTTP
	if h == nil {
		return connFail(ClassConfig, "config", "http probe without an http spec")
	}
	p, err := h.prepare()
	if err != nil {
		return connFail(ClassConfig, "config", err.Error())
	}
	var roots *x509.CertPool
	if h.CAFile != "" {
		if roots, err = connLoadCA(h.CAFile); err != nil {
			return connFail(ClassConfig, "config", err.Error())
		}
	}
	ctx, cancel := connWithTimeout(ctx, spec.Timeout)
	defer cancel()

	timer := &connPhaseTimer{begun: time.Now()}
	dialer := &net.Dialer{}
	connectTo := h.ConnectTo
	transport := &http.Transport{
		// Proxy stays nil: a probe through an environment proxy would test the proxy.
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			target := httpDialTarget(connectTo, addr)
			timer.setTarget(target)
			return dialer.DialContext(ctx, network, target)
		},
		TLSClientConfig: &tls.Config{
			ServerName: p.url.Hostname(),
			RootCAs:    roots,
			MinVersion: tls.VersionTLS12,
		},
		DisableKeepAlives:      true,
		DisableCompression:     true,
		MaxResponseHeaderBytes: 64 << 10,
	}
	defer transport.CloseIdleConnections()

	var stopped string // why a redirect was not followed, for the reason
	client := &http.Client{
		Transport: transport,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			first := via[0].URL
			if !h.FollowRedirects {
				return http.ErrUseLastResponse
			}
			if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
				stopped = "redirect to another host not followed"
				return http.ErrUseLastResponse
			}
			if len(via) > httpMaxRedirects {
				stopped = fmt.Sprintf("more than %d redirects", httpMaxRedirects)
				return http.ErrUseLastResponse
			}
			return nil
		},
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, timer.trace()), http.MethodGet, p.url.String(), nil)
	if err != nil {
		return connFail(ClassConfig, "config", fmt.Sprintf("build request: %v", err))
	}
	for k, v := range h.Headers {
		req.Header.Set(k, v)
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "drwatch-probe")
	}

	resp, err := client.Do(req)
	if err != nil {
		res := connClassify(ctx, err, timer)
		res.Phases = timer.phases()
		return res
	}
	defer resp.Body.Close()

	res := Result{OK: true, Phases: timer.phases(), Detail: map[string]string{"status": strconv.Itoa(resp.StatusCode)}}
	if resp.TLS != nil && len(resp.TLS.PeerCertificates) > 0 {
		leaf := resp.TLS.PeerCertificates[0]
		res.CertExpiry = leaf.NotAfter
		if bad := connCheckValidity(leaf, h.CertMinValidity, time.Now()); bad != nil {
			bad.Phases, bad.CertExpiry, bad.Detail = res.Phases, res.CertExpiry, res.Detail
			return *bad
		}
	}
	if !slices.Contains(p.expect, resp.StatusCode) {
		reason := fmt.Sprintf("status %d, want %v", resp.StatusCode, p.expect)
		if stopped != "" {
			reason += " (" + stopped + ")"
		}
		res.OK, res.Class, res.Phase, res.Reason = false, ClassStatus, "status", reason
		return res
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, httpMaxBody))
	if err != nil {
		timer.markFailing("body")
		bad := connClassify(ctx, err, timer)
		bad.Phases, bad.CertExpiry, bad.Detail = timer.phases(), res.CertExpiry, res.Detail
		return bad
	}
	if p.body != nil && !p.body.Match(body) {
		res.OK, res.Class, res.Phase = false, ClassBody, "body"
		res.Reason = fmt.Sprintf("body does not match %q (starts %q)", h.BodyMatch, httpExcerpt(body, 40))
	}
	return res
}

// httpExcerpt is a short, printable prefix of a body, for a failure reason.
func httpExcerpt(b []byte, n int) string {
	var sb strings.Builder
	for _, r := range string(b) {
		if sb.Len() >= n {
			sb.WriteString("…")
			break
		}
		if r < ' ' || r == 0x7f || r == '\uFFFD' {
			r = '.'
		}
		sb.WriteRune(r)
	}
	return sb.String()
}

// connWithTimeout applies timeout (or probeDefaultTimeout) when ctx has no deadline.
func connWithTimeout(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	if timeout <= 0 {
		timeout = probeDefaultTimeout
	}
	return context.WithTimeout(ctx, timeout)
}

func connFail(class Class, phase, reason string) Result {
	return Result{Class: class, Phase: phase, Reason: reason}
}

// connCheckValidity returns a cert_expiry failure when leaf expires within min
// (or has expired), nil otherwise.
func connCheckValidity(leaf *x509.Certificate, min time.Duration, now time.Time) *Result {
	left := leaf.NotAfter.Sub(now)
	switch {
	case left <= 0:
		r := connFail(ClassCertExpiry, "tls", fmt.Sprintf("certificate expired at %s", leaf.NotAfter.UTC().Format(time.RFC3339)))
		return &r
	case min > 0 && left < min:
		r := connFail(ClassCertExpiry, "tls", fmt.Sprintf("certificate expires in %s (at %s), want at least %s",
			left.Round(time.Second), leaf.NotAfter.UTC().Format(time.RFC3339), min))
		return &r
	}
	return nil
}

// connCAEntry caches one parsed CA bundle, keyed by path and checked against
// the file's size and modification time, so a rotated bundle is picked up
// without parsing PEM on every probe.
type connCAEntry struct {
	mod  time.Time
	size int64
	pool *x509.CertPool
}

var connCACache sync.Map // path -> connCAEntry

// connLoadCA returns the pool of the PEM bundle at path.
func connLoadCA(path string) (*x509.CertPool, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("ca_file: %w", err)
	}
	if e, ok := connCACache.Load(path); ok {
		e := e.(connCAEntry)
		if e.mod.Equal(fi.ModTime()) && e.size == fi.Size() {
			return e.pool, nil
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("ca_file %s: no PEM certificates", path)
	}
	connCACache.Store(path, connCAEntry{mod: fi.ModTime(), size: fi.Size(), pool: pool})
	return pool, nil
}

// connPhaseTimer collects per-phase durations from httptrace hooks, which
// the transport may call from its dialing goroutine, hence the mutex. A
// phase seen more than once (redirects) accumulates.
type connPhaseTimer struct {
	begun   time.Time // the probe's start, for "timeout after"
	mu      sync.Mutex
	started map[string]time.Time
	dur     map[string]time.Duration
	current string // the phase begun and not yet ended
	target  string // the address dialled
	reached map[string]bool
}

func (t *connPhaseTimer) setTarget(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.target = addr
}

func (t *connPhaseTimer) beginPhase(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.started == nil {
		t.started = map[string]time.Time{}
		t.dur = map[string]time.Duration{}
		t.reached = map[string]bool{}
	}
	t.started[name] = time.Now()
	t.current = name
	t.reached[name] = true
}

// endPhase ends name; a phase that ended in an error stays the one a
// following failure is attributed to.
func (t *connPhaseTimer) endPhase(name string, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.started[name]
	if !ok {
		return
	}
	t.dur[name] += time.Since(s)
	delete(t.started, name)
	if t.current == name && err == nil {
		t.current = ""
	}
}

// markFailing makes name the phase a following error is attributed to.
func (t *connPhaseTimer) markFailing(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.current = name
}

// failedPhase is the phase in progress, or the first one not yet reached.
func (t *connPhaseTimer) failedPhase() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.current != "" {
		return t.current
	}
	for _, p := range []string{"connect", "tls", "first_byte", "body"} {
		if !t.reached[p] {
			if p == "tls" && t.reached["first_byte"] {
				continue
			}
			return p
		}
	}
	return "body"
}

func (t *connPhaseTimer) phases() map[string]time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]time.Duration, len(t.dur))
	for k, v := range t.dur {
		out[k] = v
	}
	return out
}

func (t *connPhaseTimer) dialTarget() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.target
}

func (t *connPhaseTimer) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		DNSStart: func(httptrace.DNSStartInfo) { t.beginPhase("dns") },
		DNSDone:  func(i httptrace.DNSDoneInfo) { t.endPhase("dns", i.Err) },
		ConnectStart: func(_, addr string) {
			t.beginPhase("connect")
			t.setTarget(addr)
		},
		ConnectDone:       func(_, _ string, err error) { t.endPhase("connect", err) },
		TLSHandshakeStart: func() { t.beginPhase("tls") },
		TLSHandshakeDone:  func(_ tls.ConnectionState, err error) { t.endPhase("tls", err) },
		WroteRequest:      func(httptrace.WroteRequestInfo) { t.beginPhase("first_byte") },
		GotFirstResponseByte: func() {
			t.endPhase("first_byte", nil)
		},
	}
}

// connPhaseText names a phase in a reason.
func connPhaseText(phase, target string) string {
	switch phase {
	case "dns":
		return "dns lookup"
	case "connect":
		if target != "" {
			return "connect " + target
		}
		return "connect"
	case "tls":
		return "tls handshake"
	case "first_byte":
		return "waiting for response"
	case "body":
		return "read body"
	}
	return phase
}

// connClassify turns a transport error into a failed Result with its class,
// phase and a short reason free of URLs (which may carry query secrets).
func connClassify(ctx context.Context, err error, t *connPhaseTimer) Result {
	phase := t.failedPhase()
	text := connPhaseText(phase, t.dialTarget())
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	var (
		dnsErr   *net.DNSError
		verr     *tls.CertificateVerificationError
		invalid  x509.CertificateInvalidError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		netErr   net.Error
	)
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) ||
		errors.As(err, &netErr) && netErr.Timeout():
		r := connFail(ClassTimeout, phase, text+": timeout")
		if !t.begun.IsZero() {
			r.Reason += " after " + time.Since(t.begun).Round(time.Millisecond).String()
		}
		return r
	case errors.Is(err, context.Canceled):
		return connFail(ClassError, phase, text+": cancelled")
	case errors.As(err, &dnsErr):
		return connFail(ClassDNS, "dns", fmt.Sprintf("dns lookup %s: %s", dnsErr.Name, dnsErr.Err))
	case errors.As(err, &verr):
		r := connFail(ClassTLS, "tls", "tls handshake: "+verr.Err.Error())
		if len(verr.UnverifiedCertificates) > 0 {
			leaf := verr.UnverifiedCertificates[0]
			r.CertExpiry = leaf.NotAfter
			if errors.As(verr.Err, &invalid) && invalid.Reason == x509.Expired && !time.Now().Before(leaf.NotAfter) {
				r.Class = ClassCertExpiry
				r.Reason = fmt.Sprintf("tls handshake: certificate expired at %s", leaf.NotAfter.UTC().Format(time.RFC3339))
			}
		}
		return r
	case errors.As(err, &invalid) || errors.As(err, &unknown) || errors.As(err, &hostname):
		return connFail(ClassTLS, "tls", "tls handshake: "+err.Error())
	case errors.Is(err, syscall.ECONNREFUSED):
		return connFail(ClassRefused, phase, text+": connection refused")
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE):
		return connFail(ClassRefused, phase, text+": connection reset by peer")
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		if phase == "body" {
			return connFail(ClassError, phase, text+": connection closed early")
		}
		return connFail(ClassRefused, phase, text+": connection closed by peer")
	case phase == "tls":
		return connFail(ClassTLS, phase, "tls handshake: "+connErrText(err))
	}
	return connFail(ClassError, phase, text+": "+connErrText(err))
}

// connErrText is err's text without the net.OpError preamble ("dial tcp ...:").
func connErrText(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		var sys *os.SyscallError
		if errors.As(op.Err, &sys) {
			return sys.Err.Error()
		}
		return op.Err.Error()
	}
	return err.Error()
}
