package main

import (
	"context"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/api"
)

// replier is a node that answers every request with status and body, and
// counts them.
func replier(t *testing.T, status int, body string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	h, n := counting(status, body)
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s, n
}

const (
	noLeaderBody = `{"error":{"code":"no_leader","message":"this watcher knows no leader, so nothing was committed"}}`
	timeoutBody  = `{"error":{"code":"timeout","message":"the leader did not confirm it in time"}}`
	okBody       = `{"index":7,"result":{"gen":3},"actor":"alice"}`
)

func testClient(t *testing.T, eps ...string) *client {
	t.Helper()
	c, err := (&clientFlags{endpoints: eps, timeout: 10 * time.Second}).client(false)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestClientMovesOnFromNoLeader: a watcher cut off from the quorum answers
// no_leader (it committed nothing), so the CLI asks the next one; a timeout
// (the write may be committed) is never repeated elsewhere; when every
// watcher says no_leader the error stays a no_leader refusal (exit 3).
func TestClientMovesOnFromNoLeader(t *testing.T) {
	ctx := context.Background()
	t.Run("next endpoint commits", func(t *testing.T) {
		lonely, _ := replier(t, http.StatusServiceUnavailable, noLeaderBody)
		good, hits := replier(t, http.StatusOK, okBody)
		var out api.WriteResponse
		if err := testClient(t, lonely.URL, good.URL).do(ctx, http.MethodPost, "/api/v1/pause", api.WriteRequest{}, &out); err != nil {
			t.Fatalf("got %v, want the second watcher's reply", err)
		}
		if out.Index != 7 || hits.Load() != 1 {
			t.Fatalf("got index %d after %d calls to the second watcher, want 7 after 1", out.Index, hits.Load())
		}
	})
	t.Run("timeout is not repeated", func(t *testing.T) {
		slow, _ := replier(t, http.StatusGatewayTimeout, timeoutBody)
		good, hits := replier(t, http.StatusOK, okBody)
		err := testClient(t, slow.URL, good.URL).do(ctx, http.MethodPost, "/api/v1/pause", api.WriteRequest{}, nil)
		var ae *apiError
		if !errors.As(err, &ae) || ae.Code != api.CodeTimeout || hits.Load() != 0 {
			t.Fatalf("got %v with %d calls to the next watcher, want a timeout error and none", err, hits.Load())
		}
		if exitCode(cliErr(err)) != 1 {
			t.Fatalf("timeout: got exit %d, want 1", exitCode(cliErr(err)))
		}
	})
	t.Run("no leader anywhere", func(t *testing.T) {
		a, _ := replier(t, http.StatusServiceUnavailable, noLeaderBody)
		b, _ := replier(t, http.StatusServiceUnavailable, noLeaderBody)
		dead := httptest.NewServer(http.NotFoundHandler())
		dead.Close()
		err := testClient(t, a.URL, dead.URL, b.URL).do(ctx, http.MethodPost, "/api/v1/pause", api.WriteRequest{}, nil)
		var ae *apiError
		if !errors.As(err, &ae) || ae.Code != api.CodeNoLeader {
			t.Fatalf("got %v, want no_leader", err)
		}
		if !strings.Contains(ae.Message, b.URL) || !strings.Contains(ae.Message, dead.URL) {
			t.Fatalf("message %q: want it to name the last watcher asked (%s) and the one that did not answer (%s)", ae.Message, b.URL, dead.URL)
		}
		if exitCode(cliErr(err)) != 3 {
			t.Fatalf("no leader: got exit %d, want 3", exitCode(cliErr(err)))
		}
	})
}

// frozenEndpoint is a node whose process is stopped (SIGSTOP): its
// listening socket stays in the kernel, so TCP connects succeed from the
// backlog, but nothing ever accepts, and the TLS handshake never completes.
func frozenEndpoint(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return "https://" + ln.Addr().String()
}

// tlsReplier is replier over TLS; it returns the server and a CA file
// that trusts it.
func tlsReplier(t *testing.T, h http.HandlerFunc) (*httptest.Server, string) {
	t.Helper()
	s := httptest.NewTLSServer(h)
	t.Cleanup(s.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	if err := os.WriteFile(ca, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	return s, ca
}

// counting answers every request with status and body, and counts them.
func counting(status int, body string) (http.HandlerFunc, *atomic.Int32) {
	var n atomic.Int32
	return func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}, &n
}

// TestClientSkipsFrozenNodeAfterDialTimeout: a frozen node costs the CLI
// its dial budget (connect and TLS handshake), not the whole --timeout, and
// since nothing reached it, a write goes to the next node, exactly once.
func TestClientSkipsFrozenNodeAfterDialTimeout(t *testing.T) {
	// The dial budget also covers the live node's TLS handshake, which a
	// loaded machine under -race can stretch past a second. --timeout is
	// far above it: a client that spent the whole --timeout on the frozen
	// node takes 2 minutes, four times the bound below.
	const timeout, dial = 2 * time.Minute, 5 * time.Second
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		t.Run(method, func(t *testing.T) {
			h, hits := counting(http.StatusOK, okBody)
			good, ca := tlsReplier(t, h)
			c, err := (&clientFlags{endpoints: []string{frozenEndpoint(t), good.URL}, caFile: ca,
				timeout: timeout, dialTimeout: dial}).client(false)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			var out api.WriteResponse
			err = c.do(context.Background(), method, "/api/v1/pause", api.WriteRequest{}, &out)
			took := time.Since(start)
			if err != nil || out.Index != 7 || hits.Load() != 1 {
				t.Fatalf("got %v, index %d, %d calls to the live node; want its reply after exactly 1 call", err, out.Index, hits.Load())
			}
			if took > timeout/4 {
				t.Fatalf("took %s with a frozen first node, want about the dial timeout %s, far below --timeout %s", took, dial, timeout)
			}
		})
	}
}

// A command that makes several calls (explain without a generation asks
// the status first) pays a frozen node's dial budget once, not per call:
// the client goes on with the node that answered.
func TestClientStaysWithTheNodeThatAnswered(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	var dials atomic.Int32
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			// Frozen: connected, but the handshake never completes.
			dials.Add(1)
			t.Cleanup(func() { _ = conn.Close() })
		}
	}()
	h, hits := counting(http.StatusOK, okBody)
	good, ca := tlsReplier(t, h)
	c, err := (&clientFlags{endpoints: []string{"https://" + ln.Addr().String(), good.URL}, caFile: ca,
		timeout: time.Minute, dialTimeout: 500 * time.Millisecond}).client(false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		var out api.WriteResponse
		if err := c.do(context.Background(), http.MethodGet, "/api/v1/status", nil, &out); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if dials.Load() != 1 || hits.Load() != 3 {
		t.Fatalf("three calls: the frozen node was dialled %d times and the live one answered %d; want 1 and 3", dials.Load(), hits.Load())
	}
}

