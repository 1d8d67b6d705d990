package watcher

import (
	"cmp"
	"errors"
	"runtime/debug"
	"time"

	"github.com/drwatch/drwatch/cluster"
	"github.com/drwatch/drwatch/executor/reconcile"
	"github.com/drwatch/drwatch/failover"
	"github.com/prometheus/client_golang/prometheus"
)

// BuildInfo is stamped by main for drwatch_build_info.
var BuildInfo = struct{ Version, Commit, Date string }{"dev", "unknown", "unknown"}

// metrics holds the node-level series. Decision-state gauges are computed
// from the local replica at scrape time, so they can never disagree with
// the status page.
type metrics struct {
	dnsUpdate prometheus.Histogram
	// dnsMatch is the DNS check's result: one gauge without groups in
	// this node's policy, one per group (dnsMatchGroup) with them.
	dnsMatch      prometheus.Gauge
	dnsMatchGroup *prometheus.GaugeVec
	reports       *prometheus.CounterVec
	w             *Watcher
}

var (
	descQuorum    = prometheus.NewDesc("drwatch_quorum_required", "Votes needed to judge a site.", nil, nil)
	descWatchers  = prometheus.NewDesc("drwatch_watchers_fresh", "Watchers whose reports are fresh.", nil, nil)
	descBuild     = prometheus.NewDesc("drwatch_build_info", "Build version, commit and date.", []string{"version", "commit", "date"}, nil)
	descCertExp   = prometheus.NewDesc("drwatch_tls_cert_expiry_timestamp_seconds", "When this node's own certificate expires.", nil, nil)
	descDrillOK   = prometheus.NewDesc("drwatch_drill_last_success_timestamp_seconds", "When the last drill that passed ended; 0 while none has.", nil, nil)
	descDrillSch  = prometheus.NewDesc("drwatch_drill_schedule_seconds", "This node's drill.schedule; 0 when scheduled drills are off.", nil, nil)
	descDrillRTO  = prometheus.NewDesc("drwatch_drill_rto_seconds", "What the last drill that passed measured, by step: commit, write, propagation, detection (the policy's floor), ttl, and total (detection, commit, write, propagation).", []string{"step"}, nil)
	descDrillFail = prometheus.NewDesc("drwatch_drill_failures_total", "Drills that failed, among the last 100 the replicated state keeps.", nil, nil)
	descFormat    = prometheus.NewDesc("drwatch_log_format", "Log formats: the newest this binary reads (of=binary) and the one the cluster writes, as this replica applied it (of=cluster). They differ while an upgrade is under way.", []string{"of"}, nil)
	descHalted    = prometheus.NewDesc("drwatch_replica_halted", "1 once this node's replica met a log entry or snapshot its release cannot read and stopped applying (the node then exits).", nil, nil)
	descMarkerRej = prometheus.NewDesc("drwatch_break_glass_rejected_timestamp_seconds", "When the leader last refused a break-glass marker (forged, foreign, stale or not served), as held in the replicated history; absent while none was.", nil, nil)
)

// The decision state of each failover group. While the policy has no
// groups besides the default one these series carry exactly the labels
// they carried before groups, so no series changes identity for a cluster
// that never enables them; with groups every one carries a group label
// ("default" for the default group). See groupStates.
var (
	descDownVotes = newGroupDesc("drwatch_site_down_votes", "Fresh watchers voting the site DOWN.", "site")
	descUpVotes   = newGroupDesc("drwatch_site_up_votes", "Fresh watchers voting the site UP.", "site")
	descVerdict   = newGroupDesc("drwatch_site_verdict", "Quorum verdict per site: 1 for the current state.", "site", "state")
	descActive    = newGroupDesc("drwatch_active_site", "1 for the site DNS should point at.", "site")
	descPaused    = newGroupDesc("drwatch_paused", "1 while automatic decisions are paused.")
	descBlocked   = newGroupDesc("drwatch_failover_blocked", "1 while automatic flips are blocked after one (until ack or the window ends).")
	descFailovers = newGroupDesc("drwatch_failovers_total", "Decisions that moved traffic, by trigger and result, as held in the replicated history.", "trigger", "result")
	descLastFlip  = newGroupDesc("drwatch_last_failover_timestamp_seconds", "When the last decision that moved traffic was made.")
	descDisagree  = newGroupDesc("drwatch_watchers_disagree", "1 when fresh watchers give different verdicts for a site.", "site")
	descGen       = newGroupDesc("drwatch_desired_generation", "Generation of the current decision.")
	descDone      = newGroupDesc("drwatch_desired_verified", "1 once the current decision is verified at every authoritative server.")
)

// groupDesc is one per-group series in its two shapes: plain, as before
// groups, and with the group label first.
type groupDesc struct{ plain, grouped *prometheus.Desc }

func newGroupDesc(name, help string, labels ...string) groupDesc {
	return groupDesc{
		plain:   prometheus.NewDesc(name, help, labels, nil),
		grouped: prometheus.NewDesc(name, help, append([]string{"group"}, labels...), nil),
	}
}

