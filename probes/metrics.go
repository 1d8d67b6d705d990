package probes

import (
	"fmt"
	"regexp"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the probe outcome metrics. The Scheduler records them; probers
// never touch them. Every label value comes from configuration (site, probe,
// type) or from a closed set in code (phase, class): never a reason, URL or
// address. A nil *Metrics records nothing.
type Metrics struct {
	success    *prometheus.GaugeVec
	duration   *prometheus.GaugeVec
	certExpiry *prometheus.GaugeVec
	failures   *prometheus.CounterVec
	rounds     prometheus.Counter
	fastRounds *prometheus.CounterVec
	dropped    prometheus.Counter
	skipped    prometheus.Counter
	abandoned  prometheus.Counter
	lateness   prometheus.Histogram

	mu     sync.Mutex
	phases map[[2]string]map[string]bool // (site, probe) -> phases last set
}

// metricPhase bounds the phase label to short code-chosen names.
var metricPhase = regexp.MustCompile(`^[a-z][a-z_]{0,23}$`)

// NewMetrics creates the probe metrics and registers them on reg. It fails
// when any is already registered there.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		success: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "drwatch_probe_success",
			Help: "Whether the last run of the probe succeeded (1) or failed (0).",
		}, []string{"site", "probe", "type"}),
		duration: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "drwatch_probe_duration_seconds",
			Help: "Duration of each phase of the last run of the probe; phase total is the whole run.",
		}, []string{"site", "probe", "phase"}),
		certExpiry: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "drwatch_probe_cert_expiry_timestamp_seconds",
			Help: "NotAfter of the leaf certificate the probe last saw, as a Unix timestamp.",
		}, []string{"site", "probe"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drwatch_probe_failures_total",
			Help: "Failed probe runs by failure class.",
		}, []string{"site", "probe", "class"}),
		rounds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "drwatch_probe_rounds_total",
			Help: "Probe rounds completed.",
		}),
		fastRounds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drwatch_probe_fast_rounds_total",
			Help: "Rounds re-probing one suspect site at the policy's fast_interval, besides the full rounds.",
		}, []string{"site"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "drwatch_probe_rounds_dropped_total",
			Help: "Rounds replaced before the consumer took them (the consumer is slower than the interval).",
		}),
		skipped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "drwatch_probe_ticks_skipped_total",
			Help: "Interval ticks skipped because the previous round overran by more than an interval.",
		}),
		abandoned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "drwatch_probe_abandoned_total",
			Help: "Prober runs that did not return by their deadline plus grace and were reported as timeouts.",
		}),
		lateness: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "drwatch_probe_start_lateness_seconds",
			Help:    "How late each probe started against its scheduled time (tick plus its fixed jitter).",
			Buckets: []float64{0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5},
		}),
		phases: map[[2]string]map[string]bool{},
	}
	for _, c := range []prometheus.Collector{m.success, m.duration, m.certExpiry, m.failures,
		m.rounds, m.fastRounds, m.dropped, m.skipped, m.abandoned, m.lateness} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register probe metrics: %w", err)
		}
	}
	return m, nil
}

// observe records one probe outcome.
func (m *Metrics) observe(r NamedResult) {
	if m == nil {
		return
	}
	ok := 0.0
	if r.OK {
		ok = 1
	} else {
		class := r.Class
		if class == ClassNone {
			class = ClassError
		}
		m.failures.WithLabelValues(r.Site, r.Probe, string(class)).Inc()
	}
	m.success.WithLabelValues(r.Site, r.Probe, r.Type).Set(ok)
	if !r.CertExpiry.IsZero() {
		m.certExpiry.WithLabelValues(r.Site, r.Probe).Set(float64(r.CertExpiry.UnixNano()) / 1e9)
	}
	if !r.Scheduled.IsZero() && !r.Started.IsZero() {
		m.lateness.Observe(max(r.Started.Sub(r.Scheduled).Seconds(), 0))
	}

	// A phase not reached this run must not keep last run's value.
	now := map[string]bool{"total": true}
	m.duration.WithLabelValues(r.Site, r.Probe, "total").Set(r.Duration.Seconds())
	for phase, d := range r.Phases {
		if phase == "total" || !metricPhase.MatchString(phase) {
			continue
		}
		now[phase] = true
		m.duration.WithLabelValues(r.Site, r.Probe, phase).Set(d.Seconds())
	}
	key := [2]string{r.Site, r.Probe}
	m.mu.Lock()
	defer m.mu.Unlock()
	for phase := range m.phases[key] {
		if !now[phase] {
			m.duration.DeleteLabelValues(r.Site, r.Probe, phase)
		}
	}
	m.phases[key] = now
}

func (m *Metrics) roundDone() {
	if m != nil {
		m.rounds.Inc()
	}
}

func (m *Metrics) fastRoundDone(site string) {
	if m != nil {
		m.fastRounds.WithLabelValues(site).Inc()
	}
}

func (m *Metrics) roundDropped() {
	if m != nil {
		m.dropped.Inc()
	}
}

func (m *Metrics) ticksSkipped(n int) {
	if m != nil && n > 0 {
		m.skipped.Add(float64(n))
	}
}

func (m *Metrics) proberAbandoned() {
	if m != nil {
		m.abandoned.Inc()
	}
}
