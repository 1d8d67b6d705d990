package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
)

// proposerFunc is a cluster whose Propose is a function; it always leads.
type proposerFunc func(ctx context.Context, cmd []byte) ([]byte, uint64, error)

func (f proposerFunc) Propose(ctx context.Context, cmd []byte) ([]byte, uint64, error) {
	return f(ctx, cmd)
}

func (proposerFunc) VerifyLeader(context.Context) error { return nil }

// The reconciler's errors say which step of recording an action result
// failed: encoding it, proposing it, or the core rejecting it.
func TestProposeErrorsSayWhichStepFailed(t *testing.T) {
	ar := failover.ActionResult{Gen: 1, Outcome: failover.OutcomeVerified}
	huge := ar
	huge.Detail = strings.Repeat("x", failover.MaxCommandSize)
	proposed := 0
	noLeader := errors.New("no leader")
	tests := []struct {
		name    string
		ar      failover.ActionResult
		propose proposerFunc
		want    string // the error's text up to the end, or to "..."
		is      error
	}{
		{"encode", huge, func(context.Context, []byte) ([]byte, uint64, error) {
			proposed++
			return nil, 0, nil
		}, "action result gen 1: encode action_result: encode command: ...", failover.ErrBadCommand},
		{"propose", ar, func(context.Context, []byte) ([]byte, uint64, error) {
			return nil, 0, noLeader
		}, "action result gen 1: propose action_result: no leader", noLeader},
		{"rejected", ar, func(_ context.Context, cmd []byte) ([]byte, uint64, error) {
			return failover.New().Apply(1, cmd), 1, nil
		}, "action result gen 1: action_result rejected: action result for gen 1 (latest 0): unknown generation", failover.ErrUnknownGen},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Reconciler{cfg: Config{Cluster: tt.propose}}
			err := r.propose(context.Background(), tt.ar)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if prefix, cut := strings.CutSuffix(tt.want, "..."); cut && !strings.HasPrefix(got, prefix) || !cut && got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if !errors.Is(err, tt.is) {
				t.Errorf("got %v, want it to match %v", err, tt.is)
			}
		})
	}
	if proposed != 0 {
		t.Errorf("got %d proposals of a command that does not encode, want none", proposed)
	}
}

// A loop whose config leaves its retry zero backs off from the shared
// defaults, doubling to the cap; Cap and Reset keep to them.
func TestBackoffZeroTakesTheSharedDefaults(t *testing.T) {
	var b Backoff
	var got []time.Duration
	for range 8 {
		got = append(got, b.Next())
	}
	want := []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond,
		3200 * time.Millisecond, 6400 * time.Millisecond, 10 * time.Second, 10 * time.Second}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	b.Reset()
	if d := b.Next(); d != DefaultBackoffBase {
		t.Fatalf("after Reset: got %s, want %s", d, DefaultBackoffBase)
	}
	if d := (&Backoff{Base: time.Second, Max: 3 * time.Second}).Cap(); d != 3*time.Second {
		t.Fatalf("Cap with Max 3s: got %s", d)
	}
}
