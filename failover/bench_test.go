package failover

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// benchPolicy has three nodes and ten probes per site, so one Observe
// carries 20 results.
func benchPolicy() Policy {
	var probes []ProbeRef
	for i := range 10 {
		probes = append(probes, ProbeRef{Name: fmt.Sprintf("probe%02d", i), Critical: i < 4})
	}
	return Policy{
		Nodes: []string{"a", "b", "c"}, Quorum: 2, Fall: 3, Rise: 2, Interval: time.Second, AutoFailover: true,
		BlockWindow: time.Hour, Failback: FailbackPolicy{Mode: FailbackManual},
		Sites:   map[Site]SitePolicy{Primary: {Probes: probes}, Backup: {Probes: probes}},
		Zone:    "example.org.",
		Records: []Record{{Name: "lms", Type: "A", TTL: 60, Primary: []string{"203.0.113.10"}, Backup: []string{"198.51.100.10"}}},
	}
}

func benchObserve(p Policy, node string, at int64) []byte {
	o := Observe{Node: node, PolicyHash: p.Hash()}
	for _, s := range sites {
		for _, r := range p.Sites[s].Probes {
			o.Results = append(o.Results, ProbeResult{Site: s, Probe: r.Name, OK: true, Class: "ok", Phase: "done", LatencyMS: 42, CertExpiry: 1800000000})
		}
	}
	return mustEncode(Command{At: at, Payload: o})
}

// BenchmarkApplyObserve measures Apply of one 20-result Observe (decode,
// hysteresis, votes, quorum, evaluation, response encoding) and reports it
// as a ratio to a plain json.Unmarshal of the same bytes measured in the
// same run, interleaved (x-unmarshal): the floor any JSON-encoded log entry pays.
// The floor decodes into the wire format's plain struct (the union of
// payload pointers version 1 had), not into Command, whose UnmarshalJSON is
// part of what Apply pays.
func BenchmarkApplyObserve(b *testing.B) {
	p := benchPolicy()
	m := New()
	m.Apply(1, mustEncode(Command{At: base, Payload: SetPolicy{Policy: p}}))
	data := [3][]byte{benchObserve(p, "a", base), benchObserve(p, "b", base), benchObserve(p, "c", base)}
	b.ReportAllocs()
	idx := uint64(1)
	var floor time.Duration
	for b.Loop() {
		idx++
		m.Apply(idx, data[idx%3])
		// The floor is timed between Apply calls, outside the benchmark
		// timer, so both see the same machine load.
		b.StopTimer()
		start := time.Now()
		c := reflect.New(wire.envelope).Interface()
		if err := json.Unmarshal(data[idx%3], c); err != nil {
			b.Fatal(err)
		}
		floor += time.Since(start)
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed())/float64(floor), "x-unmarshal")
	b.ReportMetric(float64(floor.Nanoseconds())/float64(b.N), "unmarshal-ns/op")
}
