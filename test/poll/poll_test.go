package poll

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestWithin: a condition that becomes true is seen before the deadline;
// one that never does is reported false once the deadline has passed.
func TestWithin(t *testing.T) {
	var n atomic.Int32
	if !Within(5*time.Second, func() bool { return n.Add(1) >= 3 }) {
		t.Fatal("a condition true on its third check was not seen")
	}
	start := time.Now()
	if Within(100*time.Millisecond, func() bool { return false }) {
		t.Fatal("a condition that never holds was reported as held")
	}
	if time.Since(start) < 100*time.Millisecond {
		t.Fatal("gave up before the deadline")
	}
}

// fakeTB records a Fatalf instead of ending the test.
type fakeTB struct {
	testing.TB
	msg string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.msg = format
}

// TestUntilAndForReport: on timeout they fail t with what was awaited.
func TestUntilAndForReport(t *testing.T) {
	f := &fakeTB{TB: t}
	Until(f, 10*time.Millisecond, func() bool { return false }, "the %s is up", "site")
	if f.msg == "" {
		t.Fatal("Until did not fail on timeout")
	}
	f.msg = ""
	For(f, 10*time.Millisecond, "the leader", func() bool { return false })
	if f.msg == "" {
		t.Fatal("For did not fail on timeout")
	}
	f.msg = ""
	Until(f, time.Second, func() bool { return true }, "true")
	For(f, time.Second, "true", func() bool { return true })
	if f.msg != "" {
		t.Fatalf("a condition that holds failed the test: %q", f.msg)
	}
}