func newMetrics(reg prometheus.Registerer, w *Watcher) (*metrics, error) {
	m := &metrics{
		w: w,
		dnsUpdate: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "drwatch_dns_update_duration_seconds", Help: "Duration of DNS writes made by the reconciler.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		}),
		reports: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drwatch_reports_total",
			Help: "Probe reports this watcher proposed, by encoding (lean: only what the log does not know; full) and result (committed, refused by the decision core, unknown: no answer in time, not_sent).",
		}, []string{"encoding", "result"}),
	}
	// As the decision state's series: the group label only with groups
	// in the policy, so a cluster without them keeps its series.
	matchOpts := prometheus.GaugeOpts{
		Name: "drwatch_dns_records_match_desired", Help: "1 when every authoritative server serves the desired records (last check).",
	}
	var match prometheus.Collector
	if len(w.cfg.Policy.Groups) > 0 {
		m.dnsMatchGroup = prometheus.NewGaugeVec(matchOpts, []string{"group"})
		match = m.dnsMatchGroup
	} else {
		m.dnsMatch = prometheus.NewGauge(matchOpts)
		match = m.dnsMatch
	}
	for _, c := range []prometheus.Collector{m.dnsUpdate, match, m.reports, m, groupStates{w}} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// reported counts one report Reporter.Report sent (lean or full) and
// its outcome, err being Report's.
func (m *metrics) reported(lean bool, err error) {
	encoding, result := "full", "committed"
	if lean {
		encoding = "lean"
	}
	var refused *failover.RefusedError
	switch {
	case err == nil:
	case errors.Is(err, cluster.ErrNotSent):
		result = "not_sent"
	case errors.As(err, &refused) || errors.Is(err, failover.ErrBadCommand) || errors.Is(err, failover.ErrNoPolicy) || errors.Is(err, failover.ErrUnknownNode):
		result = "refused"
	default:
		result = "unknown"
	}
	m.reports.WithLabelValues(encoding, result).Inc()
}

// dnsMatched sets group's DNS check result ("" for the default group).
func (m *metrics) dnsMatched(group string, match bool) {
	if m.dnsMatchGroup != nil {
		m.dnsMatchGroup.WithLabelValues(cmp.Or(group, failover.DefaultGroup)).Set(b01(match))
		return
	}
	m.dnsMatch.Set(b01(match))
}

func (m *metrics) reconciled(r reconcile.Report) {
	if r.Write > 0 {
		m.dnsUpdate.Observe(r.Write.Seconds())
	}
}

// Describe implements prometheus.Collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descQuorum, descWatchers, descBuild, descCertExp,
		descDrillOK, descDrillRTO, descDrillFail, descDrillSch, descMarkerRej, descFormat, descHalted} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	v := m.w.machine.View()
	gauge := func(d *prometheus.Desc, val float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, val, labels...)
	}
	gauge(descBuild, 1, BuildInfo.Version, BuildInfo.Commit, BuildInfo.Date)
	gauge(descFormat, failover.Format, "binary")
	gauge(descFormat, float64(m.w.machine.Format()), "cluster")
	gauge(descHalted, b01(m.w.cfg.FSM.Halted() != nil))
	if c := m.w.cfg.Credentials; c != nil {
		gauge(descCertExp, float64(c.NotAfter().Unix()))
	}
	if v.Policy != nil {
		gauge(descQuorum, float64(v.Policy.Quorum))
	}
	fresh := 0
	for _, nv := range v.Nodes {
		if nv.Reported && !nv.Stale {
			fresh++
		}
	}
	gauge(descWatchers, float64(fresh))
	var lastRejected int64
	for _, e := range m.w.machine.History() {
		if e.Kind == failover.KindBreakGlassRejected {
			lastRejected = max(lastRejected, e.At)
		}
	}
	if lastRejected > 0 {
		gauge(descMarkerRej, float64(lastRejected)/float64(time.Second))
	}
	m.collectDrills(ch, v.Policy)
}

func b01(x bool) float64 {
	if x {
		return 1
	}
	return 0
}

// groupStates collects the decision state of every failover group from
// the local replica. It is an unchecked collector (Describe sends
// nothing): each of its series has two shapes, plain without groups and
// with a group label with them, and a registry refuses two descriptors of
// one name with different labels. One scrape only ever holds one shape.
type groupStates struct{ w *Watcher }

// Describe implements prometheus.Collector: nothing, see groupStates.
func (groupStates) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (g groupStates) Collect(ch chan<- prometheus.Metric) {
	mc := g.w.machine
	names, views := mc.GroupViews()
	flips := flipsByGroup(mc.History())
	if names == nil {
		collectGroup(ch, &views[0], flips[""], nil)
		return
	}
	for i, name := range names {
		key := name
		if name == failover.DefaultGroup {
			key = ""
		}
		collectGroup(ch, &views[i], flips[key], &name)
	}
}

