package clusterhealth

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Monitor reads every target once per interval and keeps the last read of
// each for the status page and the metrics. It is safe for concurrent use.
type Monitor struct {
	cfg     Config
	node    string
	targets []Target
	now     func() time.Time

	mu    sync.Mutex
	sites []Site
}

// NewMonitor returns a monitor of targets (in display order) for node; cfg
// must have its defaults; now may be nil.
func NewMonitor(cfg Config, node string, targets []Target, now func() time.Time) *Monitor {
	if now == nil {
		now = time.Now
	}
	m := &Monitor{cfg: cfg, node: node, targets: targets, now: now}
	for _, t := range targets {
		s := Site{Site: t.Site, Configured: t.Client != nil, ReadBy: node}
		if t.Routes == nil {
			s.RoutesUnknown = t.RoutesUnknown
		}
		m.sites = append(m.sites, s)
	}
	return m
}

// Run reads at once, then every interval, until ctx ends. With nothing to
// read (no kubeconfig and no route quota for either site) it returns at once.
func (m *Monitor) Run(ctx context.Context) {
	if !slices.ContainsFunc(m.targets, func(t Target) bool { return t.Client != nil || t.Routes != nil }) {
		return
	}
	t := time.NewTicker(m.cfg.Interval)
	defer t.Stop()
	for {
		m.ReadOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ReadOnce reads every target, the sites in parallel (a dead primary must
// not delay the backup's figures), and stores the results.
func (m *Monitor) ReadOnce(ctx context.Context) {
	out := make([]Site, len(m.targets))
	var wg sync.WaitGroup
	for i, t := range m.targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = Read(ctx, m.cfg, m.node, t, m.now())
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return // shutting down: a read cut short says nothing about the cluster
	}
	m.mu.Lock()
	m.sites = out
	m.mu.Unlock()
}

// Sites returns the last read of each site, in target order. The slices
// inside are shared and must not be modified.
func (m *Monitor) Sites() []Site {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.sites)
}

var (
	descReadOK    = prometheus.NewDesc("drwatch_cluster_health_read_ok", "1 when this watcher's last read of the part (nodes, pods, events, services, version, routes; ccm_lease only while a LoadBalancer Service is pending) of the site's cluster succeeded.", []string{"site", "part"}, nil)
	descReadAt    = prometheus.NewDesc("drwatch_cluster_health_read_timestamp_seconds", "When this watcher last read the site's cluster.", []string{"site"}, nil)
	descNodes     = prometheus.NewDesc("drwatch_cluster_nodes", "Nodes of the site's cluster.", []string{"site"}, nil)
	descCondition = prometheus.NewDesc("drwatch_cluster_node_condition", "Nodes whose condition (DiskPressure, MemoryPressure, PIDPressure, NetworkUnavailable) is True.", []string{"site", "condition"}, nil)
	descUnknown   = prometheus.NewDesc("drwatch_cluster_nodes_unknown", "Nodes whose Ready condition is Unknown or missing.", []string{"site"}, nil)
	descPLEG      = prometheus.NewDesc("drwatch_cluster_nodes_pleg_unhealthy", "Nodes whose Ready condition says PLEG is not healthy.", []string{"site"}, nil)
	descNotReady  = prometheus.NewDesc("drwatch_cluster_nodes_not_ready", "Nodes whose Ready condition is False, for any reason (container runtime, CNI, PLEG).", []string{"site"}, nil)
	descPods      = prometheus.NewDesc("drwatch_cluster_pods", "Pods that nothing cleans up by itself: problem=terminating (past cluster_health.terminating_after), statefulset_on_unknown_node, evicted.", []string{"site", "problem"}, nil)
	descEvents    = prometheus.NewDesc("drwatch_cluster_recent_events", "Events of the reason last seen within cluster_health.event_window (Multi-Attach: FailedAttachVolume events with a Multi-Attach message, not counted under FailedAttachVolume).", []string{"site", "reason"}, nil)
	descLBPending = prometheus.NewDesc("drwatch_cluster_lb_services_pending", "LoadBalancer Services without an ingress address for longer than cluster_health.lb_pending_after.", []string{"site"}, nil)
	descCCMAge    = prometheus.NewDesc("drwatch_cluster_ccm_lease_renew_age_seconds", "Seconds since the cloud-controller-manager's leader Lease (cluster_health.ccm_lease) was renewed, as of the read; exported only while a LoadBalancer Service is pending.", []string{"site"}, nil)
	descRoutes    = prometheus.NewDesc("drwatch_cluster_router_routes", "Extra routes on the site's Neutron router (remediations.openstack.router_id).", []string{"site"}, nil)
	descRouteMax  = prometheus.NewDesc("drwatch_cluster_router_route_limit", "The router's route limit (remediations.openstack.neutron_route_gc.route_limit).", []string{"site"}, nil)
	descVersion   = prometheus.NewDesc("drwatch_cluster_version_info", "The site's Kubernetes version (gitVersion of /version).", []string{"site", "version"}, nil)
)

// Describe implements prometheus.Collector.
func (m *Monitor) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descReadOK, descReadAt, descNodes, descCondition, descUnknown, descPLEG,
		descNotReady, descPods, descEvents, descLBPending, descCCMAge, descRoutes, descRouteMax, descVersion} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. A site that is not configured
