package demo

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/poll"
)

// Three real watchers (interval 2s, fall 3, quorum 2, fast_interval by
// default 500ms) re-probe the primary fast once one of them sees it fail:
// the quorum has its fall failures sooner than (fall-1) × interval after
// the kill, which no watcher probing only at the interval can reach.
func TestFastReprobingDetectsBelowTheIntervalFloor(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const interval, fall = 2 * time.Second, 3
	d := startDemo(t, ctx, Options{Dir: t.TempDir(), Out: io.Discard, LogLevel: slog.LevelInfo, Interval: interval, Fall: fall})
	poll.Until(t, 60*time.Second, func() bool {
		v := d.View()
		return v.Policy != nil && len(v.Sites[failover.Primary].Up) == 3 && len(v.Sites[failover.Backup].Up) == 3
	}, "every watcher sees both sites UP")
	kill := time.Now()
	if err := d.Sites["primary"].SetUp(false); err != nil {
		t.Fatal(err)
	}
	var e failover.Entry
	poll.Until(t, 60*time.Second, func() bool {
		for _, h := range d.View().History {
			if h.Kind == failover.KindAutoFailover {
				e = h
				return true
			}
		}
		return false
	}, "an automatic failover")
	detected := time.Duration(e.Timings.DetectedAt - kill.UnixNano())
	t.Logf("kill → detected %s, → decided %s", detected.Round(time.Millisecond), time.Duration(e.Timings.DecidedAt-kill.UnixNano()).Round(time.Millisecond))
	if floor := (fall - 1) * interval; detected >= floor {
		t.Errorf("kill → detected: got %s, want below (fall-1) × interval = %s", detected, floor)
	}
}
