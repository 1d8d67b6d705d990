package sim

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/drwatch/drwatch/cluster"
	"github.com/drwatch/drwatch/executor/reconcile"
	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/failover"
)

// The simulated remediation runner: the real remediate.Runner, every
// remediationInterval, with one scripted remediator whose targets break
// when the schedule says (broken events) and are fixed by its Apply, and
// one in dry-run whose targets change state every pass once a churn event
// says so: its records push the first one's out of the bounded records.
const (
	remediationInterval = 2 * time.Second
	remediationName     = "sim-repair"
	churnName           = "sim-churn"
)

// remediationSettings are the runner's caps: low enough that a 60 s
// schedule reaches them.
var remediationSettings = remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 1, MaxPerHour: 3}

// leadTerm is one stretch of leadership of a node, as its leader-only
// work sees it: from the start of the RunWhileLeader callback to the end
// of its context.
type leadTerm struct {
	node       string
	start, end time.Time
	ended      bool
}

// termSeen is the first time any replica applied an entry of a term
// higher than every term applied before.
type termSeen struct {
	at   time.Time
	term uint64
}

// remAction is one Apply of the scripted remediator: the world's record
// of a remediation that ran.
type remAction struct {
	remediation       string
	node, target, key string
	at                time.Time
	term              uint64 // the node's raft term, read at the Apply
	gen               uint64 // the decision generation its replica held
	failed            bool
}

func (a remAction) String() string {
	return fmt.Sprintf("%s by %s (term %d, gen %d) at %s", a.key, a.node, a.term, a.gen, a.at.Format("15:04:05.000"))
}

// brokenTarget is a target the schedule broke and no Apply fixed yet.
type brokenTarget struct {
	episode int // the breaking event's Seq: a new episode is a new Key
	fail    bool
	since   time.Time
}

// lead is what a node runs while it leads, wired as watcher's
// lead wires it: the policy and tick loop, the real DNS reconciler on this
// node's path to the shared authority, and the real remediation runner.
func (w *World) lead(ctx context.Context, n *simNode, node *cluster.Node) {
	term := &leadTerm{node: n.id, start: time.Now()}
	w.mu.Lock()
	w.leads = append(w.leads, term)
	w.stats.Leaderships++
	w.mu.Unlock()
	end := func() {
		w.mu.Lock()
		if !term.ended {
			term.end, term.ended = time.Now(), true
		}
		w.mu.Unlock()
	}
	stop := context.AfterFunc(ctx, end)
	defer func() { stop(); end() }()

	recs, err := w.reconcilers(n, node)
	if err != nil {
		w.violate("node %s: reconciler not started: %v", n.id, err)
		return
	}
	probe := &leaderProbe{Leader: node}
	runner, err := remediate.NewRunner(remediate.RunnerConfig{Node: n.id, Cluster: probe, State: n.machine,
		Remediators: []remediate.Entry{{Remediator: &simRemediator{w: w, n: n, node: node, probe: probe, lead: term},
			Settings: remediationSettings},
			{Remediator: &churnRemediator{w: w}, Settings: remediate.Settings{Mode: remediate.ModeDryRun, MaxPerPass: 100}}},
		Interval: remediationInterval})
	if err != nil {
		w.violate("node %s: remediation runner not started: %v", n.id, err)
		return
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { w.leaderLoop(ctx, n, node) })
	wg.Go(func() { runner.Run(ctx) })
	for i, rec := range recs[1:] {
		wg.Go(func() { rec.Run(ctx, n.changed[i+1]) })
	}
	recs[0].Run(ctx, n.changed[0])
}

