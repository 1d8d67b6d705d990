package sim

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drwatch/drwatch/cluster"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/probes"
	"github.com/drwatch/drwatch/test/sim/simdns"
	"github.com/drwatch/drwatch/watcher"
	"github.com/hashicorp/raft"
)

// Interval is the probe interval of the simulated policy: one report per
// node per Interval, and one Tick from the leader.
const Interval = time.Second

// simPolicy is the replicated policy every simulated node runs: three
// voters, quorum two, fall three, one critical probe per site.
func simPolicy() failover.Policy {
	return failover.Policy{
		Nodes: []string{"a", "b", "c"}, Quorum: 2, Fall: 3, Rise: 2, Interval: Interval,
		AutoFailover: true, BlockWindow: 30 * time.Second, Failback: failover.FailbackPolicy{Mode: failover.FailbackManual},
		Sites: map[failover.Site]failover.SitePolicy{
			failover.Primary: {Probes: []failover.ProbeRef{{Name: "web", Critical: true}}},
			failover.Backup:  {Probes: []failover.ProbeRef{{Name: "web", Critical: true}}},
		},
		Zone:    "example.org.",
		Records: []failover.Record{{Name: "lms", Type: "A", TTL: 60, Primary: []string{"192.0.2.10"}, Backup: []string{"198.51.100.10"}}},
	}
}

// World is three watchers in one synctest bubble: the real cluster code on
// raft.InmemTransport and in-memory stores, the real FSM and decision core,
// the leader's policy and tick loop, and probe reports scripted by a
// Schedule. Its invariant checks record violations instead of failing the
// test, so a run can print its schedule and replay line.
type World struct {
	sched  Schedule
	policy failover.Policy
	hash   string
	groups groupsOnce // the policy's failover groups (groups.go)
	nw     *network
	nodes  []*simNode
	parted map[[2]string]bool // partitioned pairs, by node id
	auth   *simdns.Authority  // the one DNS authority every leader writes
	dnsw   dnsWorld           // its traffic (under mu)
	// faultsOver is set when the schedule's faults stop (DNS latency too).
	faultsOver atomic.Bool
	faults     faultState // one-way cuts, delays, skews (faults.go)

	mu         sync.Mutex
	snaps      map[uint64]snapSeen        // invariant 6: first snapshot seen at each index
	acked      []acked                    // invariant 3: commands acknowledged to an operator
	rounds     map[string][]round         // reports sent, for invariant 1
	flips      map[groupGen]bool          // automatic flips checked, by group and index
	leads      []*leadTerm                // invariant 7: every stretch of leadership
	termsSeen  []termSeen                 // invariant 7: when each new highest term was applied
	actions    []remAction                // invariant 7: every remediation that ran
	broken     map[string]brokenTarget    // the scripted remediator's targets needing a repair
	churn      int                        // how many targets the churning dry-run repair plans
	recorded   map[string]bool            // invariant 7: every outcome any replica ever recorded
	decided    map[groupGen]failover.Site // invariant 2: every decision any replica ever applied, by group and gen
	violations []string
	stats      Stats
}

// Stats counts what a run did.
type Stats struct {
	Reports, ReportsCommitted int
	ReportsLean               int // committed lean reports
	Commands, CommandsAcked   int
	Faults                    int
	AutoFlips                 int
	GroupRuns                 int // runs whose policy has failover groups
	GroupAutoFlips            int // automatic flips in those runs, of every group
	StaleSnapshots            int // snapshots a running replica installed below the index it had applied
	DNSFaults, DNSWrites      int // DNSWrites: UPDATEs sent, a batch counting one
	BatchWrites               int // batched UPDATEs sent (SwapBatch)
	BatchedSwaps              int // the groups' swaps they carried
	BatchesRefused            int // batches the authority refused whole (a prerequisite failed)
	RemediationActions        int
	Leaderships               int
	Virtual                   time.Duration
}

type snapSeen struct {
	node string
	sum  [32]byte
}

type acked struct {
	index  uint64
	reason string
	kind   string
}

type round struct {
	at   time.Time
	down map[failover.Site][]string // the probes the node saw failing, by site
}

