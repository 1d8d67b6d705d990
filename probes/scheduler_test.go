package probes

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// schedSites is one site "primary" with n probes of type typ.
func schedSites(n int, typ string) []SiteSpec {
	s := SiteSpec{Site: "primary"}
	for i := range n {
		s.Probes = append(s.Probes, Spec{Name: fmt.Sprintf("p%03d", i), Type: typ, Critical: new(i%2 == 0)})
	}
	return []SiteSpec{s}
}

func schedOK(context.Context, Spec, *slog.Logger) Result { return Result{OK: true} }

func schedNew(t *testing.T, sites []SiteSpec, opts SchedulerOptions) *Scheduler {
	t.Helper()
	s, err := NewScheduler(sites, opts)
	if err != nil {
		t.Fatalf("NewScheduler: %v", err)
	}
	return s
}

// schedRun starts s.Run and returns a stop func that cancels and waits.
func schedRun(t *testing.T, s *Scheduler) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := s.Run(ctx); err != nil {
			t.Errorf("Run: got %v, want nil", err)
		}
	})
	return func() { cancel(); wg.Wait() }
}

// TestSchedulerRoundsOnTicks: one round per interval on absolute ticks, even
// though every probe takes 400ms, so the schedule does not drift.
func TestSchedulerRoundsOnTicks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		slow := func(ctx context.Context, _ Spec, _ *slog.Logger) Result {
			calls.Add(1)
			time.Sleep(400 * time.Millisecond) // virtual time: the probe's cost
			return Result{OK: true}
		}
		s := schedNew(t, schedSites(5, "slow"), SchedulerOptions{Interval: time.Second, Probers: map[string]ProbeFunc{"slow": slow}})
		start := time.Now()
		stop := schedRun(t, s)
		for k := range 5 {
			r := <-s.Rounds()
			if r.Seq != uint64(k+1) || !r.Start.Equal(start.Add(time.Duration(k)*time.Second)) {
				t.Fatalf("round %d: got seq %d start +%s, want seq %d start +%ds", k, r.Seq, r.Start.Sub(start), k+1, k)
			}
			if len(r.Results) != 5 {
				t.Fatalf("round %d: got %d results, want 5", k, len(r.Results))
			}
			for i, nr := range r.Results {
				if !nr.OK || nr.Site != "primary" || nr.Probe != fmt.Sprintf("p%03d", i) || nr.Type != "slow" || nr.Critical != (i%2 == 0) {
					t.Fatalf("round %d result %d: got %+v, want ok primary/p%03d", k, i, nr, i)
				}
				if late := nr.Started.Sub(nr.Scheduled); late != 0 {
					t.Fatalf("round %d %s: got start %s late, want on time", k, nr.Probe, late)
				}
			}
		}
		stop()
		if err := s.Run(context.Background()); err != ErrRunTwice {
			t.Fatalf("second Run: got %v, want ErrRunTwice", err)
		}
		if got := calls.Load(); got < 25 {
			t.Fatalf("got %d prober calls, want >= 25", got)
		}
		if st := s.Stats(); st.Dropped != 0 || st.Skipped != 0 || st.Abandoned != 0 {
			t.Fatalf("got stats %+v, want nothing dropped, skipped or abandoned", st)
		}
	})
}