// reconcilers are the real DNS reconcilers of node n's leadership, one
// per failover group, each on this node's path to the shared authority
// with its group's fence. The default group's reads the replica itself,
// as a trio without groups does; another group's reads that group's
// desired state (reconcile.GroupState) and names the group in its
// ActionResults (Config.Group), as the watcher's leader loop builds them.
// They share their writes as the watcher's do (reconcile.BatchWrites,
// with its window of a tenth of an interval): the groups of a run are in
// one zone on one authority, so the swaps of several groups ready at once
// go as one simdns SwapBatch.
func (w *World) reconcilers(n *simNode, node *cluster.Node) ([]*reconcile.Reconciler, error) {
	var recs []*reconcile.Reconciler
	for _, g := range w.simGroups() {
		var state reconcile.State = n.machine
		if g.name != failover.DefaultGroup {
			state = reconcile.GroupState(n.machine, g.name)
		}
		rec, err := reconcile.New(reconcile.Config{
			Node: n.id, State: state, Cluster: node, Group: g.name,
			DNS:      &nodeDNS{w: w, node: n.id, c: w.auth.Client(g.fence)},
			Verifier: &nodeVerifier{w: w, node: n.id, v: w.auth.Verifier("")},
			Interval: Interval, BackoffBase: Interval / 10, BackoffMax: Interval,
		})
		if err != nil {
			return nil, fmt.Errorf("group %s: %w", g.name, err)
		}
		recs = append(recs, rec)
	}
	reconcile.BatchWrites(Interval/10, recs)
	return recs, nil
}

// leaderProbe is the runner's view of the cluster: the node itself, with
// the start of the latest VerifyLeader that succeeded noted for
// invariant 7.
type leaderProbe struct {
	failover.Leader
	mu       sync.Mutex
	verified time.Time
}

func (p *leaderProbe) VerifyLeader(ctx context.Context) error {
	start := time.Now()
	err := p.Leader.VerifyLeader(ctx)
	if err == nil {
		p.mu.Lock()
		p.verified = start
		p.mu.Unlock()
	}
	return err
}

func (p *leaderProbe) lastVerified() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.verified
}

// simRemediator is the scripted remediator of one leadership term: Plan
// lists the targets broken now, Apply fixes one (or fails, when the
// schedule says so) and records what it did, where and when.
type simRemediator struct {
	w       *World
	n       *simNode
	node    *cluster.Node
	probe   *leaderProbe
	lead    *leadTerm
	applies int // in the current pass
	plans   int
}

func (r *simRemediator) Name() string { return remediationName }

func (r *simRemediator) Plan(context.Context) ([]remediate.Action, error) {
	r.applies = 0 // the runner plans once per pass
	r.plans++
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	var acts []remediate.Action
	for target, b := range r.w.broken {
		// A reason new every pass, as the real repairs' ages are.
		acts = append(acts, remediate.Action{Target: "node/" + target, Verb: "repair",
			Reason: fmt.Sprintf("scripted breakage for %s, seen %x", time.Since(b.since).Round(time.Millisecond),
				rand.New(rand.NewPCG(uint64(b.episode), uint64(r.plans))).Uint32()),
			Key: target + "#" + strconv.Itoa(b.episode)})
	}
	slices.SortFunc(acts, func(a, b remediate.Action) int { return strings.Compare(a.Target, b.Target) })
	return acts, nil
}

var errScripted = errors.New("scripted repair failure")

func (r *simRemediator) Apply(_ context.Context, a remediate.Action) error {
	now := time.Now()
	term := r.node.Stats().Term
	verified := r.probe.lastVerified()
	act := remAction{remediation: remediationName, node: r.n.id, target: strings.TrimPrefix(a.Target, "node/"), key: a.Key, at: now,
		term: term, gen: r.n.machine.Desired().Gen}
	r.applies++
	w := r.w
	w.mu.Lock()
	defer w.mu.Unlock()
	b, broken := w.broken[act.target]
	var err error
	switch {
	case !broken || act.target+"#"+strconv.Itoa(b.episode) != a.Key:
		err = fmt.Errorf("%w: %s is no longer broken as planned", remediate.ErrPrecondition, a.Target)
	case b.fail:
		err = errScripted
	default:
		delete(w.broken, act.target)
	}
	act.failed = err != nil
	w.actions = append(w.actions, act)
	w.stats.RemediationActions++

	// Invariant 7, at the moment of the action.
	if r.applies > remediationSettings.MaxPerPass {
		w.violations = append(w.violations, fmt.Sprintf("invariant 7: %s is action %d of one pass, cap %d", act, r.applies, remediationSettings.MaxPerPass))
	}
	if r.lead.ended && r.lead.end.Before(now) {
		w.violations = append(w.violations, fmt.Sprintf("invariant 7: %s ran after %s's leadership ended at %s",
			act, r.n.id, r.lead.end.Format("15:04:05.000")))
	}
	if verified.IsZero() {
		w.violations = append(w.violations, fmt.Sprintf("invariant 7: %s ran without a VerifyLeader", act))
	}
	// A replica that applied an entry of a higher term before the
	// VerifyLeader that preceded this action started proves that a quorum
	// had moved past this node's term by then: that VerifyLeader cannot
	// have succeeded in it.
	for _, s := range w.termsSeen {
		if s.term > term && s.at.Before(verified) {
			w.violations = append(w.violations, fmt.Sprintf("invariant 7: %s ran on a deposed leader: term %d was applied at %s, before its VerifyLeader started at %s",
				act, s.term, s.at.Format("15:04:05.000"), verified.Format("15:04:05.000")))
			break
		}
	}
	return err
}

