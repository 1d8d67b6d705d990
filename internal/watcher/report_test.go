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
