package probes

import (
	"context"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// metricsGather flattens reg into "name{k=v,...}" -> value.
func metricsGather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(labels)
			key := mf.GetName() + "{" + strings.Join(labels, ",") + "}"
			switch mf.GetType() {
			case dto.MetricType_GAUGE:
				out[key] = m.GetGauge().GetValue()
			case dto.MetricType_COUNTER:
				out[key] = m.GetCounter().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[key] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

func TestMetricsRecordOutcomes(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatalf("NewMetrics: %v", err)
	}
	if _, err := NewMetrics(reg); err == nil {
		t.Fatalf("NewMetrics twice on one registry: got nil, want an error")
	}
	expiry := time.Unix(1900000000, 0)
	fail := true
	probe := func(context.Context, Spec, *slog.Logger) Result {
		if fail {
			return Result{Class: ClassTLS, Phase: "tls", Reason: "tls handshake: x509: secret-looking reason https://x/?token=1",
				Duration: 1500 * time.Millisecond, CertExpiry: expiry,
				Phases: map[string]time.Duration{"connect": time.Millisecond, "tls": 2 * time.Millisecond, "Not A Phase!": time.Second}}
		}
		return Result{OK: true, Duration: time.Second, Phases: map[string]time.Duration{"connect": 3 * time.Millisecond}}
	}
	sites := []SiteSpec{{Site: "primary", Probes: []Spec{{Name: "lms", Type: "http", HTTP: &HTTPSpec{URL: "https://lms.example.org/"}}}}}
	s := schedNew(t, sites, SchedulerOptions{Metrics: m, Probers: map[string]ProbeFunc{"http": probe}})
	s.RunOnce(context.Background())
	s.RunOnce(context.Background())

	got := metricsGather(t, reg)
	want := map[string]float64{
		"drwatch_probe_success{probe=lms,site=primary,type=http}":              0,
		"drwatch_probe_failures_total{class=tls,probe=lms,site=primary}":       2,
		"drwatch_probe_duration_seconds{phase=total,probe=lms,site=primary}":   1.5,
		"drwatch_probe_duration_seconds{phase=connect,probe=lms,site=primary}": 0.001,
		"drwatch_probe_duration_seconds{phase=tls,probe=lms,site=primary}":     0.002,
		"drwatch_probe_cert_expiry_timestamp_seconds{probe=lms,site=primary}":  1900000000,
		"drwatch_probe_rounds_total{}":                                         2,
		"drwatch_probe_start_lateness_seconds{}":                               2,
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s: got %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
	for k := range got {
		if strings.Contains(k, "token") || strings.Contains(k, "Not A Phase") || strings.Contains(k, "x509") {
			t.Fatalf("got series %s, want no reasons, urls or unknown phases in labels", k)
		}
	}

	fail = false
	s.RunOnce(context.Background())
	got = metricsGather(t, reg)
	if v := got["drwatch_probe_success{probe=lms,site=primary,type=http}"]; v != 1 {
		t.Fatalf("success after recovery: got %v, want 1", v)
	}
	if _, ok := got["drwatch_probe_duration_seconds{phase=tls,probe=lms,site=primary}"]; ok {
		t.Fatalf("got the tls phase of an earlier run still exported, want it removed")
	}
	if v := got["drwatch_probe_duration_seconds{phase=connect,probe=lms,site=primary}"]; v != 0.003 {
		t.Fatalf("connect phase: got %v, want 0.003", v)
	}
	if v := got["drwatch_probe_failures_total{class=tls,probe=lms,site=primary}"]; v != 2 {
		t.Fatalf("failures after recovery: got %v, want still 2", v)
	}
	if v := got["drwatch_probe_cert_expiry_timestamp_seconds{probe=lms,site=primary}"]; v != 1900000000 {
		t.Fatalf("cert expiry when the run saw no certificate: got %v, want the last seen", v)
	}
}

// TestSchedulerWithCaddy runs the scheduler with the real probers against a
// real Caddy (primary) and a dead address (backup), metrics included.
func TestSchedulerWithCaddy(t *testing.T) {
	c := caddytestStart(t)
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatalf("NewMetrics: %v", err)
	}
	dead := hpClosedPort(t)
	sites := []SiteSpec{
		{Site: "primary", Probes: []Spec{
			{Name: "lms", Type: "http", Critical: new(true), HTTP: &HTTPSpec{URL: c.URL("lms.example.test", "/heartbeat"), ConnectTo: c.Addr, CAFile: c.CAFile}},
			{Name: "lms-tls", Type: "tcp", TCP: &TCPSpec{Address: c.Addr, TLS: true, ServerName: "lms.example.test", CAFile: c.CAFile}},
		}},
		{Site: "backup", Probes: []Spec{
			{Name: "lms", Type: "http", Critical: new(true), HTTP: &HTTPSpec{URL: "https://lms.example.test/heartbeat", ConnectTo: dead}},
		}},
	}
	s := schedNew(t, sites, SchedulerOptions{Metrics: m, DefaultTimeout: 5 * time.Second})
	r := s.RunOnce(context.Background())
	want := []struct {
		site, probe string
		class       Class
	}{{"primary", "lms", ClassNone}, {"primary", "lms-tls", ClassNone}, {"backup", "lms", ClassRefused}}
	for i, w := range want {
		nr := r.Results[i]
		if nr.Site != w.site || nr.Probe != w.probe || nr.Class != w.class {
			t.Fatalf("result %d: got %s/%s %q (%s), want %s/%s %q", i, nr.Site, nr.Probe, nr.Class, nr.Reason, w.site, w.probe, w.class)
		}
	}
	got := metricsGather(t, reg)
	for k, v := range map[string]float64{
		"drwatch_probe_success{probe=lms,site=primary,type=http}":           1,
		"drwatch_probe_success{probe=lms-tls,site=primary,type=tcp}":        1,
		"drwatch_probe_success{probe=lms,site=backup,type=http}":            0,
		"drwatch_probe_failures_total{class=refused,probe=lms,site=backup}": 1,
	} {
		if got[k] != v {
			t.Fatalf("%s: got %v, want %v", k, got[k], v)
		}
	}
	if got["drwatch_probe_cert_expiry_timestamp_seconds{probe=lms,site=primary}"] < float64(time.Now().Unix()) {
		t.Fatalf("got no future cert expiry for primary/lms")
	}
}
