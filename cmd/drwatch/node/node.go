package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drwatch/drwatch/cluster"
	"github.com/drwatch/drwatch/cmd/drwatch/api"
	"github.com/drwatch/drwatch/cmd/drwatch/config"
	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/executor/reconcile"
	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/all"
	"github.com/drwatch/drwatch/executor/remediate/kube"
	"github.com/drwatch/drwatch/executor/remediate/openstack"
	"github.com/drwatch/drwatch/executor/remediate/repair"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/internal/kubeconfig"
	"github.com/drwatch/drwatch/monitor/clusterhealth"
	"github.com/drwatch/drwatch/probes"
	"github.com/drwatch/drwatch/watcher"
	"github.com/prometheus/client_golang/prometheus"
)

// Options start a Node. Config is required; the rest have defaults.
type Options struct {
	Config *config.Config
	Logger *slog.Logger
	// Registry receives every metric of this node (one per node, so the demo
	// can run three in one process). Default: a new registry.
	Registry *prometheus.Registry
	// DNS replaces the provider built from the config (the demo's embedded server).
	DNS dnsprovider.Provider
	// GroupDNS replaces, by group name, the providers built from the
	// config for its failover groups (each fenced on the group's own
	// record). With DNS set, every group of the config needs one here:
	// the node cannot fence the given provider on another record.
	GroupDNS map[string]dnsprovider.Provider
	// DrillDNS replaces the drills' provider built from the config (fenced
	// on the drill fence record). With DNS set and DrillDNS not, the node
	// runs no drills: it cannot fence the given provider on another record.
	DrillDNS dnsprovider.Provider
	// Verifier replaces the verifier built from the config.
	Verifier reconcile.Verifier
	// Credentials replace those loaded from the tls section.
	Credentials *cluster.Credentials
	// CredentialsReloadEvery is how often the TLS files are looked at
	// (tests). Default CredentialsReloadEvery.
	CredentialsReloadEvery time.Duration
	// Now is the clock the leader stamps commands with (tests). Default time.Now.
	Now func() time.Time
}

// Node is one running watcher: the cluster member, the probe scheduler and
// the watcher's loops built from one config. It serves the HTTP API
// through the watcher.
type Node struct {
	api.WatcherBackend
	cluster *cluster.Node
	fsm     *watcher.FSM
	creds   *cluster.Credentials // this node's TLS identity; the watcher reloads it

	probeCancel context.CancelFunc
	wg          sync.WaitGroup // the probe scheduler and the watcher's loops
	log         *slog.Logger
	// stopWait bounds Shutdown's wait for the loops (loopStopWait; tests
	// shorten it).
	stopWait time.Duration
}

// loopStopWait bounds how long Shutdown waits for the probe scheduler and
// the watcher's loops to end once their context is cancelled. They end in
// moments; one that has not after this is stuck, and the node must still
// stop (a SIGINT to `drwatch demo` was once ignored for 70 s).
const loopStopWait = 10 * time.Second

// Start opens the node's stores, joins the cluster, starts probing and
// serving. It returns once everything is started; Shutdown stops it.
//
// It reads as a list: each part is built once from the config, the
// cluster member and the watcher are added with them, and the loops run.
func Start(ctx context.Context, o Options) (*Node, error) {
	p, err := newParts(o)
	if err != nil {
		return nil, err
	}
	for _, build := range []func() error{
		p.buildCredentials, // this node's TLS identity
		p.buildDNS,         // the provider, the drills' provider, the verifier
		p.buildGroupDNS,    // each failover group's provider and verifier
		p.buildBreakGlass,  // the key break-glass markers verify under
		p.buildDrills,      // the drills and their readiness checks
		p.buildRepairs,     // the repairs the leader runs (executor/remediate/all)
		p.buildHealth,      // the read-only cluster health monitor
		p.buildProbes,      // the probe scheduler
	} {
		if err := build(); err != nil {
			return nil, err
		}
	}
	n := &Node{log: p.log, stopWait: loopStopWait, creds: p.creds}
	if n.cluster, err = p.joinCluster(ctx); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	n.fsm = p.fsm
	if n.Watcher, err = watcher.New(p.watcherConfig(n.cluster, o.CredentialsReloadEvery)); err != nil {
		_ = n.cluster.Shutdown(context.WithoutCancel(ctx))
		return nil, err
	}
	n.run(ctx, p.sched)
	p.log.Info("watcher started", "raft_addr", p.c.Node.RaftAddr, "policy", failover.ShortHash(n.Hash()))
	return n, nil
}

