package probes

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// SiteSpec is the set of probes of one site.
type SiteSpec struct {
	Site   string
	Probes []Spec
}

// NamedResult is one probe's Result within a Round, with who it belongs to.
type NamedResult struct {
	Site     string
	Probe    string
	Type     string
	Critical bool
	// Scheduled is when the probe was due: the round's tick plus the
	// probe's fixed jitter. Started is when the prober was called.
	// Completed is when its result was in (or it was abandoned): the
	// evidence of when the site was seen failing. Zero when not run.
	Scheduled time.Time
	Started   time.Time
	Completed time.Time
	Result
}

// Round is the outcome of running every probe once, or, for a fast round,
// every probe of one suspect site.
//
// A round, full or fast, in which a critical probe failed is delivered in
// parts: each failed critical result on its own as soon as it is in, with
// a Seq of its own, and the rest when the round ends (a fast round whose
// every result went out early delivers no rest). A failure is then
// reported when its probe ends, not when the slowest probe of the round
// does: another site's (a far backup, a timeout), or, on a site that
// holds many failover groups' probes, the last of them, whose jittered
// offsets spread the round over a tenth of the interval. A healthy round,
// or one where only non-critical probes failed, is delivered whole.
type Round struct {
	// Seq counts rounds run by this Scheduler, full and fast alike, from 1.
	Seq uint64
	// Start is the round's tick: the intended start, not the actual one.
	Start time.Time
	// Fast is set on a round of re-probes of suspect sites only (SetFast,
	// ProbeNow): it holds only their probes' results, or those of the
	// probes SetFastProbes names.
	Fast bool
	// Results holds one entry per probe the round ran, in the order of the
	// sites and probes given to NewScheduler: every probe for a full round,
	// one site's (or those SetFastProbes names) for a fast one.
	Results []NamedResult
}

// SchedulerOptions tune a Scheduler. The zero value is usable for RunOnce.
type SchedulerOptions struct {
	// Interval between round ticks. Run needs it > 0; with 0 only RunOnce
	// drives rounds, and there is no jitter.
	Interval time.Duration
	// Phase places Run's ticks on the wall clock: every tick t has
	// t − Unix epoch ≡ Phase (mod Interval). Watchers that share a clock
	// (NTP) and take phases index/N × Interval sample a site at N distinct
	// moments of each interval instead of the same one. SetPhase changes it
	// while Run runs. Negative or >= Interval is reduced modulo Interval.
	Phase time.Duration
	// JitterFraction bounds each probe's fixed start offset to this fraction
	// of Interval (default 0.1, at most 0.5). The offset is also cut so that
	// it never pushes a probe's deadline past the next tick. Negative
	// disables jitter.
	JitterFraction float64
	// Concurrency bounds how many probers run at once (default 16).
	Concurrency int
	// DefaultTimeout applies to specs whose Timeout is 0 (default 3/4 of
	// Interval, or 10s when Interval is 0).
	DefaultTimeout time.Duration
	// Grace is how long past its deadline a prober may take to return before
	// it is abandoned and reported as a timeout (default 500ms).
	Grace time.Duration
	// Probers maps types to probe functions (default Probers).
	Probers map[string]ProbeFunc
	// FastInterval is how often Run re-probes a site set fast (SetFast),
	// on ticks of its own grid (Unix epoch + Phase + k·FastInterval), and
	// the least time between two rounds that cover a site when one of them
	// is a fast round. 0 disables re-probing: SetFast and ProbeNow do
	// nothing. At most Interval.
	FastInterval time.Duration
	// Metrics, when set, records every outcome.
	Metrics *Metrics
	// Logger receives one debug line per result; nil discards.
	Logger *slog.Logger
}

// SchedulerStats are counters of a Scheduler's life so far.
type SchedulerStats struct {
	Rounds    uint64 // rounds completed
	Dropped   uint64 // rounds replaced before the consumer took them
	Skipped   uint64 // ticks skipped because a round overran by more than an interval
	Abandoned uint64 // prober runs not returned by deadline + grace
	// FastRounds are fast rounds completed; FastSkipped fast rounds not run
	// because a round of the site's probes was still running.
	FastRounds, FastSkipped uint64
}

