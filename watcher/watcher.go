package watcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drwatch/drwatch/cluster"
	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/executor/drillrun"
	"github.com/drwatch/drwatch/executor/reconcile"
	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/monitor/clusterhealth"
	"github.com/drwatch/drwatch/probes"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Cluster is what the watcher needs of its Raft member; *cluster.Node
// satisfies it.
type Cluster interface {
	failover.Leader
	// RunWhileLeader calls fn each time this node gains leadership, with a
	// context cancelled when it is lost; it returns once ctx ends.
	RunWhileLeader(ctx context.Context, fn func(leaderCtx context.Context))
	// WaitApplied waits until the local replica has applied index.
	WaitApplied(ctx context.Context, index uint64) error
	// Stats is this member's Raft state.
	Stats() cluster.Stats
	Members(ctx context.Context) ([]cluster.Member, error)
	AddVoter(ctx context.Context, id, addr string) error
	RemoveServer(ctx context.Context, id string, force bool) error
}

var _ Cluster = (*cluster.Node)(nil)

// Config is a watcher's built parts and the few settings its loops use.
// Every field is required unless it says otherwise.
type Config struct {
	Node string
	// Policy is this node's file's policy, already validated; the leader
	// replicates it, and every report names its hash.
	Policy failover.Policy
	// Interval is the probe interval: the deadline of a report, the tick
	// period and the reconciler's pace.
	Interval time.Duration
	// SetPhase, when set, is called after every round with this node's
	// probing phase under the replicated policy (Phase);
	// probes.Scheduler.SetPhase fits.
	SetPhase func(time.Duration)
	// Reprobe, when set, re-probes the sites this watcher suspects (see
	// suspicion); *probes.Scheduler fits.
	Reprobe Reprober
	// HeartbeatTimeout and DataDir only shape the status warnings.
	HeartbeatTimeout time.Duration
	DataDir          string
	// FSM is the replica the cluster applies to (NewFSM).
	FSM      *FSM
	Cluster  Cluster
	DNS      dnsprovider.Provider
	Verifier reconcile.Verifier
	// Groups are the DNS writers of the failover groups besides the
	// default one (Policy.Groups), each fenced on its own record; the
	// leader reconciles each on its own, beside DNS for the default group
	// (when Policy has one). Optional: none without groups.
	Groups []GroupDNS
	// Remediators run on the leader, every RemediationInterval (none: no
	// runner): the top-level remediations section's, on the lead group's
	// decision.
	Remediators         []remediate.Entry
	RemediationInterval time.Duration
	// GroupRemediations are the failover groups' own remediations
	// (groups[].remediations): the leader runs one runner for each, on
	// its group's decision and budgets. Optional.
	GroupRemediations []GroupRemediations
	// Gates and AfterVerified go to the default group's DNS reconciler
	// (remediate.Gates of the top-level remediations and hooks).
	Gates         []reconcile.Gate
	AfterVerified func(context.Context, reconcile.Decision) string
	// GroupGates go to the failover groups' own DNS reconcilers, each
	// to its group's only. Optional: a group without any has none.
	GroupGates []GroupGates
	// BreakGlassKey and BreakGlassMaxAge go to the DNS reconciler: the key
	// that authenticates break-glass markers (nil: none is trusted) and
	// their greatest age (0: reconcile.DefaultBreakGlassMaxAge).
	BreakGlassKey    []byte
	BreakGlassMaxAge time.Duration
	// Drill runs the leader's drills (executor/drillrun); nil: no drills
	// are executed, and a drill started by hand stays running until a
	// leader with drills carries it out.
	Drill *Drill
	// Health is the read-only view of both sites' clusters (every node runs it).
	Health *clusterhealth.Monitor
	// Credentials is this node's TLS identity (optional): its expiry is a
	// metric, and its files (CAFile, CertFile: named in the logs) are looked
	// at every CredentialsReloadEvery (0: never) and changed ones taken into use.
	Credentials            *cluster.Credentials
	CAFile, CertFile       string
	CredentialsReloadEvery time.Duration
	Registry               *prometheus.Registry
	Logger                 *slog.Logger
	Now                    func() time.Time
	// ProbeTimeout is the longest timeout of a critical probe (optional):
	// a blackholed site fails a round only then, so the what-if answer
	// adds it to the time to the flip.
	ProbeTimeout time.Duration
}

