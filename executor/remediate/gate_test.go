package remediate

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// readyAfter is ready from its n-th call on; err, if set, is returned before that.
type readyAfter struct {
	n, calls int
	err      error
}

func (r *readyAfter) Ready(context.Context) (bool, string, error) {
	r.calls++
	if r.calls >= r.n {
		return true, "all ready", nil
	}
	if r.err != nil {
		return false, "", r.err
	}
	return false, "web 1/3 ready", nil
}

func TestWaitReady(t *testing.T) {
	tests := []struct {
		name       string
		r          *readyAfter
		want       GateResult
		wantWaited time.Duration
	}{
		{"ready at once", &readyAfter{n: 1}, GateResult{Ready: true, Detail: "all ready"}, 0},
		{"ready after three polls", &readyAfter{n: 4}, GateResult{Ready: true, Detail: "all ready"}, 15 * time.Second},
		{"times out", &readyAfter{n: 1000}, GateResult{TimedOut: true, Detail: "web 1/3 ready"}, time.Minute},
		{"read errors time out", &readyAfter{n: 1000, err: errors.New("403")}, GateResult{TimedOut: true, Detail: "cannot read readiness: 403"}, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				got, err := WaitReady(context.Background(), tt.r, time.Minute, 5*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				if got.Ready != tt.want.Ready || got.TimedOut != tt.want.TimedOut || got.Detail != tt.want.Detail || got.Waited != tt.wantWaited {
					t.Fatalf("got %+v, want %+v waited %s", got, tt.want, tt.wantWaited)
				}
			})
		})
	}
	t.Run("context ends", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := WaitReady(ctx, &readyAfter{n: 1000}, time.Minute, time.Second); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("got %v, want DeadlineExceeded", err)
			}
		})
	})
}