// siteDown reports whether the node saw any of probes of site failing:
// one failing critical probe makes the site DOWN in the node's vote.
func (r round) siteDown(site failover.Site, probes []string) bool {
	return slices.ContainsFunc(r.down[site], func(p string) bool { return slices.Contains(probes, p) })
}

type simNode struct {
	id, addr string
	creds    *cluster.Credentials
	store    *raft.InmemStore
	snaps    *snapshotStore
	trans    *raft.InmemTransport
	node     *cluster.Node // nil while crashed
	machine  *failover.Machine
	rounds   chan probes.Round
	changed  []chan struct{} // wake each group's reconciler on every apply, as watcher.FSM does
	// applied is the last index the machine applied or restored: check
	// reads it instead of Machine.View, which builds every group's
	// overview (in a profile of 150 schedules, half of them with groups,
	// View rose from 6% to 11% of the CPU).
	applied atomic.Uint64
	seq     uint64
	stop    context.CancelFunc
	wg      sync.WaitGroup
	checked int // history entries already checked
}

// NewWorld builds (but does not start) the three nodes of sched. It must
// be called inside the bubble: the certificates take the bubble's clock.
func NewWorld(sched Schedule) (*World, error) {
	w := &World{sched: sched, policy: simGroupPolicy(sched.Groups), nw: newNetwork(), parted: map[[2]string]bool{},
		snaps: map[uint64]snapSeen{}, rounds: map[string][]round{}, flips: map[groupGen]bool{}, broken: map[string]brokenTarget{}, recorded: map[string]bool{}, decided: map[groupGen]failover.Site{},
		dnsw: dnsWorld{inflight: map[string]int{}}}
	w.hash = w.policy.Hash()
	if len(sched.Groups) > 0 {
		w.stats.GroupRuns = 1
	}
	w.faults.init(sched.Seed, w.violate)
	var err error
	if w.auth, err = newAuthority(w.policy); err != nil {
		return nil, err
	}
	caPEM, caKeyPEM, err := cluster.NewCA("sim", 24*time.Hour)
	if err != nil {
		return nil, err
	}
	ca, caKey, err := cluster.ParseCA(caPEM, caKeyPEM)
	if err != nil {
		return nil, err
	}
	for i, id := range w.policy.Nodes {
		addr := fmt.Sprintf("10.0.0.%d:7400", i+1)
		certPEM, keyPEM, err := cluster.IssueNodeCert(ca, caKey, id, nil, 24*time.Hour)
		if err != nil {
			return nil, err
		}
		creds, err := cluster.CredentialsFromPEM(caPEM, certPEM, keyPEM)
		if err != nil {
			return nil, err
		}
		w.nodes = append(w.nodes, &simNode{id: id, addr: addr, creds: creds,
			store: raft.NewInmemStore(), snaps: newSnapshotStore(cluster.DefaultSnapshotRetain)})
	}
	return w, nil
}

func (w *World) peers() []cluster.Peer {
	var ps []cluster.Peer
	for _, n := range w.nodes {
		ps = append(ps, cluster.Peer{ID: n.id, RaftAddr: n.addr})
	}
	return ps
}

func (w *World) byID(id string) *simNode {
	for _, n := range w.nodes {
		if n.id == id {
			return n
		}
	}
	panic("sim: no node " + id)
}

