package sim

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/drwatch/drwatch/cluster"
	"github.com/drwatch/drwatch/failover"
	"github.com/hashicorp/raft"
)

// liveWorld starts the three nodes of an empty schedule and waits until a
// leader runs the replicated policy everywhere. It must run in a bubble;
// the nodes stop when the test ends.
func liveWorld(t *testing.T) *World {
	t.Helper()
	w, err := NewWorld(Schedule{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	w.sched.start = time.Now()
	for _, n := range w.nodes {
		if err := w.start(n); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		w.shutdown()
		w.faults.closeTransports()
		time.Sleep(raftLeftovers)
	})
	waitFor(t, 10*time.Second, "a leader and the policy on every node", func() bool {
		if w.leader() == nil {
			return false
		}
		for _, n := range w.nodes {
			if n.machine.View().PolicyHash != w.hash {
				return false
			}
		}
		return true
	})
	return w
}

// waitFor polls cond on the bubble's clock until it holds, or fails after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %s", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// followers returns the running nodes other than the leader l.
func (w *World) followers(l *simNode) []*simNode {
	var out []*simNode
	for _, n := range w.nodes {
		if n != l && n.node != nil {
			out = append(out, n)
		}
	}
	return out
}

// play runs ev as Run would and waits for any command it started.
func (w *World) play(t *testing.T, ev Event) {
	t.Helper()
	var ops sync.WaitGroup
	if err := w.do(context.Background(), &ops, ev); err != nil {
		t.Fatal(err)
	}
	ops.Wait()
}

func submitTick(ctx context.Context, n *cluster.Node) (uint64, error) {
	_, index, err := failover.Submit(ctx, n, failover.Command{Payload: failover.Tick{}})
	return index, err
}

// Under a one-way cut from f to the leader l, f's messages to l are
// dropped (raft's route and the cluster RPC both) while l's reach f, and
// the other way round.
func TestOneWayCutDropsOnlyItsDirection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := liveWorld(t)
		l := w.leader()
		f := w.followers(l)[0]

		w.play(t, Event{Kind: "cut", Node: f.id, Peer: l.id})
		if _, err := f.trans.AppendEntriesPipeline(raft.ServerID(l.id), raft.ServerAddress(l.addr)); err == nil {
			t.Errorf("cut %s->%s: %s's raft still routes to %s", f.id, l.id, f.id, l.id)
		}
		if _, err := l.trans.AppendEntriesPipeline(raft.ServerID(f.id), raft.ServerAddress(f.addr)); err != nil {
			t.Errorf("cut %s->%s: %s's raft lost its route to %s: %v", f.id, l.id, l.id, f.id, err)
		}
		if !w.nw.isCut(f.addr, l.addr) || w.nw.isCut(l.addr, f.addr) {
			t.Errorf("cut %s->%s: RPC cut %v, reverse cut %v; want true, false", f.id, l.id, w.nw.isCut(f.addr, l.addr), w.nw.isCut(l.addr, f.addr))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := submitTick(ctx, f.node)
		cancel()
		if err == nil {
			t.Errorf("cut %s->%s: a command forwarded by %s was committed", f.id, l.id, f.id)
		}
		ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
		index, err := submitTick(ctx, l.node)
		if err != nil {
			t.Fatalf("cut %s->%s: command on the leader: %v", f.id, l.id, err)
		}
		if err := f.node.WaitApplied(ctx, index); err != nil {
			t.Errorf("cut %s->%s: %s did not apply the leader's entry %d: %v", f.id, l.id, f.id, index, err)
		}
		cancel()

		w.play(t, Event{Kind: "mend", Node: f.id, Peer: l.id})
		w.play(t, Event{Kind: "cut", Node: l.id, Peer: f.id})
		if l2 := w.leader(); l2 != l {
			t.Fatalf("leadership moved during the test")
		}
		other := w.followers(l)[1]
		ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
		index, err = submitTick(ctx, l.node)
		cancel()
		if err != nil {
			t.Fatalf("cut %s->%s: command on the leader: %v", l.id, f.id, err)
		}
		ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
		if err := other.node.WaitApplied(ctx, index); err != nil {
			t.Errorf("cut %s->%s: %s did not apply entry %d: %v", l.id, f.id, other.id, index, err)
		}
		cancel()
		ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
		if err := f.node.WaitApplied(ctx, index); err == nil {
			t.Errorf("cut %s->%s: %s applied entry %d that only %s could send it", l.id, f.id, f.id, index, l.id)
		}
		cancel()
		if got := w.Stats().Faults; got != 2 {
			t.Errorf("faults counted %d for two cuts, want 2", got)
		}
	})
}

