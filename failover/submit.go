package failover

import "context"

// Proposer commits an encoded command through the replicated log and
// returns what the decision core answered (cluster.Node does, forwarding to
// the leader when need be).
type Proposer interface {
	Propose(ctx context.Context, cmd []byte) (resp []byte, index uint64, err error)
}

// Leader is what the leader's loops need of the cluster: proposing, and
// confirming with a quorum that this node still leads before acting outside
// the log (a DNS write, a repair).
type Leader interface {
	Proposer
	// VerifyLeader returns nil only if this node is still the leader,
	// confirmed by a quorum, at the time of the call.
	VerifyLeader(ctx context.Context) error
}

// Submit encodes c, proposes it through p and decodes the answer: the
// result and the log index it was applied at, or why it was not. A command
// the core refused comes back as the error DecodeResponse gives, matching
// the same sentinel as on the leader (ErrRefused, ErrBadCommand, ...).
// Errors are returned as they are, unwrapped, so that every caller keeps the
// words it shows today; wrap them where the context helps. Use errors.Is
// with ErrBadCommand to tell an encoding failure from the rest.
func Submit(ctx context.Context, p Proposer, c Command) (Result, uint64, error) {
	b, err := Encode(c)
	if err != nil {
		return Result{}, 0, err
	}
	resp, index, err := p.Propose(ctx, b)
	if err != nil {
		return Result{}, 0, err
	}
	res, err := DecodeResponse(resp)
	return res, index, err
}
