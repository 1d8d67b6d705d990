package probes

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// fastSites is a primary with two probes and a backup with one.
func fastSites(typ string) []SiteSpec {
	return []SiteSpec{
		{Site: "primary", Probes: []Spec{{Name: "lms", Type: typ}, {Name: "api", Type: typ}}},
		{Site: "backup", Probes: []Spec{{Name: "lms", Type: typ}}},
	}
}

// collect reads rounds until the virtual clock reaches until.
func collect(t *testing.T, s *Scheduler, until time.Time) []Round {
	t.Helper()
	var out []Round
	timer := time.NewTimer(time.Until(until))
	defer timer.Stop()
	for {
		select {
		case r := <-s.Rounds():
			out = append(out, r)
		case <-timer.C:
			return out
		}
	}
}

// TestSchedulerFastRoundsBounded: a site set fast is re-probed on the fast
// grid between the full rounds, in rounds holding only its results, at most
// once per fast interval; the full rounds keep their grid and phase, the
// other site is probed once per interval, and setting the site back stops
// the re-probing.
func TestSchedulerFastRoundsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval, fast, phase = time.Second, 250 * time.Millisecond, 100 * time.Millisecond
		var calls sync.Map // site/probe -> *atomic.Int64
		probe := func(_ context.Context, sp Spec, _ *slog.Logger) Result {
			n, _ := calls.LoadOrStore(sp.Name, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
			return Result{OK: true}
		}
		reg := prometheus.NewRegistry()
		m, err := NewMetrics(reg)
		if err != nil {
			t.Fatal(err)
		}
		s := schedNew(t, fastSites("p"), SchedulerOptions{Interval: interval, Phase: phase, FastInterval: fast,
			JitterFraction: -1, Metrics: m, Probers: map[string]ProbeFunc{"p": probe}})
		epoch := time.Now() // on the grid: synctest starts at a whole second
		stop := schedRun(t, s)
		s.SetFast("primary", true)
		s.SetFast("nowhere", true) // not a site: nothing happens
		rounds := collect(t, s, epoch.Add(4*interval+phase+fast/2))
		s.SetFast("primary", false)
		after := collect(t, s, epoch.Add(7*interval+phase+fast/2))
		stop()

		var full, fastStarts []time.Duration
		var covering []time.Time // ticks of every round covering the primary
		for _, r := range rounds {
			at := r.Start.Sub(epoch)
			if r.Fast {
				fastStarts = append(fastStarts, at)
				if len(r.Results) != 2 || r.Results[0].Site != "primary" || r.Results[1].Site != "primary" {
					t.Fatalf("fast round at +%s: got %d results %+v, want only the primary's two", at, len(r.Results), r.Results)
				}
			} else {
				full = append(full, at)
				if len(r.Results) != 3 {
					t.Fatalf("full round at +%s: got %d results, want 3", at, len(r.Results))
				}
			}
			covering = append(covering, r.Start)
		}
		wantFull := []time.Duration{phase, phase + interval, phase + 2*interval, phase + 3*interval, phase + 4*interval}
		if fmt.Sprint(full) != fmt.Sprint(wantFull) {
			t.Fatalf("full rounds at %v, want %v: the grid must not move", full, wantFull)
		}
		// The fast grid is the full one, four times finer; its ticks on a
		// full tick are the full round's.
		var wantFast []time.Duration
		for k := range 4 {
			for j := 1; j < 4; j++ {
				wantFast = append(wantFast, phase+time.Duration(k)*interval+time.Duration(j)*fast)
			}
		}
		if fmt.Sprint(fastStarts) != fmt.Sprint(wantFast) {
			t.Fatalf("fast rounds at %v, want %v", fastStarts, wantFast)
		}
		for i := 1; i < len(covering); i++ {
			if d := covering[i].Sub(covering[i-1]); d < fast {
				t.Fatalf("rounds covering the primary %s apart, want at least the fast interval %s", d, fast)
			}
		}
		for _, r := range after {
			if r.Fast {
				t.Fatalf("got a fast round at +%s after SetFast(false)", r.Start.Sub(epoch))
			}
		}
		if len(after) != 3 {
			t.Fatalf("got %d rounds in the 3 intervals after SetFast(false), want 3 full ones", len(after))
		}
		st := s.Stats()
		if st.FastRounds != 12 || st.Rounds != 8 || st.Dropped != 0 || st.FastSkipped != 0 {
			t.Fatalf("got stats %+v, want 12 fast rounds, 8 full, none dropped or skipped", st)
		}
		if got := metricsGather(t, reg)["drwatch_probe_fast_rounds_total{site=primary}"]; got != 12 {
			t.Fatalf("drwatch_probe_fast_rounds_total{site=primary}: got %v, want 12", got)
		}
		// Both the primary's probes ran 8 full + 12 fast times; the backup's
		// (whose name the primary shares: one counter) adds only the 8 full.
		if n, _ := calls.Load("api"); n.(*atomic.Int64).Load() != 20 {
			t.Fatalf("primary api probed %d times, want 20", n.(*atomic.Int64).Load())
		}
		if n, _ := calls.Load("lms"); n.(*atomic.Int64).Load() != 28 {
			t.Fatalf("lms (primary and backup) probed %d times, want 20 + 8", n.(*atomic.Int64).Load())
		}
	})
}

