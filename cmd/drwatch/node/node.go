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
	"github.com/drwatch/drwatch/cmd/drwatch/config"
	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/failover/reconcile"
	"github.com/drwatch/drwatch/failover/remediate"
	"github.com/drwatch/drwatch/failover/remediate/clusterhealth"
	"github.com/drwatch/drwatch/failover/remediate/kube"
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

// Node is one running watcher.
type Node struct {
	cfg      *config.Config
	log      *slog.Logger
	reg      *prometheus.Registry
	machine  *failover.Machine
	cluster  *cluster.Node
	dns      dnsprovider.Provider
	verifier reconcile.Verifier
	sched    *probes.Scheduler
	policy   failover.Policy
	hash     string
	now      func() time.Time
	metrics  *metrics

	changed    chan struct{} // a command was applied (wakes the reconciler)
	dnsChanged chan struct{} // a command was applied (wakes the DNS check)

	remediators []remediate.Entry      // enabled repairs; run by the leader only
	health      *clusterhealth.Monitor // read-only view of both clusters; every node runs its own

	probeCancel context.CancelFunc
	wg          sync.WaitGroup

	mu         sync.Mutex
	reconciler *reconcile.Reconciler // the current one while leading
	lastRec    reconcile.Report
	dnsCheck   DNSCheck
	lastReport struct {
		at  time.Time
		err error
	}
	started   time.Time
	creds     *cluster.Credentials // this node's TLS identity; reloaded by credsLoop
	stopping  atomic.Bool
	lastRound atomic.Int64 // unix ns when the scheduler last delivered a round
	lastSeq   uint64
}

// sm adapts the decision core to cluster.StateMachine and signals changes.
type sm struct {
	m      *failover.Machine
	notify []chan struct{}
}

func (s sm) Apply(index uint64, cmd []byte) []byte {
	out := s.m.Apply(index, cmd)
	for _, ch := range s.notify {
		select {
		case ch <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
	return out
}
func (s sm) Snapshot() ([]byte, error) { return s.m.Snapshot() }
func (s sm) Restore(b []byte) error    { return s.m.Restore(b) }

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
	n := &Node{cfg: c, log: log, reg: reg, machine: failover.New(), now: now, changed: make(chan struct{}, 1), dnsChanged: make(chan struct{}, 1), started: now()}
	n.lastRound.Store(n.started.UnixNano())
	n.policy = c.ReplicatedPolicy()
	if err := n.policy.Validate(); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	n.hash = n.policy.Hash()
	var err error
	if n.metrics, err = newMetrics(reg, n); err != nil {
		return nil, err
	}

	creds := o.Credentials
	if creds == nil {
		if creds, err = cluster.LoadCredentials(c.TLS.CAFile, c.TLS.CertFile, c.TLS.KeyFile); err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
	}
	n.creds = creds
	if creds.NodeID() != c.Node.ID {
		return nil, fmt.Errorf("tls.cert_file: certificate is for node %q, config says node.id %q", creds.NodeID(), c.Node.ID)
	}

	n.dns = o.DNS
	if n.dns == nil {
		if n.dns, err = dnsprovider.New(c.DNS.Config, log); err != nil {
			return nil, fmt.Errorf("dns: %w", err)
		}
	}
	n.verifier = o.Verifier
	if n.verifier == nil {
		v, err := dnsprovider.NewVerifierFromConfig(c.DNS.Config, log)
		if err != nil {
			return nil, fmt.Errorf("dns.verify: %w", err)
		}
		n.verifier = v
	}

	if n.remediators, err = remediators(c, n); err != nil {
		return nil, err
	}
	if n.health, err = ClusterHealth(c, n.now); err != nil {
		return nil, err
	}
	if err := reg.Register(n.health); err != nil {
		return nil, fmt.Errorf("cluster health metrics: %w", err)
	}

	pm, err := probes.NewMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("probe metrics: %w", err)
	}
	n.sched, err = probes.NewScheduler(ProbeSpecs(c), probes.SchedulerOptions{
		Interval: c.Policy.Interval, DefaultTimeout: c.Policy.Timeout, Metrics: pm, Logger: log,
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
	n.cluster, err = cluster.New(ctx, cluster.Config{
		NodeID: c.Node.ID, DataDir: c.Node.DataDir, BindAddr: c.Node.RaftAddr, AdvertiseAddr: self.RaftAddr,
		Peers: peers, TLS: creds, RaftTiming: c.Raft,
		LeaderTransform: func(cmd []byte) ([]byte, error) { return failover.Stamp(cmd, n.now().UnixNano()) },
		Logger:          base, Registerer: reg,
	}, sm{m: n.machine, notify: []chan struct{}{n.changed, n.dnsChanged}})
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}

	probeCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	n.probeCancel = cancel
	n.goFunc(func() {
		if err := n.sched.Run(probeCtx); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("probe scheduler stopped", "err", err)
		}
	})
	n.goFunc(func() { n.reportLoop(probeCtx) })
	n.goFunc(func() { n.dnsCheckLoop(probeCtx) })
	n.goFunc(func() { n.health.Run(probeCtx) })
	n.goFunc(func() { n.cluster.RunWhileLeader(probeCtx, n.lead) })
	reloadEvery := o.CredentialsReloadEvery
	if reloadEvery <= 0 {
		reloadEvery = CredentialsReloadEvery
	}
	n.goFunc(func() { n.credsLoop(probeCtx, reloadEvery) })
	log.Info("watcher started", "raft_addr", c.Node.RaftAddr, "policy", failover.ShortHash(n.hash))
	return n, nil
}

