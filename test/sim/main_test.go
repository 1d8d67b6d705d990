package sim

import (
	"os"
	"runtime/debug"
	"strings"
	"testing"
)

// simGCPercent is the GC target of the test process, unless GOGC sets one.
// A run's live heap is 2-4 MB, so at the default 100 the collector ran
// every few MB allocated: 246 collections and 19% of the CPU over 30
// schedules (GODEBUG=gctrace=1). At 800 it is 24 collections and 3%, for
// a heap of about 32 MB: 100 schedules took 12.0 and 12.4 CPU-seconds
// against 14.9 and 17.3 at 100, with a peak RSS of 72 MB against 40.
const simGCPercent = 800

func TestMain(m *testing.M) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(simGCPercent)
	}
	// A traceback then names the schedule a panicking goroutine belongs
	// to (runOne labels its runs): go1.26's tracebacklabels, which the
	// runtime reads again when GODEBUG changes.
	if gd := os.Getenv("GODEBUG"); !strings.Contains(gd, "tracebacklabels=") {
		_ = os.Setenv("GODEBUG", strings.TrimPrefix(gd+",tracebacklabels=1", ","))
	}
	code := m.Run()
	inflight.remove()
	os.Exit(code)
}
