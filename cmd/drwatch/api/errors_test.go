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
	"github.com/drwatch/drwatch/failover"
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

// failingBackend fails every write, dry run or not, with err.
type failingBackend struct {
	pageBackend
	err error
}

func (b *failingBackend) Submit(context.Context, failover.Command) (failover.Result, uint64, error) {
	return failover.Result{}, 0, b.err
}

func (b *failingBackend) DryRun(failover.Command) (DryRun, error) { return DryRun{}, b.err }

// TestDryRunFailsAsTheWriteWould: a dry run that cannot be answered (no
// leader, no policy, ...) answers with the write's status and code, so the
// CLI asks another node or exits exactly as the real command would.
func TestDryRunFailsAsTheWriteWould(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"no leader", fmt.Errorf("dry run: %w (%w)", cluster.ErrNoLeader, cluster.ErrNotSent)},
		{"no policy", fmt.Errorf("failback: %w", failover.ErrNoPolicy)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := apiServer(t, &failingBackend{err: tc.err}, "alice:0123456789abcdef0123\n")
			post := func(body string) (int, ErrorBody) {
				resp, eb := do(t, srv, http.MethodPost, "/api/v1/failback", "Bearer 0123456789abcdef0123", body)
				return resp.StatusCode, eb
			}
			dryStatus, dry := post(`{"reason":"x","dry_run":true}`)
			status, real := post(`{"reason":"x"}`)
			if dryStatus != status || dry.Error.Code != real.Error.Code || dry.Error.Rule != real.Error.Rule || real.Error.Code == "" {
				t.Errorf("got dry run %d %+v, write %d %+v; want the same", dryStatus, dry.Error, status, real.Error)
			}
		})
	}
}
