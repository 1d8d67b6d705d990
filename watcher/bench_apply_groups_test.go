package watcher

import (
	"log/slog"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
)

// fullObserve is node's report of every probe of p, all passing, at at.
func fullObserve(p failover.Policy, node string, seq uint64, at int64) failover.Command {
	o := failover.Observe{Node: node, Seq: seq, PolicyHash: p.Hash()}
	seen := map[string]bool{}
	for _, g := range p.Groups {
		for _, s := range []failover.Site{failover.Primary, failover.Backup} {
			for _, r := range g.Sites[s].Probes {
				if k := string(s) + "/" + r.Name; !seen[k] {
					seen[k] = true
					o.Results = append(o.Results, failover.ProbeResult{Site: s, Probe: r.Name, OK: true, Class: "ok", Phase: "done", LatencyMS: 3, CompletedAt: at})
				}
			}
		}
	}
	return failover.Command{Payload: o}
}

// groupApplier is a 50-group (or 1-group) FSM whose three nodes have
// reported every probe passing.
func groupApplier(b *testing.B, n int) (*failover.Machine, *FSM, failover.Policy) {
	p := regionPolicy(n)
	m := failover.New()
	f := NewFSM(m, slog.New(slog.DiscardHandler))
	at := int64(10 * time.Second)
	f.Apply(1, stampedEntry(b, failover.Command{Payload: failover.SetFormat{Format: failover.Format}}, at))
	f.Apply(2, stampedEntry(b, failover.Command{Payload: failover.SetPolicy{Policy: p}}, at))
	for i, node := range p.Nodes {
		f.Apply(uint64(3+i), stampedEntry(b, fullObserve(p, node, 1, at), at))
	}
	return m, f, p
}

// BenchmarkApplyFastReport is what every node does for each fast round's
// report while one group's primary is suspect: the FSM applies a report
// of that group's 4 probes, then the suspicion loop reads the machine.
// It runs with 50 groups and with one, in the same run, interleaved;
// x_of_one_group is the first's time over the second's.
func BenchmarkApplyFastReport(b *testing.B) {
	type world struct {
		m     *failover.Machine
		f     *FSM
		p     failover.Policy
		idx   uint64
		seq   uint64
		at    int64
		hash  string
		spent time.Duration
	}
	mk := func(n int) *world {
		m, f, p := groupApplier(b, n)
		return &world{m: m, f: f, p: p, idx: 10, seq: 1, at: int64(10 * time.Second), hash: p.Hash()}
	}
	many, one := mk(50), mk(1)
	step := func(w *world) {
		g := w.p.Groups[len(w.p.Groups)/2]
		w.idx++
		w.seq++
		w.at += int64(100 * time.Millisecond)
		o := failover.Observe{Node: "b", Seq: w.seq, PolicyHash: w.hash}
		for _, r := range g.Sites[failover.Primary].Probes[1:] {
			o.Results = append(o.Results, failover.ProbeResult{Site: failover.Primary, Probe: r.Name, OK: true, Class: "ok", Phase: "done", LatencyMS: 3, CompletedAt: w.at})
		}
		e := stampedEntry(b, failover.Command{Payload: o}, w.at)
		t0 := time.Now()
		if _, err := failover.DecodeResponse(w.f.Apply(w.idx, e)); err != nil {
			b.Fatal(err)
		}
		_ = w.m.Suspicion("a")
		w.spent += time.Since(t0)
	}
	for b.Loop() {
		step(many)
		step(one)
	}
	b.ReportMetric(float64(many.spent)/float64(one.spent), "x_of_one_group")
	b.ReportMetric(float64(many.spent.Nanoseconds())/float64(b.N), "many-ns/op")
	b.ReportMetric(float64(one.spent.Nanoseconds())/float64(b.N), "one-ns/op")
}
