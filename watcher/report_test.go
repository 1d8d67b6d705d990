package watcher

import (
	"testing"
	"time"

	"github.com/drwatch/drwatch/probes"
)

// A report carries each probe's completion time on the watcher's clock, so
// the decision can say when the failure was seen rather than when the
// leader committed it; a probe that never ran says nothing.
func TestObservationCarriesCompletionTimes(t *testing.T) {
	done := time.Date(2026, 1, 1, 0, 0, 2, 500_000_000, time.UTC)
	r := probes.Round{Seq: 7, Results: []probes.NamedResult{
		{Site: "primary", Probe: "web", Completed: done, Result: probes.Result{Class: probes.ClassRefused, Phase: "connect", Reason: "refused", Duration: 3 * time.Millisecond}},
		{Site: "backup", Probe: "web", Result: probes.Result{Class: probes.ClassError, Reason: "not run: scheduler stopped"}},
	}}
	o := Observation("a", "hash", r)
	if o.Node != "a" || o.Seq != 7 || o.PolicyHash != "hash" || len(o.Results) != 2 {
		t.Fatalf("got %+v, want node a seq 7 with 2 results", o)
	}
	if got := o.Results[0]; got.CompletedAt != done.UnixNano() || got.OK || got.Class != "refused" || got.LatencyMS != 3 {
		t.Fatalf("primary/web: got %+v, want refused, 3ms, completed at %d", got, done.UnixNano())
	}
	if got := o.Results[1].CompletedAt; got != 0 {
		t.Fatalf("backup/web never ran: got completed at %d, want 0 (unknown)", got)
	}
}

// Each watcher probes at its place among the nodes, index/N of the
// interval, so three watchers sample a site at three distinct moments; a
// node the list does not name (one being added) probes at 0.
func TestPhaseSpreadsNodesAcrossTheInterval(t *testing.T) {
	nodes := []string{"a", "b", "c"}
	for _, c := range []struct {
		node string
		want time.Duration
	}{{"a", 0}, {"b", 2 * time.Second / 3}, {"c", 4 * time.Second / 3}, {"d", 0}} {
		if got := Phase(nodes, c.node, 2*time.Second); got != c.want {
			t.Errorf("Phase(%v, %q, 2s): got %s, want %s", nodes, c.node, got, c.want)
		}
	}
	if got := Phase(nil, "a", time.Second); got != 0 {
		t.Errorf("Phase(no nodes): got %s, want 0", got)
	}
}