// TestSchedulerProbeNow: ProbeNow runs one fast round at once when no round
// covered the site within the fast interval, and otherwise as soon as that
// bound allows; any number of calls before it runs make one round; without
// SetFast no further fast rounds follow.
func TestSchedulerProbeNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval, fast = time.Second, 250 * time.Millisecond
		s := schedNew(t, fastSites("p"), SchedulerOptions{Interval: interval, FastInterval: fast, JitterFraction: -1,
			Probers: map[string]ProbeFunc{"p": schedOK}})
		epoch := time.Now()
		stop := schedRun(t, s)
		if r := <-s.Rounds(); r.Fast || r.Start != epoch {
			t.Fatalf("first round: got fast=%v at +%s, want the full round at +0", r.Fast, r.Start.Sub(epoch))
		}
		// 100ms after the full round: due at +250ms, the fast interval after it.
		time.Sleep(100 * time.Millisecond)
		for range 5 {
			s.ProbeNow("backup")
		}
		r := <-s.Rounds()
		if !r.Fast || r.Start.Sub(epoch) != fast || len(r.Results) != 1 || r.Results[0].Site != "backup" {
			t.Fatalf("got fast=%v at +%s with %d results, want one backup result at +%s", r.Fast, r.Start.Sub(epoch), len(r.Results), fast)
		}
		// 600ms after the full round: at once.
		time.Sleep(350 * time.Millisecond)
		s.ProbeNow("primary")
		r = <-s.Rounds()
		if !r.Fast || r.Start.Sub(epoch) != 600*time.Millisecond || len(r.Results) != 2 {
			t.Fatalf("got fast=%v at +%s with %d results, want the primary's two at +600ms", r.Fast, r.Start.Sub(epoch), len(r.Results))
		}
		if r = <-s.Rounds(); r.Fast || r.Start.Sub(epoch) != interval {
			t.Fatalf("got fast=%v at +%s, want the next full round at +1s", r.Fast, r.Start.Sub(epoch))
		}
		stop()
		if st := s.Stats(); st.FastRounds != 2 {
			t.Fatalf("got %d fast rounds, want 2", st.FastRounds)
		}
	})
}