// GroupDNS is where one failover group's records are written and checked.
type GroupDNS struct {
	// Name is the group's (failover.Group.Name).
	Name string
	// DNS writes the group's zone, fenced on the group's own fence record,
	// so that no group's decision fences another's.
	DNS dnsprovider.Provider
	// Verifier checks the group's zone at every authoritative server.
	Verifier reconcile.Verifier
}

// GroupRemediations are one failover group's own remediations.
type GroupRemediations struct {
	// Name is the group's (failover.Group.Name).
	Name string
	// Remediators run every Interval on the group's decision.
	Remediators []remediate.Entry
	Interval    time.Duration
}

// GroupGates are what one failover group's DNS reconciler runs around
// the group's flips (remediate.Gates of the group's own remediations and
// hooks): its backup warm-up, then its pre-failover hooks, before DNS is
// written; its post-failover hooks once the flip is verified.
type GroupGates struct {
	// Name is the group's (failover.Group.Name).
	Name          string
	Gates         []reconcile.Gate
	AfterVerified func(context.Context, reconcile.Decision) string
}

// Drill is what the leader's drill executor needs besides the watcher's parts.
type Drill struct {
	// DNS writes the canary, fenced on the drill fence record (never the
	// production fence).
	DNS dnsprovider.Provider
	// Schedule is how often the leader starts a drill by itself; 0 never.
	Schedule time.Duration
	// Canary is the canary a drill moves under the replicated policy.
	Canary func(failover.Policy) failover.DrillCanary
	// Readiness, if set, runs the drill's readiness checks.
	Readiness drillrun.Readiness
	// Timeout is the probes' default timeout, part of the RTO estimate.
	Timeout time.Duration
}

// FSM adapts the decision core to cluster.StateMachine, wakes the
// watcher's loops on every applied command and logs every history entry
// it applies (see logEntry).
type FSM struct {
	m              *failover.Machine
	log            *slog.Logger
	changed        chan struct{} // wakes the reconciler
	dnsChanged     chan struct{} // wakes the DNS check
	drillChanged   chan struct{} // wakes the drill executor
	suspectChanged chan struct{} // wakes the suspicion loop
	// replayThrough is the last log index on disk at start (ReplayThrough);
	// applied the last index applied or restored since then. Both are
	// touched only by the cluster's apply goroutine.
	replayThrough, applied uint64
	// halt is closed, and haltErr set, when the replica met an entry or a
	// snapshot it cannot read: from then on it applies nothing.
	halt     chan struct{}
	haltOnce sync.Once
	haltErr  atomic.Pointer[error]
}

// NewFSM wraps m for the cluster. log receives one line per history entry
// applied (nil: none).
func NewFSM(m *failover.Machine, log *slog.Logger) *FSM {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &FSM{m: m, log: log, changed: make(chan struct{}, 1), dnsChanged: make(chan struct{}, 1), drillChanged: make(chan struct{}, 1),
		suspectChanged: make(chan struct{}, 1), halt: make(chan struct{})}
}

var (
	_ cluster.StateMachine = (*FSM)(nil)
	_ cluster.ReplayAware  = (*FSM)(nil)
)

// Apply implements cluster.StateMachine. The decision core stays pure; the
// history lines are written here, after it, from what it recorded, and
// change nothing that is replicated.
//
// An entry this replica cannot read (failover.Machine.ApplyEntry) halts
// it: it is never skipped, since the replicas that read it would then
// decide from a state this one never had (invariant 15). A halted replica
// applies nothing more and answers every entry with the halting error;
// Halted tells the node, which stops.
func (s *FSM) Apply(index uint64, cmd []byte) []byte {
	if err := s.Halted(); err != nil {
		return failover.EncodeError(index, err)
	}
	out, err := s.m.ApplyEntry(index, cmd)
	if err != nil {
		err = fmt.Errorf("log entry %d cannot be read by this binary (log format %d): %w", index, failover.Format, err)
		s.stop(err)
		return failover.EncodeError(index, err)
	}
	s.applied = index
	for _, e := range s.m.EntriesAt(index) {
		s.logEntry(e, index <= s.replayThrough, false)
	}
	s.wake()
	return out
}

// ReplayThrough implements cluster.ReplayAware: entries up to index are
// logged with replayed=true, since this node may have logged them before
// it restarted.
func (s *FSM) ReplayThrough(index uint64) { s.replayThrough = index }

