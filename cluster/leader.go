package cluster

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// broadcast is a level-free wake-up: wait returns a channel closed at the
// next fire. Firing never blocks.
type broadcast struct {
	mu sync.Mutex
	ch chan struct{}
}

func newBroadcast() *broadcast { return &broadcast{ch: make(chan struct{})} }

func (b *broadcast) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ch
}

func (b *broadcast) fire() {
	b.mu.Lock()
	close(b.ch)
	b.ch = make(chan struct{})
	b.mu.Unlock()
}

// leadership holds a context that is live exactly while this node leads.
type leadership struct {
	mu      sync.Mutex
	leading bool
	ctx     context.Context
	cancel  context.CancelFunc
	changed *broadcast
}

func newLeadership() *leadership {
	return &leadership{changed: newBroadcast()}
}

// set records a transition; it never blocks.
func (l *leadership) set(leading bool) {
	l.mu.Lock()
	if leading == l.leading {
		l.mu.Unlock()
		return
	}
	l.leading = leading
	if leading {
		l.ctx, l.cancel = context.WithCancel(context.Background())
	} else {
		l.cancel()
		l.ctx, l.cancel = nil, nil
	}
	l.mu.Unlock()
	l.changed.fire()
}

// current returns the leadership context (nil when not leading) and a
// channel closed at the next transition.
func (l *leadership) current() (context.Context, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ctx, l.changed.wait()
}

// watchLeadership drains raft's NotifyCh. It only flips state and fires
// wake-ups, so raft's leader loop never waits for a consumer.
func (n *Node) watchLeadership(notify <-chan bool) {
	for {
		select {
		case v := <-notify:
			n.lead.set(v)
			if v {
				n.logger.Info("leadership gained", "term", n.raft.CurrentTerm())
			} else {
				n.logger.Info("leadership lost", "term", n.raft.CurrentTerm())
			}
		case <-n.life.Done():
			n.lead.set(false)
			return
		}
	}
}

// watchObservations counts leader changes and wakes proposals waiting for
// a leader. The observer is non-blocking: raft drops an observation rather
// than wait for us.
func (n *Node) watchObservations() {
	ch := make(chan raft.Observation, 64)
	obs := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	n.raft.RegisterObserver(obs)
	defer n.raft.DeregisterObserver(obs)
	var last raft.ServerID
	for {
		select {
		case o := <-ch:
			lo := o.Data.(raft.LeaderObservation)
			if lo.LeaderID != last {
				if lo.LeaderID != "" {
					n.metrics.leaderChanges.Inc()
					n.logger.Info("leader changed", "leader", string(lo.LeaderID), "term", n.raft.CurrentTerm())
				}
				last = lo.LeaderID
			}
			n.leaderCh.fire()
		case <-n.life.Done():
			return
		}
	}
}

// RunWhileLeader blocks until ctx ends. Each time this node gains
// leadership it calls fn in its own goroutine with a context that is
// cancelled the moment leadership is lost (or ctx ends), and waits for fn
// to return before it can call fn again. If fn returns while this node
// still leads, fn is not called again until leadership is lost and gained
// again. RunWhileLeader returns only after fn has returned.
//
// fn is called only once the local replica has applied every entry
// committed before this leadership began (a raft barrier): a new leader,
// a restarted one above all, learns the commit index only by committing
// in its own term, so until then its state machine may lag behind what
// the cluster has decided, and leader-only work must not act on that
// (a remediation cap counted from records not applied yet, a DNS write
// for a decision already superseded).
func (n *Node) RunWhileLeader(ctx context.Context, fn func(leaderCtx context.Context)) {
	for {
		lctx, changed := n.lead.current()
		if lctx == nil {
			select {
			case <-changed:
				continue
			case <-ctx.Done():
				return
			}
		}
		runCtx, cancel := context.WithCancel(lctx)
		stop := context.AfterFunc(ctx, cancel)
		if n.catchUp(runCtx) == nil {
			done := make(chan struct{})
			go func() {
				defer close(done)
				fn(runCtx)
			}()
			<-done
		}
		stop()
		cancel()
		select {
		case <-lctx.Done(): // this term of leadership is over
		case <-ctx.Done():
			return
		}
	}
}

// LeaderContext returns a context live exactly while this node leads, and
// false (with a nil context) when it does not lead.
func (n *Node) LeaderContext() (context.Context, bool) {
	ctx, _ := n.lead.current()
	return ctx, ctx != nil
}

// catchUpRetry is the pause between two barriers that failed: leadership
// was lost (ctx ends as soon as this node hears of it) or raft was busy.
const catchUpRetry = 50 * time.Millisecond

// catchUp waits until the local replica has applied every entry committed
// before now (a raft barrier on the leader). It gives up only when ctx
// ends (leadership lost) or the node shuts down, so a leader never skips
// its leader-only work for a barrier that failed once.
func (n *Node) catchUp(ctx context.Context) error {
	for {
		_, err := n.barrierLocal(ctx)
		if err == nil || errors.Is(err, ErrShutdown) {
			return err
		}
		t := time.NewTimer(catchUpRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