// groupFlips are one group's decisions that moved traffic: counts by
// trigger and result, and when the last was made (unix ns).
type groupFlips struct {
	counts map[[2]string]float64
	last   int64
}

// flipsByGroup sorts the history's decisions that moved traffic by group
// ("" for the default group).
func flipsByGroup(hist []failover.Entry) map[string]*groupFlips {
	out := map[string]*groupFlips{}
	for _, e := range hist {
		trigger := ""
		switch e.Kind {
		case failover.KindAutoFailover, failover.KindAutoFailback:
			trigger = "auto"
		case failover.KindManualFailover, failover.KindManualFailback, failover.KindSwitchover:
			trigger = "manual"
		case failover.KindBreakGlass:
			trigger = "break_glass"
		default:
			continue
		}
		result := e.Outcome
		if result == "" {
			result = "pending"
		}
		f := out[e.Group]
		if f == nil {
			f = &groupFlips{counts: map[[2]string]float64{}}
			out[e.Group] = f
		}
		f.counts[[2]string{trigger, result}]++
		f.last = max(f.last, e.At)
	}
	return out
}

// collectGroup sends the series of the group v shows: with a group label
// valued *group, or plain when group is nil (a policy without groups).
func collectGroup(ch chan<- prometheus.Metric, v *failover.View, flips *groupFlips, group *string) {
	send := func(d groupDesc, typ prometheus.ValueType, val float64, labels ...string) {
		if group == nil {
			ch <- prometheus.MustNewConstMetric(d.plain, typ, val, labels...)
			return
		}
		ch <- prometheus.MustNewConstMetric(d.grouped, typ, val, append([]string{*group}, labels...)...)
	}
	gauge := func(d groupDesc, val float64, labels ...string) { send(d, prometheus.GaugeValue, val, labels...) }
	for _, site := range []failover.Site{failover.Primary, failover.Backup} {
		t := v.Sites[site]
		gauge(descDownVotes, float64(len(t.Down)), string(site))
		gauge(descUpVotes, float64(len(t.Up)), string(site))
		for _, st := range []failover.Verdict{failover.Up, failover.Down, failover.NoQuorum} {
			gauge(descVerdict, b01(t.Verdict == st), string(site), string(st))
		}
		gauge(descActive, b01(v.Active == site), string(site))
		gauge(descDisagree, b01(len(t.Up) > 0 && len(t.Down) > 0), string(site))
	}
	gauge(descPaused, b01(v.Paused))
	gauge(descBlocked, b01(v.Blocked))
	gauge(descGen, float64(v.Desired.Gen))
	gauge(descDone, b01(v.Desired.Done))
	if flips == nil {
		return
	}
	for k, c := range flips.counts {
		send(descFailovers, prometheus.CounterValue, c, k[0], k[1])
	}
	if flips.last > 0 {
		gauge(descLastFlip, float64(flips.last)/float64(time.Second))
	}
}

// collectDrills reports the drills from the replicated state, so every
// node reports the same.
func (m *metrics) collectDrills(ch chan<- prometheus.Metric, p *failover.Policy) {
	ended, _ := m.w.machine.Drills()
	failures := 0
	var ok *failover.DrillRecord
	for i := range ended {
		switch ended[i].Outcome {
		case failover.DrillFailed:
			failures++
		case failover.DrillPassed:
			ok = &ended[i]
		}
	}
	ch <- prometheus.MustNewConstMetric(descDrillFail, prometheus.CounterValue, float64(failures))
	schedule, timeout := m.w.DrillSchedule()
	ch <- prometheus.MustNewConstMetric(descDrillSch, prometheus.GaugeValue, schedule.Seconds())
	if ok == nil {
		ch <- prometheus.MustNewConstMetric(descDrillOK, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(descDrillOK, prometheus.GaugeValue, float64(ok.EndedAt)/float64(time.Second))
	t, measured := ok.Times()
	if p == nil || !measured {
		return
	}
	rto, _ := ok.RTO(*p, timeout)
	for _, s := range []struct {
		step string
		d    time.Duration
	}{{"commit", t.Commit}, {"write", t.Write}, {"propagation", t.Propagation}, {"detection", rto.Detection}, {"ttl", t.TTL}, {"total", rto.Total()}} {
		ch <- prometheus.MustNewConstMetric(descDrillRTO, prometheus.GaugeValue, s.d.Seconds(), s.step)
	}
}

// Release is this binary's release as a node tells its peers: the version
// and the commit stamped by `make build`, or, in a plain `go build`, the
// commit the Go toolchain recorded.
func Release() string {
	commit := BuildInfo.Commit
	if bi, ok := debug.ReadBuildInfo(); ok && commit == "unknown" {
		var dirty string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value[:min(12, len(s.Value))]
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "+dirty"
				}
			}
		}
		commit += dirty
	}
	return BuildInfo.Version + " (" + commit + ")"
}
