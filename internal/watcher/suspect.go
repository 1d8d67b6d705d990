package watcher

import (
	"context"
	"sync"

	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/probes"
)

// Reprober re-probes a suspect site; *probes.Scheduler satisfies it. Both
// methods are safe for concurrent use and bound themselves: a site is never
// probed more often than once per fast interval on their account.
type Reprober interface {
	// SetFast sets whether site is re-probed at the fast interval.
	SetFast(site string, on bool)
	// ProbeNow asks for one round of site's probes as soon as allowed.
	ProbeNow(site string)
}

var _ Reprober = (*probes.Scheduler)(nil)

// suspicion decides which sites this watcher re-probes fast (HAProxy's
// fastinter, confirmed across vantage points as Redis Sentinel's SDOWN
// turns ODOWN). A site is fast while either holds:
//
//   - own: a critical probe of it failed in this watcher's own latest round
//     and has failed fewer than fall times in a row, and this node's
//     replica does not already hold it DOWN for this node. It ends when the
//     probe reaches fall (the vote is cast) or succeeds once.
//   - committed: the replicated state shows a fresh, non-abstaining
//     watcher (any, this one too) with a critical probe of it failing and
//     not yet DOWN: counting down towards fall. The site is probed at once,
//     then fast, until it settles: no watcher counts down any more (each
//     sees it UP or has voted it DOWN), or a decision is taken (the desired
//     generation moved), after which it is not suspect again until no
//     watcher counts down.
//
// Only failures make a site suspect, and a probe already DOWN never does:
// a recovering site is probed at the interval, so rise, and failback, are
// never sped up.
type suspicion struct {
	mu    sync.Mutex
	fall  int
	fails map[string]int  // site/probe -> own consecutive failures of a critical probe
	down  map[string]bool // site/probe this node's replica holds DOWN for this node
	eps   map[failover.Site]*episode
	fast  map[failover.Site]bool // what the Reprober was last told
}

// episode is one site's committed suspicion.
type episode struct {
	on       bool
	disarmed bool   // ended by a decision: not again until nobody counts down
	gen      uint64 // the desired generation when it began
}

// reprobe is one change to tell the Reprober.
type reprobe struct {
	site failover.Site
	fast bool
	now  bool // probe at once
}

func newSuspicion(fall int) *suspicion {
	return &suspicion{fall: fall, fails: map[string]int{}, down: map[string]bool{},
		eps: map[failover.Site]*episode{}, fast: map[failover.Site]bool{}}
}

func suspectKey(site failover.Site, probe string) string { return string(site) + "/" + probe }

// round takes this watcher's own round (full or fast) into account.
func (s *suspicion) round(r probes.Round) []reprobe {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, nr := range r.Results {
		if !nr.Critical {
			continue
		}
		k := suspectKey(failover.Site(nr.Site), nr.Probe)
		if nr.OK {
			delete(s.fails, k)
		} else {
			s.fails[k]++
		}
	}
	return s.changes(nil)
}

// view takes the replicated state into account, as node self reads it.
func (s *suspicion) view(v failover.View, self string) []reprobe {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v.Policy == nil {
		return nil
	}
	s.fall = v.Policy.Fall
	counting := map[failover.Site]bool{}
	clear(s.down)
	for _, n := range v.Nodes {
		for _, p := range n.Probes {
			if !p.Critical {
				continue
			}
			if n.Node == self && p.State == failover.Down {
				s.down[suspectKey(p.Site, p.Probe)] = true
			}
			if !n.Stale && n.Abstain == "" && p.Fresh && p.Fails > 0 && p.State != failover.Down {
				counting[p.Site] = true
			}
		}
	}
	var now []failover.Site
	for _, site := range []failover.Site{failover.Primary, failover.Backup} {
		ep := s.eps[site]
		if ep == nil {
			ep = &episode{}
			s.eps[site] = ep
		}
		switch {
		case !counting[site]:
			*ep = episode{}
		case ep.disarmed:
		case !ep.on:
			*ep = episode{on: true, gen: v.Desired.Gen}
			now = append(now, site)
		case v.Desired.Gen != ep.gen:
			*ep = episode{disarmed: true}
		}
	}
	return s.changes(now)
}

// own reports whether this watcher's own failures make site suspect.
func (s *suspicion) own(site failover.Site) bool {
	for k, n := range s.fails {
		if st, _, _ := cutSite(k); st == site && n < s.fall && !s.down[k] {
			return true
		}
	}
	return false
}

func cutSite(k string) (failover.Site, string, bool) {
	for i := 0; i < len(k); i++ {
		if k[i] == '/' {
			return failover.Site(k[:i]), k[i+1:], true
		}
	}
	return "", k, false
}

// changes lists what to tell the Reprober: every site whose fast mode
// changed, and the sites in now, probed at once.
func (s *suspicion) changes(now []failover.Site) []reprobe {
	var out []reprobe
	for _, site := range []failover.Site{failover.Primary, failover.Backup} {
		ep := s.eps[site]
		fast := s.own(site) || (ep != nil && ep.on)
		entered := false
		for _, n := range now {
			entered = entered || n == site
		}
		if fast != s.fast[site] || entered {
			s.fast[site] = fast
			out = append(out, reprobe{site: site, fast: fast, now: entered})
		}
	}
	return out
}

// Suspect lists the sites this watcher re-probes fast now.
func (w *Watcher) Suspect() []failover.Site {
	w.susp.mu.Lock()
	defer w.susp.mu.Unlock()
	var out []failover.Site
	for _, site := range []failover.Site{failover.Primary, failover.Backup} {
		if w.susp.fast[site] {
			out = append(out, site)
		}
	}
	return out
}

// reprobe hands changes to the Reprober, and logs them.
func (w *Watcher) reprobe(changes []reprobe) {
	for _, c := range changes {
		if c.fast {
			w.log.Info("site suspect: re-probing at the fast interval", "site", string(c.site), "at_once", c.now)
		} else {
			w.log.Info("site settled: probing at the interval", "site", string(c.site))
		}
		if w.cfg.Reprobe == nil {
			continue
		}
		if c.now {
			w.cfg.Reprobe.ProbeNow(string(c.site))
		}
		w.cfg.Reprobe.SetFast(string(c.site), c.fast)
	}
}

// suspectLoop reads the replicated state after every applied command and
// re-probes the sites a committed report shows failing.
func (w *Watcher) suspectLoop(ctx context.Context) {
	for {
		w.reprobe(w.susp.view(w.machine.View(), w.cfg.Node))
		select {
		case <-ctx.Done():
			return
		case <-w.cfg.FSM.suspectChanged:
		}
	}
}
