package sim

import (
	"maps"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// checkPaired fails t when cand holds a starting fault without its end or
// an end without its start, as Generate pairs them.
func checkPaired(t *testing.T, cand Schedule) {
	t.Helper()
	open := map[string]int{}
	for _, e := range cand.Events {
		key := e.Node + "|" + e.Peer
		if _, ok := ends[e.Kind]; ok {
			open[e.Kind+key]++
		}
		for start, end := range ends {
			if e.Kind == end {
				open[start+key]--
			}
		}
	}
	for k, v := range open {
		if v != 0 {
			t.Errorf("candidate splits a fault from its end (%s: %d unmatched):\n%s", k, v, cand)
		}
	}
}

// Every crash is grouped with its restart and every partition with its
// heal, so shrinking removes them together.
func TestUnitsPairFaultsWithTheirEnds(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		s := Generate(seed)
		for _, u := range units(s) {
			first := s.Events[slices.IndexFunc(s.Events, func(e Event) bool { return e.Seq == u[0] })]
			end, paired := ends[first.Kind]
			switch {
			case slices.Contains(slices.Collect(maps.Values(ends)), first.Kind):
				t.Fatalf("seed %d: unit %v starts with an ending event %s", seed, u, first)
			case paired && len(u) != 2:
				t.Fatalf("seed %d: unit %v: %s without its %s", seed, u, first, end)
			case !paired && len(u) != 1:
				t.Fatalf("seed %d: unit %v groups an unpaired %s", seed, u, first)
			}
			if paired {
				last := s.Events[slices.IndexFunc(s.Events, func(e Event) bool { return e.Seq == u[1] })]
				if last.Kind != end || last.Node != first.Node || last.Peer != first.Peer || last.At < first.At {
					t.Fatalf("seed %d: %s paired with %s", seed, first, last)
				}
			}
		}
	}
}

// Overlapping partitions of one link pair in order: the first partition
// with the first heal.
func TestUnitsPairOverlappingFaultsInOrder(t *testing.T) {
	s := Schedule{Events: []Event{
		{Seq: 1, At: 1 * time.Second, Kind: "partition", Node: "a", Peer: "b"},
		{Seq: 2, At: 2 * time.Second, Kind: "partition", Node: "a", Peer: "b"},
		{Seq: 3, At: 3 * time.Second, Kind: "partition", Node: "a"},
		{Seq: 4, At: 4 * time.Second, Kind: "heal", Node: "a", Peer: "b"},
		{Seq: 5, At: 5 * time.Second, Kind: "heal", Node: "a"},
		{Seq: 6, At: 6 * time.Second, Kind: "heal", Node: "a", Peer: "b"},
		{Seq: 7, At: 7 * time.Second, Kind: "restart", Node: "c"},
	}}
	want := [][]int{{1, 4}, {2, 6}, {3, 5}, {7}}
	if got := units(s); !reflect.DeepEqual(got, want) {
		t.Fatalf("units: got %v, want %v", got, want)
	}
}

// With a failure that needs a given set of events, the shrinker finds
// exactly that set, removes paired faults together in every candidate,
// and its drop list replays the result from the seed.
func TestShrinkFindsTheEventsAFailureNeeds(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for seed := uint64(1); seed <= 100; seed++ {
		s := Generate(seed)
		us := units(s)
		var need [][]int
		for _, u := range us {
			if rng.IntN(4) == 0 {
				need = append(need, u)
			}
		}
		contains := func(c Schedule, u []int) bool {
			for _, q := range u {
				if !slices.ContainsFunc(c.Events, func(e Event) bool { return e.Seq == q }) {
					return false
				}
			}
			return true
		}
		r := shrink(s, nil, func(cand Schedule, drop []int) bool {
			checkPaired(t, cand)
			if got := Generate(seed).without(drop); !reflect.DeepEqual(got, cand) {
				t.Fatalf("seed %d: drop %v does not replay the candidate:\n%s\nwant\n%s", seed, drop, got, cand)
			}
			for _, u := range need {
				if !contains(cand, u) {
					return false
				}
			}
			return true
		}, shrinkBudget{candidates: 1000, wall: time.Minute})
		if r.spent {
			t.Fatalf("seed %d: budget spent after %d candidates for %d units", seed, r.candidates, len(us))
		}
		var got [][]int
		for _, u := range us {
			if contains(r.sched, u) {
				got = append(got, u)
			}
		}
		if len(r.sched.Events) != len(slices.Concat(need...)) || !reflect.DeepEqual(got, need) {
			t.Fatalf("seed %d: shrunk to units %v (%d events), want %v", seed, got, len(r.sched.Events), need)
		}
		if !reflect.DeepEqual(Generate(seed).without(r.drop), r.sched) {
			t.Fatalf("seed %d: drop %v does not replay the shrunk schedule", seed, r.drop)
		}
	}
}