// breakTarget is a broken event: the target needs a repair, under a new Key.
func (w *World) breakTarget(ev Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.broken[ev.Target] = brokenTarget{episode: ev.Seq, fail: ev.Fail, since: time.Now()}
}

// churnRemediator is the dry-run repair of a churn event: each of its
// targets is in a new state (a new Key) every pass, so each pass records
// them all anew.
type churnRemediator struct {
	w     *World
	plans int
}

func (r *churnRemediator) Name() string { return churnName }

func (r *churnRemediator) Plan(context.Context) ([]remediate.Action, error) {
	r.plans++
	r.w.mu.Lock()
	n := r.w.churn
	r.w.mu.Unlock()
	acts := make([]remediate.Action, n)
	for i := range acts {
		acts[i] = remediate.Action{Target: fmt.Sprintf("pod/c%d", i), Verb: "delete", Reason: "churn",
			Key: fmt.Sprintf("c%d@%d.%d", i, r.plans, time.Now().UnixNano())}
	}
	return acts, nil
}

func (r *churnRemediator) Apply(context.Context, remediate.Action) error {
	return errors.New("a dry-run repair applied")
}

// checkRemediationCaps is invariant 7's hourly cap (every schedule ends
// within the hour), per remediation: the repairs that ran, counted as the
// runner counts them (each applied action, plus each target that failed,
// once), are at most the cap plus those whose outcome no replica has
// recorded. A leader deposed between an Apply and its record leaves such an
// action unknown to the next leader, which may repeat it; nothing else may
// exceed the cap, however many records the churning repair pushes out of
// the bounded records (the outcomes seen recorded at any check count as
// recorded: the check runs far more often than the churn fills them).
func (w *World) checkRemediationCaps() {
	var seen []string
	for _, n := range w.nodes {
		for _, r := range n.machine.Remediations() {
			if r.Result == failover.RemediationApplied || r.Result == failover.RemediationFailed {
				seen = append(seen, r.Actor+"|"+r.Key+"|"+r.Result)
			}
		}
	}
	w.mu.Lock()
	for _, k := range seen {
		w.recorded[k] = true
	}
	actions := slices.Clone(w.actions)
	recorded := maps.Clone(w.recorded)
	w.mu.Unlock()
	type count struct {
		used, unrecorded int
		failed           map[string]bool
	}
	per := map[string]*count{}
	for _, a := range actions {
		c := per[a.remediation]
		if c == nil {
			c = &count{failed: map[string]bool{}}
			per[a.remediation] = c
		}
		result := failover.RemediationApplied
		if a.failed {
			result = failover.RemediationFailed
		}
		if !recorded[a.node+"|"+a.remediation+"/"+a.key+"|"+result] {
			c.unrecorded++
		}
		switch {
		case !a.failed:
			c.used++
		case !c.failed[a.target]:
			c.failed[a.target] = true
			c.used++
		}
	}
	for name, c := range per {
		if c.used > remediationSettings.MaxPerHour+c.unrecorded {
			var b strings.Builder
			for _, a := range actions {
				if a.remediation == name {
					b.WriteString("; " + a.String())
				}
			}
			w.violate("invariant 7: %s: %d repairs counted against the hourly cap %d, with %d unrecorded%s",
				name, c.used, remediationSettings.MaxPerHour, c.unrecorded, b.String())
		}
	}
}