// TestSchedulerStampsCompletion: each result carries the watcher's clock
// when that probe finished (the decision core's evidence of when a failure
// happened), not the round's start or end; an abandoned prober's result
// completes when it is abandoned.
func TestSchedulerStampsCompletion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		takes := func(d time.Duration) ProbeFunc {
			return func(context.Context, Spec, *slog.Logger) Result {
				time.Sleep(d)
				return Result{OK: true}
			}
		}
		probers := map[string]ProbeFunc{
			"fast": takes(100 * time.Millisecond),
			"slow": takes(300 * time.Millisecond),
			"hangs": func(context.Context, Spec, *slog.Logger) Result {
				<-release
				return Result{OK: true}
			},
		}
		var sites []SiteSpec
		for _, typ := range []string{"fast", "slow", "hangs"} {
			sites = append(sites, SiteSpec{Site: typ, Probes: []Spec{{Name: "x", Type: typ, Timeout: 400 * time.Millisecond}}})
		}
		s := schedNew(t, sites, SchedulerOptions{Grace: 100 * time.Millisecond, Probers: probers})
		start := time.Now()
		r := s.RunOnce(context.Background())
		want := map[string]time.Duration{"fast": 100 * time.Millisecond, "slow": 300 * time.Millisecond, "hangs": 500 * time.Millisecond}
		for _, nr := range r.Results {
			if got := nr.Completed.Sub(start); got != want[nr.Site] {
				t.Errorf("%s: got completed at +%s, want +%s", nr.Site, got, want[nr.Site])
			}
		}
		close(release)
		synctest.Wait()
	})
}

func TestSchedulerConcurrencyBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var inFlight, peak atomic.Int64
		probe := func(ctx context.Context, _ Spec, _ *slog.Logger) Result {
			n := inFlight.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(100 * time.Millisecond)
			inFlight.Add(-1)
			return Result{OK: true}
		}
		s := schedNew(t, schedSites(20, "p"), SchedulerOptions{Concurrency: 3, Probers: map[string]ProbeFunc{"p": probe}})
		start := time.Now()
		r := s.RunOnce(context.Background())
		if got := peak.Load(); got != 3 {
			t.Fatalf("got peak concurrency %d, want 3", got)
		}
		// 20 probes, 3 at a time, 100ms each: 7 waves of virtual time.
		if got := time.Since(start); got != 700*time.Millisecond {
			t.Fatalf("got round of %s, want 700ms", got)
		}
		for _, nr := range r.Results {
			if !nr.OK {
				t.Fatalf("got %+v, want ok", nr)
			}
		}
	})
}

// TestSchedulerTimeouts: the scheduler enforces each probe's timeout, even
// on probers that misbehave.
func TestSchedulerTimeouts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		probers := map[string]ProbeFunc{
			// honours ctx but reports a plain error
			"honours": func(ctx context.Context, _ Spec, _ *slog.Logger) Result {
				<-ctx.Done()
				return Result{Class: ClassError, Phase: "connect", Reason: "context deadline exceeded"}
			},
			// ignores ctx until released: abandoned, then never started twice
			"hangs": func(ctx context.Context, _ Spec, _ *slog.Logger) Result {
				<-release
				return Result{OK: true}
			},
			// ignores ctx and says ok, but after its deadline
			"late": func(ctx context.Context, _ Spec, _ *slog.Logger) Result {
				time.Sleep(250 * time.Millisecond)
				return Result{OK: true}
			},
			"panics": func(context.Context, Spec, *slog.Logger) Result { panic("boom") },
			"ok":     schedOK,
		}
		var sites []SiteSpec
		for _, typ := range []string{"honours", "hangs", "late", "panics", "ok"} {
			sites = append(sites, SiteSpec{Site: typ, Probes: []Spec{{Name: "x", Type: typ, Timeout: 200 * time.Millisecond}}})
		}
		s := schedNew(t, sites, SchedulerOptions{Grace: 100 * time.Millisecond, Probers: probers})
		start := time.Now()
		r := s.RunOnce(context.Background())
		if got := time.Since(start); got != 300*time.Millisecond {
			t.Fatalf("got round of %s, want timeout + grace = 300ms", got)
		}
		want := map[string]struct {
			class  Class
			reason string
		}{
			"honours": {ClassTimeout, "timeout: context deadline exceeded"},
			"hangs":   {ClassTimeout, "no result within timeout 200ms"},
			"late":    {ClassTimeout, "timeout"},
			"panics":  {ClassError, "prober panicked: boom"},
			"ok":      {ClassNone, ""},
		}
		for _, nr := range r.Results {
			w := want[nr.Site]
			if nr.Class != w.class || nr.Reason != w.reason || nr.OK != (w.class == ClassNone) {
				t.Fatalf("%s: got ok=%v class %q reason %q, want class %q reason %q", nr.Site, nr.OK, nr.Class, nr.Reason, w.class, w.reason)
			}
		}
		if got := s.Stats().Abandoned; got != 1 {
			t.Fatalf("got %d abandoned, want 1", got)
		}
		// The hanging prober is still running: it is not started again.
		r = s.RunOnce(context.Background())
		if nr := r.Results[1]; nr.Class != ClassTimeout || !strings.Contains(nr.Reason, "previous run still running") {
			t.Fatalf("second round: got %q %q, want timeout, previous run still running", nr.Class, nr.Reason)
		}
		close(release)
		synctest.Wait()
		r = s.RunOnce(context.Background())
		if nr := r.Results[1]; !nr.OK {
			t.Fatalf("after release: got %q %q, want ok", nr.Class, nr.Reason)
		}
	})
}