// Scheduler runs every probe once per interval on absolute ticks of a
// wall-clock grid, each probe at a fixed offset (jitter) from the tick, with
// bounded concurrency and enforced timeouts. It never retries and never
// judges: it hands each Round to the consumer.
type Scheduler struct {
	probes  []schedProbe
	order   []int // indices into probes, by offset
	opts    SchedulerOptions
	logger  *slog.Logger
	sem     chan struct{}
	rounds  chan Round
	roundMu sync.Mutex // one full round at a time, so RunOnce and Run never interleave
	pubMu   sync.Mutex // publish is called by the full and the fast rounds
	proberW sync.WaitGroup
	sites   map[string]*fastSite
	index   map[[2]string]int // (site, probe) -> index in probes

	seq, done, dropped, skipped, abandoned atomic.Uint64
	fastDone, fastSkipped                  atomic.Uint64
	ran                                    atomic.Bool
	phase                                  atomic.Int64 // ns into the interval, see SchedulerOptions.Phase
}

// fastSite is one site's re-probing state: whether it is fast, whether a
// round was asked for now, and when a round last covered it.
//
// A fast round starts the site's first probe at its tick, and the others
// at their offsets less lead: the jitter spreads a full round's probes,
// but on a fast round it would only delay the evidence asked for (a
// ProbeNow waited up to JitterFraction of the interval before probing).
//
// SetFastProbes restricts its fast rounds to some of its probes (only):
// a site that holds many platforms' probes (failover groups) re-probes
// those of the suspect ones, so that their round ends when their slowest
// probe does, not the slowest of the site, and no full round holding an
// unrelated probe makes it skip.
type fastSite struct {
	site  string
	order []int                 // its probes, indices into probes, by offset
	lead  time.Duration         // the offset of its first probe (order[0])
	only  atomic.Pointer[[]int] // the probes of its fast rounds, a subsequence of order; nil: all
	on    atomic.Bool
	now   atomic.Bool   // ProbeNow asked, not yet run
	last  atomic.Int64  // unix ns when the latest round covering the site started its first probe of it
	wake  chan struct{} // 1-buffered: on or now changed
}

type schedProbe struct {
	site    string
	spec    Spec
	fn      ProbeFunc
	timeout time.Duration
	offset  time.Duration
	logger  *slog.Logger
	// running is set while a prober goroutine is alive, so an abandoned
	// prober that ignores its context is never started twice: the leak is
	// bounded to one goroutine per probe.
	running *atomic.Bool
	// slot is held (1-buffered) by the round that runs the probe, from its
	// tick until its result is in: a fast round never overlaps another
	// round of the same probe.
	slot chan struct{}
}

// Scheduler defaults.
const (
	schedDefaultJitter      = 0.1
	schedDefaultConcurrency = 16
	schedDefaultGrace       = 500 * time.Millisecond
)

// ErrNoInterval is returned by Run when the Scheduler has no interval.
var ErrNoInterval = errors.New("scheduler has no interval: drive it with RunOnce")

// ErrRunTwice is returned by a second call of Run.
var ErrRunTwice = errors.New("scheduler already ran")