// TestSchedulerFastNeverOverlaps: probes that take longer than the fast
// interval are never run twice at once; a fast round due while a round of
// the site runs is skipped, and a full round due while a fast round runs
// the site's probes waits for them instead of moving its tick.
func TestSchedulerFastNeverOverlaps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval, fast = time.Second, 250 * time.Millisecond
		var inFlight, peak atomic.Int64
		slow := func(ctx context.Context, sp Spec, _ *slog.Logger) Result {
			if sp.Name == "api" {
				n := inFlight.Add(1)
				defer inFlight.Add(-1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				time.Sleep(400 * time.Millisecond) // virtual: a slow failure
			}
			return Result{Class: ClassTimeout, Reason: "slow"}
		}
		s := schedNew(t, fastSites("p"), SchedulerOptions{Interval: interval, FastInterval: fast, JitterFraction: -1,
			DefaultTimeout: 500 * time.Millisecond, Probers: map[string]ProbeFunc{"p": slow}})
		epoch := time.Now()
		stop := schedRun(t, s)
		s.SetFast("primary", true)
		// Until the fifth full round, which waits up to 400ms for a fast
		// round's probes, is in.
		rounds := collect(t, s, epoch.Add(4*interval+900*time.Millisecond))
		stop()
		if got := peak.Load(); got != 1 {
			t.Fatalf("got %d concurrent runs of one probe, want 1", got)
		}
		// Every probe fails, so each full round comes in parts, a failed
		// result each (see Round); the parts of one round share its tick.
		// Two failures in at the same instant may find the first not yet
		// taken by the consumer: the pending round then carries both
		// (Rounds, counted as dropped), so the parts are checked one per
		// failed probe only when nothing was merged, and always hold each
		// failed probe once.
		merged := s.Stats().Dropped > 0
		var full int
		var parts []string
		part := func(r Round) string {
			var names []string
			for _, nr := range r.Results {
				names = append(names, nr.Site+"/"+nr.Probe)
			}
			return strings.Join(names, "+")
		}
		whole := func() {
			if full == 0 {
				return
			}
			slices.Sort(parts)
			if got := fmt.Sprint(parts); !merged && got != "[backup/lms primary/api primary/lms]" {
				t.Fatalf("full round %d came in parts %v, want one per failed probe", full-1, got)
			}
			var probes []string
			for _, p := range parts {
				probes = append(probes, strings.Split(p, "+")...)
			}
			slices.Sort(probes)
			if got := fmt.Sprint(probes); got != "[backup/lms primary/api primary/lms]" {
				t.Fatalf("full round %d came in parts %v, want each failed probe once", full-1, parts)
			}
		}
		for _, r := range rounds {
			if r.Fast {
				continue
			}
			if full > 0 && r.Start.Equal(epoch.Add(time.Duration(full-1)*interval)) {
				parts = append(parts, part(r))
				continue
			}
			whole()
			if r.Start.Sub(epoch) != time.Duration(full)*interval {
				t.Fatalf("full round %d at +%s, want +%s", full, r.Start.Sub(epoch), time.Duration(full)*interval)
			}
			parts = []string{part(r)}
			full++
		}
		st := s.Stats()
		if full != 5 || st.FastRounds == 0 || st.FastSkipped == 0 {
			t.Fatalf("got %d full rounds, stats %+v, want 5 full, some fast rounds and some skipped", full, st)
		}
	})
}

// TestSchedulerMergesPendingRound: a round replacing one the consumer has
// not taken keeps the older round's results for the probes it did not
// run, so a fast round never costs the other site's results.
func TestSchedulerMergesPendingRound(t *testing.T) {
	s := schedNew(t, fastSites("p"), SchedulerOptions{Probers: map[string]ProbeFunc{"p": schedOK}})
	full := s.RunOnce(context.Background())
	full.Seq = 1
	s.publish(full)
	fastR := Round{Seq: 2, Fast: true}
	for _, nr := range full.Results[:2] {
		nr.OK = false
		fastR.Results = append(fastR.Results, nr)
	}
	s.publish(fastR)
	got := <-s.Rounds()
	if got.Seq != 2 || got.Fast || len(got.Results) != 3 {
		t.Fatalf("got seq %d fast=%v %d results, want seq 2, not fast, 3 results", got.Seq, got.Fast, len(got.Results))
	}
	for i, nr := range got.Results {
		want := full.Results[i]
		if nr.Site != want.Site || nr.Probe != want.Probe || nr.OK != (want.Site == "backup") {
			t.Fatalf("result %d: got %s/%s ok=%v, want %s/%s, the primary's from the fast round", i, nr.Site, nr.Probe, nr.OK, want.Site, want.Probe)
		}
	}
	if st := s.Stats(); st.Dropped != 1 {
		t.Fatalf("got %d dropped, want 1", st.Dropped)
	}
}

