package sim

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// runBound is far more virtual time than a run takes (its length, the
// settling bound and raft's leftovers).
const runBound = 5 * time.Minute

// simEnv is what the SIM_* variables choose.
type simEnv struct {
	first    uint64 // SIM_SEED, default 1
	n        int    // SIM_N, default 30 (1 with SIM_SEED alone)
	drop     []int  // SIM_DROP: event numbers removed from each schedule
	parallel int    // SIM_PARALLEL, default GOMAXPROCS
	shrink   bool   // SIM_SHRINK=0 turns shrinking off
	all      bool   // SIM_ALL=1 runs every seed and counts the failing ones
	repeat   int    // SIM_REPEAT, default 1: runs of each seed
}

func readSimEnv() (simEnv, error) {
	e := simEnv{first: 1, n: 30, parallel: runtime.GOMAXPROCS(0), shrink: true, repeat: 1}
	seeded := false
	if s := os.Getenv("SIM_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return e, fmt.Errorf("SIM_SEED=%q: want a seed, an unsigned integer", s)
		}
		e.first, e.n, seeded = v, 1, true
	}
	var err error
	if e.n, err = countEnv("SIM_N", e.n); err != nil {
		return e, err
	}
	if s := os.Getenv("SIM_DROP"); s != "" {
		d, err := parseDrop(s)
		if err != nil {
			return e, err
		}
		if !seeded || e.n != 1 {
			return e, fmt.Errorf("SIM_DROP=%q: needs SIM_SEED and one schedule (event numbers belong to one seed's schedule)", s)
		}
		e.drop = d
	}
	if e.parallel, err = countEnv("SIM_PARALLEL", e.parallel); err != nil {
		return e, err
	}
	if e.repeat, err = countEnv("SIM_REPEAT", e.repeat); err != nil {
		return e, err
	}
	if s := os.Getenv("SIM_ALL"); s != "" {
		v, err := strconv.ParseBool(s)
		if err != nil {
			return e, fmt.Errorf("SIM_ALL=%q: want 1 or 0", s)
		}
		e.all = v
	}
	if s := os.Getenv("SIM_SHRINK"); s != "" {
		v, err := strconv.ParseBool(s)
		if err != nil {
			return e, fmt.Errorf("SIM_SHRINK=%q: want 1 or 0", s)
		}
		e.shrink = v
	}
	return e, nil
}

// countEnv reads the count in the variable name, def when it is unset.
func countEnv(name string, def int) (int, error) {
	s := os.Getenv(name)
	if s == "" {
		return def, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		return def, fmt.Errorf("%s=%q: want a count >= 1", name, s)
	}
	return v, nil
}

// seedOfRun is the seed run j plays when each seed from first runs repeat
// times in a row (SIM_REPEAT): the runs are handed out in order, so the
// lowest failing seed is still the one reported.
func seedOfRun(first uint64, repeat int, j uint64) uint64 {
	return first + j/uint64(max(repeat, 1))
}

// schedule is the schedule of seed, less the events drop names.
func schedule(seed uint64, drop []int) Schedule {
	return Generate(seed).without(drop)
}

// replayLine is the command that replays seed's schedule less drop, with
// -race when this binary has it.
func replayLine(seed uint64, drop []int) string {
	env := fmt.Sprintf("SIM_SEED=%d", seed)
	if loseReplies {
		env = "SIM_LOSE_REPLIES=1 " + env
	}
	if len(drop) > 0 {
		env += " SIM_DROP=" + formatDrop(drop)
	}
	race := ""
	if raceEnabled {
		race = " -race"
	}
	return fmt.Sprintf("%s go test%s -count=1 -run TestSimSchedules ./test/sim/", env, race)
}

// outcome is what one run of one schedule did.
type outcome struct {
	seed    uint64
	stats   Stats
	failure string // the first violation or the run's error; "" when it passed
}

// runOne plays sched in a synctest bubble of its own. It never fails t:
// the caller decides what to report, so that concurrent runs report
// deterministically. A run still going after runBound of virtual time
// (a hang that raft's timers keep in motion) panics with the replay line
// and every goroutine's stack, since nothing can stop it.
//
// A panic in any goroutine of the run (raft's own, say) ends the process
// before the harness can report, so the run names itself in advance: its
// goroutines carry its seed and replay line as pprof labels, which a
// traceback prints (TestMain turns GODEBUG tracebacklabels on), and it is
// listed in the in-flight file while it runs.
func runOne(t *testing.T, sched Schedule, drop []int) outcome {
	replay := replayLine(sched.Seed, drop)
	done := inflight.add(replay)
	defer done()
	o := outcome{seed: sched.Seed}
	labels := pprof.Labels("sim_seed", strconv.FormatUint(sched.Seed, 10), "sim_replay", replay)
	pprof.Do(context.Background(), labels, func(context.Context) { o = runBubble(t, sched, drop) })
	return o
}

