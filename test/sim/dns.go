package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/executor/reconcile"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/sim/simdns"
)

// dnsBound is how long, in virtual time, DNS may take to hold the desired
// state of the replicas (records and fence, the decision verified) once
// the faults stop: every node runs, no link is cut, the authority answers
// at once. It is the same bound the replicas have to agree (settleBound):
// a leader is elected within about two election timeouts, and the
// reconciler, wired as the watcher wires it, retries at most one Interval
// apart.
const dnsBound = settleBound

// newAuthority is the one DNS authority all three nodes write: the zone
// of the policy, every failover group's records in it, each group's
// primary records as the operator left them before any decision (no
// fence).
func newAuthority(p failover.Policy) (*simdns.Authority, error) {
	auth := simdns.New(p.Zone, "")
	for _, g := range groupsOf(&p) {
		if _, err := auth.Client(g.fence).SetRecords(context.Background(), siteRecords(*g.policy, failover.Primary)); err != nil {
			return nil, fmt.Errorf("seed the authority with group %s: %w", g.name, err)
		}
	}
	return auth, nil
}

// nodeDNS is one node's path to the authority: the simdns client, with the
// latency the schedule gives that node's DNS traffic. A request in flight
// lands even when its caller gives up (its context ends), as a UDP or TCP
// message already sent does; the caller then sees its context's error.
type nodeDNS struct {
	w    *World
	node string
	c    *simdns.Client
}

var (
	_ dnsprovider.Provider          = (*nodeDNS)(nil)
	_ dnsprovider.CompareAndSwapper = (*nodeDNS)(nil)
	_ dnsprovider.BatchSwapper      = (*nodeDNS)(nil)
	_ reconcile.Verifier            = (*nodeVerifier)(nil)
)

func (d *nodeDNS) Zone() string      { return d.c.Zone() }
func (d *nodeDNS) FenceName() string { return d.c.FenceName() }

func (d *nodeDNS) GetRecords(ctx context.Context, want []dnsprovider.RRsetID) ([]dnsprovider.RRset, error) {
	return inFlight(ctx, d.w, d.node, func(ctx context.Context) ([]dnsprovider.RRset, error) {
		return d.c.GetRecords(ctx, want)
	})
}

func (d *nodeDNS) SetRecords(ctx context.Context, sets []dnsprovider.RRset) ([]dnsprovider.RRset, error) {
	return inFlight(ctx, d.w, d.node, func(ctx context.Context) ([]dnsprovider.RRset, error) {
		return d.c.SetRecords(ctx, sets)
	})
}

func (d *nodeDNS) GetFence(ctx context.Context) (uint64, error) {
	return inFlight(ctx, d.w, d.node, func(ctx context.Context) (uint64, error) {
		return d.c.GetFence(ctx)
	})
}

func (d *nodeDNS) Swap(ctx context.Context, expected, desired []dnsprovider.RRset, fenceOld, fenceNew uint64) error {
	return d.write(ctx, func(ctx context.Context) error {
		return d.c.Swap(ctx, expected, desired, fenceOld, fenceNew)
	})
}

// BatchKey implements dnsprovider.BatchSwapper: the simdns client's key,
// so the reconcilers of one leadership batch as production's of one
// server, zone and key do.
func (d *nodeDNS) BatchKey() string { return d.c.BatchKey() }

// SwapBatch implements dnsprovider.BatchSwapper: the ops, each made by
// this node's path to its group's fence, go to the authority as one
// simdns SwapBatch, one write on this node's path. The world counts the
// batches, the swaps they carry and those the authority refused (and
// who sent them).
func (d *nodeDNS) SwapBatch(ctx context.Context, ops []dnsprovider.SwapOp) error {
	inner := make([]dnsprovider.SwapOp, len(ops))
	for i, op := range ops {
		q, ok := op.Provider.(*nodeDNS)
		if !ok || q.node != d.node {
			return fmt.Errorf("sim swap batch: %w: op %d is not on node %s's path", dnsprovider.ErrConfig, i, d.node)
		}
		inner[i] = op
		inner[i].Provider = q.c
	}
	d.w.count(func(s *Stats) { s.BatchWrites++; s.BatchedSwaps += len(ops) })
	return d.write(ctx, func(ctx context.Context) error {
		err := d.c.SwapBatch(ctx, inner)
		if errors.Is(err, dnsprovider.ErrConflict) {
			// Counted when the authority answers: a deposed sender
			// has given up by then, and its batch still lands.
			d.w.mu.Lock()
			d.w.stats.BatchesRefused++
			d.w.dnsw.refusedBatches = append(d.w.dnsw.refusedBatches, d.node)
			d.w.mu.Unlock()
		}
		return err
	})
}