// start starts (or restarts, from its stores) node n.
func (w *World) start(n *simNode) error {
	_, n.trans = raft.NewInmemTransport(raft.ServerAddress(n.addr))
	n.machine = failover.New()
	n.changed = nil
	for range w.simGroups() {
		n.changed = append(n.changed, make(chan struct{}, 1))
	}
	n.applied.Store(0)
	sm := &replica{FSM: watcher.NewFSM(n.machine, nil), machine: n.machine, w: w, node: n.id, store: n.store, changed: n.changed, applied: &n.applied}
	cfg := cluster.Config{
		NodeID: n.id, AdvertiseAddr: n.addr, Listener: w.nw.listen(n.addr), Peers: w.peers(), TLS: n.creds,
		RaftTiming: cluster.RaftTiming{
			HeartbeatTimeout: 500 * time.Millisecond, ElectionTimeout: 500 * time.Millisecond,
			LeaderLeaseTimeout: 250 * time.Millisecond, CommitTimeout: 50 * time.Millisecond,
			SnapshotInterval: 5 * time.Second, SnapshotThreshold: 32, TrailingLogs: 16,
		},
		TransportTimeout: 2 * time.Second,
		Raft:             &cluster.RaftParts{Transport: w.faults.transport(n.id, n.trans), Log: n.store, Stable: n.store, Snapshots: n.snaps},
		Dial:             w.nw.dialer(n.addr),
		LeaderTransform:  func(cmd []byte) ([]byte, error) { return failover.Stamp(cmd, w.clock(n.id).UnixNano()) },
	}
	n.checked = 0
	w.applyLinks()
	node, err := cluster.New(context.Background(), cfg, sm)
	if err != nil {
		return fmt.Errorf("start %s: %w", n.id, err)
	}
	n.node = node
	w.applyLinks()
	ctx, cancel := context.WithCancel(context.Background())
	n.stop = cancel
	n.rounds = make(chan probes.Round, 1)
	n.wg.Add(2)
	go func() {
		defer n.wg.Done()
		node.RunWhileLeader(ctx, func(lctx context.Context) { w.lead(lctx, n, node) })
	}()
	go func() {
		defer n.wg.Done()
		w.reportLoop(ctx, n, node)
	}()
	return nil
}

// crash stops n as a power cut would, from its peers' view: it is cut off
// first, so nothing it does while stopping reaches them. Its stores stay.
func (w *World) crash(n *simNode) {
	node := n.node
	n.node = nil
	w.applyLinks()
	n.stop()
	n.wg.Wait()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no leadership transfer: a crash hands nothing over
	_ = node.Shutdown(ctx)
}

// applyLinks makes raft's transports and the RPC network match the crashes
// and partitions: the direction a->b is up when both ends run and no
// partition or one-way cut stops it.
func (w *World) applyLinks() {
	for _, a := range w.nodes {
		for _, b := range w.nodes {
			if a == b {
				continue
			}
			up := a.node != nil && b.node != nil && !w.parted[pair(a.id, b.id)] && !w.faults.cut(a.id, b.id)
			if a.trans != nil && b.trans != nil {
				if up {
					a.trans.Connect(raft.ServerAddress(b.addr), b.trans)
				} else {
					a.trans.Disconnect(raft.ServerAddress(b.addr))
				}
			}
			w.nw.setCut(a.addr, b.addr, !up)
		}
	}
}

// leaderLoop is the watcher's leader tick loop (package watcher's tickLoop): keep the replicated policy equal to the
// file's, tick the replicated clock once per interval, and raise the log format to this binary's (every
// server runs it), so that reports carry their watchers' streaks.
func (w *World) leaderLoop(ctx context.Context, n *simNode, node *cluster.Node) {
	t := time.NewTicker(Interval)
	defer t.Stop()
	for {
		var c failover.Command
		if n.machine.View().PolicyHash != w.hash {
			c = failover.Command{Payload: failover.SetPolicy{Policy: w.policy, Actor: "node:" + n.id}}
		} else {
			c = failover.Command{Payload: failover.Tick{}}
		}
		pctx, cancel := context.WithTimeout(ctx, Interval)
		_, _, _ = failover.Submit(pctx, node, c)
		if n.machine.Format() < failover.Format {
			// Every server runs this binary: raiseFormat's answer.
			_, _, _ = failover.Submit(pctx, node, failover.Command{Payload: failover.SetFormat{Format: failover.Format}})
		}
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// reportLoop sends each scripted round as the watcher does
// (package watcher's reportLoop, through its Reporter, so lean reports
// run here under every fault): one Observe per round, abandoned after
// one interval.
func (w *World) reportLoop(ctx context.Context, n *simNode, node *cluster.Node) {
	rep := watcher.NewReporter(n.id, w.hash, n.machine) // a new process reports full first
	clock := func() time.Time { return w.clock(n.id) }
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-n.rounds:
			p, hash := n.machine.Policy()
			if p == nil {
				continue
			}
			pctx, cancel := context.WithTimeout(ctx, Interval)
			_, lean, err := rep.Report(pctx, node, p, hash, r, clock)
			cancel()
			if err == nil {
				w.mu.Lock()
				w.stats.ReportsCommitted++
				if lean {
					w.stats.ReportsLean++
				}
				w.mu.Unlock()
			}
		}
	}
}