// NewScheduler checks the sites' probes and returns a Scheduler for them.
// It reports every problem at once (errors.Join).
func NewScheduler(sites []SiteSpec, opts SchedulerOptions) (*Scheduler, error) {
	var errs []error
	if opts.Interval < 0 {
		errs = append(errs, fmt.Errorf("interval: %s must not be negative", opts.Interval))
	}
	if opts.JitterFraction == 0 {
		opts.JitterFraction = schedDefaultJitter
	}
	if opts.JitterFraction > 0.5 {
		errs = append(errs, fmt.Errorf("jitter fraction: %v must be at most 0.5", opts.JitterFraction))
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = schedDefaultConcurrency
	}
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = 10 * time.Second
		if opts.Interval > 0 {
			opts.DefaultTimeout = opts.Interval * 3 / 4
		}
	}
	if opts.Grace <= 0 {
		opts.Grace = schedDefaultGrace
	}
	if opts.FastInterval < 0 || (opts.Interval > 0 && opts.FastInterval > opts.Interval) {
		errs = append(errs, fmt.Errorf("fast interval: %s must be between 0 and the interval %s", opts.FastInterval, opts.Interval))
	}
	if opts.Interval > 0 && opts.DefaultTimeout >= opts.Interval {
		errs = append(errs, fmt.Errorf("default timeout: %s must be below the interval %s", opts.DefaultTimeout, opts.Interval))
	}
	if opts.Probers == nil {
		opts.Probers = Probers
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}

	s := &Scheduler{
		opts:   opts,
		logger: logger,
		sem:    make(chan struct{}, opts.Concurrency),
		rounds: make(chan Round, 1),
		sites:  map[string]*fastSite{},
		index:  map[[2]string]int{},
	}
	s.SetPhase(opts.Phase)
	seenSite := map[string]bool{}
	for si, site := range sites {
		if site.Site == "" {
			errs = append(errs, fmt.Errorf("sites[%d]: name must be set", si))
		} else if seenSite[site.Site] {
			errs = append(errs, fmt.Errorf("sites[%s]: duplicate site", site.Site))
		}
		seenSite[site.Site] = true
		seen := map[string]bool{}
		for pi, spec := range site.Probes {
			at := fmt.Sprintf("sites[%s].probes[%d]", site.Site, pi)
			if spec.Name != "" {
				at = fmt.Sprintf("sites[%s].probes[%s]", site.Site, spec.Name)
			}
			if err := schedCheckSpec(spec, seen, opts); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", at, err))
				continue
			}
			seen[spec.Name] = true
			timeout := spec.Timeout
			if timeout <= 0 {
				timeout = opts.DefaultTimeout
			}
			s.probes = append(s.probes, schedProbe{
				site:    site.Site,
				spec:    spec,
				fn:      opts.Probers[spec.Type],
				timeout: timeout,
				logger:  logger.With("site", site.Site, "probe", spec.Name),
				running: new(atomic.Bool),
				slot:    make(chan struct{}, 1),
			})
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for i := range s.probes {
		p := &s.probes[i]
		p.offset = jitterOffset(p.site, p.spec.Name, schedMaxJitter(opts, p.timeout))
		s.order = append(s.order, i)
		s.index[[2]string{p.site, p.spec.Name}] = i
	}
	slices.SortStableFunc(s.order, func(a, b int) int {
		return int(s.probes[a].offset - s.probes[b].offset)
	})
	for _, i := range s.order {
		site := s.probes[i].site
		fs := s.sites[site]
		if fs == nil {
			fs = &fastSite{site: site, wake: make(chan struct{}, 1)}
			s.sites[site] = fs
		}
		fs.order = append(fs.order, i)
	}
	for _, fs := range s.sites {
		fs.lead = s.probes[fs.order[0]].offset
	}
	return s, nil
}

func schedCheckSpec(spec Spec, seen map[string]bool, opts SchedulerOptions) error {
	var errs []error
	if spec.Name == "" {
		errs = append(errs, errors.New("name: must be set"))
	} else if seen[spec.Name] {
		errs = append(errs, errors.New("name: duplicate probe"))
	}
	if opts.Probers[spec.Type] == nil {
		errs = append(errs, fmt.Errorf("type: no prober for %q", spec.Type))
	}
	if spec.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout: %s must not be negative", spec.Timeout))
	}
	if opts.Interval > 0 && spec.Timeout >= opts.Interval {
		errs = append(errs, fmt.Errorf("timeout: %s must be below the interval %s", spec.Timeout, opts.Interval))
	}
	if t, ok := typeNamed(spec.Type); ok && t.checkedAtStart {
		if v := t.section.get(&spec); v == nil {
			errs = append(errs, fmt.Errorf("%s: spec missing", t.name))
		} else if es := v.Validate(); es != nil {
			errs = append(errs, es)
		}
	}
	return errors.Join(errs...)
}

// schedMaxJitter is the bound of a probe's offset: JitterFraction of the
// interval, cut so that a probe that runs to its timeout still ends before
// the next tick.
func schedMaxJitter(opts SchedulerOptions, timeout time.Duration) time.Duration {
	if opts.Interval <= 0 || opts.JitterFraction <= 0 {
		return 0
	}
	bound := time.Duration(float64(opts.Interval) * opts.JitterFraction)
	if room := opts.Interval - timeout; room < bound {
		bound = max(room, 0)
	}
	return bound
}