// A failure that needs two things together (here: an operator command and
// a crash) keeps both, and the shrink stops at a 1-minimal schedule.
func TestShrinkKeepsEventsThatFailOnlyTogether(t *testing.T) {
	s := Schedule{Seed: 9, Events: []Event{
		{Seq: 1, At: 3 * time.Second, Kind: "outage", Site: "primary", Nodes: []string{"a", "b"}, For: 5 * time.Second},
		{Seq: 2, At: 5 * time.Second, Kind: "crash", Node: "a"},
		{Seq: 3, At: 6 * time.Second, Kind: "op", Op: "pause"},
		{Seq: 4, At: 7 * time.Second, Kind: "partition", Node: "b"},
		{Seq: 5, At: 8 * time.Second, Kind: "restart", Node: "a"},
		{Seq: 6, At: 9 * time.Second, Kind: "heal", Node: "b"},
		{Seq: 7, At: 10 * time.Second, Kind: "op", Op: "ack"},
	}}
	fails := func(c Schedule, _ []int) bool {
		checkPaired(t, c)
		crash := slices.ContainsFunc(c.Events, func(e Event) bool { return e.Kind == "crash" })
		ack := slices.ContainsFunc(c.Events, func(e Event) bool { return e.Op == "ack" })
		return crash && ack
	}
	r := shrink(s, []int{}, fails, defaultShrinkBudget)
	if want := []int{1, 3, 4, 6}; !reflect.DeepEqual(r.drop, want) || r.spent {
		t.Fatalf("drop: got %v (spent %v), want %v\n%s", r.drop, r.spent, want, r.sched)
	}
}

// A spent budget ends the shrink with the smallest failing schedule found
// so far and says so.
func TestShrinkStopsWhenTheBudgetIsSpent(t *testing.T) {
	s := Generate(3)
	if len(units(s)) < 2 {
		t.Fatalf("seed 3 has %d units, want a schedule with at least 2", len(units(s)))
	}
	calls := 0
	r := shrink(s, nil, func(Schedule, []int) bool { calls++; return true }, shrinkBudget{candidates: 1, wall: time.Minute})
	if !r.spent || calls != 1 || r.candidates != 1 {
		t.Fatalf("spent %v after %d calls (%d candidates), want spent after 1", r.spent, calls, r.candidates)
	}
	if len(r.sched.Events) >= len(s.Events) || len(r.sched.Events) == 0 {
		t.Fatalf("got %d of %d events, want the first half removed", len(r.sched.Events), len(s.Events))
	}
	r = shrink(s, nil, func(Schedule, []int) bool { t.Fatal("called after the wall budget"); return false }, shrinkBudget{candidates: 100, wall: 0})
	if !r.spent || len(r.sched.Events) != len(s.Events) {
		t.Fatalf("zero wall budget: spent %v, %d of %d events, want the schedule unchanged", r.spent, len(r.sched.Events), len(s.Events))
	}
}

func TestParseDropRejectsWhatIsNotAnEventNumber(t *testing.T) {
	got, err := parseDrop("9, 3,3,12")
	if err != nil || !reflect.DeepEqual(got, []int{3, 9, 12}) {
		t.Fatalf("parseDrop: got %v, %v, want [3 9 12]", got, err)
	}
	for _, bad := range []string{"3,x", "0", "-2", "1.5"} {
		if _, err := parseDrop(bad); err == nil || !strings.Contains(err.Error(), "SIM_DROP") {
			t.Errorf("parseDrop(%q): got %v, want an error naming SIM_DROP", bad, err)
		}
	}
}

// The replay line names the seed, the dropped events, and -race exactly
// when this binary has it.
func TestReplayLineReplaysSeedDropAndRace(t *testing.T) {
	got := replayLine(42, []int{3, 7})
	if !strings.HasPrefix(got, "SIM_SEED=42 SIM_DROP=3,7 go test ") || !strings.HasSuffix(got, " -count=1 -run TestSimSchedules ./test/sim/") {
		t.Fatalf("replay line %q", got)
	}
	if strings.Contains(got, "-race") != raceEnabled {
		t.Fatalf("replay line %q: -race present %v, binary built with -race %v", got, !raceEnabled, raceEnabled)
	}
	if got := replayLine(5, nil); strings.Contains(got, "SIM_DROP") {
		t.Fatalf("replay line without drops %q names SIM_DROP", got)
	}
}