// parts are what one node runs, each built once from its config by a
// build step of Start.
type parts struct {
	o      Options
	c      *config.Config
	log    *slog.Logger // with the node's ID
	base   *slog.Logger // the cluster adds the node ID itself
	reg    *prometheus.Registry
	now    func() time.Time
	policy failover.Policy

	creds         *cluster.Credentials
	dns, drillDNS dnsprovider.Provider
	verifier      reconcile.Verifier
	groups        []watcher.GroupDNS
	breakGlassKey []byte
	machine       *failover.Machine
	fsm           *watcher.FSM
	drills        *watcher.Drill
	repairs       []remediate.Entry
	groupRepairs  []watcher.GroupRemediations
	groupGates    []watcher.GroupGates
	health        *clusterhealth.Monitor
	sched         *probes.Scheduler
}

// newParts checks the config and fills in the options' defaults.
func newParts(o Options) (*parts, error) {
	c := o.Config
	if c == nil {
		return nil, errors.New("node: no config")
	}
	p := &parts{o: o, c: c, log: o.Logger, reg: o.Registry, now: o.Now, policy: c.ReplicatedPolicy(), machine: failover.New()}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	p.base, p.log = p.log, p.log.With("node", c.Node.ID)
	if p.reg == nil {
		p.reg = prometheus.NewRegistry()
	}
	if p.now == nil {
		p.now = time.Now
	}
	if err := p.policy.Validate(); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	return p, nil
}

func (p *parts) buildCredentials() error {
	c := p.c
	p.creds = p.o.Credentials
	if p.creds == nil {
		var err error
		if p.creds, err = cluster.LoadCredentials(c.TLS.CAFile, c.TLS.CertFile, c.TLS.KeyFile); err != nil {
			return fmt.Errorf("tls: %w", err)
		}
	}
	if p.creds.NodeID() != c.Node.ID {
		return fmt.Errorf("tls.cert_file: certificate is for node %q, config says node.id %q", p.creds.NodeID(), c.Node.ID)
	}
	return nil
}

func (p *parts) buildDNS() error {
	c := p.c
	var err error
	if p.dns = p.o.DNS; p.dns == nil {
		if p.dns, err = dnsprovider.New(c.DNS.Config, p.log); err != nil {
			return fmt.Errorf("dns: %w", err)
		}
	}
	// With DNS given and DrillDNS not, the node runs no drills: it cannot
	// fence the given provider on another record.
	if p.drillDNS = p.o.DrillDNS; p.drillDNS == nil && p.o.DNS == nil {
		dc := c.DNS.Config
		dc.FenceName = c.DrillFence()
		if p.drillDNS, err = dnsprovider.New(dc, p.log); err != nil {
			return fmt.Errorf("dns (drills): %w", err)
		}
	}
	if p.verifier = p.o.Verifier; p.verifier == nil {
		v, err := dnsprovider.NewVerifierFromConfig(c.DNS.Config, p.log)
		if err != nil {
			return fmt.Errorf("dns.verify: %w", err)
		}
		p.verifier = v
	}
	return nil
}

// buildGroupDNS builds each failover group's provider, on its own
// provider section when it names one, else on the dns section's, with the
// group's zone and fence (config.GroupDNS), and its verifier: the dns
// section's when the group is verified as the dns section is (same zone,
// no provider or verify of its own). A group on another server or key
// gets another BatchKey, so the leader never batches its writes with the
// others'.
func (p *parts) buildGroupDNS() error {
	c := p.c
	for _, g := range c.Groups {
		dc, _ := c.GroupDNS(g.Name)
		gd := watcher.GroupDNS{Name: g.Name, DNS: p.o.GroupDNS[g.Name], Verifier: p.verifier}
		if gd.DNS == nil {
			if p.o.DNS != nil {
				return fmt.Errorf("groups[%s].dns: no provider given for the group beside the one given for dns", g.Name)
			}
			var err error
			if gd.DNS, err = dnsprovider.New(dc, p.log.With("group", g.Name)); err != nil {
				return fmt.Errorf("groups[%s].dns: %w", g.Name, err)
			}
		}
		if p.o.Verifier == nil && g.DNS.OwnVerifier(c.DNS.Config) {
			v, err := dnsprovider.NewVerifierFromConfig(dc, p.log)
			if err != nil {
				return fmt.Errorf("groups[%s].dns.verify: %w", g.Name, err)
			}
			gd.Verifier = v
		}
		p.groups = append(p.groups, gd)
	}
	return nil
}

