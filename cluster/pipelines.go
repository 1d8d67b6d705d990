package cluster

import (
	"log/slog"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// pipelines is raft's transport with every AppendEntries pipeline it opens
// kept on a list, so that shutdown can close them.
//
// hashicorp/raft v1.8.0 can leave a pipeline's send blocked for ever. In
// pipelineReplicate, once pipelineDecode, the goroutine that reads the
// pipeline's results, has stopped (a follower refused an entry or answered
// with a newer term), the transport's own response reader blocks handing
// the next result to nobody (doneCh), and if raft picks its trigger over
// the stopped decoder, the next AppendEntries, whose request is already
// written, blocks handing it to that reader (inprogressCh). The transport
// ends those waits only when the pipeline is closed, and raft closes it only
// when the send returns, from the goroutine that is blocked. raft's
// Shutdown waits for that goroutine, so a node caught in that state never
// stopped: a SIGINT to `drwatch demo` was once ignored for 70 s while a
// pipeline had been blocked for minutes. NetworkTransport, with its
// default of two RPCs in flight, leaves both hand-offs unbuffered, so one
// such send is enough (TestClosingPipelinesFreesASendRaftLeftStuck makes
// it happen within seconds); InmemTransport buffers 16 of each.
// Closing the pipeline from outside makes the send return
// ErrPipelineShutdown, and raft's replication goroutine then exits.
type pipelines struct {
	raft.Transport
	// stuckAfter, when set, is how long a send may last before its
	// pipeline is closed: outside shutdown too, a stuck send would leave
	// the follower without entries while this node leads. Set it well
	// above the longest legitimate send, a write and a read each under
	// the transport's deadline.
	stuckAfter time.Duration
	logger     *slog.Logger

	mu     sync.Mutex
	open   map[*trackedPipeline]struct{}
	closed bool
}

// pipelinesPreVote is pipelines over a transport that supports pre-vote:
// raft checks the interface once, at start, to choose its election.
type pipelinesPreVote struct {
	*pipelines
	pv raft.WithPreVote
}

var (
	_ raft.WithClose   = (*pipelines)(nil)
	_ raft.WithPreVote = pipelinesPreVote{}
)

// trackPipelines wraps t; the result implements raft.WithPreVote exactly
// when t does.
func trackPipelines(t raft.Transport) (raft.Transport, *pipelines) {
	p := &pipelines{Transport: t, open: map[*trackedPipeline]struct{}{}}
	if pv, ok := t.(raft.WithPreVote); ok {
		return pipelinesPreVote{pipelines: p, pv: pv}, p
	}
	return p, p
}

// RequestPreVote implements raft.WithPreVote.
func (p pipelinesPreVote) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return p.pv.RequestPreVote(id, target, args, resp)
}

// AppendEntriesPipeline implements raft.Transport; once closeAll has run,
// a pipeline raft asks for is closed at once.
func (p *pipelines) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	inner, err := p.Transport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	tp := &trackedPipeline{AppendPipeline: inner, owner: p, peer: id}
	p.mu.Lock()
	closed := p.closed
	if !closed {
		p.open[tp] = struct{}{}
	}
	p.mu.Unlock()
	if closed {
		_ = inner.Close()
		return nil, raft.ErrPipelineShutdown
	}
	return tp, nil
}

// Close implements raft.WithClose: raft calls it once its goroutines have
// stopped. The transport underneath is closed if it can be.
func (p *pipelines) Close() error {
	p.closeAll()
	if c, ok := p.Transport.(raft.WithClose); ok {
		return c.Close()
	}
	return nil
}

// closeAll closes every pipeline still open, freeing a send raft is stuck
// in, and every one opened from now on. It returns how many it closed.
func (p *pipelines) closeAll() int {
	p.mu.Lock()
	p.closed = true
	open := make([]*trackedPipeline, 0, len(p.open))
	for tp := range p.open {
		open = append(open, tp)
	}
	p.mu.Unlock()
	for _, tp := range open {
		_ = tp.Close()
	}
	return len(open)
}

// trackedPipeline leaves the list when raft closes it.
type trackedPipeline struct {
	raft.AppendPipeline
	owner *pipelines
	peer  raft.ServerID
}

// AppendEntries implements raft.AppendPipeline; a send that lasts longer
// than stuckAfter is stuck, and closing the pipeline frees it: raft falls
// back to plain AppendEntries and opens a new pipeline.
func (tp *trackedPipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	if d := tp.owner.stuckAfter; d > 0 {
		t := time.AfterFunc(d, func() {
			tp.owner.logger.Warn("raft pipeline send stuck, pipeline closed", "peer", string(tp.peer), "after", d)
			_ = tp.Close()
		})
		defer t.Stop()
	}
	return tp.AppendPipeline.AppendEntries(args, resp)
}

// Close implements raft.AppendPipeline; raft's pipelines allow Close more
// than once and from another goroutine.
func (tp *trackedPipeline) Close() error {
	tp.owner.mu.Lock()
	delete(tp.owner.open, tp)
	tp.owner.mu.Unlock()
	return tp.AppendPipeline.Close()
}
