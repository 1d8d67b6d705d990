package dnsprovider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/miekg/dns"
)

// Sentinel errors. Match them with errors.Is; never match error strings.
var (
	// ErrConflict: a compare-and-swap prerequisite failed (the zone is not
	// what the caller expected). Carried by *ConflictError.
	ErrConflict = errors.New("compare-and-swap conflict")
	// ErrAuth: the server refused our credentials (TSIG NOTAUTH, BADSIG,
	// BADKEY, BADTIME; HTTP 401/403). Terminal.
	ErrAuth = errors.New("authentication refused")
	// ErrRefused: the server's policy refused the request (REFUSED). Terminal.
	ErrRefused = errors.New("refused by server policy")
	// ErrWrongZone: the server answered for another zone (NOTZONE, a SOA or
	// answer outside the zone, NOTAUTH for an unsigned request). Terminal.
	ErrWrongZone = errors.New("server answered for the wrong zone")
	// ErrBadReply: a malformed or mismatched reply (wrong ID, wrong question,
	// not a response, unsigned or badly signed when a signature is due).
	// Retryable: a compare-and-swap write is safe to resend.
	ErrBadReply = errors.New("bad reply")
	// ErrBadFence: the fence TXT record is not "gen=N".
	ErrBadFence = errors.New("malformed fence record")
	// ErrNotPropagated: some authoritative server did not serve the desired
	// RRsets before the verification timeout.
	ErrNotPropagated = errors.New("not served by every authoritative server")
	// ErrConfig: the configuration is unusable. Terminal.
	ErrConfig = errors.New("invalid dns provider configuration")
	// ErrTooLarge: the update does not fit in one DNS message (64 KiB), so
	// it cannot be atomic. Terminal: split the managed records.
	ErrTooLarge = errors.New("update too large for one dns message")
	// ErrUnsupported: the provider cannot do what was asked.
	ErrUnsupported = errors.New("not supported by this provider")
	// ErrZoneError: the provider accepted the writes but reports the zone
	// in an error state (Designate's status ERROR: a change did not reach
	// every name server), so they are not known to be served. Retryable:
	// it goes away when the provider recovers the zone.
	ErrZoneError = errors.New("zone in error state at the provider")
)

// ConflictError is returned by Swap when a prerequisite fails. It carries a
// read of what the zone holds now, taken right after the failure.
type ConflictError struct {
	// Rcode is the server's answer ("NXRRSET", "YXRRSET", "NXDOMAIN", "YXDOMAIN"),
	// or for Designate "VERSION" (a recordset moved on) or "DUPLICATE" (409).
	Rcode string
	// Current holds the expected RRsets as they are now (same order as the
	// Swap's expected); nil if the re-read failed.
	Current []RRset
	// Fence is the generation the fence holds now (0: none).
	Fence uint64
	// ReadErr is set when the re-read after the conflict failed.
	ReadErr error
}

func (e *ConflictError) Error() string {
	if e.ReadErr != nil {
		return fmt.Sprintf("prerequisite failed (%s); re-read failed: %v", e.Rcode, e.ReadErr)
	}
	return fmt.Sprintf("prerequisite failed (%s): zone now at fence gen=%d", e.Rcode, e.Fence)
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// RcodeError is a DNS answer with an error rcode not covered by a more
// specific error.
type RcodeError struct {
	Op    string // "query" or "update"
	Rcode int
}

func (e *RcodeError) Error() string {
	return fmt.Sprintf("%s answered %s", e.Op, rcodeName(e.Rcode))
}

// Is maps rcodes onto the sentinels callers act on.
func (e *RcodeError) Is(target error) bool {
	switch target {
	case ErrRefused:
		return e.Rcode == dns.RcodeRefused
	case ErrWrongZone:
		return e.Rcode == dns.RcodeNotZone
	}
	return false
}

// AuthError is a refused credential. It names the key, never the secret.
type AuthError struct {
	Key    string // key name or credential label
	Reason string // "NOTAUTH/BADSIG", "HTTP 401", ...
}

func (e *AuthError) Error() string { return fmt.Sprintf("%s rejected: %s", e.Key, e.Reason) }

// Is makes errors.Is(err, ErrAuth) true.
func (e *AuthError) Is(target error) bool { return target == ErrAuth }

func rcodeName(rc int) string {
	if s, ok := dns.RcodeToString[rc]; ok {
		return s
	}
	return fmt.Sprintf("RCODE%d", rc)
}

// IsTerminal reports whether err will not go away by retrying: refused
// credentials, server policy, wrong zone, bad configuration, unsupported
// operations, FORMERR/NOTIMP. A human must act.
func IsTerminal(err error) bool {
	if err == nil {
		return false
	}
	var rc *RcodeError
	if errors.As(err, &rc) && (rc.Rcode == dns.RcodeFormatError || rc.Rcode == dns.RcodeNotImplemented) {
		return true
	}
	for _, s := range []error{ErrAuth, ErrRefused, ErrWrongZone, ErrConfig, ErrUnsupported, ErrBadFence, ErrTooLarge} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// IsRetryable reports whether the same request may succeed later: SERVFAIL,
// timeouts, refused or reset connections, bad replies, a zone the provider
// reports in error (ErrZoneError). A *ConflictError is
// neither retryable nor terminal: re-plan from its Current state.
func IsRetryable(err error) bool {
	if err == nil || IsTerminal(err) || errors.Is(err, ErrConflict) {
		return false
	}
	if errors.Is(err, context.Canceled) {
		return false
	}
	var rc *RcodeError
	if errors.As(err, &rc) {
		return rc.Rcode == dns.RcodeServerFailure
	}
	if errors.Is(err, ErrBadReply) || errors.Is(err, errServerSide) || errors.Is(err, ErrZoneError) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe)
}

// Backoff is a capped exponential backoff with full jitter.
type Backoff struct {
	Base     time.Duration // first delay (default 200ms)
	Max      time.Duration // cap (default 10s)
	Attempts int           // total attempts including the first (default 5)
}

// Retry calls fn until it succeeds, returns an error that is not
// IsRetryable, ctx ends, or the attempts run out; it sleeps a capped,
// jittered exponential delay between attempts. It returns fn's last error.
// A *ConflictError is returned at once: never resend a stale swap blindly.
func Retry(ctx context.Context, b Backoff, fn func(context.Context) error) error {
	if b.Base <= 0 {
		b.Base = 200 * time.Millisecond
	}
	if b.Max <= 0 {
		b.Max = 10 * time.Second
	}
	if b.Attempts <= 0 {
		b.Attempts = 5
	}
	delay := b.Base
	var err error
	for i := 0; i < b.Attempts; i++ {
		if err = fn(ctx); err == nil || !IsRetryable(err) {
			return err
		}
		if i == b.Attempts-1 {
			break
		}
		d := time.Duration(rand.Int64N(int64(delay)) + 1)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		case <-t.C:
		}
		delay = min(delay*2, b.Max)
	}
	return err
}

func asRcode(err error) (int, bool) {
	var rc *RcodeError
	if errors.As(err, &rc) {
		return rc.Rcode, true
	}
	return 0, false
}