func TestFailureClassKeepsTheInvariantAndMasksNumbers(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"invariant 3: a applied index 40 but ...", "invariant 3: c applied index 12 but ..."},
		{"replicas did not converge within 30s of the faults ending", "replicas did not converge within 30s of the faults ending"},
		{"run: start a: listen 10.0.0.1:7400", "run: start a: listen 10.0.0.3:7400"},
	} {
		if ca, cb := failureClass(tc.a), failureClass(tc.b); ca != cb {
			t.Errorf("%q and %q: classes %q and %q differ", tc.a, tc.b, ca, cb)
		}
	}
	if failureClass("invariant 3: x") == failureClass("invariant 6: x") {
		t.Error("invariants 3 and 6 share a class")
	}
}

// Stats.add merges every field: a field added to Stats without a line in
// add fails here.
func TestStatsAddMergesEveryField(t *testing.T) {
	var one Stats
	v := reflect.ValueOf(&one).Elem()
	for i := range v.NumField() {
		v.Field(i).SetInt(1)
	}
	var sum Stats
	sum.add(one)
	sum.add(one)
	s := reflect.ValueOf(sum)
	for i := range s.NumField() {
		if got := s.Field(i).Int(); got != 2 {
			t.Errorf("Stats.%s: got %d after adding 1 twice, want 2", s.Type().Field(i).Name, got)
		}
	}
}

// Concurrent workers report the lowest failing seed, and every seed below
// it has run, however the runs' durations interleave them.
func TestRunSchedulesReportsTheLowestFailingSeed(t *testing.T) {
	for trial := range 20 {
		var mu = make(chan struct{}, 1)
		ran := map[uint64]bool{}
		b := runSchedules(t, 1, 200, 4, false, func(seed uint64) outcome {
			for range (seed*7919 + uint64(trial)) % 50 {
				runtime.Gosched() // vary how the workers interleave
			}
			mu <- struct{}{}
			ran[seed] = true
			<-mu
			o := outcome{seed: seed, stats: Stats{Reports: 1}}
			if seed == 37 || seed == 41 || seed == 150 {
				o.failure = "invariant 3: seeded"
			}
			return o
		})
		if b.first == nil || b.first.seed != 37 {
			t.Fatalf("trial %d: first failure %+v, want seed 37", trial, b.first)
		}
		for s := uint64(1); s < 37; s++ {
			if !ran[s] {
				t.Fatalf("trial %d: seed %d below the failure did not run", trial, s)
			}
		}
		if ran[150] || b.ran != len(ran) || b.total.Reports != b.ran {
			t.Fatalf("trial %d: ran %d (%d counted, %d reports), seed 150 ran %v", trial, len(ran), b.ran, b.total.Reports, ran[150])
		}
	}
}

// Shrinking real runs: of a schedule whose runs flip automatically, only
// the outage that a quorum sees is needed for the flip; the outage one
// node sees, the crash, the partition and the operator's command go.
func TestShrinkRealRunsToTheOutageAQuorumSees(t *testing.T) {
	s := Schedule{Seed: 1, Length: 20 * time.Second, Events: []Event{
		{Seq: 1, At: 3 * time.Second, Kind: "outage", Site: "primary", Nodes: []string{"a"}, For: 12 * time.Second},
		{Seq: 2, At: 4 * time.Second, Kind: "outage", Site: "primary", Nodes: []string{"b", "c"}, For: 10 * time.Second},
		{Seq: 3, At: 5 * time.Second, Kind: "crash", Node: "a"},
		{Seq: 4, At: 6 * time.Second, Kind: "partition", Node: "b", Peer: "c"},
		{Seq: 5, At: 7 * time.Second, Kind: "restart", Node: "a"},
		{Seq: 6, At: 8 * time.Second, Kind: "heal", Node: "b", Peer: "c"},
		{Seq: 7, At: 16 * time.Second, Kind: "op", Op: "ack"},
	}}
	flipped := func(o outcome) bool { return o.failure == "" && o.stats.AutoFlips > 0 }
	r := shrink(s, nil, func(cand Schedule, drop []int) bool {
		checkPaired(t, cand)
		return anyRun(t, cand, drop, flipped, 2, shrinkAttempts)
	}, defaultShrinkBudget)
	if !reflect.DeepEqual(r.drop, []int{1, 3, 4, 5, 6, 7}) || r.spent {
		t.Fatalf("shrunk (spent %v, %d candidates) to drop %v, want only event 2 left:\n%s", r.spent, r.candidates, r.drop, r.sched)
	}
}
