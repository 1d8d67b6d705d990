package failover

import (
	"slices"
	"testing"
	"time"
)

// A countdown counts only watchers that are actually failing, against the
// quorum (DESIGN invariant 7): a healthy watcher is never "about to vote DOWN".
func TestCountdownCountsOnlyFailingWatchers(t *testing.T) {
	for _, tt := range []struct {
		name        string
		script      []string
		wantLeaning []string
		wantRounds  int // 0: no countdown
	}{
		{"one watcher DOWN, quorum 2",
			[]string{"rounds from=1s n=10 a=down/up b=up/up c=up/up"}, []string{"a"}, 0},
		{"one watcher failing for the first time",
			[]string{"rounds from=1s n=1 a=down/up b=up/up c=up/up"}, []string{"a"}, 0},
		{"one watcher DOWN while a second starts failing",
			[]string{"rounds from=1s n=3 a=down/up b=up/up c=up/up", "rounds from=4s n=1 a=down/up b=down/up c=up/up"}, []string{"a", "b"}, 2},
		{"two watchers one round from DOWN",
			[]string{"rounds from=1s n=2 a=down/up b=down/up c=up/up"}, []string{"a", "b"}, 1},
		{"three failing: the second-closest decides",
			[]string{"rounds from=1s n=1 a=down/up b=up/up c=up/up", "rounds from=2s n=1 a=down/up b=down/up c=up/up",
				"rounds from=3s n=1 a=down/up b=down/up c=down/up"}, []string{"a", "b", "c"}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := &harness{t: t, m: New(), now: base}
			h.run("policy nodes=a,b,c quorum=2 fall=3 rise=2 interval=1s")
			for _, l := range tt.script {
				h.run(l)
			}
			v := h.m.View()
			p := v.Pending
			if p == nil {
				t.Fatalf("got no pending block, want one leaning %v", tt.wantLeaning)
			}
			if !slices.Equal(p.Leaning, tt.wantLeaning) {
				t.Errorf("got leaning %v, want %v", p.Leaning, tt.wantLeaning)
			}
			if p.Rounds != tt.wantRounds {
				t.Errorf("got rounds %d, want %d", p.Rounds, tt.wantRounds)
			}
			// The leaning watchers re-probe at the fast interval: a quarter
			// of the 1s interval by default.
			if want := time.Duration(tt.wantRounds) * 250 * time.Millisecond; p.In != want {
				t.Errorf("got in %s, want %s (rounds × fast interval)", p.In, want)
			}
			if got, want := p.Countdown(), tt.wantRounds > 0; got != want {
				t.Errorf("got countdown %v (then %+v), want %v", got, p.Then, want)
			}
		})
	}
}
