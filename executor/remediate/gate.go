package remediate

import (
	"context"
	"time"
)

// ReadyChecker reports whether what a flip waits for is ready;
// kube.BackupWarmup satisfies it.
type ReadyChecker interface {
	// Ready only reads. ok true means ready; detail says what is not. An
	// error means the state could not be read (treated as not ready).
	Ready(ctx context.Context) (ok bool, detail string, err error)
}

// GateResult is how a wait for readiness ended.
type GateResult struct {
	Ready bool
	// TimedOut is true when the timeout passed first: the caller flips
	// anyway and says so (Detail names what was not ready).
	TimedOut bool
	Detail   string
	Waited   time.Duration
}

// WaitReady polls r every poll until it is ready, timeout passes, or ctx
// ends (then ctx's error is returned). It never blocks a flip for longer
// than timeout: the DNS reconciler calls it before writing a decision that
// makes the backup active, and flips whatever the result.
func WaitReady(ctx context.Context, r ReadyChecker, timeout, poll time.Duration) (GateResult, error) {
	start := time.Now()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		ok, detail, err := r.Ready(ctx)
		if err != nil {
			detail = "cannot read readiness: " + err.Error()
		}
		if ok && err == nil {
			return GateResult{Ready: true, Detail: detail, Waited: time.Since(start)}, nil
		}
		select {
		case <-ctx.Done():
			return GateResult{Detail: detail, Waited: time.Since(start)}, ctx.Err()
		case <-deadline.C:
			return GateResult{TimedOut: true, Detail: detail, Waited: time.Since(start)}, nil
		case <-tick.C:
		}
	}
}