// The delay transport holds each message at most its bound, reorders
// messages sent closer together than the bound, and with no bound passes
// them straight through in order.
func TestDelayTransportHoldsWithinBoundAndReorders(t *testing.T) {
	for _, bound := range []time.Duration{0, 100 * time.Millisecond} {
		t.Run(bound.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var f faultState
				f.init(7, nil)
				f.delayMax = bound
				_, from := raft.NewInmemTransport("x")
				_, inner := raft.NewInmemTransport("y")
				from.Connect("y", inner)
				to := newDelayTransport(inner, &f)
				defer to.Close()

				const n, gap = 40, 5 * time.Millisecond
				start := time.Now()
				var order []uint64
				var late []time.Duration
				done := make(chan struct{})
				go func() {
					defer close(done)
					for range n {
						rpc := <-to.Consumer()
						i := rpc.Command.(*raft.RequestPreVoteRequest).Term
						order = append(order, i)
						late = append(late, time.Since(start.Add(time.Duration(i)*gap)))
						rpc.Respond(&raft.RequestPreVoteResponse{}, nil)
					}
				}()
				var wg sync.WaitGroup
				for i := range n {
					wg.Go(func() {
						var resp raft.RequestPreVoteResponse
						if err := from.RequestPreVote("y", "y", &raft.RequestPreVoteRequest{Term: uint64(i)}, &resp); err != nil {
							t.Errorf("message %d: %v", i, err)
						}
					})
					time.Sleep(gap)
				}
				wg.Wait()
				<-done

				for i, d := range late {
					if d < 0 || d > bound {
						t.Errorf("message %d held %s, want within [0, %s]", order[i], d, bound)
					}
				}
				inOrder := slices.IsSorted(order)
				if bound == 0 && (!inOrder || slices.Max(late) != 0) {
					t.Errorf("no delay: order %v, max delay %s; want in order, undelayed", order, slices.Max(late))
				}
				if bound > 0 && (inOrder || slices.Max(late) == 0) {
					t.Errorf("delay up to %s: order %v, max delay %s; want some reordered and delayed", bound, order, slices.Max(late))
				}
				if got := f.delays.Messages; bound > 0 && got != n {
					t.Errorf("delays counted %d messages, want %d", got, n)
				}
			})
		})
	}
}

// A cluster whose raft messages are delayed still commits, only slower.
// The test logs the slowdown of a commit.
func TestDelayedRaftCommitsSlower(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := liveWorld(t)
		commits := func() time.Duration {
			l := w.leader()
			if l == nil {
				t.Fatal("no leader")
			}
			const n = 20
			start := time.Now()
			for range n {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := submitTick(ctx, l.node)
				cancel()
				if err != nil {
					t.Fatalf("commit: %v", err)
				}
			}
			return time.Since(start) / n
		}
		plain := commits()
		w.play(t, Event{Kind: "delay", By: delayBound})
		delayed := commits()
		w.play(t, Event{Kind: "undelay"})
		d := w.Delays()
		t.Logf("virtual time per commit: %s undelayed, %s with raft messages delayed up to %s (%d messages held, mean %s, max %s)",
			plain, delayed, delayBound, d.Messages, d.Total/time.Duration(max(d.Messages, 1)), d.Max)
		if delayed <= plain {
			t.Errorf("delayed commits took %s, undelayed %s: the delay had no effect", delayed, plain)
		}
		if d.Messages == 0 || d.Max > delayBound {
			t.Errorf("delays: %d messages, max %s; want some, within %s", d.Messages, d.Max, delayBound)
		}
		if w.Stats().Faults != 1 {
			t.Errorf("faults counted %d, want 1", w.Stats().Faults)
		}
	})
}

