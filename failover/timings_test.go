package failover

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// timingMachine is a three-watcher machine (quorum 2, fall 3, rise 2,
// interval 1s) with one critical probe "web" per site.
func timingMachine(t *testing.T) (*Machine, func(Command) Result) {
	t.Helper()
	m := New()
	var index uint64
	step := func(c Command) Result {
		t.Helper()
		index++
		r, err := m.Step(index, c)
		if err != nil {
			t.Fatalf("step %d %s: %v", index, c.Type(), err)
		}
		return r
	}
	p := Policy{
		Nodes: []string{"a", "b", "c"}, Quorum: 2, Fall: 3, Rise: 2, Interval: time.Second, AutoFailover: true,
		BlockWindow: time.Hour, Failback: FailbackPolicy{Mode: FailbackManual},
		Sites: map[Site]SitePolicy{Primary: {Probes: []ProbeRef{{Name: "web", Critical: true}}},
			Backup: {Probes: []ProbeRef{{Name: "web", Critical: true}}}},
		Zone:    "example.org.",
		Records: []Record{{Name: "lms", Type: "A", TTL: 60, Primary: []string{"203.0.113.10"}, Backup: []string{"198.51.100.10"}}},
	}
	step(Command{At: base, Payload: SetPolicy{Policy: p, Actor: "ops"}})
	return m, step
}

func ms(d int) int64 { return base + int64(time.Duration(d)*time.Millisecond) }

// round is one watcher's report: the primary's web up or down, the backup
// up, completed by the watcher at done (0: an older watcher that does not
// say) and stamped by the leader at at.
func round(m *Machine, node string, primaryOK bool, done, at int64) Command {
	return Command{At: at, Payload: Observe{Node: node, PolicyHash: m.View().PolicyHash, Results: []ProbeResult{
		{Site: Primary, Probe: "web", OK: primaryOK, CompletedAt: done},
		{Site: Backup, Probe: "web", OK: true, CompletedAt: done},
	}}}
}

func lastDecision(t *testing.T, m *Machine) Entry {
	t.Helper()
	h := m.History()
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].decision() {
			return h[i]
		}
	}
	t.Fatalf("no decision in history %+v", h)
	return Entry{}
}

// While there is no leader, reports wait; the decision is committed when
// they finally are, but detection happened when the probes completed.
func TestDecisionTimingsAreWhenTheWatchersSawTheFailure(t *testing.T) {
	m, step := timingMachine(t)
	for _, n := range []string{"a", "b", "c"} {
		step(round(m, n, true, ms(900), ms(1000)))
	}
	// a blip on c that heals must not count as the first failure
	step(round(m, "c", false, ms(1500), ms(1600)))
	step(round(m, "c", true, ms(1900), ms(2000)))
	// a and b see the primary fail at 2.0s, 3.0s, 4.0s (b 200ms later).
	// Their last rounds wait for a new leader until 5.9s and 6s, still
	// within stale_after of the rounds before.
	for i, d := range []int{2000, 3000, 4000} {
		atA, atB := ms(d+100), ms(d+300)
		if i == 2 {
			atA, atB = ms(5900), ms(6000)
		}
		step(round(m, "a", false, ms(d), atA))
		r := step(round(m, "b", false, ms(d+200), atB))
		if i < 2 && r.Gen != 0 {
			t.Fatalf("round %d: decided gen %d before fall rounds", i, r.Gen)
		}
	}
	e := lastDecision(t, m)
	if e.Kind != KindAutoFailover {
		t.Fatalf("got decision %s, want %s", e.Kind, KindAutoFailover)
	}
	want := Timings{FirstFailureAt: ms(2000), DetectedAt: ms(4200), DecidedAt: ms(6000)}
	if got := e.Timings; got.FirstFailureAt != want.FirstFailureAt || got.DetectedAt != want.DetectedAt || got.DecidedAt != want.DecidedAt {
		t.Fatalf("got first failure %s, detected %s, decided %s; want %s, %s, %s",
			rel(got.FirstFailureAt), rel(got.DetectedAt), rel(got.DecidedAt),
			rel(want.FirstFailureAt), rel(want.DetectedAt), rel(want.DecidedAt))
	}
}

// Logs written before watchers stamped their results keep the old,
// leader-stamped detection time, so they replay to the same state.
func TestDetectionFallsBackToTheLeaderClockWithoutWatcherTimes(t *testing.T) {
	m, step := timingMachine(t)
	for _, n := range []string{"a", "b", "c"} {
		step(round(m, n, true, 0, ms(1000)))
	}
	for _, d := range []int{2000, 3000, 4000} {
		step(round(m, "a", false, 0, ms(d+100)))
		// b's third round alone is unstamped: its detection is unknown, so the leader's clock stands in
		done := ms(d + 200)
		if d == 4000 {
			done = 0
		}
		step(round(m, "b", false, done, ms(d+300)))
	}
	got := lastDecision(t, m).Timings
	if got.DetectedAt != ms(4300) || got.DecidedAt != ms(4300) || got.FirstFailureAt != ms(2200) {
		t.Fatalf("got first failure %s, detected %s, decided %s; want 2.2s, 4.3s, 4.3s",
			rel(got.FirstFailureAt), rel(got.DetectedAt), rel(got.DecidedAt))
	}
}

