package watcher

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/drwatch/drwatch/cluster"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/probes"
)

// Reporter sends one watcher's probe rounds to the leader as Observe
// commands: lean ones (only what the log does not know, see
// failover.LeanEncoder) whenever its view of this node's applied reports
// allows, full ones otherwise. One Reporter lives as long as the watcher
// process: a new process starts with full reports. It is safe for
// concurrent use, though reports are meant to go one at a time.
type Reporter struct {
	node, hash string

	mu  sync.Mutex
	enc failover.LeanEncoder
}

// NewReporter returns the reporter of node, running the policy with hash.
func NewReporter(node, hash string) *Reporter {
	return &Reporter{node: node, hash: hash}
}

// Report proposes round r through p and waits for its outcome; policy and
// policyHash are the replicated policy as the local replica has it, now
// this watcher's clock. The result and error are failover.Submit's; lean
// says whether the report sent was a lean one. Its
// outcome updates the view: applied, the next report builds on it; not
// sent at all (cluster.ErrNotSent), the view still holds; otherwise
// (refused, or unknown as after a timeout) the next report is full, and a
// failed lean report keeps reports full for failover.LeanBackoff, since a
// leader older than lean reports refuses them all.
func (rp *Reporter) Report(ctx context.Context, p failover.Proposer, policy *failover.Policy, policyHash string, r probes.Round, now func() time.Time) (res failover.Result, lean bool, err error) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	o := rp.enc.Encode(Observation(rp.node, rp.hash, r), policy, policyHash, now().UnixNano())
	res, _, err = failover.Submit(ctx, p, failover.Command{Payload: o})
	switch {
	case err == nil && res.Noop != "duplicate":
		rp.enc.Applied(now().UnixNano())
	case errors.Is(err, cluster.ErrNotSent):
		rp.enc.NotSent()
	default:
		// A duplicate means another report of this Seq was applied, maybe
		// not this one: what the log holds is unknown.
		rp.enc.Lost(now().UnixNano())
	}
	return res, o.Base != 0, err
}