// probeRound hands every running node its round at now: what the schedule
// says that node sees of each site.
func (w *World) probeRound(now time.Duration, at time.Time) {
	for _, n := range w.nodes {
		if n.node == nil {
			continue
		}
		n.seq++
		// The round carries the node's clock; the record, the truth.
		nodeAt := at.Add(w.faults.skewOf(n.id))
		r := probes.Round{Seq: n.seq, Start: nodeAt}
		rec := round{at: at, down: map[failover.Site][]string{}}
		for _, site := range []failover.Site{failover.Primary, failover.Backup} {
			for _, probe := range w.siteProbes(site) {
				down := w.sched.Down(n.id, site, probe, now)
				res := probes.NamedResult{Site: string(site), Probe: probe, Type: "http", Critical: true, Completed: nodeAt, Result: probes.Result{OK: !down}}
				if down {
					rec.down[site] = append(rec.down[site], probe)
					res.Class, res.Phase, res.Reason = probes.ClassRefused, "connect", "connection refused"
				}
				r.Results = append(r.Results, res)
			}
		}
		select {
		case n.rounds <- r:
			w.mu.Lock()
			w.stats.Reports++
			w.rounds[n.id] = append(w.rounds[n.id], rec)
			w.mu.Unlock()
		default: // the last round is still being reported: this one is dropped
		}
	}
}

// via is the node an operator's command goes through: a follower when
// there is one, as the API forwards a write; nil when no node runs.
func (w *World) via() *cluster.Node {
	var via *cluster.Node
	for _, n := range w.nodes {
		if n.node != nil && (via == nil || (via.IsLeader() && !n.node.IsLeader())) {
			via = n.node
		}
	}
	return via
}

// operator submits ev's command through node and records it when it is
// acknowledged.
func (w *World) operator(ctx context.Context, node *cluster.Node, ev Event) {
	reason := fmt.Sprintf("op%d", ev.Seq)
	actor := "operator"
	group := cmdGroup(ev.Group)
	var p failover.Payload
	switch ev.Op {
	case "pause":
		p = failover.Pause{Reason: reason, Actor: actor, Group: group}
	case "resume":
		p = failover.Resume{Reason: reason, Actor: actor, Group: group}
	case "failover":
		p = failover.Failover{To: failover.Backup, Reason: reason, Actor: actor, Group: group, AllGroups: ev.AllGroups}
	case "failback":
		p = failover.Failback{Reason: reason, Actor: actor, Group: group}
	case "ack":
		p = failover.Ack{Reason: reason, Actor: actor, Group: group}
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, index, err := failover.Submit(cctx, node, failover.Command{Payload: p})
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stats.Commands++
	if err != nil {
		return
	}
	w.stats.CommandsAcked++
	if res.Noop == "" && res.Kind != "" {
		w.acked = append(w.acked, acked{index: index, reason: reason, kind: res.Kind})
	}
}

func (w *World) count(f func(*Stats)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f(&w.stats)
}

func (w *World) violate(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.violations = append(w.violations, fmt.Sprintf(format, args...))
}

// Violations are the invariant breaches seen so far.
func (w *World) Violations() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.violations)
}

// replica is the node's state machine as the cluster sees it: the watcher's
// FSM, with invariant 6 checked after every apply.
type replica struct {
	*watcher.FSM
	machine *failover.Machine
	w       *World
	node    string
	store   *raft.InmemStore // to read the term of each applied entry
	changed []chan struct{}
	fences  fenceWatch     // the group fence invariant, over this machine's life
	applied *atomic.Uint64 // the node's applied index (nil: not kept)
}