// jitterOffset is a probe's fixed offset in [0, bound): a hash of its site
// and name, so it is the same every round and on every node, and probes of
// one site spread out instead of starting together.
func jitterOffset(site, probe string, bound time.Duration) time.Duration {
	if bound <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(site))
	h.Write([]byte{0})
	h.Write([]byte(probe))
	return time.Duration(h.Sum64() % uint64(bound))
}

// Rounds delivers each round Run completes. It is never closed. It holds at most one pending round: when the consumer has not taken it by
// the next one, it is replaced and counted as dropped, so a slow consumer
// never stalls probing.
func (s *Scheduler) Rounds() <-chan Round { return s.rounds }

// Stats returns the counters so far. Safe for concurrent use.
func (s *Scheduler) Stats() SchedulerStats {
	return SchedulerStats{
		Rounds:    s.done.Load(),
		Dropped:   s.dropped.Load(),
		Skipped:   s.skipped.Load(),
		Abandoned: s.abandoned.Load(),

		FastRounds:  s.fastDone.Load(),
		FastSkipped: s.fastSkipped.Load(),
	}
}

// Run runs a round at every tick of its grid (the wall-clock times at
// Phase from a multiple of the interval, see SchedulerOptions.Phase) until
// ctx is done, delivering rounds on Rounds. Ticks are absolute, so the
// schedule never drifts; a round that overruns by more than an interval
// makes Run skip the missed ticks rather than burst. The first round runs
// at the first tick at or after Run is called. It returns nil when ctx is
// done, after waiting up to Grace for probers still running. Rounds is not
// closed: consumers also watch their own ctx. It returns ErrNoInterval
// without an interval, and ErrRunTwice when called again.
//
// With a FastInterval, Run also runs the fast rounds of the sites SetFast
// and ProbeNow ask for, beside the full rounds, whose grid they never move.
func (s *Scheduler) Run(ctx context.Context) error {
	if s.opts.Interval <= 0 {
		return ErrNoInterval
	}
	if !s.ran.CompareAndSwap(false, true) {
		return ErrRunTwice
	}
	defer s.waitProbers()
	var fastW sync.WaitGroup
	defer fastW.Wait()
	if s.opts.FastInterval > 0 {
		for _, fs := range s.sites {
			fastW.Go(func() { s.fastLoop(ctx, fs) })
		}
	}
	interval := s.opts.Interval
	timer := time.NewTimer(0)
	defer timer.Stop()
	var prev time.Time // the last round's tick; zero before the first
	tick := s.following(prev)
	for {
		timer.Reset(time.Until(tick))
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		if !s.nextTick(tick).Equal(tick) {
			tick = s.following(prev) // the phase changed while waiting
			continue
		}
		round := s.runRound(ctx, tick, true)
		if ctx.Err() != nil {
			return nil
		}
		if len(round.Results) > 0 {
			s.publish(round)
		}
		prev, tick = tick, s.following(tick)
		if n := int64((tick.Sub(prev) - interval/2) / interval); n > 0 {
			s.skipped.Add(uint64(n))
			s.opts.Metrics.ticksSkipped(int(n))
			s.logger.Warn("probe ticks skipped: round overran", "skipped", n)
		}
	}
}

// following is the tick after prev: the first on the current grid at least
// half an interval after prev (the grid moves when the phase does). When a
// round overran past it, it is the latest tick already due instead, so the
// ticks missed are skipped rather than burst and at most one round is ever
// late. With no prev, it is the first tick from now.
func (s *Scheduler) following(prev time.Time) time.Time {
	now := time.Now()
	if prev.IsZero() {
		return s.nextTick(now)
	}
	next := s.nextTick(prev.Add(s.opts.Interval / 2))
	if !next.Before(now) {
		return next
	}
	due := s.nextTick(now)
	if due.After(now) {
		due = due.Add(-s.opts.Interval)
	}
	return due
}

// SetPhase moves Run's tick grid to phase (see SchedulerOptions.Phase); it
// takes effect from the next tick, which is never less than half an
// interval after the last. Safe for concurrent use.
func (s *Scheduler) SetPhase(phase time.Duration) {
	if s.opts.Interval <= 0 {
		return
	}
	p := int64(phase) % int64(s.opts.Interval)
	if p < 0 {
		p += int64(s.opts.Interval)
	}
	s.phase.Store(p)
}

// Phase is the tick grid's current phase.
func (s *Scheduler) Phase() time.Duration { return time.Duration(s.phase.Load()) }

