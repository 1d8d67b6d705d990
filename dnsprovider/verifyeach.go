package dnsprovider

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
)

// VerifyEach is Verify for several decisions at once: the groups that one
// batched UPDATE wrote. It finds the servers once, and asks each server
// for every RRset of every decision still unverified in one round of
// queries sent together on one UDP socket, their replies matched by ID,
// where Verify makes a socket and a goroutine per decision and server and
// a socket per query. So a region outage that moves 50 groups verifies
// them for little more than one costs, at the moment the machine is
// busiest.
//
// Each decision gets the Verification its own Verify would report: a
// server serves it from the first round in which every one of its RRsets
// matched (values and TTL, as RRset.Equal), and done(i, v) is called for
// decision i as soon as every server serves it or gave up on it, whatever
// the others still wait for. A reply that is truncated, or that fails the
// checks of a reply (exchanger.checkReply), is asked again on its own, as
// Verify asks it (over TCP after truncation), so each error is the one
// Verify would report. A round in which a server answers nothing gives
// every decision it asked the transport error, as Verify's query would.
//
// VerifyEach returns once done was called for every decision, or an error,
// calling done for none, when the server list cannot be found. done is
// called from several goroutines, never twice for one decision.
func (v *Verifier) VerifyEach(ctx context.Context, desired [][]RRset, done func(i int, v *Verification)) error {
	if len(desired) == 0 {
		return nil
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, v.cfg.Timeout)
	defer cancel()
	servers, err := v.Servers(ctx)
	if err != nil {
		return err
	}
	res := make([][]ServerResult, len(desired))
	left := make([]atomic.Int32, len(desired))
	for i := range desired {
		res[i] = append([]ServerResult(nil), servers...)
		left[i].Store(int32(len(servers)))
	}
	// final records that server j is done with decision i: the last
	// server to finish hands the decision its Verification. The atomic
	// orders every server's writes to res[i] before that read.
	final := func(i int) {
		if left[i].Add(-1) == 0 {
			done(i, &Verification{Servers: res[i]})
		}
	}
	var wg sync.WaitGroup
	for j, s := range servers {
		if s.Err != nil {
			for i := range desired {
				final(i)
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			v.pollEach(ctx, start, j, desired, res, final)
		}()
	}
	wg.Wait()
	if len(servers) == 0 {
		for i := range desired {
			done(i, &Verification{})
		}
	}
	for j, s := range servers {
		if s.Err != nil {
			continue
		}
		var late int
		var after time.Duration
		var why error
		for i := range desired {
			r := res[i][j]
			after = max(after, r.After)
			if !r.Matched {
				late++
				why = cmp.Or(why, r.Err)
			}
		}
		if late == 0 {
			v.log.Info("dns answers propagated", "server", s.Server, "decisions", len(desired), "after", after)
		} else {
			v.log.Warn("dns answers not propagated", "server", s.Server, "decisions", len(desired), "not_propagated", late, "after", after, "err", why)
		}
	}
	return nil
}

// VerifyKey implements reconcile.TogetherVerifier: two verifiers with the
// same key ask the same servers the same way, so either may verify the
// other's decisions.
func (v *Verifier) VerifyKey() string {
	return fmt.Sprintf("%s %q %s %d %s %s %s", v.zone, v.cfg.Servers, v.cfg.Resolver, v.cfg.Port, v.cfg.Timeout, v.cfg.Interval, v.cfg.QueryTimeout)
}

// pollEach polls server j for every decision until each matched, or ctx
// ends, writing decision i's result to res[i][j] and calling final(i)
// once it is settled on this server.
func (v *Verifier) pollEach(ctx context.Context, start time.Time, j int, desired [][]RRset, res [][]ServerResult, final func(int)) {
	ex := exchanger{server: res[0][j].Server, zone: v.zone, timeout: v.cfg.QueryTimeout}
	pending := make([]int, len(desired))
	for i := range pending {
		pending[i] = i
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			for _, i := range pending {
				res[i][j].gaveUp(ctx, start)
				final(i)
			}
			return
		case <-t.C:
		}
		var next []int
		readEach(ctx, &ex, v.zone, pending, desired, func(i int, got []RRset, err error) {
			r := &res[i][j]
			r.read(got, err, desired[i], start)
			if r.Matched {
				final(i)
				return
			}
			next = append(next, i)
		})
		if pending = next; len(pending) == 0 {
			return
		}
		t.Reset(v.cfg.Interval)
	}
}

