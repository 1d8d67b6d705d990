package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/failover"
)

// BatchWrites lets the reconcilers whose providers can make several
// compare-and-swaps in one atomic write (dnsprovider.BatchSwapper with one
// BatchKey: RFC 2136, one server, zone and key) share their writes, so a
// region outage that moves N groups of one zone is one UPDATE, not N.
//
// A reconciler ready to write joins the batch of its key; the batch is
// sent once every member with an unwritten decision has joined it or
// finished its pass without writing, or when window has passed since the
// first joined (a member held back by a gate or a slow read delays the
// others by at most window). Each member keeps its own prerequisites and
// fence in the message, so a stale write for one group is refused by that
// group's fence and takes no other group's write with it unrefused: when
// the server refuses the batch (a prerequisite, REFUSED, too large) or
// it could not be built, every member writes on its own as it would
// without a batch, and each gets its own outcome (written, conflict,
// stale). A transport failure (the outcome is unknown) is every member's
// error, retried by the next pass from a fresh read. Verification and the
// ActionResults stay each member's own.
//
// Members on providers without the capability, or alone on their key,
// write on their own. Call BatchWrites before any of recs runs. It
// returns how many batches it made.
func BatchWrites(window time.Duration, recs []*Reconciler) int {
	by := map[string][]*Reconciler{}
	var keys []string
	for _, r := range recs {
		bs, ok := r.cfg.DNS.(dnsprovider.BatchSwapper)
		if !ok {
			continue
		}
		k := bs.BatchKey()
		if by[k] == nil {
			keys = append(keys, k)
		}
		by[k] = append(by[k], r)
	}
	n := 0
	for _, k := range keys {
		members := by[k]
		if len(members) < 2 {
			continue
		}
		b := &batch{window: window, members: members, settled: map[*Reconciler]uint64{}, changed: make(chan struct{}, 1)}
		for _, r := range members {
			r.batch = b
		}
		n++
	}
	return n
}

// errUnbatched tells a member to write on its own: the server refused
// the batch, or its sender gave up, so a plan from an earlier read may be
// what was refused.
var errUnbatched = errors.New("write on its own")

// errAlone tells a member that no other joined its batch: it writes its
// op on its own, as it planned it, since nothing refused it.
var errAlone = errors.New("alone in its batch")

// batch gathers the writes of the reconcilers of one BatchKey. The first
// member to join an open batch sends it; the others wait for its result.
type batch struct {
	window  time.Duration
	members []*Reconciler

	mu      sync.Mutex
	open    []*swapReq             // joined, not yet taken by a sender
	settled map[*Reconciler]uint64 // the generation each member is done asking to write
	changed chan struct{}          // cap 1: a member joined or settled
}

type swapReq struct {
	r    *Reconciler
	op   dnsprovider.SwapOp
	done chan error // cap 1, so a sender never blocks on a member gone
	// verified, set by the sender before done when the write landed,
	// brings the member's verification, made with the other members'
	// (verifyTogether); nil: the member verifies on its own.
	verified chan verified // cap 1
	// written, set by the sender before done when the write landed, is
	// when the server answered the UPDATE.
	written time.Time
}

// swap makes r's write through the batch. errAlone means r must write on
// its own, nobody having joined its batch; errUnbatched that it must, the
// server having refused the batch (or its sender having given up).
func (b *batch) swap(ctx context.Context, r *Reconciler, op dnsprovider.SwapOp) error {
	req := &swapReq{r: r, op: op, done: make(chan error, 1)}
	b.mu.Lock()
	b.open = append(b.open, req)
	sender := len(b.open) == 1
	b.mu.Unlock()
	b.poke()
	if !sender {
		select {
		case err := <-req.done:
			return r.landed(req, err)
		case <-ctx.Done():
			b.withdraw(req)
			return ctx.Err()
		}
	}
	reqs := b.gather(ctx)
	if ctx.Err() != nil {
		// The others still get an answer: each writes on its own, on
		// its own context.
		for _, q := range reqs {
			q.done <- errUnbatched
		}
		return ctx.Err()
	}
	b.send(ctx, reqs)
	return r.landed(req, <-req.done)
}

// landed returns the batch's answer to req, and when it is that the write
// landed and the batch verifies it, has r's pass take that verification.
func (r *Reconciler) landed(req *swapReq, err error) error {
	if err == nil && req.verified != nil {
		r.verifying = req.verified
	}
	if err == nil {
		r.batchWritten = req.written
	}
	return err
}

// settle records that r will not ask to write gen again in its current
// pass (it wrote, failed or found nothing to write), so no batch waits
// for it.
func (b *batch) settle(r *Reconciler, gen uint64) {
	b.mu.Lock()
	b.settled[r] = max(b.settled[r], gen)
	b.mu.Unlock()
	b.poke()
}

func (b *batch) poke() {
	select {
	case b.changed <- struct{}{}:
	default:
	}
}