// A skewed node stamps its probe results with its own clock, and as
// leader stamps commands (the machine's clock) with it.
func TestSkewedClockStampsReportsAndCommands(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := liveWorld(t)
		l := w.leader()
		f := w.followers(l)[0]
		const skew = 400 * time.Millisecond
		w.play(t, Event{Kind: "skew", Node: f.id, By: skew})
		if w.faults.skewSlack() != skewBound {
			t.Errorf("skew slack %s, want %s once a clock is skewed", w.faults.skewSlack(), skewBound)
		}

		at := time.Now()
		w.probeRound(0, at)
		completed := func(node string) int64 {
			for _, nv := range l.machine.View().Nodes {
				if nv.Node == node {
					for _, p := range nv.Probes {
						return p.Last.CompletedAt
					}
				}
			}
			return 0
		}
		waitFor(t, 5*time.Second, "report of every node", func() bool {
			return completed("a") != 0 && completed("b") != 0 && completed("c") != 0
		})
		for _, n := range w.nodes {
			want := at.UnixNano()
			if n == f {
				want = at.Add(skew).UnixNano()
			}
			if got := completed(n.id); got != want {
				t.Errorf("%s's result completed at %s, want %s", n.id, time.Duration(got-at.UnixNano()), time.Duration(want-at.UnixNano()))
			}
		}

		w.play(t, Event{Kind: "unskew", Node: f.id})
		w.play(t, Event{Kind: "skew", Node: l.id, By: skew})
		before := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := submitTick(ctx, l.node)
		cancel()
		after := time.Now()
		if err != nil {
			t.Fatal(err)
		}
		if after.Sub(before) >= skew {
			t.Fatalf("commit took %s, too long to tell the skew", after.Sub(before))
		}
		now := time.Unix(0, l.machine.View().Now)
		if now.Before(before.Add(skew)) || now.After(after.Add(skew)) {
			t.Errorf("machine clock %s after the commit's start, want within [%s, %s]", now.Sub(before), skew, after.Sub(before)+skew)
		}
		if got := w.Stats().Faults; got != 2 {
			t.Errorf("faults counted %d for two skews, want 2", got)
		}
	})
}

// A transfer hands leadership to another node at once, as a deploy's
// graceful stop does; a crash leaves the cluster leaderless for at least
// the heartbeat timeout.
func TestTransferHandsLeadershipOver(t *testing.T) {
	for _, kind := range []string{"transfer", "crash"} {
		t.Run(kind, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := liveWorld(t)
				l := w.leader()
				w.play(t, Event{Kind: kind, Node: l.id})
				var next *simNode
				deadline := time.Now().Add(200 * time.Millisecond) // < heartbeat timeout
				for next == nil && !time.Now().After(deadline) {
					if n := w.leader(); n != nil && n != l {
						next = n
					}
					time.Sleep(5 * time.Millisecond)
				}
				switch {
				case kind == "transfer" && next == nil:
					t.Errorf("no other leader within 200ms of the transfer")
				case kind == "crash" && next != nil:
					t.Errorf("%s leads within 200ms of the leader's crash: the check cannot tell a transfer", next.id)
				}
				if kind == "transfer" && l.node == nil {
					t.Errorf("%s did not restart after handing over", l.id)
				}
				if got := w.Stats().Faults; got != 1 {
					t.Errorf("faults counted %d, want 1", got)
				}
			})
		})
	}
}