// TestSchedulerSlowConsumer: nobody reads rounds for 5.5 intervals; probing
// goes on, and the consumer then gets the latest round, not the oldest.
func TestSchedulerSlowConsumer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		probe := func(context.Context, Spec, *slog.Logger) Result { calls.Add(1); return Result{OK: true} }
		s := schedNew(t, schedSites(3, "p"), SchedulerOptions{Interval: time.Second, Probers: map[string]ProbeFunc{"p": probe}})
		stop := schedRun(t, s)
		time.Sleep(5500 * time.Millisecond) // virtual: a consumer busy for 5.5 intervals
		synctest.Wait()
		r := <-s.Rounds()
		if r.Seq != 6 {
			t.Fatalf("got round %d, want the latest, 6", r.Seq)
		}
		stop()
		if got := calls.Load(); got != 18 {
			t.Fatalf("got %d probes run, want 18 (6 rounds of 3)", got)
		}
		if st := s.Stats(); st.Rounds != 6 || st.Dropped != 5 {
			t.Fatalf("got stats %+v, want 6 rounds, 5 dropped", st)
		}
	})
}

// TestSchedulerOverrunSkipsTicks: a round that overruns by more than an
// interval skips the missed tick instead of bursting, and stays on the grid.
func TestSchedulerOverrunSkipsTicks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int64
		probe := func(context.Context, Spec, *slog.Logger) Result {
			if n.Add(1) == 1 {
				time.Sleep(10 * time.Second) // ignores ctx, once
			}
			return Result{OK: true}
		}
		s := schedNew(t, schedSites(1, "p"), SchedulerOptions{Interval: time.Second, DefaultTimeout: 900 * time.Millisecond,
			Grace: 2 * time.Second, Probers: map[string]ProbeFunc{"p": probe}})
		start := time.Now()
		stop := schedRun(t, s)
		var starts []time.Duration
		for range 3 {
			r := <-s.Rounds()
			starts = append(starts, r.Start.Sub(start))
		}
		stop()
		want := []time.Duration{0, 2 * time.Second, 3 * time.Second}
		if fmt.Sprint(starts) != fmt.Sprint(want) {
			t.Fatalf("got round starts %v, want %v", starts, want)
		}
		if got := s.Stats().Skipped; got != 1 {
			t.Fatalf("got %d skipped ticks, want 1", got)
		}
		time.Sleep(10 * time.Second) // virtual: let the abandoned prober end, so the bubble can close
		synctest.Wait()
	})
}