// nextTick is the first tick of the grid at or after t.
func (s *Scheduler) nextTick(t time.Time) time.Time {
	iv := int64(s.opts.Interval)
	ns := t.UnixNano()
	off := (ns - s.phase.Load()) % iv
	if off < 0 {
		off += iv
	}
	if off == 0 {
		return t
	}
	return t.Add(time.Duration(iv - off))
}

// RunOnce runs one round now (each probe at its offset from now) and returns
// it; it does not deliver it on Rounds. Rounds never interleave: RunOnce
// waits for a round Run has in progress. Safe for concurrent use.
func (s *Scheduler) RunOnce(ctx context.Context) Round {
	return s.runRound(ctx, time.Now(), false)
}

// publish hands r to the consumer. A round still pending is replaced and
// counted as dropped, but its results for probes r does not run are
// carried into r: a fast round of one site never costs the consumer the
// other site's results of a full round it has not taken yet.
func (s *Scheduler) publish(r Round) {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	select {
	case s.rounds <- r:
		return
	default:
	}
	// Only a publisher sends, under pubMu, so after taking the stale round
	// there is room.
	select {
	case old := <-s.rounds:
		s.dropped.Add(1)
		s.opts.Metrics.roundDropped()
		r = s.merge(r, old)
	default:
	}
	select {
	case s.rounds <- r:
	default:
	}
}

// merge returns newer with the results of older for the probes newer does
// not hold, in the order of the probes.
func (s *Scheduler) merge(newer, older Round) Round {
	has := make(map[int]bool, len(newer.Results))
	for _, nr := range newer.Results {
		has[s.index[[2]string{nr.Site, nr.Probe}]] = true
	}
	carried := false
	for _, nr := range older.Results {
		if !has[s.index[[2]string{nr.Site, nr.Probe}]] {
			newer.Results = append(newer.Results, nr)
			carried = true
		}
	}
	if !carried {
		return newer
	}
	newer.Results = slices.Clone(newer.Results)
	slices.SortStableFunc(newer.Results, func(a, b NamedResult) int {
		return s.index[[2]string{a.Site, a.Probe}] - s.index[[2]string{b.Site, b.Probe}]
	})
	newer.Fast = newer.Fast && older.Fast
	return newer
}

// waitProbers waits up to Grace for prober goroutines still running.
func (s *Scheduler) waitProbers() {
	done := make(chan struct{})
	go func() {
		s.proberW.Wait()
		close(done)
	}()
	t := time.NewTimer(s.opts.Grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.logger.Warn("probers still running at shutdown: they ignore their context")
	}
}

// runRound runs a full round at tick. With split, a failed critical
// probe's result is published on its own as soon as it is in, and left
// out of the round returned (see Round).
func (s *Scheduler) runRound(ctx context.Context, tick time.Time, split bool) Round {
	s.roundMu.Lock()
	defer s.roundMu.Unlock()
	round := Round{Seq: s.seq.Add(1), Start: tick}
	// Hold every probe's slot from the tick, so no fast round starts a
	// probe this round is about to run; one a fast round holds is waited for.
	held := make([]bool, len(s.probes))
	for i := range s.probes {
		select {
		case s.probes[i].slot <- struct{}{}:
			held[i] = true
		default:
		}
	}
	for _, fs := range s.sites {
		atomicMax(&fs.last, tick.Add(fs.lead).UnixNano())
	}
	var failed func(int, NamedResult)
	var early *earlyFailures
	if split {
		early = &earlyFailures{s: s, ctx: ctx, tick: tick}
		failed = early.result
	}
	round.Results = early.rest(s.runProbes(ctx, tick, 0, s.order, held, failed))
	if ctx.Err() == nil {
		s.done.Add(1)
		s.opts.Metrics.roundDone()
	}
	return round
}

// earlyFailures sends a round's failed critical results on their own as
// soon as each is in, each with a Seq of its own, and leaves them out of
// the rest of the round (see Round). A nil one sends none early.
type earlyFailures struct {
	s    *Scheduler
	ctx  context.Context
	tick time.Time
	fast bool
	sent sync.Map // probe index -> true
}

