package probes

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httptrace"
	"net/url"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/drwatch/drwatch/internal/regularfile"
)

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
	fi, statErr := os.Stat(path)
	if e, ok := connCACache.Load(path); ok && statErr == nil {
		e := e.(connCAEntry)
		if e.mod.Equal(fi.ModTime()) && e.size == fi.Size() {
			return e.pool, nil
		}
	}
	data, err := regularfile.Read("ca_file", path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, errors.New("ca_file: no PEM certificates")
	}
	if statErr == nil {
		connCACache.Store(path, connCAEntry{mod: fi.ModTime(), size: fi.Size(), pool: pool})
	}
	return pool, nil
}

// connPhaseTimer collects per-phase durations from httptrace hooks, which
// the transport may call from its dialing goroutine, hence the mutex. A
// phase seen more than once (redirects) accumulates.
type connPhaseTimer struct {
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
		// The reason names no elapsed time (the result's Duration has it):
		// a probe that times out round after round then gives the same
		// result each time, and a lean report need not resend it.
		return connFail(ClassTimeout, phase, text+": timeout")
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