// A fast tick whose timer fires late (a busy machine) still runs, at the
// tick it waited for, rather than moving on to the next one; one a full
// round covered meanwhile, or one for a site no longer fast, does not.
func TestSchedulerLateFastTimerRunsItsTick(t *testing.T) {
	const interval, fast = 2 * time.Second, 500 * time.Millisecond
	s := schedNew(t, fastSites("p"), SchedulerOptions{Interval: interval, FastInterval: fast, Probers: map[string]ProbeFunc{"p": schedOK}})
	fs := s.sites["primary"]
	grid := time.Unix(1_700_000_000, 0) // a full tick
	probed := grid.Add(fs.lead)         // when that round started probing the site
	fs.last.Store(probed.UnixNano())
	fs.on.Store(true)
	awaited, ok := s.fastDue(fs, probed.Add(10*time.Millisecond))
	if !ok || !awaited.Equal(probed.Add(fast)) {
		t.Fatalf("due after a full round: got %s %v, want +%s", awaited.Sub(grid), ok, fs.lead+fast)
	}
	late := awaited.Add(60 * time.Millisecond)
	if tick, ok := s.fastReady(fs, awaited, late); !ok || !tick.Equal(awaited) {
		t.Fatalf("timer 60ms late: got tick +%s ready=%v, want the awaited +%s", tick.Sub(grid), ok, awaited.Sub(grid))
	}
	if _, ok := s.fastReady(fs, awaited, awaited.Add(-time.Millisecond)); ok {
		t.Fatalf("timer early: got ready, want not yet")
	}
	fs.last.Store(awaited.Add(-time.Millisecond).UnixNano()) // a round covered the site meanwhile
	if _, ok := s.fastReady(fs, awaited, late); ok {
		t.Fatalf("covered by another round meanwhile: got ready, want skipped")
	}
	fs.last.Store(probed.UnixNano())
	fs.on.Store(false)
	if _, ok := s.fastReady(fs, awaited, late); ok {
		t.Fatalf("site no longer fast: got ready, want not")
	}
}

// probeTimes is a prober that answers res and records when each probe ran.
type probeTimes struct {
	res   Result
	mu    sync.Mutex
	calls map[string][]time.Time
}

func (p *probeTimes) probe(_ context.Context, sp Spec, _ *slog.Logger) Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.calls == nil {
		p.calls = map[string][]time.Time{}
	}
	p.calls[sp.Name] = append(p.calls[sp.Name], time.Now())
	return p.res
}

// times returns when each probe ran, by name.
func (p *probeTimes) times() map[string][]time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.calls)
}

// jitteredSite is a primary with two probes, whose offsets differ.
func jitteredSite() []SiteSpec {
	return []SiteSpec{{Site: "primary", Probes: []Spec{{Name: "lms", Type: "p"}, {Name: "api", Type: "p"}}}}
}

// jitteredFast is a scheduler of jitteredSite at a 1s interval and a
// 250ms fast interval, with a tenth of jitter, whose probes all return
// res and record when they ran.
func jitteredFast(t *testing.T, res Result) (*Scheduler, *probeTimes) {
	t.Helper()
	rec := &probeTimes{res: res}
	s := schedNew(t, jitteredSite(), SchedulerOptions{Interval: time.Second, FastInterval: 250 * time.Millisecond, JitterFraction: 0.1,
		Probers: map[string]ProbeFunc{"p": rec.probe}})
	return s, rec
}

