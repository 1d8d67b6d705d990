package failover

import (
	"slices"
	"testing"
	"time"
)

// A round of some probes of a site (a fast round of one failover group's
// probes) goes out full, yet the rounds after it stay lean: the log keeps
// what it held of the probes the round left out, and so does the view.
// After a report whose outcome is unknown the view is gone, and the round
// after a partial one still sends everything.
func TestLeanEncoderKeepsTheViewAcrossAPartialRound(t *testing.T) {
	for _, lost := range []bool{false, true} {
		p := scriptPolicyDefaults()
		p.Fall, p.Rise = 3, 2
		p.Sites = map[Site]SitePolicy{
			Primary: {Probes: []ProbeRef{{Name: "web", Critical: true}, {Name: "api", Critical: true}}},
			Backup:  {Probes: []ProbeRef{{Name: "web", Critical: true}}},
		}
		m := New()
		mustStep(t, m, 1, Command{At: base, Payload: SetPolicy{Policy: p}})
		pol, h := m.Policy()
		var e LeanEncoder
		seq, idx := uint64(0), uint64(1)
		send := func(at time.Duration, keys ...string) []string {
			t.Helper()
			seq++
			now := base + int64(at)
			o := Observe{Node: "a", Seq: seq, PolicyHash: h}
			for _, k := range keys {
				site, name, _ := cutKey(k)
				o.Results = append(o.Results, ProbeResult{Site: site, Probe: name, OK: true, LatencyMS: 5, CompletedAt: now})
			}
			idx++
			return leanSend(t, m, &e, idx, o, pol, h, now)
		}
		all := []string{"primary/web", "primary/api", "backup/web"}
		send(0, all...)
		if got := send(time.Second, all...); len(got) != 0 {
			t.Fatalf("lost %v: a round like the last sent %v, want a lean report of nothing", lost, got)
		}
		if lost {
			send(2*time.Second, all...)
			e.Lost() // as if the outcome of that report were unknown
		}
		if got, want := send(3*time.Second, "primary/web"), []string{"full", "primary/web"}; !slices.Equal(got, want) {
			t.Fatalf("lost %v: a round of primary/web alone sent %v, want %v", lost, got, want)
		}
		want := []string(nil)
		if lost {
			want = []string{"primary/api", "backup/web"}
		}
		if got := send(4*time.Second, all...); !slices.Equal(got, want) {
			t.Fatalf("lost %v: the full round after the partial one sent %v, want %v", lost, got, want)
		}
	}
}