// result is runProbes' callback.
func (e *earlyFailures) result(i int, nr NamedResult) {
	if e.ctx.Err() != nil || !nr.Critical || nr.OK {
		return
	}
	e.sent.Store(i, true)
	e.s.publish(Round{Seq: e.s.seq.Add(1), Start: e.tick, Fast: e.fast, Results: []NamedResult{nr}})
}

// rest is all without the results sent early.
func (e *earlyFailures) rest(all []NamedResult) []NamedResult {
	if e == nil {
		return all
	}
	return slices.DeleteFunc(all, func(nr NamedResult) bool {
		_, ok := e.sent.Load(e.s.index[[2]string{nr.Site, nr.Probe}])
		return ok
	})
}

// runProbes runs the probes order (indices into probes, by offset), each
// at tick plus its offset less shift (a fast round's lead), and returns
// their results in the order of probes. held[i] says the caller holds probe i's slot; the others wait
// for theirs. Every slot is released when its probe's result is in. Each
// result is handed to result (when not nil) as soon as it is in, from its
// probe's goroutine.
func (s *Scheduler) runProbes(ctx context.Context, tick time.Time, shift time.Duration, order []int, held []bool,
	result func(i int, nr NamedResult)) []NamedResult {
	results := make([]NamedResult, len(s.probes))
	ran := make([]bool, len(s.probes)) // each written only by its probe's goroutine
	var wg sync.WaitGroup
	timer := time.NewTimer(0)
	defer timer.Stop()
	run := func(i int, at time.Time) {
		p := &s.probes[i]
		defer func() { <-p.slot }()
		defer func() { <-s.sem }()
		results[i] = s.runProbe(ctx, p, at)
		ran[i] = true
		if result != nil {
			result(i, results[i])
		}
	}
	done := make([]bool, len(s.probes)) // dispatched: its slot is released by its goroutine
dispatch:
	for _, i := range order {
		p := &s.probes[i]
		at := tick.Add(p.offset - shift)
		if d := time.Until(at); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-ctx.Done():
				break dispatch
			}
		}
		if !held[i] {
			// A fast round runs this probe: wait for it without holding a
			// concurrency slot, so the fast round can still take one.
			done[i] = true
			wg.Go(func() {
				select {
				case p.slot <- struct{}{}:
				case <-ctx.Done():
					return
				}
				select {
				case s.sem <- struct{}{}:
				case <-ctx.Done():
					<-p.slot
					return
				}
				run(i, at)
			})
			continue
		}
		select {
		case s.sem <- struct{}{}:
		case <-ctx.Done():
			break dispatch
		}
		done[i] = true
		wg.Go(func() { run(i, at) })
	}
	wg.Wait()
	out := make([]NamedResult, 0, len(order))
	in := make([]bool, len(s.probes))
	for _, i := range order {
		in[i] = true
	}
	for i := range s.probes {
		if !in[i] {
			continue
		}
		if !ran[i] {
			if held[i] && !done[i] {
				<-s.probes[i].slot
			}
			p := &s.probes[i]
			results[i] = s.named(p, tick.Add(p.offset-shift), time.Time{},
				connFail(ClassError, "scheduler", "not run: scheduler stopped"))
		}
		out = append(out, results[i])
	}
	return out
}

// SetFast sets whether Run re-probes site at FastInterval, in rounds of
// only its probes, besides the full rounds. It does nothing without a
// FastInterval or for a site the Scheduler does not probe. Safe for
// concurrent use.
func (s *Scheduler) SetFast(site string, on bool) {
	fs := s.sites[site]
	if fs == nil || s.opts.FastInterval <= 0 || fs.on.Swap(on) == on {
		return
	}
	fs.poke()
}

// SetFastProbes restricts site's fast rounds (SetFast and ProbeNow alike)
// to its probes named in names, from the next one on; nil restores every
// probe of the site, the default. Names the site does not probe are
// ignored; with none left a fast round has nothing to run and is not
// run. Full rounds always run every probe. It does nothing for a site the
// Scheduler does not probe. Safe for concurrent use.
func (s *Scheduler) SetFastProbes(site string, names []string) {
	fs := s.sites[site]
	if fs == nil {
		return
	}
	if names == nil {
		fs.only.Store(nil)
		return
	}
	only := make([]int, 0, len(names))
	for _, i := range fs.order {
		if slices.Contains(names, s.probes[i].spec.Name) {
			only = append(only, i)
		}
	}
	fs.only.Store(&only)
}

