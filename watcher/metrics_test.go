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

// series scrapes w's registry into "name{label=value,...}" -> value, the
// labels sorted as the exposition sorts them.
func series(t *testing.T, w *Watcher) map[string]float64 {
	t.Helper()
	mfs, err := w.cfg.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, lp := range m.GetLabel() {
				ls = append(ls, lp.GetName()+"="+lp.GetValue())
			}
			out[mf.GetName()+"{"+strings.Join(ls, ",")+"}"] = value(m)
		}
	}
	return out
}

// Without failover groups the decision-state series keep exactly the
// labels they had before groups: adding one would change every series'
// identity for a cluster that never enables them.
func TestStateMetricsWithoutGroupsCarryNoGroupLabel(t *testing.T) {
	w, fc := newTestWatcher(t, time.Second)
	fc.log.Step(t, failover.Command{Payload: failover.SetPolicy{Policy: w.cfg.Policy}})
	fc.log.Step(t, failover.Command{Payload: failover.Failover{To: failover.Backup, Force: true, Actor: "alice", AckBlock: true}})
	got := series(t, w)
	for _, want := range []string{
		"drwatch_active_site{site=backup}", "drwatch_active_site{site=primary}", "drwatch_paused{}", "drwatch_failover_blocked{}",
		"drwatch_desired_generation{}", "drwatch_site_verdict{site=primary,state=UP}", "drwatch_failovers_total{result=pending,trigger=manual}",
		"drwatch_last_failover_timestamp_seconds{}", "drwatch_quorum_required{}",
	} {
		if _, ok := got[want]; !ok {
			t.Errorf("no series %s", want)
		}
	}
	for k := range got {
		if strings.Contains(k, "group=") {
			t.Errorf("series %s has a group label in a cluster without groups", k)
		}
	}
	if got["drwatch_active_site{site=backup}"] != 1 {
		t.Errorf("active site: %v", got)
	}
}

// With failover groups each group's state is its own series, labelled by
// group ("default" for the default group): a failover and a pause in apps
// show on apps' series only; node-level series stay unlabelled.
func TestStateMetricsCarryTheGroup(t *testing.T) {
	w, fc := newTestWatcher(t, time.Second)
	p := testPolicy()
	refs := []failover.ProbeRef{{Name: "web-apps", Critical: true}}
	p.Groups = []failover.Group{{Name: "apps", AutoFailover: true, BlockWindow: time.Hour, Zone: "example.org.",
		Sites:   map[failover.Site]failover.SitePolicy{failover.Primary: {Probes: refs}, failover.Backup: {Probes: refs}},
		Records: []failover.Record{{Name: "apps", Type: "A", TTL: 60, Primary: []string{"192.0.2.11"}, Backup: []string{"192.0.2.12"}}}}}
	fc.log.Step(t, failover.Command{Payload: failover.SetPolicy{Policy: p}})
	fc.log.Step(t, failover.Command{Payload: failover.Failover{To: failover.Backup, Group: "apps", Force: true, Actor: "alice", AckBlock: true}})
	fc.log.Step(t, failover.Command{Payload: failover.Pause{Group: "apps", Actor: "alice"}})
	got := series(t, w)
	for k, want := range map[string]float64{
		"drwatch_active_site{group=apps,site=backup}":                       1,
		"drwatch_active_site{group=apps,site=primary}":                      0,
		"drwatch_active_site{group=default,site=primary}":                   1,
		"drwatch_active_site{group=default,site=backup}":                    0,
		"drwatch_paused{group=apps}":                                        1,
		"drwatch_paused{group=default}":                                     0,
		"drwatch_failovers_total{group=apps,result=pending,trigger=manual}": 1,
		"drwatch_desired_generation{group=apps}":                            2,
		"drwatch_quorum_required{}":                                         2,
	} {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", k, v, ok, want)
		}
	}
	for k := range got {
		if strings.HasPrefix(k, "drwatch_failovers_total{group=default") || strings.HasPrefix(k, "drwatch_last_failover_timestamp_seconds{group=default") {
			t.Errorf("the default group never moved, yet %s", k)
		}
		if strings.HasPrefix(k, "drwatch_active_site{site") || strings.HasPrefix(k, "drwatch_paused{}") {
			t.Errorf("series %s lacks the group label in a cluster with groups", k)
		}
	}
}
