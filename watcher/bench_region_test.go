package watcher

import (
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
)

// regionPolicy is n failover groups in one zone, each with critical probes
// of its own per site and the shared "region" probe.
func regionPolicy(n int) failover.Policy {
	p := failover.Policy{Nodes: []string{"a", "b", "c"}, Quorum: 2, Fall: 3, Rise: 2, Interval: 2 * time.Second}
	for i := range n {
		name := fmt.Sprintf("g%02d", i+1)
		refs := []failover.ProbeRef{{Name: "region", Critical: true}}
		for j := range 4 {
			refs = append(refs, failover.ProbeRef{Name: fmt.Sprintf("%s-%d", name, j), Critical: true})
		}
		p.Groups = append(p.Groups, failover.Group{Name: name, AutoFailover: true, BlockWindow: time.Hour,
			Failback: failover.FailbackPolicy{Mode: failover.FailbackManual},
			Sites:    map[failover.Site]failover.SitePolicy{failover.Primary: {Probes: refs}, failover.Backup: {Probes: refs}},
			Zone:     "example.test.",
			Records: []failover.Record{{Name: name, Type: "A", TTL: 60,
				Primary: []string{fmt.Sprintf("192.0.2.%d", i+1)}, Backup: []string{fmt.Sprintf("198.51.100.%d", i+1)}}}})
	}
	return p
}

// stampedEntry is c as the leader puts it in the log, stamped at.
func stampedEntry(tb testing.TB, c failover.Command, at int64) []byte {
	tb.Helper()
	raw, err := failover.Encode(c)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := failover.Stamp(raw, at)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// BenchmarkApplyRegionDecision is what the leader does when the entry
// that moves 50 groups is applied: the FSM applies it and logs its
// history lines, then each group's reconciler reads its desired state
// and the suspicion and status loops read theirs.
func BenchmarkApplyRegionDecision(b *testing.B) {
	const n = 50
	p := regionPolicy(n)
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	setPolicy := stampedEntry(b, failover.Command{Payload: failover.SetPolicy{Policy: p}}, int64(time.Second))
	setFormat := stampedEntry(b, failover.Command{Payload: failover.SetFormat{Format: failover.Format}}, int64(time.Second))
	move := stampedEntry(b, failover.Command{Payload: failover.Failover{AllGroups: true, To: failover.Backup, Force: true, Actor: "bench", Reason: "region"}}, int64(2*time.Second))
	for b.Loop() {
		b.StopTimer()
		m := failover.New()
		f := NewFSM(m, log)
		f.Apply(1, setFormat)
		f.Apply(2, setPolicy)
		b.StartTimer()
		if _, err := failover.DecodeResponse(f.Apply(3, move)); err != nil {
			b.Fatal(err)
		}
		for _, g := range p.Groups {
			if d, _ := m.GroupDesired(g.Name); d.Gen != 3 {
				b.Fatalf("group %s: gen %d", g.Name, d.Gen)
			}
		}
		_ = m.Suspicion("a")
		_ = m.View()
	}
}

// BenchmarkGroupViewsForMetrics is what a metrics scrape reads with 50
// groups: GroupViews, one view per group, against a GroupView per group
// (what it read before, each with the overview of every group), in the
// same run; x_of_groupview_each is the first's time over the second's.
func BenchmarkGroupViewsForMetrics(b *testing.B) {
	const n = 50
	m := failover.New()
	f := NewFSM(m, slog.New(slog.DiscardHandler))
	f.Apply(1, stampedEntry(b, failover.Command{Payload: failover.SetFormat{Format: failover.Format}}, int64(time.Second)))
	f.Apply(2, stampedEntry(b, failover.Command{Payload: failover.SetPolicy{Policy: regionPolicy(n)}}, int64(time.Second)))
	if names, _ := m.GroupViews(); len(names) != n {
		b.Fatalf("got %d groups, want %d", len(names), n)
	}
	var each, all time.Duration
	for b.Loop() {
		t0 := time.Now()
		for _, name := range m.Groups() {
			if _, ok := m.GroupView(name); !ok {
				b.Fatalf("no group %s", name)
			}
		}
		t1 := time.Now()
		m.GroupViews()
		each, all = each+t1.Sub(t0), all+time.Since(t1)
	}
	b.ReportMetric(float64(all)/float64(each), "x_of_groupview_each")
}