func (p *parts) buildBreakGlass() error {
	var err error
	p.breakGlassKey, err = p.c.DNS.BreakGlass.Key()
	return err
}

func (p *parts) buildDrills() error {
	if p.drillDNS == nil {
		return nil
	}
	c := p.c
	ready, err := DrillReadiness(c, p.machine, c.Drill.CertMinValidity, c.Drill.RTOBudget, p.log, p.now)
	if err != nil {
		return fmt.Errorf("drill readiness: %w", err)
	}
	p.drills = &watcher.Drill{DNS: p.drillDNS, Schedule: c.Drill.ScheduleInterval(), Canary: c.Canary, Timeout: c.ProbedSites().CriticalProbeTimeout(),
		Readiness: func(ctx context.Context, d failover.DrillRecord) []failover.DrillCheck {
			var out []failover.DrillCheck
			for _, ck := range ready(ctx, d) {
				out = append(out, failover.DrillCheck(ck))
			}
			return out
		}}
	return nil
}

func (p *parts) buildRepairs() error {
	var err error
	if p.repairs, err = remediators(p.c, p.machine, p.log, p.now); err != nil {
		return err
	}
	p.groupRepairs, p.groupGates, err = groupRemediators(p.c, p.machine, p.log, p.now)
	return err
}

func (p *parts) buildHealth() error {
	var err error
	if p.health, err = ClusterHealth(p.c, p.now); err != nil {
		return err
	}
	if err := p.reg.Register(p.health); err != nil {
		return fmt.Errorf("cluster health metrics: %w", err)
	}
	return nil
}

func (p *parts) buildProbes() error {
	c := p.c
	pm, err := probes.NewMetrics(p.reg)
	if err != nil {
		return fmt.Errorf("probe metrics: %w", err)
	}
	p.sched, err = probes.NewScheduler(c.ProbedSites().Specs(), probes.SchedulerOptions{
		Interval: c.Policy.Interval, Phase: watcher.Phase(p.policy.Nodes, c.Node.ID, c.Policy.Interval),
		FastInterval: p.policy.FastProbeInterval(), DefaultTimeout: c.Policy.Timeout, Metrics: pm, Logger: p.log,
	})
	if err != nil {
		return fmt.Errorf("probes: %w", err)
	}
	return nil
}

// joinCluster opens the Raft stores and joins the peers, with the replica
// the watcher's FSM applies to.
func (p *parts) joinCluster(ctx context.Context) (*cluster.Node, error) {
	c := p.c
	var self cluster.Peer
	peers := make([]cluster.Peer, 0, len(c.Peers))
	for _, peer := range c.Peers {
		peers = append(peers, cluster.Peer{ID: peer.ID, RaftAddr: peer.RaftAddr})
		if peer.ID == c.Node.ID {
			self = cluster.Peer{ID: peer.ID, RaftAddr: peer.RaftAddr}
		}
	}
	p.fsm = watcher.NewFSM(p.machine, p.log)
	// The leader writes what the cluster's recorded log format reads, and
	// raises it only to what every server has said it reads (invariant 15).
	var member atomic.Pointer[cluster.Node]
	everyServer := func() int {
		if cn := member.Load(); cn != nil {
			return cn.MinFormat()
		}
		return cluster.UnknownFormat
	}
	cn, err := cluster.New(ctx, cluster.Config{
		NodeID: c.Node.ID, DataDir: c.Node.DataDir, BindAddr: c.Node.RaftAddr, AdvertiseAddr: self.RaftAddr,
		Peers: peers, TLS: p.creds, RaftTiming: c.Raft,
		LeaderTransform: func(cmd []byte) ([]byte, error) {
			return failover.StampFormat(cmd, p.now().UnixNano(), p.machine.Format(), everyServer())
		},
		Format: failover.Format, Release: watcher.Release(), ServerInfoEvery: cluster.DefaultServerInfoEvery,
		Logger: p.base, Registerer: p.reg,
	}, p.fsm)
	if err != nil {
		return nil, err
	}
	member.Store(cn)
	return cn, nil
}