// CredentialsReloadEvery is how often a node looks at its TLS files
// (tls.ca_file, cert_file, key_file) and takes changed ones into use.
const CredentialsReloadEvery = 30 * time.Second

// Credentials is this node's TLS identity, kept current by the node: the
// HTTP API serves from it too.
func (n *Node) Credentials() *cluster.Credentials { return n.creds }

// credsLoop reloads the TLS files when they change, so a renewed
// certificate or a CA bundle for a rotation is used by every new connection
// (Raft, cluster RPC, HTTP API) without a restart.
func (n *Node) credsLoop(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		changed, err := n.creds.Reload()
		switch {
		case err != nil:
			n.log.Error("tls files changed but were not taken into use", "ca_file", n.cfg.TLS.CAFile, "cert_file", n.cfg.TLS.CertFile, "err", err)
		case changed:
			n.log.Info("tls files reloaded", "cert_file", n.cfg.TLS.CertFile, "not_after", n.creds.NotAfter().UTC().Format(time.RFC3339))
		}
	}
}

func (n *Node) goFunc(f func()) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f()
	}()
}

// Shutdown stops probing, hands leadership to a peer if this node leads,
// and closes the stores. It is safe to call once.
func (n *Node) Shutdown(ctx context.Context) error {
	n.stopping.Store(true)
	n.probeCancel()
	n.wg.Wait()
	return n.cluster.Shutdown(ctx)
}

// reportLoop sends each probe round to the leader as an Observe command.
func (n *Node) reportLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-n.sched.Rounds():
			n.lastRound.Store(n.now().UnixNano())
			n.report(ctx, r)
		}
	}
}

func (n *Node) report(ctx context.Context, r probes.Round) {
	if n.machine.View().Policy == nil {
		// The leader has not replicated the policy yet (first seconds of a
		// new cluster); a report now would only be rejected.
		return
	}
	obs := Observation(n.cfg.Node.ID, n.hash, r)
	b, err := failover.Encode(obs.Command())
	if err == nil {
		// A report older than one interval is worth little; do not queue it.
		pctx, cancel := context.WithTimeout(ctx, n.cfg.Policy.Interval)
		var resp []byte
		resp, _, err = n.cluster.Propose(pctx, b)
		cancel()
		if err == nil {
			_, err = failover.DecodeResponse(resp)
		}
	}
	n.mu.Lock()
	prevErr := n.lastReport.err
	n.lastReport.at, n.lastReport.err = n.now(), err
	n.lastSeq = r.Seq
	n.mu.Unlock()
	switch {
	case err != nil && prevErr == nil:
		n.log.Warn("probe report not committed", "err", err)
	case err == nil && prevErr != nil:
		n.log.Info("probe reports committed again")
	}
}