// TestClientTimeoutBoundsWholeCall: --timeout is the budget of the call
// across every endpoint, not of each endpoint in turn.
func TestClientTimeoutBoundsWholeCall(t *testing.T) {
	// With a --timeout per endpoint the call would take frozen×timeout
	// (30 s); the bound below is half of that, five times the right
	// answer, room enough for a loaded machine.
	const timeout, frozen = 3 * time.Second, 10
	var eps []string
	for range frozen {
		eps = append(eps, frozenEndpoint(t))
	}
	c, err := (&clientFlags{endpoints: eps, timeout: timeout, dialTimeout: time.Minute}).client(false)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = c.do(context.Background(), http.MethodGet, "/api/v1/status", nil, nil)
	took := time.Since(start)
	if err == nil {
		t.Fatal("got a reply from three frozen nodes")
	}
	if took > frozen*timeout/2 {
		t.Fatalf("took %s for %d frozen nodes, want about --timeout %s, far below %s", took, frozen, timeout, frozen*timeout)
	}
}

// TestClientNeverResendsASentWrite: once a write reached a node, a node
// that then stops answering may have committed it, so the CLI reports that
// and does not send it to another node. A read is safe to repeat.
func TestClientNeverResendsASentWrite(t *testing.T) {
	var stuck atomic.Int32
	thaw := make(chan struct{})
	hang, ca := tlsReplier(t, func(w http.ResponseWriter, r *http.Request) {
		stuck.Add(1)
		select { // frozen after it read the request
		case <-r.Context().Done():
		case <-thaw:
		}
	})
	t.Cleanup(func() { close(thaw) }) // before the server's Close, which waits for handlers
	t.Run("write", func(t *testing.T) {
		good, hits := replier(t, http.StatusOK, okBody)
		c, err := (&clientFlags{endpoints: []string{hang.URL, good.URL}, caFile: ca,
			timeout: 500 * time.Millisecond, dialTimeout: time.Second}).client(false)
		if err != nil {
			t.Fatal(err)
		}
		err = c.do(context.Background(), http.MethodPost, "/api/v1/pause", api.WriteRequest{}, nil)
		if err == nil || hits.Load() != 0 {
			t.Fatalf("got %v with %d calls to the next node, want an error and none", err, hits.Load())
		}
		if !strings.Contains(err.Error(), "may have been committed") || !strings.Contains(err.Error(), hang.URL) {
			t.Fatalf("error %q: want it to name %s and say the write may have been committed", err, hang.URL)
		}
		if exitCode(cliErr(err)) != 1 {
			t.Fatalf("got exit %d, want 1", exitCode(cliErr(err)))
		}
		if stuck.Load() != 1 {
			t.Fatalf("the frozen node got %d calls, want 1", stuck.Load())
		}
	})
	t.Run("read", func(t *testing.T) {
		// A node that closes the connection after reading the request.
		cut, caCut := tlsReplier(t, func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		})
		good, hits := replier(t, http.StatusOK, okBody)
		c, err := (&clientFlags{endpoints: []string{cut.URL, good.URL}, caFile: caCut,
			timeout: 10 * time.Second, dialTimeout: time.Second}).client(false)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.do(context.Background(), http.MethodGet, "/api/v1/status", nil, nil); err != nil || hits.Load() != 1 {
			t.Fatalf("got %v after %d calls to the next node, want its reply after 1", err, hits.Load())
		}
	})
}

