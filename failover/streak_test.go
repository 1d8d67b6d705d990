package failover

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// streakRound is a watcher's report of its round completed at done,
// stamped by the leader at at, the primary's web failing with the
// watcher's own streak (n failures in a row, the first completed at first,
// the fall-th at fell).
func streakRound(m *Machine, node string, n int, first, fell, done, at int64) Command {
	hash := ""
	if m != nil {
		hash = m.View().PolicyHash
	}
	return Command{At: at, Payload: Observe{Node: node, PolicyHash: hash, Results: []ProbeResult{
		{Site: Primary, Probe: "web", OK: false, CompletedAt: done, Streak: n, StreakAt: first, StreakFellAt: fell},
		{Site: Backup, Probe: "web", OK: true, CompletedAt: done},
	}}}
}

// leaderLostDuringFailure is a format-2 trio (fall 3, interval 1 s,
// stale_after 3 s) whose watchers all saw the primary up at 1 s, then lost
// their leader: nothing commits until 5.9 s, while (in the tests) a and b
// fail the primary at 2, 3, 4, 5 s (b 300 ms later).
func leaderLostDuringFailure(t *testing.T) (*Machine, func(Command) Result) {
	t.Helper()
	m, step := timingMachine(t)
	step(Command{At: ms(100), Payload: SetFormat{Format: 2}})
	for _, n := range []string{"a", "b", "c"} {
		step(round(m, n, true, ms(900), ms(1000)))
	}
	return m, step
}

// A watcher's failures while no leader could commit them count when its
// first report after the election carries its streak: the new leader
// decides on the first quorum of such reports, and the decision's times
// are the watchers' own, in order, with the time without a leader named.
func TestFirstReportAfterAnElectionCarriesTheWatchersStreak(t *testing.T) {
	m, step := leaderLostDuringFailure(t)
	step(streakRound(m, "a", 4, ms(2000), ms(4000), ms(5000), ms(5900)))
	if a := m.View().Active; a != Primary {
		t.Fatalf("one watcher's streak flipped to %s; quorum is 2", a)
	}
	step(streakRound(m, "b", 4, ms(2300), ms(4300), ms(5300), ms(6000)))
	if a := m.View().Active; a != Backup {
		t.Fatalf("after the quorum's first reports after the election the active site is %s, want backup at once", a)
	}
	d := lastDecision(t, m)
	for _, ev := range d.Evidence {
		want := map[string]int64{"a": ms(2000), "b": ms(2300)}[ev.Node]
		if want == 0 {
			continue
		}
		if len(ev.Failing) != 1 || ev.Failing[0].Fails != 4 || ev.Failing[0].StreakAt != want {
			t.Errorf("node %s evidence %+v, want 4 failures in a row since %d (its own streak)", ev.Node, ev.Failing, want)
		}
	}
	tm := d.Timings
	want := Timings{FirstFailureAt: ms(2000), DetectedAt: ms(4300), DecidedAt: ms(6000), LeaderlessFrom: ms(1000), LeaderlessTo: ms(5900)}
	if tm.FirstFailureAt != want.FirstFailureAt || tm.DetectedAt != want.DetectedAt || tm.DecidedAt != want.DecidedAt ||
		tm.LeaderlessFrom != want.LeaderlessFrom || tm.LeaderlessTo != want.LeaderlessTo {
		t.Fatalf("timings %+v, want %+v", tm, want)
	}
	var labels []string
	prev := int64(0)
	for _, st := range tm.Steps() {
		labels = append(labels, st.Label)
		if st.At < prev {
			t.Errorf("step %s at %d before the step before it (%d)", st.Label, st.At, prev)
		}
		prev = st.At
	}
	if got := labels; len(got) != 4 || got[0] != "first failure" || got[1] != "detected" || got[2] != "leaderless" || got[3] != "decided" {
		t.Fatalf("steps %v, want first failure, detected, leaderless, decided", got)
	}
	if st := tm.Steps()[2]; st.Gap != 4900*time.Millisecond || st.Since != ms(1000) {
		t.Fatalf("leaderless step %+v, want a 4.9s gap since 1s", st)
	}
	// A decision that is the first command after the election comes
	// after the time without a leader, not before it.
	same := Timings{FirstFailureAt: ms(2000), DecidedAt: ms(5900), LeaderlessFrom: ms(1000), LeaderlessTo: ms(5900)}
	if st := same.Steps(); len(st) != 3 || st[1].Label != "leaderless" || st[2].Label != "decided" || st[2].Gap != 0 {
		t.Errorf("decided with the first commit after the election: steps %+v, want first failure, leaderless, decided +0s", st)
	}
	text, err := m.Explain(d.Gen)
	if err != nil || !strings.Contains(text, "4 failures in a row since "+fmtTime(ms(2000))+" (watcher's clock)") ||
		!strings.Contains(text, "+4.9s without a leader (nothing committed since "+fmtTime(ms(1000))+")") {
		t.Errorf("explain (err %v) does not name the streaks and the leaderless gap:\n%s", err, text)
	}
}

