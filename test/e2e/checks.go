package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/drwatch/drwatch/failover"
)

// SameHistory polls `drwatch history -o json` on every running node until
// all return byte-identical histories, and returns that history. It fails
// the test if they still differ after d.
func (w *World) SameHistory(d time.Duration) []failover.Entry {
	w.T.Helper()
	return w.sameHistoryOf(d, "histories", w.History)
}

// sameHistoryOf polls history (what names it in a failure) on every
// running node until all are byte-identical, and returns it.
func (w *World) sameHistoryOf(d time.Duration, what string, history func(*Node) ([]failover.Entry, error)) []failover.Entry {
	w.T.Helper()
	var last []failover.Entry
	var why string
	ok := Within(d, func() bool {
		var first []byte
		for i, n := range w.Running() {
			h, err := history(n)
			if err != nil {
				why = err.Error()
				return false
			}
			b, _ := json.Marshal(h)
			if i == 0 {
				first, last = b, h
				continue
			}
			if string(b) != string(first) {
				why = fmt.Sprintf("node %s differs from node %s", n.ID, w.Running()[0].ID)
				return false
			}
		}
		return true
	})
	if !ok {
		w.T.Fatalf("%s of the running nodes never became identical within %s: %s", what, d, why)
	}
	return last
}

// Decisions returns the entries that set a new desired state.
func Decisions(h []failover.Entry) []failover.Entry {
	var out []failover.Entry
	for _, e := range h {
		if e.Gen != 0 && e.Gen == e.Index && e.Kind != failover.KindAction {
			out = append(out, e)
		}
	}
	return out
}

// Actions returns the ActionResult entries for gen with the given outcome.
func Actions(h []failover.Entry, gen uint64, outcome string) []failover.Entry {
	var out []failover.Entry
	for _, e := range h {
		if e.Kind == failover.KindAction && e.Gen == gen && e.Outcome == outcome {
			out = append(out, e)
		}
	}
	return out
}

// OfKind returns the entries of kind.
func OfKind(h []failover.Entry, kind string) []failover.Entry {
	var out []failover.Entry
	for _, e := range h {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// DownVoters returns the nodes whose evidence votes site DOWN.
func DownVoters(e failover.Entry, site failover.Site) []string {
	var out []string
	for _, ev := range e.Evidence {
		if ev.Votes[site] == failover.Down {
			out = append(out, ev.Node)
		}
	}
	return out
}

// CheckQuorumEvidence returns an error unless every automatic flip in h
// carries at least quorum DOWN votes on the site it left (invariant 1).
func CheckQuorumEvidence(h []failover.Entry, quorum int) error {
	var errs []string
	for _, e := range Decisions(h) {
		if e.Kind != failover.KindAutoFailover && e.Kind != failover.KindAutoFailback {
			continue
		}
		down := DownVoters(e, e.From)
		if len(down) < quorum {
			errs = append(errs, fmt.Sprintf("gen %d %s %s->%s: DOWN voters on %s %v, want at least %d", e.Gen, e.Kind, e.From, e.To, e.From, down, quorum))
		}
		if t := e.Tallies[e.From]; len(t.Down) < quorum {
			errs = append(errs, fmt.Sprintf("gen %d: tally of %s has DOWN %v, want at least %d", e.Gen, e.From, t.Down, quorum))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// Summary is a short line per history entry, for failure messages.
func Summary(h []failover.Entry) string {
	var b strings.Builder
	for _, e := range h {
		fmt.Fprintf(&b, "  #%d gen=%d %s %s->%s actor=%s outcome=%s rule=%s %s\n", e.Index, e.Gen, e.Kind, e.From, e.To, e.Actor, e.Outcome, e.Rule, e.Reason)
	}
	return b.String()
}