// lead runs while this node is the leader: it makes the replicated policy
// match this node's file, ticks the clock, and reconciles DNS.
func (n *Node) lead(ctx context.Context) {
	n.log.Info("leading")
	defer n.log.Info("no longer leading")
	gates, after := n.gates()
	rec, err := reconcile.New(reconcile.Config{
		Node: n.cfg.Node.ID, State: n.machine, Cluster: n.cluster, DNS: n.dns, Verifier: n.verifier,
		Interval: n.cfg.Policy.Interval, Logger: n.log, Now: n.now,
		// Retry a failed write at most one probe interval apart, so a flip
		// lands within about an interval of the DNS server returning.
		BackoffBase: n.cfg.Policy.Interval / 10, BackoffMax: n.cfg.Policy.Interval,
		Observe: n.observeReconcile, Gates: gates, AfterVerified: after,
	})
	if err != nil {
		n.log.Error("reconciler not started", "err", err)
		return
	}
	n.mu.Lock()
	n.reconciler = rec
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		n.reconciler = nil
		n.mu.Unlock()
	}()

	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		n.tickLoop(ctx)
	}()
	if len(n.remediators) > 0 {
		runner, err := remediate.NewRunner(remediate.RunnerConfig{Node: n.cfg.Node.ID, Cluster: n.cluster, State: n.machine,
			Remediators: n.remediators, Interval: n.cfg.Remediations.Interval, Registerer: n.reg,
			Logger: n.log.With("component", "remediate"), Now: n.now})
		if err != nil {
			n.log.Error("remediations not started", "err", err)
		} else {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runner.Run(ctx)
			}()
		}
	}
	wake := make(chan struct{}, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case <-n.changed:
				select {
				case wake <- struct{}{}:
				default:
				}
			}
		}
	}()
	rec.Run(ctx, wake)
}

// tickLoop keeps the replicated policy in step with this leader's file and
// advances the replicated clock once per interval.
func (n *Node) tickLoop(ctx context.Context) {
	t := time.NewTicker(n.cfg.Policy.Interval)
	defer t.Stop()
	for {
		if n.machine.View().PolicyHash != n.hash {
			n.propose(ctx, failover.SetPolicy{Policy: n.policy, Actor: "node:" + n.cfg.Node.ID}.Command())
		} else {
			n.propose(ctx, failover.Tick{}.Command())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (n *Node) propose(ctx context.Context, c failover.Command) {
	b, err := failover.Encode(c)
	if err != nil {
		n.log.Error("encode command", "err", err)
		return
	}
	pctx, cancel := context.WithTimeout(ctx, n.cfg.Policy.Interval)
	defer cancel()
	resp, _, err := n.cluster.Propose(pctx, b)
	if err == nil {
		_, err = failover.DecodeResponse(resp)
	}
	if err != nil && ctx.Err() == nil {
		n.log.Warn("command not committed", "type", c.Type(), "err", err)
	}
}

func (n *Node) observeReconcile(r reconcile.Report) {
	n.mu.Lock()
	n.lastRec = r
	n.mu.Unlock()
	n.metrics.reconciled(r)
}

// remediators builds the repairs the config enables (none by default).
func remediators(c *config.Config, n *Node) ([]remediate.Entry, error) {
	r := c.Remediations
	var clients kube.Clients
	var err error
	if r.Kubernetes.Primary.Kubeconfig != "" {
		if clients.Primary, err = kube.NewClient(r.Kubernetes.Primary); err != nil {
			return nil, fmt.Errorf("remediations.kubernetes.primary: %w", err)
		}
	}
	if r.Kubernetes.Backup.Kubeconfig != "" {
		if clients.Backup, err = kube.NewClient(r.Kubernetes.Backup); err != nil {
			return nil, fmt.Errorf("remediations.kubernetes.backup: %w", err)
		}
	}
	decision := func() remediate.Decision { return remediate.NewDecision(n.machine.Desired(), n.machine.History()) }
	cloud, err := cloudRemediators(c, clients, n.log, n.now)
	if err != nil {
		return nil, err
	}
	// Without a cloud instance check dead-node never taints (it fails closed).
	entries, err := kube.Entries(r, clients, cloud.Instances, cloud.Nodes, cloud.Pools, decision, n.now)
	if err != nil {
		return nil, err
	}
	return append(entries, cloud.Entries...), nil
}