// TestSchedulerJitter: each probe's offset from the tick is the same every
// round, below the bound, and spread across probes.
func TestSchedulerJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := schedNew(t, schedSites(50, "p"), SchedulerOptions{Interval: time.Second, Probers: map[string]ProbeFunc{"p": schedOK}})
		stop := schedRun(t, s)
		offsets := map[string]time.Duration{}
		distinct := map[time.Duration]bool{}
		for k := range 3 {
			r := <-s.Rounds()
			for _, nr := range r.Results {
				off := nr.Scheduled.Sub(r.Start)
				if off < 0 || off >= 100*time.Millisecond {
					t.Fatalf("%s: got offset %s, want in [0, 100ms)", nr.Probe, off)
				}
				if prev, ok := offsets[nr.Probe]; ok && prev != off {
					t.Fatalf("%s round %d: got offset %s, want the fixed %s", nr.Probe, k, off, prev)
				}
				offsets[nr.Probe] = off
				distinct[off] = true
			}
		}
		stop()
		if len(distinct) < 40 {
			t.Fatalf("got %d distinct offsets for 50 probes, want them spread", len(distinct))
		}
	})
}

func TestJitterOffset(t *testing.T) {
	bound := 200 * time.Millisecond
	for i := range 10000 {
		name := fmt.Sprintf("probe-%d", i)
		off := jitterOffset("primary", name, bound)
		if off < 0 || off >= bound {
			t.Fatalf("jitterOffset(%s): got %s, want in [0, %s)", name, off, bound)
		}
		if again := jitterOffset("primary", name, bound); again != off {
			t.Fatalf("jitterOffset(%s): got %s then %s, want fixed", name, off, again)
		}
	}
	if got := jitterOffset("primary", "lms", 0); got != 0 {
		t.Fatalf("jitterOffset with bound 0: got %s, want 0", got)
	}
	tests := []struct {
		name    string
		opts    SchedulerOptions
		timeout time.Duration
		want    time.Duration
	}{
		{"fraction", SchedulerOptions{Interval: 2 * time.Second, JitterFraction: 0.1, Grace: 100 * time.Millisecond}, time.Second, 200 * time.Millisecond},
		{"cut to fit before the next tick", SchedulerOptions{Interval: time.Second, JitterFraction: 0.1}, 950 * time.Millisecond, 50 * time.Millisecond},
		{"no room", SchedulerOptions{Interval: time.Second, JitterFraction: 0.1}, time.Second, 0},
		{"no interval", SchedulerOptions{JitterFraction: 0.1}, time.Second, 0},
		{"disabled", SchedulerOptions{Interval: time.Second, JitterFraction: -1}, 100 * time.Millisecond, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := schedMaxJitter(tt.opts, tt.timeout); got != tt.want {
				t.Fatalf("schedMaxJitter: got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestNewSchedulerValidates(t *testing.T) {
	probers := map[string]ProbeFunc{"p": schedOK, "http": ProbeHTTP}
	tests := []struct {
		name  string
		sites []SiteSpec
		opts  SchedulerOptions
		want  []string
	}{
		{"valid", schedSites(2, "p"), SchedulerOptions{Interval: time.Second}, nil},
		{"every problem at once", []SiteSpec{
			{Site: "", Probes: []Spec{{Name: "a", Type: "p"}}},
			{Site: "primary", Probes: []Spec{
				{Name: "a", Type: "p"}, {Name: "a", Type: "p"}, {Name: "b", Type: "nope"},
				{Name: "c", Type: "p", Timeout: 2 * time.Second}, {Name: "d", Type: "http"},
				{Name: "e", Type: "http", HTTP: &HTTPSpec{URL: "https://x/", BodyMatch: "(["}},
			}},
		}, SchedulerOptions{Interval: time.Second}, []string{
			"sites[0]: name must be set",
			"sites[primary].probes[a]: name: duplicate probe",
			`sites[primary].probes[b]: type: no prober for "nope"`,
			"sites[primary].probes[c]: timeout: 2s must be below the interval 1s",
			"sites[primary].probes[d]: http: spec missing",
			"sites[primary].probes[e]: body_match: ",
		}},
		{"default timeout not below interval", schedSites(1, "p"), SchedulerOptions{Interval: time.Second, DefaultTimeout: time.Second}, []string{"default timeout: 1s must be below"}},
		{"jitter too large", schedSites(1, "p"), SchedulerOptions{JitterFraction: 0.9}, []string{"jitter fraction"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Probers = probers
			_, err := NewScheduler(tt.sites, tt.opts)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("got %v, want no error", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("got no error, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("got %v, want it to contain %q", err, w)
				}
			}
		})
	}
	s := schedNew(t, schedSites(1, "p"), SchedulerOptions{Probers: probers})
	if err := s.Run(context.Background()); err != ErrNoInterval {
		t.Fatalf("Run without interval: got %v, want ErrNoInterval", err)
	}
}

// TestSchedulerPhaseSpreadsVantagePoints: three schedulers started at the
// same moment, with phases index/3 × interval, tick at three distinct
// moments of each interval, on the wall-clock grid rather than from their
// start, so a quorum of watchers samples a site three times per interval.
func TestSchedulerPhaseSpreadsVantagePoints(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval = time.Second
		time.Sleep(123 * time.Millisecond) // virtual: start off the grid
		var firsts []time.Time
		for i := range 3 {
			phase := time.Duration(i) * interval / 3
			s := schedNew(t, schedSites(1, "p"), SchedulerOptions{Interval: interval, Phase: phase, Probers: map[string]ProbeFunc{"p": schedOK}})
			stop := schedRun(t, s)
			var starts []time.Time
			for range 3 {
				starts = append(starts, (<-s.Rounds()).Start)
			}
			stop()
			for k, st := range starts {
				if got := time.Duration(st.UnixNano() % int64(interval)); got != phase {
					t.Fatalf("scheduler %d round %d: got phase %s, want %s", i, k, got, phase)
				}
				if k > 0 && st.Sub(starts[k-1]) != interval {
					t.Fatalf("scheduler %d: rounds %s apart, want %s", i, st.Sub(starts[k-1]), interval)
				}
			}
			firsts = append(firsts, starts[0])
		}
		// Measured spread: each pair of neighbours' phases, within 10% of
		// interval/3.
		var phases []time.Duration
		for _, f := range firsts {
			phases = append(phases, time.Duration(f.UnixNano()%int64(interval)))
		}
		slices.Sort(phases)
		for i := range phases {
			gap := (phases[(i+1)%3] - phases[i] + interval) % interval
			if d := gap - interval/3; d < -interval/30 || d > interval/30 {
				t.Fatalf("phases %v: gap %s, want %s ± 10%%", phases, gap, interval/3)
			}
		}
	})
}

// TestSchedulerSetPhaseMovesGrid: a phase change moves the next tick onto
// the new grid without a burst (no two rounds closer than half an
// interval) and without counting a skipped tick.
func TestSchedulerSetPhaseMovesGrid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval = time.Second
		s := schedNew(t, schedSites(1, "p"), SchedulerOptions{Interval: interval, Probers: map[string]ProbeFunc{"p": schedOK}})
		stop := schedRun(t, s)
		var starts []time.Duration
		epoch := time.Now()
		starts = append(starts, (<-s.Rounds()).Start.Sub(epoch))
		s.SetPhase(200 * time.Millisecond) // closer than half an interval to the next tick
		for range 2 {
			starts = append(starts, (<-s.Rounds()).Start.Sub(epoch))
		}
		s.SetPhase(-100 * time.Millisecond) // 900ms, reduced modulo the interval
		for range 2 {
			starts = append(starts, (<-s.Rounds()).Start.Sub(epoch))
		}
		stop()
		want := []time.Duration{0, 1200 * time.Millisecond, 2200 * time.Millisecond, 2900 * time.Millisecond, 3900 * time.Millisecond}
		if fmt.Sprint(starts) != fmt.Sprint(want) {
			t.Fatalf("got round starts %v, want %v", starts, want)
		}
		if got := s.Phase(); got != 900*time.Millisecond {
			t.Fatalf("got phase %s, want 900ms", got)
		}
		if st := s.Stats(); st.Skipped != 0 {
			t.Fatalf("got %d skipped ticks, want 0", st.Skipped)
		}
	})
}