// The CLI's token file holds the bare token or the user's own actor:token
// line copied from the watchers' tokens file; comment and blank lines are
// ignored, and anything else is refused rather than sent as a token.
func TestTokenFileTakesBareTokenOrActorLine(t *testing.T) {
	const tok = "0123456789abcdef0123"
	tests := []struct {
		name, file, want string
		wantErr          bool
	}{
		{"bare token", tok + "\n", tok, false},
		{"bare token without newline", tok, tok, false},
		{"actor:token line", "alice:" + tok + "\n", tok, false},
		{"comment and blank lines", "# alice's token\n\nalice:" + tok + "\n", tok, false},
		{"token holding a colon, given with its actor", "alice:" + tok + ":x\n", tok + ":x", false},
		{"actor:token:role line", "alice:" + tok + ":operate\n", tok, false},
		{"token holding a colon, with a role", "alice:" + tok + ":x:read\n", tok + ":x", false},
		{"empty", "\n", "", true},
		{"only comments", "# nothing\n", "", true},
		{"two token lines", "alice:" + tok + "\nbob:" + tok + "x\n", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "token")
			if err := os.WriteFile(path, []byte(tt.file), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := readToken(path)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("readToken(%q): got %q, %v; want %q, error=%v", tt.file, got, err, tt.want, tt.wantErr)
			}
		})
	}
}
