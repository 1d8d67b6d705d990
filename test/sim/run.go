package sim

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// settleBound is how long, in virtual time, the cluster may take to have
// every node running and every replica identical once the faults stop.
const settleBound = 30 * time.Second

// raftLeftovers bounds how long goroutines raft leaves behind at Shutdown
// stay blocked (see Run).
const raftLeftovers = 10 * time.Second

// Run plays sched in a fresh World and returns it once every node has
// stopped. It must be called inside a synctest bubble: every timer, raft's
// included, then runs on the bubble's virtual clock.
func Run(sched Schedule) (*World, error) {
	w, err := NewWorld(sched)
	if err != nil {
		return nil, err
	}
	w.sched.start = time.Now()
	for _, n := range w.nodes {
		if err := w.start(n); err != nil {
			w.shutdown()
			return nil, err
		}
	}
	opCtx, cancelOps := context.WithCancel(context.Background())
	var ops sync.WaitGroup
	defer func() {
		cancelOps()
		ops.Wait()
		w.shutdown()
		w.faults.closeTransports()
		w.count(func(s *Stats) { s.Virtual = time.Since(w.sched.start) })
		// raft.Shutdown does not wait for every goroutine it started: a
		// leadership transfer's TimeoutNow to a peer that has stopped
		// waits out InmemTransport's timeout (10 × 500ms). Let them end
		// before the bubble does; virtual time costs nothing.
		time.Sleep(raftLeftovers)
	}()

	events := sched.Events
	nextRound := Interval
	for now := time.Duration(0); now < sched.Length; {
		next := nextRound
		if len(events) > 0 && events[0].At < next {
			next = events[0].At
		}
		time.Sleep(next - now)
		now = next
		for len(events) > 0 && events[0].At <= now {
			ev := events[0]
			events = events[1:]
			if err := w.do(opCtx, &ops, ev); err != nil {
				return w, err
			}
		}
		if now >= nextRound {
			w.probeRound(now, time.Now())
			nextRound += Interval
		}
		w.check()
		if len(w.Violations()) > 0 {
			return w, nil
		}
	}

	// The faults stop: every partition heals, every node runs again (and
	// is a voter again), the DNS authority answers at once, and within
	// settleBound the replicas must agree and DNS hold their desired state
	// (invariant 4).
	w.faultsOver.Store(true)
	w.auth.Clear()
	clear(w.parted)
	w.faults.clear()
	for _, n := range w.nodes {
		if n.node == nil {
			if err := w.start(n); err != nil {
				return w, err
			}
		}
	}
	w.applyLinks()
	deadline := time.Now().Add(settleBound)
	for {
		agree := w.readdAll() && w.converged()
		dnsOK, why := w.dnsConverged()
		if agree && dnsOK {
			break
		}
		if time.Now().After(deadline) {
			if !agree {
				w.violate("replicas did not converge within %s of the faults ending: %s", settleBound, w.raftStates())
			} else {
				w.violate("invariant 4: DNS did not converge within %s of the faults ending: %s", dnsBound, why)
			}
			break
		}
		time.Sleep(100 * time.Millisecond)
		w.check()
	}
	w.check()
	return w, nil
}

func (w *World) do(ctx context.Context, ops *sync.WaitGroup, ev Event) error {
	switch ev.Kind {
	case "outage": // scripted truth only: Down reads it
	case "crash":
		if n := w.byID(ev.Node); n.node != nil {
			w.count(func(s *Stats) { s.Faults++ })
			w.crash(n)
		}
	case "restart":
		if n := w.byID(ev.Node); n.node == nil {
			return w.start(n)
		}
	case "partition", "heal":
		cut := ev.Kind == "partition"
		if cut {
			w.count(func(s *Stats) { s.Faults++ })
		}
		for _, n := range w.nodes {
			if n.id != ev.Node && (ev.Peer == "" || ev.Peer == n.id) {
				w.parted[pair(ev.Node, n.id)] = cut
			}
		}
		w.applyLinks()
	case "dnsfault":
		return w.dnsFault(ev)
	case "dnsslow":
		w.dnsSlow(ev)
	case "depose":
		w.depose(ctx, ops, ev)
	case "revive":
		return w.revive()
	case "broken":
		w.breakTarget(ev)
	case "churn":
		w.mu.Lock()
		w.churn = ev.Count
		w.mu.Unlock()
	case "op":
		node := w.via()
		if node == nil {
			break
		}
		ops.Add(1)
		go func() {
			defer ops.Done()
			w.operator(ctx, node, ev)
		}()
	default:
		if !w.fault(ctx, ops, ev) {
			return fmt.Errorf("unknown event %q", ev.Kind)
		}
	}
	return nil
}

// Stats returns what the run did.
func (w *World) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}
