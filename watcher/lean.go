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
	replica    *failover.Machine // the local replica; nil: none

	mu  sync.Mutex
	enc failover.LeanEncoder

	// smu guards streaks apart from mu, which a report holds while it
	// waits for a leader: rounds must count meanwhile.
	smu     sync.Mutex
	streaks failover.StreakCounter
}

// NewReporter returns the reporter of node, running the policy with hash.
// replica is the local replica (nil for none): when a report's outcome is
// unknown, as after a timeout on a busy cluster, the next report looks
// there whether it was applied, and stays lean if so.
func NewReporter(node, hash string, replica *failover.Machine) *Reporter {
	return &Reporter{node: node, hash: hash, replica: replica}
}

// Report proposes round r through p and waits for its outcome; policy and
// policyHash are the replicated policy as the local replica has it, now
// this watcher's clock. Every round counts into this watcher's failure
// streaks, committed or not, and once the cluster's log format reads them
// (2) each failure carries its streak (failover.StreakCounter). The result and error are failover.Submit's; lean
// says whether the report sent was a lean one. Its outcome updates the
// view: applied, the next report builds on it; not sent at all
// (cluster.ErrNotSent), the view still holds; refused by the machine, the
// next report is full, and a refused lean report keeps reports full for
// failover.LeanBackoff, since a leader older than lean reports, or than
// lean reports without a policy hash, refuses them all. An unknown outcome (a timeout, a lost answer) is settled at
// the next report from the local replica: the report is known applied
// once the replica holds its Seq as this node's last; else the next
// report is full.
func (rp *Reporter) Report(ctx context.Context, p failover.Proposer, policy *failover.Policy, policyHash string, r probes.Round, now func() time.Time) (res failover.Result, lean bool, err error) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	rp.settle()
	o := rp.stamp(Observation(rp.node, rp.hash, r), policy, rp.format())
	o = rp.enc.Encode(o, policy, policyHash, now().UnixNano())
	b, err := failover.Encode(failover.Command{Payload: o})
	if err != nil {
		rp.enc.NotSent()
		return failover.Result{}, o.Base != 0, err
	}
	resp, _, err := p.Propose(ctx, b)
	switch {
	case errors.Is(err, cluster.ErrNotSent):
		rp.enc.NotSent()
		return failover.Result{}, o.Base != 0, err
	case err != nil:
		// Unknown: settled at the next report.
		return failover.Result{}, o.Base != 0, err
	}
	res, err = failover.DecodeResponse(resp)
	switch {
	case err != nil:
		rp.enc.Refused(now().UnixNano())
	case res.Noop == "duplicate":
		// Another report of this Seq was applied, maybe not this one:
		// what the log holds is unknown.
		rp.enc.Lost()
	default:
		rp.enc.Applied(now().UnixNano())
	}
	return res, o.Base != 0, err
}

// Count counts round r into this watcher's failure streaks under the
// replicated policy, at once, even while a report waits for a leader:
// the round that goes out next carries it (Report does not count a round
// twice). Safe for concurrent use with Report.
func (rp *Reporter) Count(policy *failover.Policy, r probes.Round) {
	rp.stamp(Observation(rp.node, rp.hash, r), policy, failover.LegacyFormat)
}

func (rp *Reporter) stamp(o failover.Observe, policy *failover.Policy, format int) failover.Observe {
	rp.smu.Lock()
	defer rp.smu.Unlock()
	return rp.streaks.Stamp(o, policy, format)
}

// format is the cluster's effective log format as the local replica has
// applied it: reports carry what it reads and no more (invariant 15), so a
// mixed trio is never refused a report for its encoding. Without a replica
// it is LegacyFormat.
func (rp *Reporter) format() int {
	if rp.replica == nil {
		return failover.LegacyFormat
	}
	return rp.replica.Format()
}

// settle resolves a report left without a known outcome: applied when the
// local replica holds its Seq as this node's last applied one (a lean
// report applies only on its Base, and nothing else of this node carries
// its Seq), else lost. Only a lean report is settled so: a full one's Seq
// may repeat one an earlier process of this node sent.
func (rp *Reporter) settle() {
	o, at, ok := rp.enc.Pending()
	if !ok {
		return
	}
	if rp.replica != nil && o.Base != 0 {
		if seq, ok := rp.replica.LastSeq(rp.node); ok && seq == o.Seq {
			rp.enc.Applied(at)
			return
		}
	}
	rp.enc.Lost()
}
