package poll

import (
	"testing"
	"time"
)

// Tick is how often Until, For and Within check.
const Tick = 25 * time.Millisecond

// Within reports whether cond held within d, checking every Tick.
func Within(d time.Duration, cond func() bool) bool { return WithinEvery(d, Tick, cond) }

// WithinEvery reports whether cond held within d, checking every tick
// (and once more at the deadline).
func WithinEvery(d, tick time.Duration, cond func() bool) bool {
	t := time.NewTicker(tick)
	defer t.Stop()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			return cond()
		case <-t.C:
		}
	}
	return true
}

// Until fails t unless cond holds within d. format says what was awaited,
// as in "waiting until <format>".
func Until(tb testing.TB, d time.Duration, cond func() bool, format string, args ...any) {
	tb.Helper()
	UntilEvery(tb, d, Tick, cond, format, args...)
}

// UntilEvery is Until checking every tick: for conditions that are
// expensive to check, such as running a command.
func UntilEvery(tb testing.TB, d, tick time.Duration, cond func() bool, format string, args ...any) {
	tb.Helper()
	if !WithinEvery(d, tick, cond) {
		tb.Fatalf("timed out after %s waiting until "+format, append([]any{d}, args...)...)
	}
}

// UntilEveryQuiet is UntilEvery whose first check comes one tick after
// the call, not at once: for a check that would load what the caller just
// set in motion and measures (a read of 50 groups' history while their
// flips are verified), so that it stays out of the moments measured.
func UntilEveryQuiet(tb testing.TB, d, tick time.Duration, cond func() bool, format string, args ...any) {
	tb.Helper()
	first := true
	UntilEvery(tb, d, tick, func() bool {
		if first {
			first = false
			return false
		}
		return cond()
	}, format, args...)
}

// For fails t unless cond holds within d; what names the awaited thing,
// as in "waiting for <what>".
func For(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	if !Within(d, cond) {
		tb.Fatalf("timed out after %s waiting for %s", d, what)
	}
}