// bubbleHook, when set, runs in a goroutine of each run's bubble, as
// raft's goroutines do (a test makes it panic).
var bubbleHook func()

// runBubble is runOne's run, in the bubble.
func runBubble(t *testing.T, sched Schedule, drop []int) outcome {
	o := outcome{seed: sched.Seed}
	synctest.Test(t, func(t *testing.T) {
		if bubbleHook != nil {
			go bubbleHook()
		}
		watchdog := time.AfterFunc(runBound, func() {
			buf := make([]byte, 1<<22)
			panic(fmt.Sprintf("seed %d: still running after %s of virtual time\nreplay: %s\n%s\n%s",
				sched.Seed, runBound, replayLine(sched.Seed, drop), sched, buf[:runtime.Stack(buf, true)]))
		})
		defer watchdog.Stop()
		w, err := Run(sched)
		if err != nil {
			o.failure = "run: " + err.Error()
		}
		if w == nil {
			return
		}
		if v := w.Violations(); len(v) > 0 && o.failure == "" {
			o.failure = v[0]
		}
		o.stats = w.Stats()
	})
	return o
}

// batch is what runSchedules found.
type batch struct {
	total  Stats
	ran    int
	first  *outcome       // the failing run of the lowest seed, or nil
	failed int            // failing runs (all of them only when keepGoing)
	caught map[string]int // failing runs by failureClass
}