// watcherConfig wires the parts into the watcher's loops, on member.
func (p *parts) watcherConfig(member *cluster.Node, reloadEvery time.Duration) watcher.Config {
	c := p.c
	if reloadEvery <= 0 {
		reloadEvery = CredentialsReloadEvery
	}
	gates, after := remediate.Gates(c.Node.ID, "", p.repairs, kube.BackupWarmupName, c.Remediations.BackupWarmup.ReadyTimeout, c.Hooks, p.log)
	return watcher.Config{
		Node: c.Node.ID, Policy: p.policy, Interval: c.Policy.Interval, SetPhase: p.sched.SetPhase, Reprobe: p.sched, HeartbeatTimeout: c.Raft.HeartbeatTimeout, DataDir: c.Node.DataDir,
		FSM: p.fsm, Cluster: member, DNS: p.dns, Verifier: p.verifier, Groups: p.groups,
		Remediators: p.repairs, RemediationInterval: c.Remediations.Interval, GroupRemediations: p.groupRepairs, Gates: gates, AfterVerified: after, GroupGates: p.groupGates,
		BreakGlassKey: p.breakGlassKey, BreakGlassMaxAge: c.DNS.BreakGlass.MaxAge,
		Drill: p.drills, Health: p.health, Credentials: p.creds, CAFile: c.TLS.CAFile, CertFile: c.TLS.CertFile, CredentialsReloadEvery: reloadEvery,
		Registry: p.reg, Logger: p.log, Now: p.now, ProbeTimeout: c.ProbedSites().CriticalProbeTimeout(),
	}
}

// run starts the probe scheduler and the watcher's loops; Shutdown stops
// them.
func (n *Node) run(ctx context.Context, sched *probes.Scheduler) {
	probeCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	n.probeCancel = cancel
	n.goFunc(func() {
		if err := sched.Run(probeCtx); err != nil && !errors.Is(err, context.Canceled) {
			n.log.Error("probe scheduler stopped", "err", err)
		}
	})
	n.goFunc(func() { n.Run(probeCtx, sched.Rounds()) })
}

// CredentialsReloadEvery is how often a node looks at its TLS files
// (tls.ca_file, cert_file, key_file) and takes changed ones into use.
const CredentialsReloadEvery = 30 * time.Second

var _ api.Backend = (*Node)(nil)

// The status page finds GroupReader on the backend it is given: without
// it a node would serve no page per failover group.
var _ api.GroupReader = (*Node)(nil)

// Cluster is the node's Raft member.
func (n *Node) Cluster() *cluster.Node { return n.cluster }

// Halted is closed when this node's replica met a log entry or snapshot
// it cannot read and stopped applying; HaltError says why. The node must
// then stop: its state is frozen and no longer the cluster's.
func (n *Node) Halted() <-chan struct{} { return n.fsm.HaltCh() }

// HaltError is why the replica halted; nil while it applies.
func (n *Node) HaltError() error { return n.fsm.Halted() }

// Credentials is this node's TLS identity, kept current by the watcher: the
// HTTP API serves from it too.
func (n *Node) Credentials() *cluster.Credentials { return n.creds }

func (n *Node) goFunc(f func()) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f()
	}()
}

// Shutdown stops probing, hands leadership to a peer if this node leads,
// and closes the stores. It is safe to call once. A loop that does not end
// within stopWait, or before ctx ends, is logged and left behind: the
// cluster node still stops.
func (n *Node) Shutdown(ctx context.Context) error {
	n.Stopping()
	n.probeCancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.wg.Wait()
	}()
	t := time.NewTimer(n.stopWait)
	select {
	case <-done:
	case <-t.C:
		n.log.Error("shutdown abandoned a wait", "waiting_for", "the probe scheduler and the watcher's loops", "after", n.stopWait)
	case <-ctx.Done():
		n.log.Error("shutdown abandoned a wait", "waiting_for", "the probe scheduler and the watcher's loops", "err", ctx.Err())
	}
	t.Stop()
	return n.cluster.Shutdown(ctx)
}