// logEntry writes e as one structured line, so that every node's journal
// holds the whole audit trail, longer than the replicated history keeps
// it and beyond the reach of any API token. The keys are stable; text from
// the log is escaped (failover.EscapeText) so that no entry can forge a
// line or reorder one. replayed marks an entry applied again after a
// restart, snapshot one this node learnt from a snapshot it installed
// instead of applying it.
func (s *FSM) logEntry(e failover.Entry, replayed, snapshot bool) {
	attrs := []slog.Attr{
		slog.Uint64("index", e.Index), slog.Uint64("gen", e.Gen),
		slog.String("at", time.Unix(0, e.At).UTC().Format(time.RFC3339Nano)),
		slog.String("kind", failover.EscapeText(e.Kind)), slog.Bool("audit", failover.AuditKind(e.Kind)),
		slog.String("actor", failover.EscapeText(e.Actor)), slog.String("reason", failover.EscapeText(e.Reason)),
		slog.String("from", failover.EscapeText(string(e.From))), slog.String("to", failover.EscapeText(string(e.To))),
	}
	if e.Forced {
		attrs = append(attrs, slog.Bool("forced", true))
	}
	for _, kv := range [][2]string{{"rule", e.Rule}, {"outcome", e.Outcome}, {"detail", e.Detail}} {
		if kv[1] != "" {
			attrs = append(attrs, slog.String(kv[0], failover.EscapeText(kv[1])))
		}
	}
	if replayed {
		attrs = append(attrs, slog.Bool("replayed", true))
	}
	if snapshot {
		attrs = append(attrs, slog.Bool("from_snapshot", true))
	}
	s.log.LogAttrs(context.Background(), slog.LevelInfo, "history entry", attrs...)
}