// readEach reads the RRsets of the decisions in which, as readSets reads
// one decision's, and calls got for each decision once: as soon as every
// one of its RRsets is read, or with the first error among them. The
// queries go out together on one UDP socket (pipeline); one whose reply
// is truncated or bad is asked again on its own (exchanger.query) right
// away, beside the others. got is never called twice at once.
func readEach(ctx context.Context, ex *exchanger, zone string, which []int, desired [][]RRset, got func(i int, sets []RRset, err error)) {
	type want struct {
		dec, set int
		id       RRsetID
		qtype    uint16
	}
	var (
		mu      sync.Mutex // guards out, missing, failed and the calls of got
		wants   []want
		msgs    []*dns.Msg
		out     = map[int][]RRset{}
		missing = map[int]int{}
		failed  = map[int]bool{}
	)
	for _, i := range which {
		out[i] = make([]RRset, len(desired[i]))
		missing[i] = len(desired[i])
		for k, s := range desired[i] {
			id := normalizeID(s.ID(), zone)
			t, ok := dns.StringToType[id.Type]
			if !ok {
				failed[i] = true
				got(i, nil, errors.New("unknown type "+id.Type))
				break
			}
			wants = append(wants, want{dec: i, set: k, id: id, qtype: t})
			m := new(dns.Msg)
			m.SetQuestion(dns.CanonicalName(AbsoluteName(id.Name, zone)), t)
			m.RecursionDesired = false
			m.SetEdns0(udpSize, false)
			msgs = append(msgs, m)
		}
		if missing[i] == 0 && !failed[i] {
			got(i, out[i], nil)
		}
	}
	record := func(w want, rrs []dns.RR, err error) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case failed[w.dec]:
		case err != nil:
			failed[w.dec] = true
			got(w.dec, nil, err)
		default:
			out[w.dec][w.set] = rrsetFrom(w.id, rrs)
			if missing[w.dec]--; missing[w.dec] == 0 {
				got(w.dec, out[w.dec], nil)
			}
		}
	}
	var again sync.WaitGroup
	askAgain := func(k int) {
		again.Add(1)
		go func() {
			defer again.Done()
			w := wants[k]
			mu.Lock()
			gone := failed[w.dec]
			mu.Unlock()
			if gone {
				return
			}
			rrs, err := ex.query(ctx, AbsoluteName(w.id.Name, zone), w.qtype)
			record(w, rrs, err)
		}()
	}
	terr := ex.pipelines(ctx, msgs, func(k int, r *dns.Msg) {
		w := wants[k]
		if r.Truncated {
			askAgain(k)
			return
		}
		rrs, err := ex.answer(r, msgs[k].Question[0].Name, w.qtype)
		if err != nil {
			askAgain(k)
			return
		}
		record(w, rrs, nil)
	}, askAgain)
	again.Wait()
	// What the server never answered fails as Verify's query fails on a
	// silent server.
	mu.Lock()
	defer mu.Unlock()
	for _, i := range which {
		if !failed[i] && missing[i] > 0 {
			failed[i] = true
			if terr == nil {
				terr = fmt.Errorf("query %s: %w: no reply", zone, ErrBadReply)
			}
			got(i, nil, terr)
		}
	}
}

// pipelineSockets is how many sockets the queries of a round are spread
// over at most, in pipelines of at least pipelineShare queries: a server
// such as BIND hands each socket's queries to one of its threads (the
// kernel spreads them by source port), so one socket would have one
// thread answer them all, one after the other, while the others idle.
const (
	pipelineSockets = 4
	pipelineShare   = 8
)