// TestSchedulerFastRoundSkipsTheJitter: the jitter spreads a full round's
// probes, each at its fixed offset from the tick, but a fast round asked
// for by ProbeNow starts the site's first probe at once and the others at
// their offsets less the first's: waiting out the offset would only delay
// the evidence asked for. The fast interval still counts from when the
// last round started probing the site, so a site's probes never run more
// often than once per fast interval.
func TestSchedulerFastRoundSkipsTheJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval, fast = time.Second, 250 * time.Millisecond
		s, rec := jitteredFast(t, Result{OK: true})
		bound := schedMaxJitter(s.opts, s.probes[0].timeout)
		off := map[string]time.Duration{"lms": jitterOffset("primary", "lms", bound), "api": jitterOffset("primary", "api", bound)}
		lead := min(off["lms"], off["api"])
		if max(off["lms"], off["api"]) == 0 {
			t.Fatalf("offsets %v: the test needs a probe with a non-zero offset", off)
		}
		epoch := time.Now()
		stop := schedRun(t, s)
		if r := <-s.Rounds(); r.Fast {
			t.Fatal("first round: got a fast round, want the full one")
		}
		// 10ms after the full round probed the site: the fast interval
		// counts from that probe, so the round is due at lead + fast.
		time.Sleep(lead + 10*time.Millisecond)
		s.ProbeNow("primary")
		r := <-s.Rounds()
		if !r.Fast || r.Start.Sub(epoch) != lead+fast {
			t.Fatalf("got fast=%v at +%s, want a fast round at +%s (the full round's first probe + the fast interval)", r.Fast, r.Start.Sub(epoch), lead+fast)
		}
		// 600ms after the full round: the first probe runs at once.
		time.Sleep(600*time.Millisecond - time.Since(epoch))
		s.ProbeNow("primary")
		if r = <-s.Rounds(); !r.Fast || r.Start.Sub(epoch) != 600*time.Millisecond {
			t.Fatalf("got fast=%v at +%s, want a fast round at +600ms", r.Fast, r.Start.Sub(epoch))
		}
		stop()
		calls := rec.times()
		for name, o := range off {
			want := []time.Duration{o, lead + fast + o - lead, 600*time.Millisecond + o - lead}
			var got []time.Duration
			for _, at := range calls[name] {
				got = append(got, at.Sub(epoch))
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%s (offset %s) probed at %v, want %v: at its offset in the full round, at its offset less %s in a fast one", name, o, got, want, lead)
			}
		}
	})
}

// TestSchedulerDeliversAFailedCriticalResultFirst: in a full round, a
// failed critical probe's result is delivered as soon as it is in, not
// when a slow probe of its own site or of the other site ends, and the
// rest of the round follows with a Seq of its own; a healthy round, or one
// where only a non-critical probe failed, is delivered whole when its last
// probe ends.
func TestSchedulerDeliversAFailedCriticalResultFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval = time.Second
		const slow, crawl = 300 * time.Millisecond, 200 * time.Millisecond
		var primaryDown, extraDown atomic.Bool
		probe := func(_ context.Context, sp Spec, _ *slog.Logger) Result {
			switch sp.Name {
			case "far":
				time.Sleep(slow) // virtual: the backup answers slowly
				return Result{OK: true}
			case "crawl":
				time.Sleep(crawl) // virtual: another platform on the primary, slow but up
				return Result{OK: true}
			case "lms":
				if primaryDown.Load() {
					return Result{Class: ClassRefused, Reason: "connection refused"}
				}
			case "extra":
				if extraDown.Load() {
					return Result{Class: ClassStatus, Reason: "status 500"}
				}
			}
			return Result{OK: true}
		}
		no := false
		sites := []SiteSpec{
			{Site: "primary", Probes: []Spec{{Name: "lms", Type: "p"}, {Name: "extra", Type: "p", Critical: &no}, {Name: "crawl", Type: "p"}}},
			{Site: "backup", Probes: []Spec{{Name: "far", Type: "p"}}},
		}
		s := schedNew(t, sites, SchedulerOptions{Interval: interval, JitterFraction: -1, DefaultTimeout: 500 * time.Millisecond,
			Probers: map[string]ProbeFunc{"p": probe}})
		epoch := time.Now()
		stop := schedRun(t, s)
		defer stop()
		type part struct {
			at    time.Duration
			seq   uint64
			sites string
		}
		next := func() part {
			r := <-s.Rounds()
			var names []string
			for _, nr := range r.Results {
				names = append(names, nr.Site+"/"+nr.Probe)
			}
			if r.Fast {
				t.Fatalf("got a fast round %v, want only full rounds", names)
			}
			return part{time.Since(epoch), r.Seq, fmt.Sprint(names)}
		}
		const whole = "[primary/lms primary/extra primary/crawl backup/far]"
		if p := next(); p.at != slow || p.sites != whole {
			t.Fatalf("healthy round: got %+v, want the whole round once the slow probe ends at +%s", p, slow)
		}
		extraDown.Store(true)
		if p := next(); p.at != interval+slow || p.sites != whole {
			t.Fatalf("round with a non-critical failure: got %+v, want it whole at +%s", p, interval+slow)
		}
		primaryDown.Store(true)
		first, rest := next(), next()
		if first.at != 2*interval || first.sites != "[primary/lms]" {
			t.Fatalf("failing round, first part: got %+v, want the failed result alone at once at +2s, before its own site's slow probe", first)
		}
		if rest.at != 2*interval+slow || rest.sites != "[primary/extra primary/crawl backup/far]" {
			t.Fatalf("failing round, rest: got %+v, want every other result at +%s", rest, 2*interval+slow)
		}
		if first.seq == rest.seq {
			t.Fatalf("both parts carry Seq %d, want one each (a report is deduplicated by its Seq)", first.seq)
		}
	})
}

