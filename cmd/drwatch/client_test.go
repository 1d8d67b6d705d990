package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/api"
)

// replier answers every request with status and body, and counts them.
func replier(t *testing.T, status int, body string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(s.Close)
	return s, &n
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