// pipelines is pipeline over up to pipelineSockets sockets at once, each
// with its share of ms; reply and bad may be called from each at once.
// It returns the first transport error among them.
func (x *exchanger) pipelines(ctx context.Context, ms []*dns.Msg, reply func(k int, r *dns.Msg), bad func(k int)) error {
	n := min(pipelineSockets, (len(ms)+pipelineShare-1)/pipelineShare)
	if n <= 1 {
		return x.pipeline(ctx, ms, reply, bad)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for c := range n {
		lo, hi := c*len(ms)/n, (c+1)*len(ms)/n
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[c] = x.pipeline(ctx, ms[lo:hi], func(k int, r *dns.Msg) { reply(lo+k, r) }, func(k int) { bad(lo + k) })
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// pipelineWindow is how many queries of a pipeline may wait for their
// reply at once: enough to keep a server busy, few enough that the
// replies never overflow the socket's receive buffer.
const pipelineWindow = 32

// pipeline sends the unsigned queries ms on one UDP socket to x's server,
// up to pipelineWindow at a time (each reply lets the next query go), and
// reads the replies until each has one, the server stays silent for the
// query timeout, or ctx ends. It calls reply(k, r) with each reply to
// ms[k] that passes checkReply, and bad(k) for one that does not: the
// caller asks those again on their own. It returns nil once every query
// got its reply, else the transport error that left the others
// unanswered, classified as exchange classifies one. Replies are matched
// to the queries waiting for one by ID, which pipeline gives each query
// afresh, none shared among them; a reply to none of them (a late answer,
// a stray datagram) or a second one to a query is dropped, as is a
// datagram that does not parse.
func (x *exchanger) pipeline(ctx context.Context, ms []*dns.Msg, reply func(k int, r *dns.Msg), bad func(k int)) error {
	if len(ms) == 0 {
		return nil
	}
	c := &dns.Client{Net: "udp", Timeout: x.timeout, UDPSize: udpSize}
	conn, err := c.DialContext(ctx, x.server)
	if err != nil {
		return x.pipelineErr(ctx, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	waiting := make(map[uint16]int, pipelineWindow)
	sent := 0
	send := func() error {
		for ; sent < len(ms) && len(waiting) < pipelineWindow; sent++ {
			m := ms[sent]
			for {
				m.Id = dns.Id()
				if _, taken := waiting[m.Id]; !taken {
					break
				}
			}
			waiting[m.Id] = sent
			if err := conn.WriteMsg(m); err != nil {
				return err
			}
		}
		return nil
	}
	buf := make([]byte, dns.MaxMsgSize)
	for len(waiting) > 0 || sent < len(ms) {
		if err := send(); err != nil {
			return x.pipelineErr(ctx, err)
		}
		// Silence for the query timeout ends the wait, as it ends one
		// query's.
		deadline := time.Now().Add(x.timeout)
		if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
			deadline = d
		}
		if err := conn.SetReadDeadline(deadline); err != nil {
			return x.pipelineErr(ctx, err)
		}
		n, err := conn.Read(buf)
		if err != nil {
			return x.pipelineErr(ctx, err)
		}
		r := new(dns.Msg)
		if r.Unpack(buf[:n]) != nil {
			continue
		}
		k, ok := waiting[r.Id]
		if !ok {
			continue
		}
		delete(waiting, r.Id)
		if x.checkReply("query", ms[k], r) != nil {
			bad(k)
			continue
		}
		reply(k, r)
	}
	return nil
}

// pipelineErr is the error of a pipeline's socket, as exchange reports a
// query's: cancelled when ctx was (closing the socket is how a
// cancellation reaches a blocked read).
func (x *exchanger) pipelineErr(ctx context.Context, err error) error {
	if ctx.Err() != nil && (errors.Is(err, net.ErrClosed) || strings.Contains(err.Error(), "use of closed")) {
		err = fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return x.classifyTransport("query", nil, err)
}