func (b *batch) withdraw(req *swapReq) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.open = slices.DeleteFunc(b.open, func(q *swapReq) bool { return q == req })
}

// gather waits until the open batch is complete, window passes or ctx
// ends, and takes it: later joiners open the next batch.
func (b *batch) gather(ctx context.Context) []*swapReq {
	t := time.NewTimer(b.window)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return b.take(true)
		case <-ctx.Done():
			return b.take(true)
		default:
		}
		if reqs := b.take(false); reqs != nil {
			return reqs
		}
		select {
		case <-b.changed:
		case <-t.C:
			return b.take(true)
		case <-ctx.Done():
			return b.take(true)
		}
	}
}

// take returns the open batch and closes it, if force or once no member
// is still expected in it.
func (b *batch) take(force bool) []*swapReq {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !force && !b.completeLocked() {
		return nil
	}
	reqs := b.open
	b.open = nil
	return reqs
}

// completeLocked reports whether every member that has a decision to
// write has joined the open batch or settled that decision.
func (b *batch) completeLocked() bool {
	for _, m := range b.members {
		if slices.ContainsFunc(b.open, func(q *swapReq) bool { return q.r == m }) {
			continue
		}
		d := m.cfg.State.Desired()
		if d.Gen != 0 && !d.Done && b.settled[m] < d.Gen {
			return false
		}
	}
	return true
}

// send makes the batch's one write and gives every member its answer.
func (b *batch) send(ctx context.Context, reqs []*swapReq) {
	if len(reqs) == 1 {
		reqs[0].done <- errAlone
		return
	}
	first := reqs[0].r
	names := make([]string, len(reqs))
	ops := make([]dnsprovider.SwapOp, len(reqs))
	for i, q := range reqs {
		names[i], ops[i] = q.r.groupName(), q.op
	}
	// The members leave the leadership check to the batch: right before
	// the write (invariant 4), once for all of them.
	err := first.cfg.Cluster.VerifyLeader(ctx)
	if err != nil {
		err = fmt.Errorf("verify leader before dns write: %w", err)
	} else if err = first.cfg.DNS.(dnsprovider.BatchSwapper).SwapBatch(ctx, ops); err == nil {
		written := first.cfg.Now()
		for _, q := range reqs {
			q.written = written
		}
		first.log.Info("dns records written in one update", "groups", strings.Join(names, " "))
	} else if dnsprovider.IsRetryable(err) || ctx.Err() != nil {
		// Nobody knows whether it landed: each member's next pass reads.
		err = fmt.Errorf("batched write of %s: %w", strings.Join(names, " "), err)
	} else {
		first.log.Warn("batched dns write refused; writing each group on its own", "groups", strings.Join(names, " "), "err", err)
		err = errUnbatched
	}
	if err == nil {
		verifyTogether(ctx, reqs)
	}
	for _, q := range reqs {
		q.done <- err
	}
}

// verifyTogether starts the verification of the members whose write
// landed in one UPDATE, right after it: the members whose verifiers share
// a VerifyKey are verified together (TogetherVerifier.VerifyEach), each
// getting its own Verification on its own channel as soon as it is
// settled, not when the last is. In a region outage that is one round of
// queries per server for every group, where each member verifying on its
// own was a socket per query and a goroutine per member and server, all
// at once, on the machine the next write waits for. A member whose
// verifier cannot, or that has none, verifies on its own.
func verifyTogether(ctx context.Context, reqs []*swapReq) {
	by := map[string][]*swapReq{}
	var keys []string
	for _, q := range reqs {
		tv, ok := q.r.cfg.Verifier.(TogetherVerifier)
		if !ok {
			continue
		}
		k := tv.VerifyKey()
		if by[k] == nil {
			keys = append(keys, k)
		}
		by[k] = append(by[k], q)
	}
	for _, k := range keys {
		qs := by[k]
		tv := qs[0].r.cfg.Verifier.(TogetherVerifier)
		desired := make([][]dnsprovider.RRset, len(qs))
		for i, q := range qs {
			q.verified = make(chan verified, 1)
			// What the member's own verification would ask for (pass).
			desired[i] = withFence(q.op.Desired, q.op.Provider, true, q.op.FenceNew)
		}
		// The servers' propagation times count from here, as a member's
		// own verification counts them from its start.
		start := qs[0].r.cfg.Now()
		go func() {
			err := tv.VerifyEach(ctx, desired, func(i int, v *dnsprovider.Verification) { qs[i].verified <- verified{v: v, start: start} })
			if err != nil {
				// VerifyEach called done for none of them.
				for _, q := range qs {
					q.verified <- verified{start: start, err: err}
				}
			}
		}()
	}
}

// groupName names the reconciler's group in logs.
func (r *Reconciler) groupName() string {
	if r.cfg.Group == "" {
		return failover.DefaultGroup
	}
	return r.cfg.Group
}
