package probes

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// probeNames lists a round's results as site/probe.
func probeNames(r Round) []string {
	var out []string
	for _, nr := range r.Results {
		out = append(out, nr.Site+"/"+nr.Probe)
	}
	return out
}

// TestSchedulerFastProbesRunOnlyTheNamed: a site's fast rounds, ProbeNow's
// and SetFast's alike, run only the probes SetFastProbes names, the first
// of them at the tick; nil restores every probe of the site; full rounds
// always run every probe.
func TestSchedulerFastProbesRunOnlyTheNamed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval, fast = time.Second, 250 * time.Millisecond
		s := schedNew(t, fastSites("p"), SchedulerOptions{Interval: interval, FastInterval: fast,
			Probers: map[string]ProbeFunc{"p": schedOK}})
		epoch := time.Now()
		stop := schedRun(t, s)
		defer stop()
		if r := <-s.Rounds(); r.Fast || len(r.Results) != 3 {
			t.Fatalf("first round: got fast=%v with %v, want the full round of 3 probes", r.Fast, probeNames(r))
		}
		time.Sleep(400 * time.Millisecond)
		s.SetFastProbes("primary", []string{"api", "unknown"})
		s.ProbeNow("primary")
		r := <-s.Rounds()
		if got := probeNames(r); !r.Fast || !slices.Equal(got, []string{"primary/api"}) {
			t.Fatalf("ProbeNow: got fast=%v with %v, want a fast round of primary/api only", r.Fast, got)
		}
		if d := r.Results[0].Scheduled.Sub(r.Start); d != 0 {
			t.Fatalf("the restricted round's first probe was due %s after its tick, want at it", d)
		}
		s.SetFast("primary", true)
		for r = <-s.Rounds(); !r.Fast; r = <-s.Rounds() {
			if len(r.Results) != 3 {
				t.Fatalf("full round at +%s: got %v, want every probe", r.Start.Sub(epoch), probeNames(r))
			}
		}
		if got := probeNames(r); !slices.Equal(got, []string{"primary/api"}) {
			t.Fatalf("SetFast: got a fast round of %v, want primary/api only", got)
		}
		s.SetFastProbes("primary", nil)
		s.ProbeNow("primary")
		for r = <-s.Rounds(); !r.Fast; r = <-s.Rounds() {
		}
		if got := probeNames(r); !slices.Equal(got, []string{"primary/lms", "primary/api"}) {
			t.Fatalf("after SetFastProbes(nil): got a fast round of %v, want every probe of the primary", got)
		}
		s.SetFast("primary", false)
	})
}

// TestSchedulerRestrictedFastRoundIgnoresOtherSlots: a full round still
// running one of the site's probes (a slow lms) makes a fast round of the
// site skip when it covers that probe, the default, but not when it is
// restricted to probes that round no longer runs (api).
func TestSchedulerRestrictedFastRoundIgnoresOtherSlots(t *testing.T) {
	for _, restrict := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			const interval, fast = time.Second, 250 * time.Millisecond
			slowLMS := func(_ context.Context, sp Spec, _ *slog.Logger) Result {
				if sp.Name == "lms" {
					time.Sleep(700 * time.Millisecond) // virtual: slow, still within its timeout
				}
				return Result{OK: true}
			}
			s := schedNew(t, fastSites("p"), SchedulerOptions{Interval: interval, FastInterval: fast, JitterFraction: -1,
				DefaultTimeout: 800 * time.Millisecond, Probers: map[string]ProbeFunc{"p": slowLMS}})
			epoch := time.Now()
			stop := schedRun(t, s)
			if restrict {
				s.SetFastProbes("primary", []string{"api"})
			}
			s.SetFast("primary", true)
			// The fast ticks at +250ms and +500ms fall while the first full
			// round still runs lms.
			rounds := collect(t, s, epoch.Add(600*time.Millisecond))
			stop()
			var fastRounds int
			for _, r := range rounds {
				if r.Fast {
					fastRounds++
					if got := probeNames(r); !slices.Equal(got, []string{"primary/api"}) {
						t.Fatalf("restrict %v: got a fast round of %v, want primary/api only", restrict, got)
					}
				}
			}
			st := s.Stats()
			switch {
			case restrict && (fastRounds != 2 || st.FastSkipped != 0):
				t.Fatalf("restricted: got %d fast rounds, %d skipped, want 2 run and none skipped", fastRounds, st.FastSkipped)
			case !restrict && (fastRounds != 0 || st.FastSkipped != 2):
				t.Fatalf("every probe: got %d fast rounds, %d skipped, want none run and 2 skipped", fastRounds, st.FastSkipped)
			}
		})
	}
}
