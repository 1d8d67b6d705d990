package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drwatch/drwatch/cluster"
	"github.com/drwatch/drwatch/cmd/drwatch/api"
	"github.com/drwatch/drwatch/cmd/drwatch/config"
	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/failover/reconcile"
	"github.com/drwatch/drwatch/failover/remediate"
	"github.com/drwatch/drwatch/failover/remediate/all"
	"github.com/drwatch/drwatch/failover/remediate/clusterhealth"
	"github.com/drwatch/drwatch/failover/remediate/kube"
	"github.com/drwatch/drwatch/failover/remediate/openstack"
	"github.com/drwatch/drwatch/failover/remediate/repair"
	"github.com/drwatch/drwatch/internal/watcher"
	"github.com/drwatch/drwatch/probes"
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
func Start(ctx context.Context, o Options) (*Node, error) {
	c := o.Config
	if c == nil {
		return nil, errors.New("node: no config")
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	base := log // the cluster adds the node ID itself
	log = log.With("node", c.Node.ID)
	reg := o.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	n := &Node{log: log, stopWait: loopStopWait}
	policy := c.ReplicatedPolicy()
	if err := policy.Validate(); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	creds := o.Credentials
	var err error
	if creds == nil {
		if creds, err = cluster.LoadCredentials(c.TLS.CAFile, c.TLS.CertFile, c.TLS.KeyFile); err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
	}
	n.creds = creds
	if creds.NodeID() != c.Node.ID {
		return nil, fmt.Errorf("tls.cert_file: certificate is for node %q, config says node.id %q", creds.NodeID(), c.Node.ID)
	}

	dns := o.DNS
	if dns == nil {
		if dns, err = dnsprovider.New(c.DNS.Config, log); err != nil {
			return nil, fmt.Errorf("dns: %w", err)
		}
	}
	drillDNS := o.DrillDNS
	if drillDNS == nil && o.DNS == nil {
		dc := c.DNS.Config
		dc.FenceName = c.DrillFence()
		if drillDNS, err = dnsprovider.New(dc, log); err != nil {
			return nil, fmt.Errorf("dns (drills): %w", err)
		}
	}
	verifier := o.Verifier
	if verifier == nil {
		v, err := dnsprovider.NewVerifierFromConfig(c.DNS.Config, log)
		if err != nil {
			return nil, fmt.Errorf("dns.verify: %w", err)
		}
		verifier = v
	}

	breakGlassKey, err := c.DNS.BreakGlass.Key()
	if err != nil {
		return nil, err
	}

	machine := failover.New()
	var drills *watcher.Drill
	if drillDNS != nil {
		ready, err := DrillReadiness(c, machine, c.Drill.CertMinValidity, c.Drill.RTOBudget, log, now)
		if err != nil {
			return nil, fmt.Errorf("drill readiness: %w", err)
		}
		drills = &watcher.Drill{DNS: drillDNS, Schedule: c.Drill.ScheduleInterval(), Canary: c.Canary, Timeout: c.Sites.CriticalProbeTimeout(),
			Readiness: func(ctx context.Context, d failover.DrillRecord) []failover.DrillCheck {
				var out []failover.DrillCheck
				for _, ck := range ready(ctx, d) {
					out = append(out, failover.DrillCheck(ck))
				}
				return out
			}}
	}
	fixes, err := remediators(c, machine, log, now)
	if err != nil {
		return nil, err
	}
	health, err := ClusterHealth(c, now)
	if err != nil {
		return nil, err
	}
	if err := reg.Register(health); err != nil {
		return nil, fmt.Errorf("cluster health metrics: %w", err)
	}

	pm, err := probes.NewMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("probe metrics: %w", err)
	}
	sched, err := probes.NewScheduler(c.Sites.Specs(), probes.SchedulerOptions{
		Interval: c.Policy.Interval, Phase: watcher.Phase(policy.Nodes, c.Node.ID, c.Policy.Interval),
		FastInterval: policy.FastProbeInterval(), DefaultTimeout: c.Policy.Timeout, Metrics: pm, Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("probes: %w", err)
	}

	var self cluster.Peer
	peers := make([]cluster.Peer, 0, len(c.Peers))
	for _, p := range c.Peers {
		peers = append(peers, cluster.Peer{ID: p.ID, RaftAddr: p.RaftAddr})
		if p.ID == c.Node.ID {
			self = cluster.Peer{ID: p.ID, RaftAddr: p.RaftAddr}
		}
	}
	fsm := watcher.NewFSM(machine, log)
	n.fsm = fsm
	// The leader writes what the cluster's recorded log format reads, and
	// raises it only to what every server has said it reads (invariant 15).
	var member atomic.Pointer[cluster.Node]
	everyServer := func() int {
		if cn := member.Load(); cn != nil {
			return cn.MinFormat()
		}
		return cluster.UnknownFormat
	}
	n.cluster, err = cluster.New(ctx, cluster.Config{
		NodeID: c.Node.ID, DataDir: c.Node.DataDir, BindAddr: c.Node.RaftAddr, AdvertiseAddr: self.RaftAddr,
		Peers: peers, TLS: creds, RaftTiming: c.Raft,
		LeaderTransform: func(cmd []byte) ([]byte, error) {
			return failover.StampFormat(cmd, now().UnixNano(), machine.Format(), everyServer())
		},
		Format: failover.Format, Release: watcher.Release(), ServerInfoEvery: cluster.DefaultServerInfoEvery,
		Logger: base, Registerer: reg,
	}, fsm)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	member.Store(n.cluster)

	reloadEvery := o.CredentialsReloadEvery
	if reloadEvery <= 0 {
		reloadEvery = CredentialsReloadEvery
	}
	gates, after := remediate.Gates(c.Node.ID, fixes, kube.BackupWarmupName, c.Remediations.BackupWarmup.ReadyTimeout, c.Hooks, log)
	n.Watcher, err = watcher.New(watcher.Config{
		Node: c.Node.ID, Policy: policy, Interval: c.Policy.Interval, SetPhase: sched.SetPhase, Reprobe: sched, HeartbeatTimeout: c.Raft.HeartbeatTimeout, DataDir: c.Node.DataDir,
		FSM: fsm, Cluster: n.cluster, DNS: dns, Verifier: verifier,
		Remediators: fixes, RemediationInterval: c.Remediations.Interval, Gates: gates, AfterVerified: after,
		BreakGlassKey: breakGlassKey, BreakGlassMaxAge: c.DNS.BreakGlass.MaxAge,
		Drill: drills, Health: health, Credentials: creds, CAFile: c.TLS.CAFile, CertFile: c.TLS.CertFile, CredentialsReloadEvery: reloadEvery,
		Registry: reg, Logger: log, Now: now, ProbeTimeout: c.Sites.CriticalProbeTimeout(),
	})
	if err != nil {
		_ = n.cluster.Shutdown(context.WithoutCancel(ctx))
		return nil, err
	}

	probeCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	n.probeCancel = cancel
	n.goFunc(func() {
		if err := sched.Run(probeCtx); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("probe scheduler stopped", "err", err)
		}
	})
	n.goFunc(func() { n.Run(probeCtx, sched.Rounds()) })
	log.Info("watcher started", "raft_addr", c.Node.RaftAddr, "policy", failover.ShortHash(n.Hash()))
	return n, nil
}

// CredentialsReloadEvery is how often a node looks at its TLS files
// (tls.ca_file, cert_file, key_file) and takes changed ones into use.
const CredentialsReloadEvery = 30 * time.Second

var _ api.Backend = (*Node)(nil)

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
		kc   remediate.KubeCluster
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
