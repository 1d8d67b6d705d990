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

// BenchmarkApplyRegionDecision is what the leader does when the entry
// that moves 50 groups is applied: the FSM applies it and logs its
// history lines, then each group's reconciler reads its desired state
// and the suspicion and status loops read theirs.
func BenchmarkApplyRegionDecision(b *testing.B) {
	const n = 50
	p := regionPolicy(n)
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	entry := func(c failover.Command, at int64) []byte {
		raw, err := failover.Encode(c)
		if err != nil {
			b.Fatal(err)
		}
		s, err := failover.Stamp(raw, at)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	setPolicy := entry(failover.Command{Payload: failover.SetPolicy{Policy: p}}, int64(time.Second))
	setFormat := entry(failover.Command{Payload: failover.SetFormat{Format: failover.Format}}, int64(time.Second))
	move := entry(failover.Command{Payload: failover.Failover{AllGroups: true, To: failover.Backup, Force: true, Actor: "bench", Reason: "region"}}, int64(2*time.Second))
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
