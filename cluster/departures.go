package cluster

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// A node stopped in order says goodbye to its peers first (the "leaving"
// RPC). Until it is back, the peers' raft keeps trying to reach it and
// logs every failure at ERROR ("failed to appendEntries to", "failed to
// heartbeat to", "failed to make requestVote RPC"): true for a crash,
// noise for an operator's stop. For a peer that said goodbye those lines
// are logged at INFO, still rate-limited, saying that the peer stopped in
// order. A peer that stops without a goodbye (a crash, a cut) is still
// an ERROR.

// departureGrace is how long after a goodbye a connection with the peer
// does not count as its return: the departing node still drains its
// streams and stops raft (drainWait, then stopWait at most).
const departureGrace = drainWait + stopWait

// departures are the peers that said goodbye, by raft address.
type departures struct {
	mu     sync.Mutex
	byAddr map[string]departure
}

type departure struct {
	id string
	at time.Time
}

func newDepartures() *departures { return &departures{byAddr: map[string]departure{}} }

// mark records that peer id at addr is stopping in order.
func (d *departures) mark(id, addr string, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.byAddr[addr] = departure{id: id, at: now}
}

// seen forgets peer id once a connection with it is made after the grace:
// it is back.
func (d *departures) seen(id string, now time.Time) (back bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for addr, dep := range d.byAddr {
		if dep.id == id && now.Sub(dep.at) >= departureGrace {
			delete(d.byAddr, addr)
			back = true
		}
	}
	return back
}

// departed reports the ID of the departed peer a raft log line names, if
// any. raft names a peer as "{Voter a 10.1.0.5:7400}" or by its address.
func (d *departures) departed(peer string) (string, bool) {
	addr := peer
	if f := strings.Fields(strings.Trim(peer, "{}")); len(f) > 0 {
		addr = f[len(f)-1]
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	dep, ok := d.byAddr[addr]
	return dep.id, ok
}

// all reports whether every other voter of servers said goodbye.
func (d *departures) all(self string, voters map[string]string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for id, addr := range voters {
		if id == self {
			continue
		}
		if _, ok := d.byAddr[addr]; !ok {
			return false
		}
	}
	return true
}

// unreachable are raft's messages about failing to reach a peer.
var unreachable = map[string]bool{
	"failed to appendEntries to":       true,
	"failed to heartbeat to":           true,
	"failed to make requestVote RPC":   true,
	"failed to contact":                true,
	"failed to pipeline appendEntries": true,
}

// quietLevel is the level of a raft line about a peer that stopped in
// order: INFO instead of WARN or ERROR.
func (d *departures) quietLevel(msg string, level hclog.Level, peer string) (hclog.Level, string, bool) {
	if d == nil || level < hclog.Warn || !unreachable[msg] {
		return level, "", false
	}
	id, ok := d.departed(peer)
	if !ok {
		return level, "", false
	}
	return hclog.Info, id, true
}

// sayGoodbye tells every other voter that this node is stopping in order,
// each within budget, all at once. Best effort: a peer that does not hear
// it logs its failures to reach us as errors, as for a crash.
func (n *Node) sayGoodbye(ctx context.Context, budget time.Duration) {
	var wg sync.WaitGroup
	for _, s := range n.servers() {
		if string(s.ID) == n.id {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, budget)
			defer cancel()
			resp, err := n.rpc.call(cctx, string(s.ID), string(s.Address), rpcRequest{Op: opLeaving})
			if err == nil {
				err = decodeError(resp) // an older node knows no goodbye
			}
			if err != nil {
				n.logger.Info("goodbye not delivered; the peer will log us as unreachable", "peer", s.ID, "err", err)
			}
		}()
	}
	wg.Wait()
}

// peerLeaving records a verified peer's goodbye.
func (n *Node) peerLeaving(id string) {
	for _, s := range n.servers() {
		if string(s.ID) == id {
			n.departed.mark(id, string(s.Address), time.Now())
			n.logger.Info("peer stopping in order; failures to reach it are logged at INFO until it is back", "peer", id)
			return
		}
	}
}

// peerSeen is called for every verified connection with peer id.
func (n *Node) peerSeen(id string) {
	if n.departed.seen(id, time.Now()) {
		n.logger.Info("peer is back after an orderly stop", "peer", id)
	}
}