// fastOrder is the probes of fs's next fast round, by offset.
func (fs *fastSite) fastOrder() []int {
	if only := fs.only.Load(); only != nil {
		return *only
	}
	return fs.order
}

// ProbeNow asks Run for a fast round of site as soon as the bounds allow:
// FastInterval after the last round that covered the site started probing
// it, and
// not while one still runs its probes (that round's results are the fresh
// evidence asked for). It does nothing without a FastInterval or for a
// site the Scheduler does not probe. Safe for concurrent use.
func (s *Scheduler) ProbeNow(site string) {
	fs := s.sites[site]
	if fs == nil || s.opts.FastInterval <= 0 {
		return
	}
	fs.now.Store(true)
	fs.poke()
}

func (fs *fastSite) poke() {
	select {
	case fs.wake <- struct{}{}:
	default:
	}
}

// fastLoop runs fs's fast rounds until ctx is done, one at a time.
func (s *Scheduler) fastLoop(ctx context.Context, fs *fastSite) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		var fire <-chan time.Time
		awaited, ok := s.fastDue(fs, time.Now())
		if ok {
			timer.Reset(time.Until(awaited))
			fire = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-fs.wake:
			timer.Stop()
			continue
		case <-fire:
		}
		tick, ok := s.fastReady(fs, awaited, time.Now())
		if !ok {
			continue
		}
		fs.now.Store(false)
		s.runFast(ctx, fs, tick)
	}
}

// fastReady says whether the fast round awaited is still due at now, and
// at which tick: a full round may have covered the site, or SetFast
// turned it off, while waiting. It asks from the awaited tick, not from
// now, so a timer that fires late runs the tick it waited for instead of
// moving on to the next one.
func (s *Scheduler) fastReady(fs *fastSite, awaited, now time.Time) (time.Time, bool) {
	tick, ok := s.fastDue(fs, awaited)
	if !ok || tick.After(now) {
		return time.Time{}, false
	}
	return tick, true
}

// fastDue is when fs's next fast round is due, if one is: at once for
// ProbeNow, else the next tick of the fast grid while fs is fast; never
// sooner than FastInterval after the last round that covered the site
// started probing it. A fast tick with a full round probing the site at
// most half a FastInterval after it is left to the full round.
func (s *Scheduler) fastDue(fs *fastSite, now time.Time) (time.Time, bool) {
	fast := s.opts.FastInterval
	earliest := time.Unix(0, fs.last.Load()).Add(fast)
	if fs.now.Load() {
		return later(now, earliest), true
	}
	if !fs.on.Load() || fast >= s.opts.Interval {
		return time.Time{}, false
	}
	t := s.nextFastTick(fs, later(now, earliest))
	for range 16 {
		full := s.nextTick(t)
		if full.Add(fs.lead).Sub(t) > fast/2 {
			break
		}
		t = s.nextFastTick(fs, full.Add(fs.lead+fast))
	}
	return t, true
}

// nextFastTick is the first tick of fs's fast grid at or after t: the
// Unix epoch plus the phase plus fs's lead plus a multiple of
// FastInterval. The lead puts the full rounds' first probes of the site on
// the grid too, so a site's probes run exactly a fast interval apart.
func (s *Scheduler) nextFastTick(fs *fastSite, t time.Time) time.Time {
	iv := int64(s.opts.FastInterval)
	off := (t.UnixNano() - s.phase.Load() - int64(fs.lead)) % iv
	if off < 0 {
		off += iv
	}
	if off == 0 {
		return t
	}
	return t.Add(time.Duration(iv - off))
}