// or not read yet exports nothing; a part that failed exports its read_ok
// 0 and no figures, so no alert resolves on a failed read by itself.
func (m *Monitor) Collect(ch chan<- prometheus.Metric) {
	g := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	ok := func(site, part, err string) {
		v := 0.0
		if err == "" {
			v = 1
		}
		g(descReadOK, v, site, part)
	}
	for i, s := range m.Sites() {
		if s.At.IsZero() || !s.Configured && m.targets[i].Routes == nil {
			continue // nothing to read there
		}
		site := s.Site
		g(descReadAt, float64(s.At.UnixNano())/1e9, site)
		// The route quota does not need the Kubernetes API: it is exported
		// wherever a quota source exists, kubeconfig or not.
		if r := s.Routes; r != nil {
			ok(site, "routes", "")
			g(descRoutes, float64(r.Used), site)
			g(descRouteMax, float64(r.Limit), site)
		} else if m.targets[i].Routes != nil {
			ok(site, "routes", s.RoutesUnknown)
		}
		if !s.Configured {
			continue
		}
		ok(site, "nodes", s.NodesError)
		ok(site, "pods", s.PodsError)
		ok(site, "events", s.EventsError)
		ok(site, "services", s.ServicesError)
		ok(site, "version", s.VersionError)
		if n := s.Nodes; n != nil {
			g(descNodes, float64(n.Total), site)
			g(descCondition, float64(n.DiskPressure), site, "DiskPressure")
			g(descCondition, float64(n.MemoryPressure), site, "MemoryPressure")
			g(descCondition, float64(n.PIDPressure), site, "PIDPressure")
			g(descCondition, float64(n.NetworkUnavailable), site, "NetworkUnavailable")
			g(descUnknown, float64(n.Unknown), site)
			g(descPLEG, float64(n.PLEG), site)
			g(descNotReady, float64(n.NotReady), site)
		}
		if p := s.Pods; p != nil {
			g(descPods, float64(p.Terminating), site, "terminating")
			g(descPods, float64(p.StatefulOnUnknown), site, "statefulset_on_unknown_node")
			g(descPods, float64(p.Evicted), site, "evicted")
		}
		if e := s.Events; e != nil {
			for _, r := range Reasons {
				g(descEvents, float64(e.Counts[r]), site, r)
			}
		}
		if sv := s.Services; sv != nil {
			g(descLBPending, float64(sv.Pending), site)
			if sv.CCMLease != nil || sv.CCMLeaseError != "" {
				ok(site, "ccm_lease", sv.CCMLeaseError)
			}
			if l := sv.CCMLease; l != nil && !l.RenewTime.IsZero() {
				g(descCCMAge, l.RenewAgeSeconds, site)
			}
		}
		if s.Version != "" {
			g(descVersion, 1, site, s.Version)
		}
	}
}