// Look-alikes: a streak broken by a success, a streak whose span cannot
// be consecutive fresh rounds, a streak whose latest round is older than
// stale_after when the leader stamps it, and reports without streaks (format 1 and
// before) count one failure each, as before: no decision from the first
// reports after the election.
func TestStreaksThatAreNotConsecutiveFreshRoundsDoNotCount(t *testing.T) {
	for _, tt := range []struct {
		name string
		a, b Command
	}{
		{"broken by a success", streakRound(nil, "a", 1, ms(5000), 0, ms(5000), ms(5900)), streakRound(nil, "b", 1, ms(5300), 0, ms(5300), ms(6000))},
		{"stale: spans more than its rounds can", streakRound(nil, "a", 4, ms(5000)-int64(20*time.Second), ms(4000), ms(5000), ms(5900)),
			streakRound(nil, "b", 4, ms(5300)-int64(20*time.Second), ms(4300), ms(5300), ms(6000))},
		{"first failure after the latest", streakRound(nil, "a", 4, ms(6000), ms(4000), ms(5000), ms(5900)),
			streakRound(nil, "b", 4, ms(6300), ms(4300), ms(5300), ms(6000))},
		// Round 5 s reported only at 9.9 s (a forward that overran its
		// deadline): its streak is not fresh data when it is stamped.
		{"delivered later than stale_after", streakRound(nil, "a", 4, ms(2000), ms(4000), ms(5000), ms(9900)),
			streakRound(nil, "b", 4, ms(2300), ms(4300), ms(5300), ms(10000))},
		{"no streak (old form)", streakRound(nil, "a", 0, 0, 0, ms(5000), ms(5900)), streakRound(nil, "b", 0, 0, 0, ms(5300), ms(6000))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, step := leaderLostDuringFailure(t)
			for _, c := range []Command{tt.a, tt.b} {
				o := c.Payload.(Observe)
				o.PolicyHash = m.View().PolicyHash
				c.Payload = o
				step(c)
			}
			if a := m.View().Active; a != Primary {
				t.Fatalf("active %s after the first reports; want primary (one failure each)", a)
			}
		})
	}
}

// A streak counts the watcher's own rounds: a success ends it, a round
// more than stale_after after the one before starts it again, and its
// stamps go out only once the cluster's format reads them.
func TestStreakCounterCountsConsecutiveFreshRounds(t *testing.T) {
	p := Policy{Nodes: []string{"a"}, Quorum: 1, Fall: 3, Rise: 2, Interval: time.Second,
		Sites: map[Site]SitePolicy{Primary: {Probes: []ProbeRef{{Name: "web", Critical: true}}}}}
	var c StreakCounter
	res := func(ok bool, at int64, format int) ProbeResult {
		o := c.Stamp(Observe{Node: "a", Results: []ProbeResult{{Site: Primary, Probe: "web", OK: ok, CompletedAt: at}}}, &p, format)
		return o.Results[0]
	}
	sec := func(s float64) int64 { return int64(s * float64(time.Second)) }
	steps := []struct {
		ok        bool
		at        float64
		format    int
		n         int
		first     float64
		fell      float64
		stampsOut bool
	}{
		{false, 1, 1, 1, 1, 0, false}, // format 1: counted, not written
		{false, 2, 2, 2, 1, 0, true},
		{false, 3, 2, 3, 1, 3, true},
		{false, 4, 2, 4, 1, 3, true},
		{true, 5, 2, 0, 0, 0, true},
		{false, 6, 2, 1, 6, 0, true},
		{false, 10, 2, 1, 10, 0, true}, // 4 s after the last: over stale_after (3 s)
		{false, 11, 2, 2, 10, 0, true},
	}
	for i, s := range steps {
		got := res(s.ok, sec(s.at), s.format)
		if !s.stampsOut || s.ok {
			if got.Streak != 0 || got.StreakAt != 0 || got.StreakFellAt != 0 {
				t.Fatalf("step %d: stamped %+v, want none", i, got)
			}
			continue
		}
		var fell int64
		if s.fell != 0 {
			fell = sec(s.fell)
		}
		if got.Streak != s.n || got.StreakAt != sec(s.first) || got.StreakFellAt != fell {
			t.Fatalf("step %d: streak %d from %d fell %d, want %d from %d fell %d", i, got.Streak, got.StreakAt, got.StreakFellAt, s.n, sec(s.first), fell)
		}
	}
	// A round counted when it came and stamped when it goes out counts
	// once; an older result carried into a merged round is not stamped.
	if got := res(false, sec(11), 2); got.Streak != 2 {
		t.Fatalf("the same round again: streak %d, want 2", got.Streak)
	}
	if got := res(false, sec(10.5), 2); got.Streak != 0 {
		t.Fatalf("an older result: streak %d, want none", got.Streak)
	}
	if got := res(false, sec(12), 2); got.Streak != 3 {
		t.Fatalf("the next round: streak %d, want 3", got.Streak)
	}
}

// Below format 2 nothing the format adds is written: an encoded report
// and a snapshot hold no streak nor leaderless span, whatever happened.
func TestFormatOneTrioWritesNoStreakNorLeaderlessSpan(t *testing.T) {
	m, step := timingMachine(t)
	for _, n := range []string{"a", "b", "c"} {
		step(round(m, n, true, ms(900), ms(1000)))
	}
	for _, n := range []string{"a", "b"} {
		step(round(m, n, false, ms(5000), ms(5900)))
	}
	b, err := m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		State map[string]json.RawMessage `json:"state"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"leaderless_from", "leaderless_to"} {
		if _, ok := s.State[k]; ok {
			t.Errorf("format-1 snapshot has %s", k)
		}
	}
}
