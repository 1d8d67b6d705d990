package hooks

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// The headers of a signed webhook request. The signature covers the
// timestamp, the nonce and the body (see Sign), so none can be changed, and
// a receiver that refuses stale timestamps and remembers the nonces it saw
// within the window refuses a replay (Verify does both).
const (
	HeaderSignature = "X-Drwatch-Signature" // "sha256=" and the hex HMAC-SHA256 of the canonical string
	HeaderTimestamp = "X-Drwatch-Timestamp" // Unix time in seconds, decimal
	HeaderNonce     = "X-Drwatch-Nonce"     // 32 lower-case hex digits, random per request
)

// DefaultMaxSkew is the window Verify uses when given none.
const DefaultMaxSkew = 5 * time.Minute

// maxBody bounds the body Verify reads: a hook event is well under it.
const maxBody = 1 << 20

// Errors Verify returns, so a receiver can log why it refused.
var (
	ErrBadSignature = errors.New("webhook signature invalid")
	ErrStale        = errors.New("webhook timestamp outside the allowed skew")
	ErrReplayed     = errors.New("webhook nonce already seen")
)

// Sign returns the X-Drwatch-Signature value for a request: "sha256=" and
// the hex HMAC-SHA256 under key of the canonical string
//
//	timestamp + "\n" + nonce + "\n" + body
//
// where timestamp and nonce are the X-Drwatch-Timestamp and X-Drwatch-Nonce
// header values and body is the raw request body.
func Sign(key []byte, timestamp, nonce string, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(timestamp + "\n" + nonce + "\n"))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// signRequest sets the timestamp, a fresh nonce and the signature on req.
func signRequest(req *http.Request, key, body []byte, now time.Time) error {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Errorf("nonce: %w", err)
	}
	ts, nonce := strconv.FormatInt(now.Unix(), 10), hex.EncodeToString(b[:])
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderNonce, nonce)
	req.Header.Set(HeaderSignature, Sign(key, ts, nonce, body))
	return nil
}

// Verify checks a drwatch webhook request for a receiver written in Go:
// the signature under secret over the timestamp, nonce and body; a
// timestamp within maxSkew of now (DefaultMaxSkew when 0); and a nonce not
// seen before in this process. It reads the body and puts it back, so the
// handler can read it after. It returns ErrBadSignature, ErrStale or
// ErrReplayed (wrapped). A refused request's nonce is not remembered.
//
// Nonces are remembered per process until their timestamp is stale: a
// receiver running several replicas behind a load balancer should keep
// them in a shared store instead, or accept that a replay within maxSkew
// may reach another replica. It is safe for concurrent use.
func Verify(secret []byte, r *http.Request, maxSkew time.Duration) error {
	return seen.verify(secret, r, maxSkew, time.Now())
}

// seen holds the nonces Verify accepted.
var seen nonces

// nonces maps each accepted nonce to when its timestamp goes stale.
type nonces struct {
	mu     sync.Mutex
	expiry map[string]time.Time
}

func (n *nonces) verify(secret []byte, r *http.Request, maxSkew time.Duration, now time.Time) error {
	if maxSkew <= 0 {
		maxSkew = DefaultMaxSkew
	}
	tsh, nonce := r.Header.Get(HeaderTimestamp), r.Header.Get(HeaderNonce)
	ts, err := strconv.ParseInt(tsh, 10, 64)
	if err != nil || tsh != strconv.FormatInt(ts, 10) {
		return fmt.Errorf("%w: %s %q is not a Unix time in seconds", ErrBadSignature, HeaderTimestamp, tsh)
	}
	if !hexNonce(nonce) {
		return fmt.Errorf("%w: %s %q is not 16 to 64 lower-case hex digits", ErrBadSignature, HeaderNonce, nonce)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	_ = r.Body.Close()
	if err != nil {
		return fmt.Errorf("read body: %w", err)
	}
	if len(body) > maxBody {
		return fmt.Errorf("%w: body over %d bytes", ErrBadSignature, maxBody)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if !hmac.Equal([]byte(r.Header.Get(HeaderSignature)), []byte(Sign(secret, tsh, nonce, body))) {
		return ErrBadSignature
	}
	at := time.Unix(ts, 0)
	if at.Before(now.Add(-maxSkew)) || at.After(now.Add(maxSkew)) {
		return fmt.Errorf("%w: %s is %s from now, more than %s", ErrStale, HeaderTimestamp, now.Sub(at).Round(time.Second), maxSkew)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for k, exp := range n.expiry {
		if exp.Before(now) {
			delete(n.expiry, k)
		}
	}
	if _, ok := n.expiry[nonce]; ok {
		return fmt.Errorf("%w: %s", ErrReplayed, nonce)
	}
	if n.expiry == nil {
		n.expiry = map[string]time.Time{}
	}
	n.expiry[nonce] = at.Add(maxSkew)
	return nil
}

func (n *nonces) len() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.expiry)
}

func hexNonce(s string) bool {
	if len(s) < 16 || len(s) > 64 {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