// remediators builds the repairs the config enables (none by default).
func remediators(c *config.Config, m *failover.Machine, log *slog.Logger, now func() time.Time) ([]remediate.Entry, error) {
	return remediatorsFor(c, func() remediate.Decision { return remediate.NewDecision(m.Desired(), m.History()) }, log, now)
}

// remediatorsFor builds the repairs the config enables, acting on the
// decision that decision returns.
func remediatorsFor(c *config.Config, decision func() remediate.Decision, log *slog.Logger, now func() time.Time) ([]remediate.Entry, error) {
	return all.Build(c.Remediations, all.Options{Env: repair.Env{Decision: decision, Now: now, Log: log, DataDir: c.Node.DataDir}})
}

// groupRemediators builds, for each failover group whose own remediations
// section enables a repair, its repairs, acting on the group's decision,
// keeping their files in a directory of the group's own under the data
// directory (groups/NAME); and for each group with a backup warm-up or
// hooks of its own, what its DNS reconciler runs around its flips: its
// backup warm-up, then its pre-failover hooks, and its post-failover
// hooks, each hook told the group.
func groupRemediators(c *config.Config, m *failover.Machine, log *slog.Logger, now func() time.Time) ([]watcher.GroupRemediations, []watcher.GroupGates, error) {
	var repairs []watcher.GroupRemediations
	var gates []watcher.GroupGates
	for _, g := range c.Groups {
		glog := log.With("group", g.Name)
		env := repair.Env{Decision: groupDecision(m, g.Name), Now: now, Log: glog}
		if c.Node.DataDir != "" {
			env.DataDir = filepath.Join(c.Node.DataDir, "groups", g.Name)
		}
		entries, err := all.Build(g.Remediations, all.Options{Env: env})
		if err != nil {
			return nil, nil, fmt.Errorf("groups[%s]: %w", g.Name, err)
		}
		if len(entries) > 0 {
			if env.DataDir != "" {
				if err := os.MkdirAll(env.DataDir, 0o700); err != nil {
					return nil, nil, fmt.Errorf("groups[%s].remediations: data directory: %w", g.Name, err)
				}
			}
			repairs = append(repairs, watcher.GroupRemediations{Name: g.Name, Remediators: entries, Interval: g.Remediations.Interval})
		}
		before, after := remediate.Gates(c.Node.ID, g.Name, entries, kube.BackupWarmupName, g.Remediations.BackupWarmup.ReadyTimeout, g.Hooks, glog)
		if len(before) > 0 || after != nil {
			gates = append(gates, watcher.GroupGates{Name: g.Name, Gates: before, AfterVerified: after})
		}
	}
	return repairs, gates, nil
}

// groupDecision is failover group's decision, as its repairs read it:
// its desired state and its own history entries (a decision that moved
// several groups has an entry per group at one index).
func groupDecision(m *failover.Machine, group string) func() remediate.Decision {
	return func() remediate.Decision {
		d, _ := m.GroupDesired(group)
		var own []failover.Entry
		for _, e := range m.History() {
			if e.Group == group {
				own = append(own, e)
			}
		}
		return remediate.NewDecision(d, own)
	}
}

// ClusterHealth builds the read-only monitor of both sites' clusters for
// the Cluster health section: the clusters of remediations.kubernetes, and
// the route quota of remediations.openstack's router for its site. Nothing
// is contacted here; every watcher runs its own monitor (nothing of it is
// replicated: it is evidence for a human, never input to a decision).
func ClusterHealth(c *config.Config, now func() time.Time) (*clusterhealth.Monitor, error) {
	r := c.Remediations.Defaulted()
	var targets []clusterhealth.Target
	for _, site := range []struct {
		name string
		kc   kubeconfig.Cluster
	}{{"primary", r.Kubernetes.Primary}, {"backup", r.Kubernetes.Backup}} {
		t := clusterhealth.Target{Site: site.name}
		if site.kc.Kubeconfig != "" {
			var err error
			if t.Client, err = clusterhealth.NewClient(site.kc); err != nil {
				return nil, fmt.Errorf("remediations.kubernetes.%s: %w", site.name, err)
			}
		}
		t.Routes, t.RoutesUnknown = openstack.RouteQuotaReader(r.OpenStack, site.name)
		targets = append(targets, t)
	}
	return clusterhealth.NewMonitor(c.ClusterHealth.Defaulted(), c.Node.ID, targets, now), nil
}