// runSchedules runs the schedules of seeds first..first+n-1 with run,
// par at a time. Seeds are handed out in order and, unless keepGoing (to
// count how many seeds an injected bug breaks), none after the first
// failure, so every seed below a failing one has run when it returns:
// the failure it reports is the lowest failing seed's, whatever the
// workers' timing.
func runSchedules(t *testing.T, first uint64, n, par int, keepGoing bool, run func(seed uint64) outcome) batch {
	var (
		mu   sync.Mutex
		next = first
		end  = first + uint64(n)
		b    = batch{caught: map[string]int{}}
		wg   sync.WaitGroup
	)
	start := time.Now()
	progress := max(1000, n/20)
	for range min(par, n) {
		wg.Go(func() {
			for {
				mu.Lock()
				if (b.first != nil && !keepGoing) || next >= end {
					mu.Unlock()
					return
				}
				seed := next
				next++
				mu.Unlock()

				o := run(seed)

				mu.Lock()
				b.total.add(o.stats)
				b.ran++
				if o.failure != "" {
					b.failed++
					b.caught[failureClass(o.failure)]++
					if b.first == nil || o.seed < b.first.seed {
						b.first = &o
					}
				}
				if n > progress && b.ran%progress == 0 {
					t.Logf("%d/%d schedules, %.1f/s", b.ran, n, float64(b.ran)/time.Since(start).Seconds())
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return b
}

// summary is the Stats log line: what a schedule contains on average.
func summary(b batch, wall time.Duration, par int) string {
	n := max(b.ran, 1)
	per := func(v int) float64 { return float64(v) / float64(n) }
	s := b.total
	return fmt.Sprintf("%d schedules in %s wall (%.1f/s, %d at a time, race=%v); per schedule: %s virtual, %.1f faults (%.1f DNS), %.1f operator commands (%.1f acknowledged), %.0f reports (%.0f committed, %.0f of them lean), %.1f leaderships, %.1f DNS writes, %.1f remediation actions; %d automatic flips in all; %d runs with failover groups, %d automatic flips in them, %d batched UPDATEs carrying %d groups' swaps (%d refused whole); %d snapshots installed below a running replica's applied index",
		b.ran, wall.Round(time.Millisecond), float64(b.ran)/wall.Seconds(), par, raceEnabled, (s.Virtual / time.Duration(n)).Round(100*time.Millisecond),
		per(s.Faults), per(s.DNSFaults), per(s.Commands), per(s.CommandsAcked), per(s.Reports), per(s.ReportsCommitted), per(s.ReportsLean),
		per(s.Leaderships), per(s.DNSWrites), per(s.RemediationActions), s.AutoFlips, s.GroupRuns, s.GroupAutoFlips,
		s.BatchWrites, s.BatchedSwaps, s.BatchesRefused, s.StaleSnapshots)
}

var failureNumbers = regexp.MustCompile(`[0-9]+(\.[0-9]+)?(ms|s|µs|ns)?`)

// failureClass names the kind of a failure, so that shrinking keeps a
// schedule that fails the same way: the invariant's number ("invariant
// 3"), or the message with its numbers masked.
func failureClass(failure string) string {
	if rest, ok := strings.CutPrefix(failure, "invariant "); ok {
		num, _, _ := strings.Cut(rest, ":")
		return "invariant " + num
	}
	line, _, _ := strings.Cut(failure, "\n")
	return failureNumbers.ReplaceAllString(line, "#")
}

// shrinkBudget caps a shrink: candidates tried, and wall time.
type shrinkBudget struct {
	candidates int
	wall       time.Duration
}

var defaultShrinkBudget = shrinkBudget{candidates: 200, wall: 2 * time.Minute}

// shrinkAttempts is how often a candidate runs before it counts as
// passing: a seed fixes the schedule, not the interleaving.
const shrinkAttempts = 3

// shrinkResult is the smallest failing schedule a shrink found.
type shrinkResult struct {
	sched      Schedule
	drop       []int // event numbers of Generate(seed) it leaves out
	candidates int
	wall       time.Duration
	spent      bool // the budget ran out before the result was 1-minimal
}

// shrink removes events from sched (Generate(sched.Seed) less drop)
// while fails says the rest still fails, within budget. fails gets each
// candidate and the event numbers of Generate(seed) it leaves out.
func shrink(sched Schedule, drop []int, fails func(cand Schedule, drop []int) bool, budget shrinkBudget) shrinkResult {
	start := time.Now()
	r := shrinkResult{}
	try := func(us [][]int) (bool, error) {
		if r.candidates >= budget.candidates || time.Since(start) >= budget.wall {
			r.spent = true
			return false, errBudget
		}
		r.candidates++
		d := slices.Concat(drop, dropped(sched, us))
		slices.Sort(d)
		return fails(sched.without(d), d), nil
	}
	us := ddmin(units(sched), try)
	r.drop = slices.Concat(drop, dropped(sched, us))
	slices.Sort(r.drop)
	r.sched = sched.without(r.drop)
	r.wall = time.Since(start)
	return r
}

// anyRun runs sched up to attempts times, par at a time, and reports
// whether a run satisfied keep.
func anyRun(t *testing.T, sched Schedule, drop []int, keep func(outcome) bool, par, attempts int) bool {
	var (
		mu      sync.Mutex
		started int
		hit     bool
		wg      sync.WaitGroup
	)
	for range par {
		wg.Go(func() {
			for {
				mu.Lock()
				if hit || started >= attempts {
					mu.Unlock()
					return
				}
				started++
				mu.Unlock()
				o := runOne(t, sched, drop)
				if keep(o) {
					mu.Lock()
					hit = true
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return hit
}

// inflight lists the schedules running in this process, one replay line
// each, in a file rewritten whenever one starts or ends: when the process
// dies in a way no code of it sees (a panic in raft's goroutines, the
// OOM killer, a kill -9), the file still names every schedule it was
// running. It is removed when the process ends normally.
var inflight = &inflightFile{path: inflightPath(), running: map[int]string{}}

// inflightPath is SIM_INFLIGHT, or a file of this process in the
// temporary directory.
func inflightPath() string {
	if p := os.Getenv("SIM_INFLIGHT"); p != "" {
		return p
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("drwatch-sim-inflight-%d", os.Getpid()))
}

type inflightFile struct {
	path    string
	mu      sync.Mutex
	next    int
	running map[int]string // replay lines by run
	told    bool           // the path was printed
	failed  bool           // a write failed (said once)
}

// add lists the run whose replay line is replay until the returned func
// is called.
func (f *inflightFile) add(replay string) (done func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.next
	f.next++
	f.running[id] = replay
	f.write()
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.running, id)
		f.write()
	}
}

// write rewrites the file (under mu). A write(2) is in the kernel's hands
// when it returns, so the file survives the process; only a crash of the
// machine needs more, which the soak does not guard against.
func (f *inflightFile) write() {
	if !f.told {
		f.told = true
		fmt.Fprintf(os.Stderr, "sim: the schedules running are listed in %s while they run\n", f.path)
	}
	lines := slices.Sorted(maps.Values(f.running))
	b := []byte(strings.Join(lines, "\n"))
	if len(lines) > 0 {
		b = append(b, '\n')
	}
	if err := os.WriteFile(f.path, b, 0o644); err != nil && !f.failed {
		f.failed = true
		fmt.Fprintf(os.Stderr, "sim: in-flight file: %v\n", err)
	}
}

// remove deletes the file: the process ends normally.
func (f *inflightFile) remove() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.told {
		_ = os.Remove(f.path)
	}
}
