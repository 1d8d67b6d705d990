package hooks

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// captured is a webhook request as the receiver saw it, to send again.
type captured struct {
	header http.Header
	body   []byte
}

func (c captured) request(t *testing.T) *http.Request {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(c.body))
	r.Header = c.header.Clone()
	return r
}

// sendOne runs a real webhook hook against a receiver that verifies with
// Verify, and returns the request it received.
func sendOne(t *testing.T, key string) captured {
	t.Helper()
	var mu sync.Mutex
	var got captured
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := Verify([]byte(key), r, time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = captured{header: r.Header.Clone(), body: body}
		mu.Unlock()
	}))
	defer srv.Close()
	if err := (Hook{Name: "notify", URL: srv.URL, SecretFile: keyFile(t, key+"\n")}).Run(context.Background(), ev); err != nil {
		t.Fatalf("a fresh signed request was refused: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	return got
}

// A webhook request carries a timestamp and a nonce under its signature, and
// names them in the documented headers.
func TestWebhookSignatureCoversTimestampAndNonce(t *testing.T) {
	c := sendOne(t, "webhook-hmac-key")
	ts, nonce := c.header.Get("X-Drwatch-Timestamp"), c.header.Get("X-Drwatch-Nonce")
	if at, err := strconv.ParseInt(ts, 10, 64); err != nil || time.Since(time.Unix(at, 0)).Abs() > time.Minute {
		t.Errorf("X-Drwatch-Timestamp %q, want the Unix time in seconds", ts)
	}
	if len(nonce) != 32 || strings.Trim(nonce, "0123456789abcdef") != "" {
		t.Errorf("X-Drwatch-Nonce %q, want 32 lower-case hex digits", nonce)
	}
	// The canonical string, as docs/operations.md gives it to receivers.
	if want := Sign([]byte("webhook-hmac-key"), ts, nonce, c.body); c.header.Get("X-Drwatch-Signature") != want || !strings.HasPrefix(want, "sha256=") {
		t.Errorf("X-Drwatch-Signature %q, want %q", c.header.Get("X-Drwatch-Signature"), want)
	}
	if other := sendOne(t, "webhook-hmac-key"); other.header.Get("X-Drwatch-Nonce") == nonce {
		t.Errorf("two requests carried the same nonce %q", nonce)
	}
}

// A receiver using Verify refuses a replayed, stale, future, tampered or
// wrongly keyed request.
func TestVerifyRefusesReplayedStaleAndTamperedRequests(t *testing.T) {
	key := []byte("webhook-hmac-key")
	c := sendOne(t, string(key))
	if err := Verify(key, c.request(t), time.Minute); !errors.Is(err, ErrReplayed) {
		t.Errorf("replayed request: got %v, want ErrReplayed", err)
	}

	resign := func(at time.Time, nonce string) captured {
		ts := strconv.FormatInt(at.Unix(), 10)
		h := c.header.Clone()
		h.Set("X-Drwatch-Timestamp", ts)
		h.Set("X-Drwatch-Nonce", nonce)
		h.Set("X-Drwatch-Signature", Sign(key, ts, nonce, c.body))
		return captured{header: h, body: c.body}
	}
	for _, tc := range []struct {
		name string
		req  captured
		want error
	}{
		{"stale", resign(time.Now().Add(-10*time.Minute), "00112233445566778899aabbccddeeff"), ErrStale},
		{"from the future", resign(time.Now().Add(10*time.Minute), "0102030405060708090a0b0c0d0e0f10"), ErrStale},
		{"body changed", captured{header: c.header, body: bytes.Replace(c.body, []byte(`"to":"backup"`), []byte(`"to":"primary"`), 1)}, ErrBadSignature},
		{"timestamp moved", func() captured {
			h := c.header.Clone()
			h.Set("X-Drwatch-Timestamp", strconv.FormatInt(time.Now().Unix()+1, 10))
			return captured{header: h, body: c.body}
		}(), ErrBadSignature},
		{"nonce changed", func() captured {
			h := c.header.Clone()
			h.Set("X-Drwatch-Nonce", "ffeeddccbbaa99887766554433221100")
			return captured{header: h, body: c.body}
		}(), ErrBadSignature},
		{"no timestamp", func() captured {
			h := c.header.Clone()
			h.Del("X-Drwatch-Timestamp")
			return captured{header: h, body: c.body}
		}(), ErrBadSignature},
		{"no nonce", func() captured {
			h := c.header.Clone()
			h.Del("X-Drwatch-Nonce")
			return captured{header: h, body: c.body}
		}(), ErrBadSignature},
		{"body-only signature of older versions", func() captured {
			h := c.header.Clone()
			h.Set("X-Drwatch-Signature", Sign(key, "", "", c.body))
			return captured{header: h, body: c.body}
		}(), ErrBadSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := Verify(key, tc.req.request(t), 5*time.Minute); !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
	fresh := resign(time.Now(), "aabbccddeeff00112233445566778899")
	if err := Verify([]byte("another-key"), fresh.request(t), time.Minute); !errors.Is(err, ErrBadSignature) {
		t.Errorf("wrong key: got %v, want ErrBadSignature", err)
	}
	// A refused request does not use up its nonce: the genuine one passes.
	r := fresh.request(t)
	if err := Verify(key, r, time.Minute); err != nil {
		t.Fatalf("fresh request: got %v, want it accepted", err)
	}
	if body, _ := io.ReadAll(r.Body); !bytes.Equal(body, c.body) {
		t.Errorf("after Verify the body reads %q, want %q", body, c.body)
	}
}

// Remembered nonces are forgotten once their timestamp is stale anyway, so
// a receiver's memory stays bounded by the window.
func TestVerifyForgetsNoncesOutsideTheWindow(t *testing.T) {
	key := []byte("k")
	var n nonces
	now := time.Now()
	for i := 0; i < 100; i++ {
		nonce := strings.Repeat("0", 30) + strconv.FormatInt(int64(10+i%90), 10)
		if i >= 90 {
			nonce = strings.Repeat("1", 30) + strconv.FormatInt(int64(i), 10)
		}
		ts := strconv.FormatInt(now.Unix(), 10)
		body := []byte("{}")
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		r.Header.Set("X-Drwatch-Timestamp", ts)
		r.Header.Set("X-Drwatch-Nonce", nonce)
		r.Header.Set("X-Drwatch-Signature", Sign(key, ts, nonce, body))
		if err := n.verify(key, r, time.Minute, now); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if i == 89 {
			now = now.Add(2 * time.Minute)
		}
	}
	if got := n.len(); got != 10 {
		t.Errorf("got %d nonces remembered, want the 10 inside the window", got)
	}
}