// write sends one write on this node's path, counted, and noted in
// flight (for depose) until it lands.
func (d *nodeDNS) write(ctx context.Context, call func(context.Context) error) error {
	w := d.w
	w.mu.Lock()
	w.stats.DNSWrites++
	w.dnsw.inflight[d.node]++
	w.mu.Unlock()
	_, err := inFlight(ctx, w, d.node, func(ctx context.Context) (struct{}, error) {
		defer func() {
			w.mu.Lock()
			w.dnsw.inflight[d.node]--
			w.mu.Unlock()
		}()
		return struct{}{}, call(ctx)
	})
	return err
}

// nodeVerifier is the authority's verifier behind the same latency.
type nodeVerifier struct {
	w    *World
	node string
	v    *simdns.Verifier
}

func (v *nodeVerifier) Verify(ctx context.Context, desired []dnsprovider.RRset) (*dnsprovider.Verification, error) {
	return inFlight(ctx, v.w, v.node, func(ctx context.Context) (*dnsprovider.Verification, error) {
		return v.v.Verify(ctx, desired)
	})
}

// inFlight runs call after the latency the schedule gives node's DNS
// traffic now. Without latency it runs at once on the caller's goroutine.
// With it, the request travels on its own goroutine and lands whatever
// the caller does; the caller waits for the answer or its context.
func inFlight[T any](ctx context.Context, w *World, node string, call func(context.Context) (T, error)) (T, error) {
	lat := w.dnsLatency(node)
	if lat == 0 {
		return call(ctx)
	}
	type answer struct {
		v   T
		err error
	}
	done := make(chan answer, 1)
	go func() {
		time.Sleep(lat)
		v, err := call(context.WithoutCancel(ctx))
		done <- answer{v, err}
	}()
	select {
	case a := <-done:
		return a.v, a.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// dnsLatency is the one-way latency of node's DNS traffic now: the
// largest of the slow stretches covering now, none once the faults stop.
func (w *World) dnsLatency(node string) time.Duration {
	if w.faultsOver.Load() {
		return 0
	}
	now := time.Since(w.sched.start)
	w.mu.Lock()
	defer w.mu.Unlock()
	var lat time.Duration
	for _, s := range w.dnsw.slow {
		if s.node == node && now >= s.from && now < s.to {
			lat = max(lat, s.lat)
		}
	}
	return lat
}

// dnsWorld is what the simulator tracks of the nodes' DNS traffic.
type dnsWorld struct {
	slow     []slowSpan
	inflight map[string]int // writes (swaps, batches) sent and not yet landed, by node
	deposed  bool           // a depose event has crashed a writer
	// refusedBatches names the sender of each batch the authority
	// refused whole, in order.
	refusedBatches []string
}

// slowSpan is a stretch of virtual time when node's DNS requests travel lat.
type slowSpan struct {
	node     string
	from, to time.Duration
	lat      time.Duration
}

// dnsSlow starts a dnsslow event's stretch; its Node "leader" is whichever
// node leads at that moment (none: no stretch).
func (w *World) dnsSlow(ev Event) {
	node := ev.Node
	if node == "leader" {
		l := w.leader()
		if l == nil {
			return
		}
		node = l.id
	}
	w.count(func(s *Stats) { s.Faults++ })
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dnsw.slow = append(w.dnsw.slow, slowSpan{node: node, from: ev.At, to: ev.At + ev.For, lat: ev.Latency})
}

// depose crashes, the first time it finds one, every running node with a
// DNS swap in flight, and has an operator send ev.Op through a surviving
// node ev.For later: a newer decision racing the write the crashed leader
// left in flight.
func (w *World) depose(ctx context.Context, ops *sync.WaitGroup, ev Event) {
	w.mu.Lock()
	var writers []*simNode
	if !w.dnsw.deposed {
		for _, n := range w.nodes {
			if n.node != nil && w.dnsw.inflight[n.id] > 0 {
				writers = append(writers, n)
			}
		}
		w.dnsw.deposed = len(writers) > 0
	}
	w.mu.Unlock()
	if len(writers) == 0 {
		return
	}
	for _, n := range writers {
		w.count(func(s *Stats) { s.Faults++ })
		w.crash(n)
	}
	via := w.via()
	if via == nil {
		return
	}
	ops.Add(1)
	go func() {
		defer ops.Done()
		time.Sleep(ev.For)
		w.operator(ctx, via, ev)
	}()
}

// revive restarts every crashed node.
func (w *World) revive() error {
	for _, n := range w.nodes {
		if n.node == nil {
			if err := w.start(n); err != nil {
				return err
			}
		}
	}
	return nil
}

// dnsFaults maps a schedule's DNS fault names to simdns's.
var dnsFaults = map[string]simdns.FaultKind{
	"timeout": simdns.FaultTimeout, "refused": simdns.FaultRefused,
	"servfail": simdns.FaultServFail, "lost-reply": simdns.FaultLostReply,
}

// dnsFault injects a dnsfault event's fault into the authority.
func (w *World) dnsFault(ev Event) error {
	k, ok := dnsFaults[ev.Fault]
	if !ok {
		return fmt.Errorf("dnsfault: unknown fault %q", ev.Fault)
	}
	w.count(func(s *Stats) { s.Faults++; s.DNSFaults++ })
	if ev.Writes {
		w.auth.InjectWrites(k, ev.Count)
	} else {
		w.auth.Inject(k, ev.Count)
	}
	return nil
}

// dnsWants is what the authority must hold for group g's desired state
// d: the decision's records and fence, or, before any decision, what the
// operator left there (the primary's records, no fence).
func (w *World) dnsWants(g simGroup, d failover.Desired) ([]dnsprovider.RRset, uint64) {
	if d.Gen == 0 {
		return siteRecords(*g.policy, failover.Primary), 0
	}
	return reconcile.ToProvider(d.Records, w.auth.Zone()), d.Gen
}

// dnsHolds reports whether the authority holds want and fence gen of group g.
func (w *World) dnsHolds(g simGroup, want []dnsprovider.RRset, gen uint64) (bool, string) {
	got, fence, err := w.zoneState(g)
	if err != nil {
		return false, err.Error()
	}
	if fence != gen || !slices.EqualFunc(got, want, dnsprovider.RRset.Equal) {
		return false, fmt.Sprintf("authority holds %v with fence gen=%d, want %v with gen=%d", got, fence, want, gen)
	}
	return true, ""
}

// zoneState reads group g's RRsets and fence in the authority in one
// read, so a write landing meanwhile cannot split them.
func (w *World) zoneState(g simGroup) ([]dnsprovider.RRset, uint64, error) {
	fenceName := w.auth.Client(g.fence).FenceName()
	ids := recordIDs(*g.policy)
	var fence []string
	sets := slices.DeleteFunc(w.auth.Records(), func(s dnsprovider.RRset) bool {
		if s.Name == fenceName && s.Type == "TXT" {
			fence = s.Values
			return true
		}
		return !slices.Contains(ids, s.ID())
	})
	switch len(fence) {
	case 0:
		return sets, 0, nil
	case 1:
		gen, err := dnsprovider.ParseFence(fence[0])
		return sets, gen, err
	}
	return sets, 0, fmt.Errorf("%d fence records: %v", len(fence), fence)
}

// recordIDs are the RRsets the policy's records name, as the provider
// names them.
func recordIDs(p failover.Policy) []dnsprovider.RRsetID {
	var ids []dnsprovider.RRsetID
	for _, s := range siteRecords(p, failover.Primary) {
		ids = append(ids, s.ID())
	}
	return ids
}

// strayRecords are the authority's RRsets that are neither a failover
// group's records nor its fence: nothing writes any.
func (w *World) strayRecords() []dnsprovider.RRset {
	var known []dnsprovider.RRsetID
	for _, g := range w.simGroups() {
		known = append(known, recordIDs(*g.policy)...)
		known = append(known, dnsprovider.RRsetID{Name: w.auth.Client(g.fence).FenceName(), Type: "TXT"})
	}
	return slices.DeleteFunc(w.auth.Records(), func(s dnsprovider.RRset) bool { return slices.Contains(known, s.ID()) })
}

// siteRecords are the policy's records for site as the provider names
// them (relative to the zone, values sorted).
func siteRecords(p failover.Policy, site failover.Site) []dnsprovider.RRset {
	var out []dnsprovider.RRset
	for _, r := range p.Records {
		vals := r.Primary
		if site == failover.Backup {
			vals = r.Backup
		}
		out = append(out, dnsprovider.RRset{Name: dnsprovider.RelativeName(dnsprovider.AbsoluteName(r.Name, p.Zone), p.Zone),
			Type: r.Type, TTL: time.Duration(r.TTL) * time.Second, Values: slices.Sorted(slices.Values(vals))})
	}
	return out
}