// runFast runs one fast round of fs at tick (of the probes SetFastProbes
// names) and publishes it, unless a round of one of those probes is still
// running: then that round's results stand for this one, which is
// skipped. A round of the site's other probes does not make it skip.
func (s *Scheduler) runFast(ctx context.Context, fs *fastSite, tick time.Time) {
	order := fs.fastOrder()
	if len(order) == 0 {
		return
	}
	held := make([]bool, len(s.probes))
	for _, i := range order {
		select {
		case s.probes[i].slot <- struct{}{}:
			held[i] = true
			continue
		default:
		}
		for _, j := range order {
			if held[j] {
				<-s.probes[j].slot
			}
		}
		atomicMax(&fs.last, tick.UnixNano())
		s.fastSkipped.Add(1)
		s.logger.Debug("fast round skipped: a round of the site is running", "site", fs.site)
		return
	}
	atomicMax(&fs.last, tick.UnixNano())
	round := Round{Seq: s.seq.Add(1), Start: tick, Fast: true}
	// Its first probe starts at the tick, as the site's first does on an
	// unrestricted round, and the others at their offsets from it, so each
	// probe still runs a fast interval after its last run; a failed
	// critical result goes out as soon as it is in, as on a full round:
	// the one that gives a watcher its fall-th failure then does not wait
	// for the round's last probe.
	early := &earlyFailures{s: s, ctx: ctx, tick: tick, fast: true}
	round.Results = early.rest(s.runProbes(ctx, tick, s.probes[order[0]].offset, order, held, early.result))
	if ctx.Err() != nil {
		return
	}
	s.fastDone.Add(1)
	s.opts.Metrics.fastRoundDone(fs.site)
	if len(round.Results) > 0 {
		s.publish(round)
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// atomicMax raises v to x if x is larger.
func atomicMax(v *atomic.Int64, x int64) {
	for {
		old := v.Load()
		if x <= old || v.CompareAndSwap(old, x) {
			return
		}
	}
}

func (s *Scheduler) named(p *schedProbe, scheduled, started time.Time, r Result) NamedResult {
	return NamedResult{
		Site: p.site, Probe: p.spec.Name, Type: p.spec.Type, Critical: p.spec.IsCritical(),
		Scheduled: scheduled, Started: started, Result: r,
	}
}

// runProbe runs one prober under its timeout. The prober runs in its own
// goroutine so that one ignoring its context cannot hold the round: past
// deadline + grace it is abandoned and reported as a timeout.
func (s *Scheduler) runProbe(ctx context.Context, p *schedProbe, scheduled time.Time) NamedResult {
	started := time.Now()
	var res Result
	if !p.running.CompareAndSwap(false, true) {
		res = connFail(ClassTimeout, "scheduler", "previous run still running past its timeout")
	} else {
		res = s.call(ctx, p)
	}
	completed := time.Now()
	if res.Duration == 0 {
		res.Duration = completed.Sub(started)
	}
	nr := s.named(p, scheduled, started, res)
	nr.Completed = completed
	if ctx.Err() == nil {
		s.opts.Metrics.observe(nr)
	}
	if nr.OK {
		p.logger.Debug("probe ok", "duration", nr.Duration)
	} else {
		p.logger.Debug("probe failed", "class", string(nr.Class), "phase", nr.Phase, "reason", nr.Reason, "duration", nr.Duration)
	}
	return nr
}

func (s *Scheduler) call(ctx context.Context, p *schedProbe) Result {
	pctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	done := make(chan Result, 1) // buffered: an abandoned prober must not block on it
	s.proberW.Go(func() {
		r := schedSafeCall(pctx, p)
		// Clear running before handing over the result, so the next round
		// never sees a finished prober as still running.
		p.running.Store(false)
		done <- r
	})
	grace := time.NewTimer(p.timeout + s.opts.Grace)
	defer grace.Stop()
	select {
	case r := <-done:
		if errors.Is(pctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil && r.Class != ClassTimeout {
			// It returned, but only after its deadline: that is a timeout
			// whatever it says, or a hanging prober would count as up.
			reason := "timeout"
			if r.Reason != "" {
				reason = "timeout: " + r.Reason
			}
			r.OK, r.Class, r.Reason = false, ClassTimeout, reason
			if r.Phase == "" {
				r.Phase = "prober"
			}
		}
		return r
	case <-grace.C:
		cancel()
		s.abandoned.Add(1)
		s.opts.Metrics.proberAbandoned()
		p.logger.Warn("prober abandoned past its deadline", "timeout", p.timeout)
		return connFail(ClassTimeout, "prober", fmt.Sprintf("no result within timeout %s", p.timeout))
	}
}

// schedSafeCall runs the prober, turning a panic into a failed Result.
func schedSafeCall(ctx context.Context, p *schedProbe) (r Result) {
	defer func() {
		if v := recover(); v != nil {
			r = connFail(ClassError, "prober", fmt.Sprintf("prober panicked: %v", v))
		}
	}()
	return p.fn(ctx, p.spec, p.logger)
}
