package watcher

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cluster"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/probes"
	dto "github.com/prometheus/client_model/go"
)

// The drill metrics come from the replicated drills: the last passed
// drill's end and what it measured by step, and the failures.
func TestDrillMetrics(t *testing.T) {
	w, fc := newTestWatcher(t, time.Second)
	w.cfg.Drill = &Drill{Timeout: 500 * time.Millisecond, Schedule: 168 * time.Hour}
	l := fc.log
	l.Step(t, failover.Command{Payload: failover.SetPolicy{Policy: w.cfg.Policy}})
	if got := gather(t, w); got["drwatch_drill_failures_total"][""] != 0 || got["drwatch_drill_last_success_timestamp_seconds"][""] != 0 ||
		got["drwatch_drill_schedule_seconds"][""] != 168*3600 {
		t.Fatalf("before any drill: got %v, want no failures, last success 0, schedule 604800", got)
	}
	round := func() {
		for _, n := range []string{"a", "b", "c"} {
			l.Step(t, failover.Command{Payload: failover.Observe{Node: n, Results: []failover.ProbeResult{
				{Site: failover.Primary, Probe: "web", OK: true}, {Site: failover.Backup, Probe: "web", OK: true}}}})
		}
	}
	drill := func(outcome string) {
		round()
		c := failover.CanaryFor(w.cfg.Policy, "drwatch-drill.www")
		res, id, err := failover.Submit(t.Context(), l, failover.Command{Payload: failover.DrillStart{Reason: "test", Canary: c}})
		if err != nil || res.Kind != failover.KindDrill {
			t.Fatalf("drill start: %v %+v", err, res)
		}
		ended, running := l.M.Drills()
		if running == nil {
			t.Fatalf("drill %d did not start: %+v", id, ended)
		}
		start := running.StartedAt
		for _, s := range []struct {
			step string
			at   int64
		}{{failover.DrillStepBackupWritten, start + 100e6}, {failover.DrillStepBackupVerified, start + 400e6}} {
			l.Step(t, failover.Command{Payload: failover.DrillStep{ID: id, Step: s.step, StepAt: s.at}})
		}
		l.Step(t, failover.Command{Payload: failover.DrillEnd{ID: id, Outcome: outcome}})
	}
	drill(failover.DrillPassed)
	drill(failover.DrillFailed)
	got := gather(t, w)
	ended, _ := l.M.Drills()
	if want := float64(ended[0].EndedAt) / 1e9; got["drwatch_drill_last_success_timestamp_seconds"][""] != want {
		t.Errorf("last success: got %v, want %v", got["drwatch_drill_last_success_timestamp_seconds"], want)
	}
	if got["drwatch_drill_failures_total"][""] != 1 {
		t.Errorf("failures: got %v, want 1", got["drwatch_drill_failures_total"])
	}
	rto := got["drwatch_drill_rto_seconds"]
	// detection ≤ fall 3 × 1s + 0.5s timeout; write 0.1s; propagation 0.3s; total 3.9s.
	for step, want := range map[string]float64{"write": 0.1, "propagation": 0.3, "detection": 3.5, "ttl": 60, "total": 3.9} {
		if d := rto[step] - want; d > 1e-9 || d < -1e-9 {
			t.Errorf("drwatch_drill_rto_seconds{step=%q}: got %v, want %v", step, rto[step], want)
		}
	}
}

// gather scrapes w's registry: metric name -> step label (or "") -> value.
func gather(t *testing.T, w *Watcher) map[string]map[string]float64 {
	t.Helper()
	mfs, err := w.cfg.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	for _, mf := range mfs {
		vals := map[string]float64{}
		for _, m := range mf.GetMetric() {
			key := ""
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "step" {
					key = lp.GetValue()
				}
			}
			vals[key] = value(m)
		}
		out[mf.GetName()] = vals
	}
	return out
}

func value(m *dto.Metric) float64 {
	switch {
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	}
	return 0
}

// Every report the watcher proposes is counted by its encoding and its
// result: the first round goes full, the next lean, and failures count as
// what they are.
func TestReportsAreCountedByEncodingAndResult(t *testing.T) {
	w, fc := newTestWatcher(t, time.Second)
	fc.log.Step(t, failover.Command{Payload: failover.SetPolicy{Policy: w.cfg.Policy}})
	for seq := range uint64(2) {
		w.report(t.Context(), probes.Round{Seq: seq + 1, Results: []probes.NamedResult{
			{Site: "primary", Probe: "web", Result: probes.Result{OK: true, Duration: 2 * time.Millisecond}},
			{Site: "backup", Probe: "web", Result: probes.Result{OK: true, Duration: 2 * time.Millisecond}},
		}})
	}
	w.metrics.reported(true, fmt.Errorf("observe: %w", failover.ErrBadCommand))
	w.metrics.reported(true, context.DeadlineExceeded)
	w.metrics.reported(false, fmt.Errorf("no leader (%w)", cluster.ErrNotSent))
	mfs, err := w.cfg.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "drwatch_reports_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var key []string
			for _, lp := range m.GetLabel() {
				key = append(key, lp.GetName()+"="+lp.GetValue())
			}
			got[strings.Join(key, ",")] = m.GetCounter().GetValue()
		}
	}
	want := map[string]float64{
		"encoding=full,result=committed": 1, "encoding=lean,result=committed": 1,
		"encoding=lean,result=refused": 1, "encoding=lean,result=unknown": 1, "encoding=full,result=not_sent": 1,
	}
	if !maps.Equal(got, want) {
		t.Fatalf("drwatch_reports_total: got %v, want %v", got, want)
	}
}

// A refused break-glass marker shows as the time of the last refusal, from
// the replicated history; a marker that was accepted does not.
func TestBreakGlassRejectedMetric(t *testing.T) {
	w, fc := newTestWatcher(t, time.Second)
	l := fc.log
	l.Step(t, failover.Command{Payload: failover.SetPolicy{Policy: w.cfg.Policy}})
	l.Step(t, failover.Command{Payload: failover.BreakGlass{Site: failover.Backup, Actor: "ops", Reason: "real"}})
	const name = "drwatch_break_glass_rejected_timestamp_seconds"
	if got := gather(t, w); len(got[name]) != 0 {
		t.Fatalf("before any refusal: got %v, want no %s", got[name], name)
	}
	l.Step(t, failover.Command{Payload: failover.BreakGlassRejected{Marker: "aa", Why: failover.MarkerForged, Actor: "a"}})
	var at int64
	for _, e := range l.M.History() {
		if e.Kind == failover.KindBreakGlassRejected {
			at = e.At
		}
	}
	if got := gather(t, w); at == 0 || got[name][""] != float64(at)/1e9 {
		t.Errorf("after a refusal at %d: got %v", at, got[name])
	}
}