// A withheld episode records the same evidence times as a decision would.
func TestWithheldEntryCarriesTheWatchersDetectionTime(t *testing.T) {
	m, step := timingMachine(t)
	step(Command{At: ms(500), Payload: Pause{Actor: "alice"}})
	for _, n := range []string{"a", "b", "c"} {
		step(round(m, n, true, ms(900), ms(1000)))
	}
	for _, d := range []int{2000, 3000, 4000} {
		step(round(m, "a", false, ms(d), ms(d+500)))
		step(round(m, "b", false, ms(d+100), ms(d+600)))
	}
	h := m.History()
	e := h[len(h)-1]
	if e.Kind != KindWithheld || e.Timings.DetectedAt != ms(4100) || e.Timings.FirstFailureAt != ms(2000) {
		t.Fatalf("got %s entry detected %s first failure %s, want withheld detected 4.1s first failure 2s",
			e.Kind, rel(e.Timings.DetectedAt), rel(e.Timings.FirstFailureAt))
	}
}

// The reconciler's per-server verification times end up on the decision,
// sorted by server, and a repeated report does not change them.
func TestVerifiedActionRecordsEachServersTime(t *testing.T) {
	m, step := timingMachine(t)
	r := step(Command{At: ms(1000), Payload: Failover{To: Backup, Actor: "alice", Force: true}})
	servers := []ServerVerification{{Server: "ns2:53", VerifiedAt: ms(1400)}, {Server: "ns1:53", VerifiedAt: ms(1300)}}
	step(Command{At: ms(1500), Payload: ActionResult{Gen: r.Gen, Outcome: OutcomeVerified, WrittenAt: ms(1200), VerifiedAt: ms(1450), Servers: servers}})
	later := []ServerVerification{{Server: "ns1:53", VerifiedAt: ms(5000)}}
	step(Command{At: ms(6000), Payload: ActionResult{Gen: r.Gen, Outcome: OutcomeVerified, WrittenAt: ms(1200), VerifiedAt: ms(5500), Servers: later}})
	got := lastDecision(t, m).Timings
	want := []ServerVerification{{Server: "ns1:53", VerifiedAt: ms(1300)}, {Server: "ns2:53", VerifiedAt: ms(1400)}}
	if !slices.Equal(got.Servers, want) || got.VerifiedAt != ms(1450) {
		t.Fatalf("got servers %+v verified %s, want %+v verified 1.45s", got.Servers, rel(got.VerifiedAt), want)
	}
}

// The watcher's clock is evidence only: whatever completion times the
// watchers send, every decision, refusal and withheld rule is the same.
func TestWatcherClockNeverDrivesARule(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		g := newCmdGen(rand.New(rand.NewPCG(seed, seed*31)), true)
		plain, skewed := New(), New()
		for i := 1; i <= 600; i++ {
			b := g.next()
			if i == 1 {
				b = g.first()
			}
			got := skewed.Apply(uint64(i), withCompletionTimes(b, uint64(i)))
			want := plain.Apply(uint64(i), withoutCompletionTimes(b))
			if !bytes.Equal(got, want) {
				t.Fatalf("seed %d entry %d: response with watcher times %s, without %s", seed, i, got, want)
			}
			r, _ := DecodeResponse(want)
			g.seen(r)
		}
		if a, b := plain.Desired(), skewed.Desired(); a.Gen != b.Gen || a.Active != b.Active || a.Done != b.Done {
			t.Fatalf("seed %d: desired %+v with watcher times, %+v without", seed, b, a)
		}
	}
}

// withCompletionTimes gives every result of an Observe a wild watcher
// time: far past, far future, or around the leader's stamp.
func withCompletionTimes(b []byte, salt uint64) []byte {
	return mapCompletionTimes(b, func(at int64, i int) int64 {
		switch (salt + uint64(i)) % 3 {
		case 0:
			return at - int64(time.Hour)
		case 1:
			return at + int64(time.Hour)
		}
		return at - int64(salt%1000)*int64(time.Millisecond)
	})
}

func withoutCompletionTimes(b []byte) []byte {
	return mapCompletionTimes(b, func(int64, int) int64 { return 0 })
}

// mapCompletionTimes sets CompletedAt of result i of an encoded Observe to
// f(At, i); other commands and garbage pass through.
func mapCompletionTimes(b []byte, f func(at int64, i int) int64) []byte {
	c, err := Decode(b)
	o, ok := c.Payload.(Observe)
	if err != nil || !ok {
		return b
	}
	o.Results = slices.Clone(o.Results)
	for i := range o.Results {
		o.Results[i].CompletedAt = f(c.At, i)
	}
	c.Payload = o
	return mustEncode(c)
}