// TestSchedulerFastGridKeepsTheJitter: with jitter, a site set fast has
// each of its probes run exactly a fast interval apart, the full rounds'
// runs included: the fast grid is shifted by the site's first offset, so
// the first re-probe after a full round does not slip to a later tick.
func TestSchedulerFastGridKeepsTheJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval, fast = time.Second, 250 * time.Millisecond
		s, rec := jitteredFast(t, Result{Class: ClassRefused, Reason: "connection refused"})
		if s.sites["primary"].lead == 0 {
			t.Fatal("the test needs a site whose first probe has a non-zero offset")
		}
		epoch := time.Now()
		s.SetFast("primary", true)
		stop := schedRun(t, s)
		time.Sleep(2*interval + interval/2)
		stop()
		for name, at := range rec.times() {
			if len(at) != 10 {
				t.Fatalf("%s probed %d times in 2.5 intervals, want 10 (every fast interval)", name, len(at))
			}
			for i := 1; i < len(at); i++ {
				if d := at[i].Sub(at[i-1]); d != fast {
					t.Fatalf("%s probed at +%s then +%s: %s apart, want the fast interval %s", name, at[i-1].Sub(epoch), at[i].Sub(epoch), d, fast)
				}
			}
		}
	})
}

// TestSchedulerFastRoundSendsEachFailureAtOnce: a fast round keeps its
// probes' offsets from its first (each runs a fast interval after its
// last run), but each failed critical result is delivered as soon as it
// is in, not when the round's last probe ends: the failure that gives a
// watcher its fall-th strike is reported at once. Its parts are fast ones.
func TestSchedulerFastRoundSendsEachFailureAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval, fast = time.Second, 250 * time.Millisecond
		s, _ := jitteredFast(t, Result{Class: ClassRefused, Reason: "connection refused"})
		bound := schedMaxJitter(s.opts, s.probes[0].timeout)
		off := map[string]time.Duration{"lms": jitterOffset("primary", "lms", bound), "api": jitterOffset("primary", "api", bound)}
		first, second := "lms", "api"
		if off["api"] < off["lms"] {
			first, second = "api", "lms"
		}
		if off[first] == off[second] {
			t.Fatalf("offsets %v: the test needs two different offsets", off)
		}
		epoch := time.Now()
		s.SetFast("primary", true)
		stop := schedRun(t, s)
		defer stop()
		var got []string
		for len(got) < 2 {
			r := <-s.Rounds()
			if !r.Fast {
				continue // the full round's parts
			}
			if len(r.Results) != 1 {
				t.Fatalf("fast round part at +%s holds %d results, want each failure on its own", time.Since(epoch), len(r.Results))
			}
			got = append(got, fmt.Sprintf("%s at +%s", r.Results[0].Probe, time.Since(epoch)))
		}
		// The first fast round is due a fast interval after the full
		// round's first probe of the site.
		want := []string{fmt.Sprintf("%s at +%s", first, off[first]+fast), fmt.Sprintf("%s at +%s", second, off[second]+fast)}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("first fast round delivered %v, want %v: each failure when its probe ends", got, want)
		}
	})
}
