package failover

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// leanSteadyState models the cost benchmark's steady state
// (test/e2e BenchmarkCostPerNode): three watchers, each probing 50 https
// endpoints per site every second, all up, latencies of a few milliseconds
// with jitter and an occasional spike, plus the leader's tick each second.
// It returns the bytes of log entries per second that each follower
// receives, with full reports and with lean ones (the entries' payloads:
// Raft adds its own framing to both). busy models the benchmark's loaded
// host instead: each https probe takes 15-60 ms, and each round's latency
// scatters around that by a factor of up to three either way, as measured
// there (one probe's successive results: 18 17 112 63 25 26 181 46 ms).
func leanSteadyState(tb testing.TB, seconds int, busy bool) (full, lean float64) {
	tb.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	var probes []ProbeRef
	for i := range 50 {
		probes = append(probes, ProbeRef{Name: fmt.Sprintf("https-%02d", i), Critical: i < 5})
	}
	p := scriptPolicyDefaults()
	p.Fall, p.Rise = 3, 2
	p.Sites = map[Site]SitePolicy{Primary: {Probes: probes}, Backup: {Probes: probes}}
	m := New()
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC).UnixNano()
	mustStep(tb, m, 1, Command{At: at, Payload: SetPolicy{Policy: p}})
	pol, hash := m.Policy()
	latency := map[string]int64{}
	for _, site := range sites {
		for _, ref := range probes {
			latency[probeKey(site, ref.Name)] = 2 + r.Int64N(12)
			if busy {
				latency[probeKey(site, ref.Name)] = 15 + r.Int64N(46)
			}
		}
	}
	enc := map[string]*LeanEncoder{}
	idx := uint64(1)
	var fullBytes, leanBytes int
	for s := range seconds {
		for i, node := range p.Nodes {
			stamp := at + int64(s)*int64(time.Second) + int64(i)*int64(time.Second)/3
			o := Observe{Node: node, Seq: uint64(s + 1), PolicyHash: hash}
			for _, site := range sites {
				for _, ref := range probes {
					l := latency[probeKey(site, ref.Name)] + r.Int64N(5) - 2
					if r.IntN(100) == 0 {
						l += 30 + r.Int64N(100) // a busy moment
					}
					if busy {
						l = int64(float64(latency[probeKey(site, ref.Name)]) * math.Exp((2*r.Float64()-1)*math.Log(3)))
					}
					o.Results = append(o.Results, ProbeResult{Site: site, Probe: ref.Name, OK: true, LatencyMS: max(1, l),
						CertExpiry: 1_790_000_000, CompletedAt: stamp - r.Int64N(int64(300*time.Millisecond))})
				}
			}
			e := enc[node]
			if e == nil {
				e = &LeanEncoder{}
				enc[node] = e
			}
			lo := e.Encode(o, pol, hash, stamp)
			fullBytes += len(mustEncode(Command{At: stamp, Payload: o}))
			lb := mustEncode(Command{At: stamp, Payload: lo})
			leanBytes += len(lb)
			idx++
			if _, err := DecodeResponse(m.Apply(idx, lb)); err != nil {
				tb.Fatalf("second %d: lean report refused: %v", s, err)
			}
			e.Applied(stamp)
		}
		tick := len(mustEncode(Command{At: at + int64(s)*int64(time.Second), Payload: Tick{}}))
		fullBytes += tick
		leanBytes += tick
	}
	return float64(fullBytes) / float64(seconds), float64(leanBytes) / float64(seconds)
}

// BenchmarkReplicatedBytes reports the log bytes per second each follower
// receives in the cost benchmark's steady state (100 probes/s on each of
// three watchers), with full and with lean reports.
func BenchmarkReplicatedBytes(b *testing.B) {
	var full, lean float64
	for b.Loop() {
		full, lean = leanSteadyState(b, 600, false)
	}
	_, busy := leanSteadyState(b, 600, true)
	b.ReportMetric(full, "full-B/s")
	b.ReportMetric(lean, "lean-B/s")
	b.ReportMetric(busy, "lean-busy-host-B/s")
}

// The budget is 2 KB/s per follower at 100 probes/s on each
// watcher; the lean encoding must stay within it in the modelled steady
// state (ten minutes: ten refresh periods).
func TestLeanReportsStayWithinTheByteBudget(t *testing.T) {
	for _, busy := range []bool{false, true} {
		full, lean := leanSteadyState(t, 600, busy)
		t.Logf("busy host %v: log bytes per second per follower: full %.0f, lean %.0f", busy, full, lean)
		if lean > 2000 {
			t.Errorf("busy host %v: lean reports replicate %.0f B/s, want at most 2000 (full: %.0f)", busy, lean, full)
		}
	}
}