// Operators remove a follower through another follower: it is no voter
// until re-added, both changes are in the history, and the trio heals.
// Removing the leader is not done.
func TestRemoveMemberUntilReadded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := liveWorld(t)
		l := w.leader()
		f := w.followers(l)[0]
		voters := func() []string {
			var ids []string
			for _, p := range w.leader().node.Stats().Peers {
				if p.Suffrage == "voter" {
					ids = append(ids, p.ID)
				}
			}
			slices.Sort(ids)
			return ids
		}

		w.play(t, Event{Seq: 1, Kind: "remove", Node: l.id})
		if got := voters(); len(got) != 3 || w.Stats().Faults != 0 {
			t.Fatalf("removing the leader: voters %v, faults %d; want it skipped", got, w.Stats().Faults)
		}
		w.play(t, Event{Seq: 2, Kind: "remove", Node: f.id})
		if got := voters(); slices.Contains(got, f.id) || len(got) != 2 {
			t.Fatalf("after removing %s: voters %v", f.id, got)
		}
		w.play(t, Event{Seq: 3, Kind: "readd", Node: f.id})
		if got := voters(); len(got) != 3 {
			t.Fatalf("after re-adding %s: voters %v", f.id, got)
		}
		var kinds []string
		for _, e := range w.leader().machine.History() {
			if e.Reason == "op2" || e.Reason == "op3" {
				kinds = append(kinds, e.Kind+" "+e.Detail)
			}
		}
		want := []string{failover.KindMemberRemove + " " + f.id, failover.KindMemberAdd + " " + f.id + " at " + f.addr}
		if !slices.Equal(kinds, want) {
			t.Errorf("history: %v, want %v", kinds, want)
		}
		if s := w.Stats(); s.Faults != 1 || s.CommandsAcked != 2 || len(w.acked) != 2 {
			t.Errorf("stats %+v, %d acknowledged records; want 1 fault, 2 acknowledged", s, len(w.acked))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		index, err := submitTick(ctx, w.leader().node)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.node.WaitApplied(ctx, index); err != nil {
			t.Errorf("re-added %s does not apply new entries: %v", f.id, err)
		}
		w.check()
		if v := w.Violations(); len(v) > 0 {
			t.Errorf("violations: %v", v)
		}
	})
}

// Every new fault kind is drawn, within its bounds, ended by its ending
// kind after it, and shown on its own line.
func TestGenerateDrawsTheNewFaults(t *testing.T) {
	ends := map[string]string{"cut": "mend", "delay": "undelay", "skew": "unskew", "remove": "readd", "transfer": ""}
	seen := map[string]int{}
	for seed := uint64(1); seed <= 300; seed++ {
		s := Generate(seed)
		text := s.String()
		for i, e := range s.Events {
			end, ok := ends[e.Kind]
			if !ok {
				continue
			}
			seen[e.Kind]++
			if !strings.Contains(text, e.String()) || strings.Contains(e.String(), "%!") {
				t.Errorf("seed %d: %q not shown well", seed, e.String())
			}
			switch e.Kind {
			case "delay":
				if e.By <= 0 || e.By > delayBound {
					t.Errorf("seed %d: delay bound %s outside (0, %s]", seed, e.By, delayBound)
				}
			case "skew":
				if e.By == 0 || e.By > skewBound || e.By < -skewBound {
					t.Errorf("seed %d: skew %s outside ±%s", seed, e.By, skewBound)
				}
			case "cut":
				if e.Node == e.Peer || e.Peer == "" {
					t.Errorf("seed %d: cut %s->%s", seed, e.Node, e.Peer)
				}
			}
			if end != "" && !slices.ContainsFunc(s.Events[i+1:], func(x Event) bool {
				return x.Kind == end && x.Node == e.Node && x.Peer == e.Peer
			}) {
				t.Errorf("seed %d: %s has no %s after it", seed, e, end)
			}
		}
	}
	for kind := range ends {
		if seen[kind] == 0 {
			t.Errorf("no %s in 300 schedules", kind)
		}
	}
	if got := (Schedule{Events: []Event{{Kind: "cut"}, {Kind: "mend"}, {Kind: "delay"}, {Kind: "skew"}, {Kind: "transfer"}, {Kind: "remove"}, {Kind: "readd"}}}).Faults(); got != 5 {
		t.Errorf("Faults counts %d of cut, mend, delay, skew, transfer, remove, readd; want 5", got)
	}
}