// Restore is the FSM's, noting the index the snapshot brought. A
// snapshot below what the replica applied (raft's leader sends its
// latest snapshot to a follower it thinks lags, and the patched raft
// takes it: cluster/third_party/hashicorp/raft/DRWATCH.md) takes the
// machine back, every group's decisions with it, as a restart does: the
// group fence watch starts again from the snapshot, and the run counts
// it (Stats.StaleSnapshots).
func (r *replica) Restore(b []byte) error {
	err := r.FSM.Restore(b)
	if err != nil || r.applied == nil {
		return err
	}
	before, after := r.applied.Load(), r.machine.View().Index
	r.applied.Store(after)
	if after < before {
		r.w.count(func(s *Stats) { s.StaleSnapshots++ })
	}
	r.fences.restart(r.machine, r.w.simGroups())
	return nil
}

func (r *replica) Apply(index uint64, cmd []byte) []byte {
	out := r.FSM.Apply(index, cmd)
	if r.applied != nil && r.FSM.Halted() == nil {
		r.applied.Store(index)
	}
	groups := r.w.simGroups()
	for _, g := range groups {
		if d, ok := r.machine.GroupDesired(g.name); ok {
			r.w.decide(g.name, d)
		}
	}
	for _, v := range r.fences.check(r.machine, groups, r.node, index) {
		r.w.violate("%s", v)
	}
	for _, c := range r.changed {
		select {
		case c <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
	b, err := r.machine.Snapshot()
	if err != nil {
		r.w.violate("node %s: snapshot at index %d: %v", r.node, index, err)
		return out
	}
	sum := sha256.Sum256(b)
	var l raft.Log
	haveTerm := r.store != nil && r.store.GetLog(index, &l) == nil
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	if haveTerm && (len(r.w.termsSeen) == 0 || l.Term > r.w.termsSeen[len(r.w.termsSeen)-1].term) {
		r.w.termsSeen = append(r.w.termsSeen, termSeen{at: time.Now(), term: l.Term})
	}
	if s, ok := r.w.snaps[index]; !ok {
		r.w.snaps[index] = snapSeen{node: r.node, sum: sum}
	} else if s.sum != sum {
		r.w.violations = append(r.w.violations, fmt.Sprintf("invariant 6: at index %d the snapshots of %s and %s differ", index, s.node, r.node))
	}
	return out
}

// check runs the invariants that read the replicas' histories: 3 (every
// acknowledged command in every replica's history, at its index) and 1
// (no automatic flip without quorum evidence in the scripted truth).
func (w *World) check() {
	w.mu.Lock()
	ack := slices.Clone(w.acked)
	w.mu.Unlock()
	for _, n := range w.nodes {
		if n.node == nil {
			continue
		}
		// Applied first: the replica applies (or installs a snapshot)
		// while this reads, and its history only grows, so every entry
		// up to applied is in a history read after it.
		applied := n.applied.Load()
		h := n.machine.History()
		for _, a := range ack {
			if a.index > applied || evicted(h, a.index) {
				continue
			}
			// One index may leave several entries (a manual move that
			// acknowledges a block also records the ack; a resume may
			// let an automatic flip happen at once, which is the
			// result's Kind), so the command's own entry is found by
			// its reason.
			if !slices.ContainsFunc(h, func(e failover.Entry) bool {
				return e.Index == a.index && e.Reason == a.reason
			}) {
				w.violate("invariant 3: %s applied index %d but its history lacks the acknowledged command %q (result %s) there", n.id, applied, a.reason, a.kind)
			}
		}
		for _, e := range h[min(n.checked, len(h)):] {
			g, ok := w.simGroup(entryGroup(e))
			if !ok {
				continue
			}
			if strings.HasPrefix(e.Kind, "auto_") {
				w.checkAutoFlip(n.id, g, e)
			}
			if automaticKind(e.Kind) {
				w.checkGroupIndependence(n.id, g, e)
			}
		}
		n.checked = len(h)
	}
	w.checkWorldInvariants()
}

// evicted reports whether the history h may have dropped the entry at
// index: entries leave only by eviction, the oldest of their class first
// (failover.AuditKind), routine ones once the history is full and audit
// ones once they fill their share; a class that has dropped entries
// stays full.
func evicted(h []failover.Entry, index uint64) bool {
	audit := 0
	var oldestAudit, oldestRoutine uint64
	for _, e := range h {
		switch {
		case failover.AuditKind(e.Kind):
			if audit == 0 {
				oldestAudit = e.Index
			}
			audit++
		case oldestRoutine == 0:
			oldestRoutine = e.Index
		}
	}
	return (len(h) == failover.MaxHistory && oldestRoutine > index) ||
		(audit == failover.MaxAuditHistory && oldestAudit > index)
}

// checkAutoFlip holds an automatic flip to invariant 1 against what the
// nodes were scripted to see. A node's DOWN vote needs fall failing rounds
// of the old site, each within stale+Interval of the next (else its
// counters restart), the last one fresh: sent within stale+Interval before
// the flip (the leader stamps a report up to one Interval after its round).
// A round fails a site for group g when any of g's critical probes of
// the site failed in it (its own, or the region probe it shares with the
// other groups); another group's own probe never counts.
// A node's UP vote for the target needs a fresh round seeing it UP. At
// least quorum of each is necessary for a correct flip, since the reports
// that decided it were among those sent, so the check never fails a
// correct machine.
//
// Under clock skew the flip's time is a leader's clock, within slack of
// the truth, and so is each report's: a report may count as fresh up to
// 3×slack longer in true time (its stamp, the flip's, and a machine clock
// a faster leader left ahead), and may be sent up to slack after e.At.
func (w *World) checkAutoFlip(node string, g simGroup, e failover.Entry) {
	slack := w.faults.skewSlack()
	at := time.Unix(0, e.At)
	fresh := 3*Interval + Interval + 3*slack
	window := time.Duration(w.policy.Fall) * fresh
	w.mu.Lock()
	defer w.mu.Unlock()
	downVotes, upVotes := 0, 0
	for _, rs := range w.rounds {
		failing, freshFail, targetUp := 0, false, false
		for _, r := range rs {
			if r.at.After(at.Add(slack)) {
				continue
			}
			recent := !r.at.Before(at.Add(-fresh))
			if r.siteDown(e.From, g.critical[e.From]) && !r.at.Before(at.Add(-window)) {
				failing++
				freshFail = freshFail || recent
			}
			if recent && !r.siteDown(e.To, g.critical[e.To]) {
				targetUp = true
			}
		}
		if failing >= w.policy.Fall && freshFail {
			downVotes++
		}
		if targetUp {
			upVotes++
		}
	}
	if downVotes < w.policy.Quorum || upVotes < w.policy.Quorum {
		w.violations = append(w.violations, fmt.Sprintf(
			"invariant 1: %s flipped %s%s->%s at index %d (%s) with %d nodes scripted to see %s failing %d times and %d seeing %s UP, quorum %d",
			node, groupPrefix(g.name), e.From, e.To, e.Index, at.Sub(w.sched.start).Round(time.Millisecond), downVotes, e.From, w.policy.Fall, upVotes, e.To, w.policy.Quorum))
	}
	if k := (groupGen{g.name, e.Index}); !w.flips[k] {
		w.flips[k] = true
		w.stats.AutoFlips++
		if len(w.sched.Groups) > 0 {
			w.stats.GroupAutoFlips++
		}
	}
}

// leader returns the running node that leads, or nil.
func (w *World) leader() *simNode {
	for _, n := range w.nodes {
		if n.node != nil && n.node.IsLeader() {
			return n
		}
	}
	return nil
}

// converged reports whether every node runs and has applied the leader's
// last index, with byte-identical snapshots.
func (w *World) converged() bool {
	l := w.leader()
	if l == nil {
		return false
	}
	want, err := l.machine.Snapshot()
	if err != nil {
		return false
	}
	for _, n := range w.nodes {
		if n.node == nil {
			return false
		}
		b, err := n.machine.Snapshot()
		if err != nil || !bytes.Equal(b, want) {
			return false
		}
	}
	return true
}

// shutdown stops every running node.
func (w *World) shutdown() {
	for _, n := range w.nodes {
		if n.node == nil {
			continue
		}
		n.stop()
		n.wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := n.node.Shutdown(ctx)
		cancel()
		if err != nil && !errors.Is(err, cluster.ErrShutdown) {
			w.violate("node %s: shutdown: %v", n.id, err)
		}
		n.node = nil
	}
}