// wake tells every loop that the state changed.
func (s *FSM) wake() {
	for _, ch := range []chan struct{}{s.changed, s.dnsChanged, s.drillChanged, s.suspectChanged} {
		select {
		case ch <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
}

// Snapshot implements cluster.StateMachine.
func (s *FSM) Snapshot() ([]byte, error) { return s.m.Snapshot() }

// Restore implements cluster.StateMachine. A follower that installs the
// leader's snapshot while it runs skips the entries in it: those newer
// than what it applied are logged from the snapshot, marked so. The
// snapshot Raft restores at start is the node's own, and its entries
// were logged when they were applied.
func (s *FSM) Restore(b []byte) error {
	if err := s.Halted(); err != nil {
		return err
	}
	if err := s.m.Restore(b); err != nil {
		if errors.Is(err, failover.ErrUnreadable) {
			s.stop(err)
		}
		return err
	}
	if s.applied != 0 {
		for _, e := range s.m.History() {
			if e.Index > s.applied {
				s.logEntry(e, false, true)
			}
		}
	}
	s.applied = s.m.LastIndex()
	return nil
}

// stop halts the replica for err, once, and says so: a human must
// install a release that reads the log.
func (s *FSM) stop(err error) {
	s.haltOnce.Do(func() {
		s.haltErr.Store(&err)
		s.log.Error("replica halted: it stops applying the log", "err", err,
			"log_format", failover.Format, "fix", "install a release that reads this log on this node")
		close(s.halt)
	})
}

// Halted returns why the replica stopped applying, nil while it applies.
func (s *FSM) Halted() error {
	if p := s.haltErr.Load(); p != nil {
		return *p
	}
	return nil
}

// HaltCh is closed when the replica halts (see Halted).
func (s *FSM) HaltCh() <-chan struct{} { return s.halt }

// Watcher is one watcher's running loops and what they last saw.
type Watcher struct {
	cfg     Config
	machine *failover.Machine
	hash    string
	// policyFormat is the oldest log format that reads hash's policy
	// (failover.Command.NeedsFormat): the leader proposes the policy only
	// once the cluster writes it.
	policyFormat int
	rep          *Reporter // sends the rounds, lean when it can
	log          *slog.Logger
	metrics      *metrics
	susp         *suspicion
	replicated   policyCache

	mu         sync.Mutex
	leading    bool // a reconciler runs
	lastRec    reconcile.Report
	groupRec   map[string]reconcile.Report // the named groups' reconcilers' last passes
	dnsChecks  map[string]DNSCheck         // each group's last DNS check, "" the default group's
	lastReport struct {
		at  time.Time
		err error
	}
	stopping  atomic.Bool
	lastRound atomic.Int64 // unix ns when the scheduler last delivered a round

	// dnsCheckWoken, if set (tests), is told each time the DNS check loop
	// wakes a group's check for a decision, with the decision it saw.
	dnsCheckWoken func(group string, d failover.Desired)
}

// New registers the watcher's metrics; Run starts its loops.
func New(cfg Config) (*Watcher, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	w := &Watcher{cfg: cfg, machine: cfg.FSM.m, hash: cfg.Policy.Hash(),
		policyFormat: failover.Command{Payload: failover.SetPolicy{Policy: cfg.Policy}}.NeedsFormat(), log: cfg.Logger, susp: newSuspicion(cfg.Policy.Fall)}
	w.rep = NewReporter(cfg.Node, w.hash, w.machine)
	w.lastRound.Store(cfg.Now().UnixNano())
	var err error
	if w.metrics, err = newMetrics(cfg.Registry, w); err != nil {
		return nil, err
	}
	return w, nil
}

// Run runs the report loop over rounds, the DNS check, the cluster-health
// monitor, the credentials reload and, while this node leads, the leader's
// loops. It returns once
// ctx ends and every loop has stopped.
func (w *Watcher) Run(ctx context.Context, rounds <-chan probes.Round) {
	var reload func()
	if w.cfg.Credentials != nil && w.cfg.CredentialsReloadEvery > 0 {
		reload = func() { w.credsLoop(ctx) }
	}
	var wg sync.WaitGroup
	for _, f := range []func(){
		reload,
		func() { w.reportLoop(ctx, rounds) },
		func() { w.suspectLoop(ctx) },
		func() { w.dnsCheckLoop(ctx) },
		func() { w.cfg.Health.Run(ctx) },
		func() { w.cfg.Cluster.RunWhileLeader(ctx, w.lead) },
	} {
		if f == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			f()
		}()
	}
	wg.Wait()
}

// credsLoop reloads the TLS files when they change, so a renewed
// certificate or a CA bundle for a rotation is used by every new connection
// (Raft, cluster RPC, HTTP API) without a restart.
func (w *Watcher) credsLoop(ctx context.Context) {
	t := time.NewTicker(w.cfg.CredentialsReloadEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		changed, err := w.cfg.Credentials.Reload()
		switch {
		case err != nil:
			w.log.Error("tls files changed but were not taken into use", "ca_file", w.cfg.CAFile, "cert_file", w.cfg.CertFile, "err", err)
		case changed:
			w.log.Info("tls files reloaded", "cert_file", w.cfg.CertFile, "not_after", w.cfg.Credentials.NotAfter().UTC().Format(time.RFC3339))
		}
	}
}

// Stopping marks the watcher as shutting down: it is no longer ready, and a
// report that fails from now on is no warning.
func (w *Watcher) Stopping() { w.stopping.Store(true) }

// Hash is the hash of this node's policy.
func (w *Watcher) Hash() string { return w.hash }

// Machine is the local replica (read-only use).
func (w *Watcher) Machine() *failover.Machine { return w.machine }

// LastGroupReconcile is the last pass of the reconciler of failover group
// name (not the default group: LastReconcile), and whether this node
// leads; ok is false until that reconciler has run a pass.
func (w *Watcher) LastGroupReconcile(name string) (r reconcile.Report, leading, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r, ok = w.groupRec[name]
	return r, w.leading, ok
}

// LastReconcile is the reconciler's last pass, and whether one runs: only
// the leader has one.
func (w *Watcher) LastReconcile() (reconcile.Report, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastRec, w.leading
}

// Warnings are what the status page shouts first: this node's own view may
// be wrong, and the reader must know it.
func (w *Watcher) Warnings(v failover.View, st cluster.Stats, stale float64) []string {
	var out []string
	id := w.cfg.Node
	if err := w.cfg.FSM.Halted(); err != nil {
		out = append(out, fmt.Sprintf("this node (%s) stopped applying the log: %v; what follows is frozen — install a release that reads it", id, err))
	}
	if st.StorageError != "" {
		out = append(out, fmt.Sprintf("this node (%s) cannot write its raft log: %s; it cannot persist decisions and its view is falling behind — free or fix %s", id, st.StorageError, w.cfg.DataDir))
	}
	interval := w.cfg.Interval.Seconds()
	switch {
	case st.LeaderID == "":
		out = append(out, fmt.Sprintf("this node (%s) has no leader: no quorum of watchers is reachable, so nothing is decided or written; what follows may be stale", id))
	case st.LastContact > 3*w.cfg.HeartbeatTimeout:
		out = append(out, fmt.Sprintf("this node last heard from the leader %s ago", st.LastContact.Round(time.Second)))
	}
	if v.Now > 0 && stale > 3*interval {
		out = append(out, fmt.Sprintf("stale data: the last command applied here is %.0f s old", stale))
	}
	if v.Policy != nil && v.PolicyHash != w.hash {
		msg := fmt.Sprintf("this node's config file differs from the replicated policy (file %s, cluster %s): the cluster decides by its replicated policy", failover.ShortHash(w.hash), failover.ShortHash(v.PolicyHash))
		if f := w.machine.Format(); w.policyFormat > f {
			msg += fmt.Sprintf("; the file's policy needs log format %d (the cluster writes %d), and a leader running it proposes it once every server reads %d",
				w.policyFormat, f, w.policyFormat)
		}
		out = append(out, msg)
	}
	if m := MixedReleases(st.Peers, w.machine.Format()); m != "" {
		out = append(out, m)
	}
	w.mu.Lock()
	repErr := w.lastReport.err
	w.mu.Unlock()
	if repErr != nil && !w.stopping.Load() {
		out = append(out, "this node's probe reports are not being committed: "+repErr.Error())
	}
	return append(out, v.Warnings...)
}

// MixedReleases is the status warning while the servers run different
// releases or log formats (a rolling upgrade under way), "" while they
// agree: each server's release and format, and the format the cluster
// writes (effective) until every server reads the newest.
func MixedReleases(members []cluster.Member, effective int) string {
	desc, newest, differ := cluster.DescribeReleases(members)
	if !differ {
		return ""
	}
	return fmt.Sprintf("the servers run different releases (an upgrade under way?): %s; the leader writes log format %d until every server reads %d",
		desc, effective, max(effective, newest))
}

// History is the replicated history, oldest first.
func (w *Watcher) History() []failover.Entry { return w.machine.History() }

// Drills returns the ended drills, oldest first, and the running one.
func (w *Watcher) Drills() ([]failover.DrillRecord, *failover.DrillRecord) { return w.machine.Drills() }

// DrillCanary is the canary a drill started now moves, under the replicated
// policy; an error when this node runs no drills or knows no policy yet.
func (w *Watcher) DrillCanary() (failover.DrillCanary, error) {
	v := w.machine.View()
	switch {
	case w.cfg.Drill == nil:
		return failover.DrillCanary{}, errors.New("this node runs no drills")
	case v.Policy == nil:
		return failover.DrillCanary{}, fmt.Errorf("drill: %w", failover.ErrNoPolicy)
	}
	return w.cfg.Drill.Canary(*v.Policy), nil
}

// DrillSchedule is how often the leader starts a drill by itself (0:
// never), and the probe timeout the RTO estimate adds.
func (w *Watcher) DrillSchedule() (schedule, timeout time.Duration) {
	if w.cfg.Drill == nil {
		return 0, 0
	}
	return w.cfg.Drill.Schedule, w.cfg.Drill.Timeout
}

// Explain describes the evidence behind decision gen.
func (w *Watcher) Explain(gen uint64) (string, error) { return w.machine.Explain(gen) }

// Members lists the Raft configuration.
func (w *Watcher) Members(ctx context.Context) ([]cluster.Member, error) {
	return w.cfg.Cluster.Members(ctx)
}

// RemoveMember removes a voter and records it in the log.
func (w *Watcher) RemoveMember(ctx context.Context, id string, force bool, actor, reason string) error {
	if err := w.cfg.Cluster.RemoveServer(ctx, id, force); err != nil {
		return err
	}
	return w.recordMembership(ctx, failover.Membership{Op: failover.MemberRemove, ID: id, Actor: actor, Reason: reason})
}

// AddMember adds (or re-addresses) a voter and records it in the log.
func (w *Watcher) AddMember(ctx context.Context, id, raftAddr, actor, reason string) error {
	if err := w.cfg.Cluster.AddVoter(ctx, id, raftAddr); err != nil {
		return err
	}
	return w.recordMembership(ctx, failover.Membership{Op: failover.MemberAdd, ID: id, Addr: raftAddr, Actor: actor, Reason: reason})
}

// recordMembership commits the record of a membership change the cluster
// has made. Its failure must not read as "nothing was committed": the
// change stands, so the sentinels of the propose error are dropped.
func (w *Watcher) recordMembership(ctx context.Context, m failover.Membership) error {
	if _, _, err := w.Submit(ctx, failover.Command{Payload: m}); err != nil {
		return fmt.Errorf("member %s %s done, but its history record was not committed: %v", m.Op, m.ID, err)
	}
	return nil
}

// Submit proposes a command and returns the decision core's result.
func (w *Watcher) Submit(ctx context.Context, c failover.Command) (failover.Result, uint64, error) {
	if err := w.checkFormat(c); err != nil {
		return failover.Result{}, 0, err
	}
	res, index, err := failover.Submit(ctx, w.cfg.Cluster, c)
	if err != nil {
		return failover.Result{}, index, err
	}
	// Make the local replica catch up, so a read right after sees the write.
	_ = w.cfg.Cluster.WaitApplied(ctx, index)
	return res, index, nil
}

// checkFormat refuses, on whichever node takes the command, one that needs
// a newer log format than the cluster writes (failover.CheckFormat), and
// names the servers that do not read it yet. The leader refuses it too,
// but a refusal forwarded from the leader loses its rule, and the
// operator's exit code 3 with it.
func (w *Watcher) checkFormat(c failover.Command) error {
	err := failover.CheckFormat(c, w.machine.Format())
	var re *failover.RefusedError
	if !errors.As(err, &re) {
		return err
	}
	need := c.NeedsFormat()
	var lag []string
	for _, m := range w.cfg.Cluster.Stats().Peers {
		if m.Format < need {
			desc, _, _ := cluster.DescribeReleases([]cluster.Member{m})
			lag = append(lag, desc)
		}
	}
	if len(lag) > 0 {
		re.Message += "; servers that do not read it yet: " + strings.Join(lag, ", ")
	}
	return re
}

// Ready returns nil once Raft has joined and a leader is known.
func (w *Watcher) Ready() error {
	st := w.cfg.Cluster.Stats()
	switch {
	case w.stopping.Load():
		return errors.New("shutting down")
	case st.StorageError != "":
		return fmt.Errorf("cannot write the raft log: %s", st.StorageError)
	case st.LeaderID == "":
		return errors.New("no leader")
	case !slices.ContainsFunc(st.Peers, func(m cluster.Member) bool { return m.ID == w.cfg.Node }):
		return errors.New("not a member of the raft configuration yet")
	}
	return nil
}

// Alive returns nil while probe rounds keep arriving. A round takes at most
// one interval plus its timeout, so five intervals of silence mean a wedged
// loop, not a slow one.
func (w *Watcher) Alive() error {
	last := time.Unix(0, w.lastRound.Load())
	if since := w.cfg.Now().Sub(last); since > 5*w.cfg.Interval {
		return fmt.Errorf("no probe round for %s (interval %s)", since.Round(time.Second), w.cfg.Interval)
	}
	return nil
}

// Metrics serves this node's Prometheus registry.
func (w *Watcher) Metrics() http.Handler {
	return promhttp.HandlerFor(w.cfg.Registry, promhttp.HandlerOpts{})
}

// Stats is this member's Raft state.
func (w *Watcher) Stats() cluster.Stats { return w.cfg.Cluster.Stats() }

// Zone is the zone the DNS provider writes.
func (w *Watcher) Zone() string { return w.cfg.DNS.Zone() }

// ClusterHealth is each site's cluster as this node last read it.
func (w *Watcher) ClusterHealth() []clusterhealth.Site { return w.cfg.Health.Sites() }

// Now reads the watcher's clock.
func (w *Watcher) Now() time.Time { return w.cfg.Now() }

// ProbeTimeout is the longest timeout of a critical probe (Config.ProbeTimeout).
func (w *Watcher) ProbeTimeout() time.Duration { return w.cfg.ProbeTimeout }

// ID is this node's ID.
func (w *Watcher) ID() string { return w.cfg.Node }

// policyCache keeps the copy of the replicated policy the watcher's loops
// last read, and reads it again only when its hash changes: a copy of 50
// groups' policy is 50 us and 46 KB, and the report loop read it twice
// for every round, the suspicion loop once for every entry applied. The
// copy is shared by the loops, which only read it, and indexed, as the
// machine's own is: the report's lean encoding looks up every probe.
type policyCache struct {
	mu   sync.Mutex
	p    *failover.Policy
	hash string
}

// get returns the replicated policy and its hash (nil and "" before one).
func (c *policyCache) get(m *failover.Machine) (*failover.Policy, string) {
	h := m.PolicyHash()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.p == nil || h != c.hash {
		c.p, c.hash = m.Policy()
		if c.p != nil {
			c.p = c.p.Indexed()
		}
	}
	return c.p, c.hash
}