// Under a one-way cut from x to y, with loseReplies, y's requests still
// reach x, but x's replies are lost: for raft, and on the cluster RPC's
// connections.
func TestOneWayCutLosesTheCutSidesReplies(t *testing.T) {
	defer func(was bool) { loseReplies = was }(loseReplies)
	loseReplies = true
	synctest.Test(t, func(t *testing.T) {
		var f faultState
		f.init(1, nil)
		_, xin := raft.NewInmemTransport("x")
		_, yin := raft.NewInmemTransport("y")
		yin.Connect("x", xin)
		x := f.transport("x", xin)
		defer f.closeTransports()
		go func() {
			for {
				select {
				case rpc := <-x.Consumer():
					rpc.Respond(&raft.RequestPreVoteResponse{Granted: true}, nil)
				case <-x.stop:
					return
				}
			}
		}()
		ask := func() (bool, error) {
			var resp raft.RequestPreVoteResponse
			err := yin.RequestPreVote("x", "x", &raft.RequestPreVoteRequest{RPCHeader: raft.RPCHeader{ID: []byte("y")}}, &resp)
			return resp.Granted, err
		}
		if granted, err := ask(); err != nil || !granted {
			t.Fatalf("no cut: reply %v, %v; want granted", granted, err)
		}
		cut := func(on bool) {
			f.mu.Lock()
			f.oneway[[2]string{"x", "y"}] = on
			f.mu.Unlock()
		}
		cut(true)
		if _, err := ask(); err == nil {
			t.Errorf("cut x->y: y got x's raft reply")
		}
		cut(false)
		if granted, err := ask(); err != nil || !granted {
			t.Errorf("mended: reply %v, %v; want granted", granted, err)
		}

		nw := newNetwork()
		l := nw.listen("x")
		defer l.Close()
		nw.setCut("x", "y", true)
		if _, err := nw.dialer("x")(context.Background(), "y"); err == nil {
			t.Errorf("cut x->y: x opened a connection to y")
		}
		got := make(chan string, 1)
		go func() {
			c, err := l.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 4)
			n, _ := c.Read(buf)
			got <- string(buf[:n])
			_, _ = c.Write([]byte("pong"))
		}()
		c, err := nw.dialer("y")(context.Background(), "x")
		if err != nil {
			t.Fatalf("cut x->y: y cannot reach x: %v", err)
		}
		defer c.Close()
		if _, err := c.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		if s := <-got; s != "ping" {
			t.Errorf("x read %q, want y's ping", s)
		}
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		if n, err := c.Read(make([]byte, 4)); err == nil {
			t.Errorf("cut x->y: y read %d bytes of x's reply", n)
		}
	})
}

// A burst of raft messages within one virtual instant past livelockBurst
// is refused and recorded once; the count starts again when time moves.
func TestLivelockBurstIsAViolation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []string
		var f faultState
		f.init(1, func(format string, args ...any) { got = append(got, format) })
		for i := range livelockBurst {
			if f.livelocked("a") {
				t.Fatalf("message %d of one instant refused, want up to %d", i+1, livelockBurst)
			}
		}
		if !f.livelocked("a") || !f.livelocked("a") {
			t.Errorf("messages past %d in one instant passed", livelockBurst)
		}
		if len(got) != 1 || !strings.Contains(got[0], "livelock") {
			t.Errorf("violations %v, want one livelock", got)
		}
		time.Sleep(time.Millisecond)
		if f.livelocked("a") {
			t.Errorf("first message of the next instant refused")
		}
	})
}
