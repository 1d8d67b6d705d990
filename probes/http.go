package probes

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/drwatch/drwatch/internal/field"
)

// HTTPSpec configures an http probe: one request on a new connection, with
// the TLS certificate, the status and optionally the body checked.
type HTTPSpec struct {
	// URL is the http or https URL to fetch. Its host gives the TLS server
	// name (SNI), the name verified in the certificate and the Host header.
	// It must not carry credentials.
	URL string `yaml:"url" types:"http" doc:"http: the URL; its host gives SNI and the Host header."`
	// Method is GET (empty means GET) or HEAD. HEAD checks the status
	// without fetching a body, so it cannot go with BodyMatch.
	Method string `yaml:"method" types:"http" default:"GET" doc:"http: GET, or HEAD to check the status without fetching a body."`
	// ConnectTo, when set, is the host:port (or a bare host, keeping the URL's
	// port) that the TCP connection goes to instead of the URL's host. It is
	// the site's own address: after a DNS flip the URL's name points at the
	// other site, and the primary's probe must still reach the primary. The
	// configuration file wants host:port.
	ConnectTo string `yaml:"connect_to" types:"http" doc:"http: host:port to dial instead of resolving the URL, so the probe keeps reaching this site after the DNS flip."`
	// CAFile is a PEM bundle to trust instead of the system roots. It is
	// re-read when it changes on disk.
	CAFile string `yaml:"ca_file" types:"http,tcp,kubernetes,octavia" doc:"PEM bundle to trust instead of the system roots."`
	// ExpectStatus lists the statuses that count as up. Empty means [200].
	ExpectStatus []int `yaml:"expect_status" types:"http" default:"[200]" doc:"http: statuses that count as up."`
	// BodyMatch, when set, is a regular expression (RE2) the first
	// 64 KiB of the body must match.
	BodyMatch string `yaml:"body_match" types:"http" doc:"http: a regular expression the body must match."`
	// CertMinValidity fails the probe with ClassCertExpiry when the served
	// leaf certificate expires sooner than this. An expired certificate is
	// ClassCertExpiry whatever this is.
	CertMinValidity time.Duration `yaml:"cert_min_validity" types:"http,tcp" doc:"Fail when the served certificate expires sooner than this."`
	// FollowRedirects follows redirects to the same scheme, host and port
	// (at most 10). Redirects elsewhere are never followed: the 3xx is then
	// the status checked. When false, any 3xx is the status checked.
	FollowRedirects bool `yaml:"follow_redirects" types:"http" default:"false" doc:"http: follow redirects (same host only)."`
	// TLSResume, when > 0, lets the probes of one endpoint (address,
	// server name and roots) resume the TLS session of their last full
	// handshake, offering only the key exchange group the server chose
	// in it, until that handshake is TLSResume old; then the next run
	// makes a full handshake. A resumed handshake skips the certificate
	// chain, so a certificate the server starts serving is checked at
	// most TLSResume later; a failed run makes the next a full one. 0
	// makes a full handshake every run. See tlsresume.go.
	TLSResume time.Duration `yaml:"tls_resume" types:"http" default:"10s" doc:"http: resume the TLS session of the last full handshake for this long (a new certificate is checked at most this late; a failed probe makes the next a full handshake); 0s for a full handshake every run."`
	// Headers are extra request headers. They must hold no secrets; their
	// values never appear in results. Host is not allowed: it comes from
	// URL, and neither are Authorization and Cookie.
	Headers map[string]string `yaml:"headers" types:"http" doc:"http: extra request headers (no secrets)."`
}

// httpMaxBody bounds how much of a body is read and matched.
const httpMaxBody = 64 << 10

// httpMaxRedirects bounds same-host redirects when FollowRedirects is set.
const httpMaxRedirects = 10

// maxTLSResume bounds tls_resume: how late a certificate the server
// starts serving may be checked.
const maxTLSResume = time.Hour

// probeDefaultTimeout applies when neither ctx nor Spec.Timeout sets a deadline.
const probeDefaultTimeout = 10 * time.Second

// httpPrepared is an HTTPSpec checked and compiled for one run.
type httpPrepared struct {
	url    *url.URL
	method string
	expect []int
	body   *regexp.Regexp
}

// Validate reports every problem with the spec at once, with paths relative
// to the probe. It is pure: it does not read CAFile or resolve names.
func (h *HTTPSpec) Validate() field.Errors {
	_, es := h.prepare(false)
	return es
}

// configured is the configuration file's rules: the prober's, and
// connect_to with its port.
func (h *HTTPSpec) configured() field.Errors {
	_, es := h.prepare(true)
	return es
}

// files is the CA bundle, when set.
func (h *HTTPSpec) files() []field.File { return optionalFile("ca_file", h.CAFile) }

