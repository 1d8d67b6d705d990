package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/drwatch/drwatch/cluster"
)

// TestSubmitErrorCodes: a write that certainly reached no leader is
// no_leader (503, safe to ask another watcher); one that may have reached
// a leader and timed out is timeout (504, check history first).
func TestSubmitErrorCodes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		code   Code
		status int
	}{
		{"no leader, not sent", fmt.Errorf("propose: %w", errors.Join(fmt.Errorf("%w for 8s", cluster.ErrNoLeader), cluster.ErrNotSent)), CodeNoLeader, 503},
		{"deadline, not sent", fmt.Errorf("propose: %w", errors.Join(context.DeadlineExceeded, cluster.ErrNoLeader, cluster.ErrNotSent)), CodeNoLeader, 503},
		{"deadline after a forward", fmt.Errorf("propose: %w", errors.Join(context.DeadlineExceeded, cluster.ErrNoLeader)), CodeTimeout, 504},
		{"not leader after a forward", fmt.Errorf("propose: %w", errors.Join(context.DeadlineExceeded, cluster.ErrNotLeader)), CodeTimeout, 504},
		{"shut down", cluster.ErrShutdown, CodeUnavailable, 503},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			writeSubmitError(rec, tc.err)
			var body ErrorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatalf("body %q: %v", rec.Body, err)
			}
			if rec.Code != tc.status || body.Error.Code != tc.code {
				t.Fatalf("got %d %s (%s), want %d %s", rec.Code, body.Error.Code, body.Error.Message, tc.status, tc.code)
			}
			if rec.Code == http.StatusGatewayTimeout && body.Error.Message == "" {
				t.Fatal("a timeout must say what to check")
			}
		})
	}
}
