package failover

import (
	"errors"
	"testing"
	"time"
)

// A policy's max_pause bounds how far ahead a pause may end; a pause
// until resume stays allowed. A policy without it (every policy an older
// build wrote) bounds nothing, so old logs replay as they did.
func TestPauseUntilIsBoundedByMaxPause(t *testing.T) {
	const at = int64(1_000 * time.Second)
	for _, tc := range []struct {
		name     string
		maxPause time.Duration
		until    time.Duration // from at; 0 pauses until resume
		ok       bool
	}{
		{"within the bound", 24 * time.Hour, 24 * time.Hour, true},
		{"past the bound", 24 * time.Hour, 24*time.Hour + time.Second, false},
		{"eleven years", 24 * time.Hour, 100000 * time.Hour, false},
		{"until resume", 24 * time.Hour, 0, true},
		{"policy without max_pause", 0, 100000 * time.Hour, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testPolicy()
			p.MaxPause = tc.maxPause
			m := New()
			if _, err := m.Step(1, Command{At: at, Payload: SetPolicy{Policy: p, Actor: "ops"}}); err != nil {
				t.Fatal(err)
			}
			var until int64
			if tc.until != 0 {
				until = at + int64(tc.until)
			}
			_, err := m.Step(2, Command{At: at, Payload: Pause{Until: until, Actor: "alice", Reason: "r"}})
			if tc.ok && err != nil {
				t.Fatalf("pause for %s with max_pause %s: got %v, want it applied", tc.until, tc.maxPause, err)
			}
			if !tc.ok && !errors.Is(err, ErrBadCommand) {
				t.Fatalf("pause for %s with max_pause %s: got %v, want ErrBadCommand", tc.until, tc.maxPause, err)
			}
			if got := m.View().Paused; got != tc.ok {
				t.Errorf("pause for %s with max_pause %s: got paused=%v, want %v", tc.until, tc.maxPause, got, tc.ok)
			}
		})
	}
}

func TestPolicyMaxPauseValidated(t *testing.T) {
	for _, d := range []time.Duration{-time.Second, 367 * 24 * time.Hour} {
		p := testPolicy()
		p.MaxPause = d
		if err := p.Validate(); err == nil {
			t.Errorf("max_pause %s: got nil error, want it refused", d)
		}
	}
}