// prepare checks and compiles the spec; configured adds the configuration
// file's rule that connect_to carries a port.
func (h *HTTPSpec) prepare(configured bool) (httpPrepared, field.Errors) {
	var p httpPrepared
	var es field.Errors
	if required(&es, "url", h.URL) {
		u, err := url.Parse(h.URL)
		switch {
		case err != nil:
			es.Add("url", "not a URL: %v", err)
		case u.Scheme != "https" && u.Scheme != "http":
			es.Add("url", "scheme %q must be https or http", u.Scheme)
		case u.Hostname() == "":
			es.Add("url", "has no host")
		case u.User != nil:
			es.Add("url", "must not carry credentials")
		default:
			p.url = u
			if h.CertMinValidity > 0 && u.Scheme != "https" {
				es.Add("cert_min_validity", "needs an https url")
			}
		}
	}
	p.method = cmp.Or(h.Method, http.MethodGet)
	if h.Method != "" && h.Method != http.MethodGet && h.Method != http.MethodHead {
		es.Add("method", "%q must be GET or HEAD", h.Method)
	}
	if h.ConnectTo != "" {
		checkHostPort(&es, "connect_to", h.ConnectTo, !configured)
	}
	p.expect = h.ExpectStatus
	if len(p.expect) == 0 {
		p.expect = []int{http.StatusOK}
	}
	for _, s := range h.ExpectStatus {
		if s < 100 || s > 599 {
			es.Add("expect_status", "%d is not an HTTP status", s)
		}
	}
	if h.BodyMatch != "" {
		re, err := httpCompile(h.BodyMatch)
		if err != nil {
			es.Add("body_match", "not a regular expression: %v", err)
		}
		if h.Method == http.MethodHead {
			es.Add("body_match", "needs method GET: a HEAD answer has no body")
		}
		p.body = re
	}
	checkCertMinValidity(&es, h.CertMinValidity)
	switch {
	case h.TLSResume < 0:
		es.Add("tls_resume", "%s must not be negative", h.TLSResume)
	case h.TLSResume > maxTLSResume:
		es.Add("tls_resume", "%s is more than %s: a new certificate would go unchecked that long", h.TLSResume, maxTLSResume)
	}
	for _, k := range slices.Sorted(maps.Keys(h.Headers)) {
		switch v := h.Headers[k]; {
		case !httpValidHeaderName(k):
			es.Add("headers", "%q is not a valid header name", k)
		case strings.EqualFold(k, "Host"):
			es.Add("headers", "Host comes from the url")
		case strings.EqualFold(k, "authorization") || strings.EqualFold(k, "cookie"):
			es.Add("headers."+k, "credentials are not accepted in headers")
		case strings.ContainsAny(v, "\r\n\x00"):
			// The value is never echoed: headers may be close to secrets.
			es.Add("headers", "value of %q contains a line break", k)
		}
	}
	return p, es
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

// httpHostPort is u's host with its port, the scheme's when u has none.
func httpHostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	port := "443"
	if u.Scheme == "http" {
		port = "80"
	}
	return net.JoinHostPort(u.Hostname(), port)
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

func httpProbe(ctx context.Context, spec Spec) (res Result) {
	h := spec.HTTP
	if h == nil {
		return connFail(ClassConfig, "config", "http probe without an http spec")
	}
	p, es := h.prepare(false)
	if es != nil {
		return connFail(ClassConfig, "config", es.Error())
	}
	var roots *x509.CertPool
	var err error
	if h.CAFile != "" {
		if roots, err = connLoadCA(h.CAFile); err != nil {
			return connFail(ClassConfig, "config", err.Error())
		}
	}
	ctx, cancel := connWithTimeout(ctx, spec.Timeout)
	defer cancel()

	timer := &connPhaseTimer{}
	dialer := &net.Dialer{}
	connectTo := h.ConnectTo
	tlsCfg := &tls.Config{ServerName: p.url.Hostname(), RootCAs: roots, MinVersion: tls.VersionTLS12}
	handshake := func(tls.ConnectionState) {}
	if p.url.Scheme == "https" && h.TLSResume > 0 {
		ep := tlsEndpoint{target: httpDialTarget(connectTo, httpHostPort(p.url)), serverName: tlsCfg.ServerName, roots: roots}
		tlsSessions.config(tlsCfg, ep, h.TLSResume)
		handshake = func(st tls.ConnectionState) { tlsSessions.done(ep, st) }
		defer func() {
			if !res.OK {
				tlsSessions.forget(ep)
			}
		}()
	}
	transport := &http.Transport{
		// Proxy stays nil: a probe through an environment proxy would test the proxy.
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			target := httpDialTarget(connectTo, addr)
			timer.setTarget(target)
			return dialer.DialContext(ctx, network, target)
		},
		TLSClientConfig:        tlsCfg,
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
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, timer.trace()), p.method, p.url.String(), nil)
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

	res = Result{OK: true, Phases: timer.phases(), Detail: map[string]string{"status": strconv.Itoa(resp.StatusCode)}}
	if resp.TLS != nil {
		handshake(*resp.TLS)
	}
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
