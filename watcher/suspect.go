package watcher

import (
	"context"
	"slices"
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
	// SetFastProbes restricts site's fast rounds, SetFast's and
	// ProbeNow's, to the probes named; nil means every probe of the site.
	SetFastProbes(site string, names []string)
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
//   - committed: the replicated state names it suspect (failover.View
//     Suspect, read through Machine.Suspicion after every applied command):
//     a committed report of some watcher, this one too, shows a critical
//     probe of it failing since after the last decision, DOWN or not (with
//     fall 1 the first failing report is DOWN at once). It is probed at
//     once, then fast, until it settles: DOWN at quorum, UP at quorum with
//     nobody failing, a decision taken, or the bounded window of the
//     failure over (see failover's suspects).
//
// A watcher that votes the site DOWN itself (its replica holds one of its
// critical probes of the site DOWN for it) does not re-probe it fast on
// the committed suspicion: its vote is cast, more failures add nothing,
// and fast successes would only speed up its rise. So only watchers that
// have not voted DOWN confirm, and a recovering site, and failback, are
// probed at the interval: rise is never sped up.
//
// With failover groups a fast site's fast rounds re-probe only its
// failing critical probes (failover.Suspicion.Probes for the committed
// rule, failover.Policy.CriticalProbes of this watcher's own failing ones
// for the own rule): a site is DOWN for a watcher once any one critical
// probe is, so they are all there is to confirm, and a round's report,
// which goes out when its slowest probe ends, is not held back by the
// healthy probes of every group that names a failing shared one. A probe
// newly failing on a site already fast is probed at once too. Without
// groups every probe of the site is, as before groups.
type suspicion struct {
	mu        sync.Mutex
	fall      int
	policy    *failover.Policy // the replicated one, for the own rule's groups; nil: every probe
	fails     map[string]int   // site/probe -> own consecutive failures of a critical probe
	down      map[string]bool  // site/probe this node's replica holds DOWN for this node
	committed map[failover.Site]bool
	// committedProbes are the probes the committed rule names per site
	// (failover.Suspicion.Probes); nil: every probe.
	committedProbes map[failover.Site][]string
	fast            map[failover.Site]bool     // what the Reprober was last told
	probes          map[failover.Site][]string // the probes it was last told, while fast
}

// reprobe is one change to tell the Reprober.
type reprobe struct {
	site   failover.Site
	fast   bool
	now    bool     // probe at once
	probes []string // while fast, the probes to re-probe; nil: every probe of the site
}

func newSuspicion(fall int) *suspicion {
	return &suspicion{fall: fall, fails: map[string]int{}, down: map[string]bool{},
		committed: map[failover.Site]bool{}, committedProbes: map[failover.Site][]string{},
		fast: map[failover.Site]bool{}, probes: map[failover.Site][]string{}}
}

// setPolicy sets the replicated policy, whose groups say which probes
// this watcher's own failures make fast.
func (s *suspicion) setPolicy(p *failover.Policy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.policy = p
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

// view takes the replicated state into account, as this node reads it
// (failover.Machine.Suspicion).
func (s *suspicion) view(v failover.Suspicion) []reprobe {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v.Fall == 0 {
		return nil // no policy replicated yet
	}
	s.fall = v.Fall
	clear(s.down)
	for _, k := range v.Down {
		s.down[k] = true
	}
	var now []failover.Site
	committed := map[failover.Site]bool{}
	committedProbes := map[failover.Site][]string{}
	for _, site := range v.Suspect {
		committed[site] = true
		committedProbes[site] = v.Probes[site]
		if !s.committed[site] || gains(s.committedProbes[site], v.Probes[site]) {
			now = append(now, site)
		}
	}
	s.committed, s.committedProbes = committed, committedProbes
	return s.changes(now)
}

// gains reports whether the probe set to names more than from (nil: every
// probe).
func gains(from, to []string) bool {
	if from == nil {
		return false
	}
	if to == nil {
		return true
	}
	return slices.ContainsFunc(to, func(n string) bool { return !slices.Contains(from, n) })
}

// own reports whether this watcher's own failures make site suspect, and
// which probes of it they make fast (nil: every probe).
func (s *suspicion) own(site failover.Site) (bool, []string) {
	var failing []string
	for k, n := range s.fails {
		if st, probe, _ := cutSite(k); st == site && n < s.fall && !s.down[k] {
			failing = append(failing, probe)
		}
	}
	if len(failing) == 0 {
		return false, nil
	}
	if s.policy == nil {
		return true, nil
	}
	names := s.policy.CriticalProbes(site, failing)
	// A probe no group holds critical makes nothing fast.
	return names == nil || len(names) > 0, names
}

// votesDown reports whether this node's replica holds one of its critical
// probes of site DOWN: the node votes the site DOWN.
func (s *suspicion) votesDown(site failover.Site) bool {
	for k := range s.down {
		if st, _, _ := cutSite(k); st == site {
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
		own, ownProbes := s.own(site)
		committed := s.committed[site] && !s.votesDown(site)
		fast := own || committed
		var names []string
		switch {
		case !fast:
		case own && ownProbes == nil, committed && s.committedProbes[site] == nil:
			// Every probe of the site: names stays nil.
		default:
			names = []string{}
			if own {
				names = append(names, ownProbes...)
			}
			if committed {
				names = append(names, s.committedProbes[site]...)
			}
			slices.Sort(names)
			names = slices.Compact(names)
		}
		entered := fast && slices.Contains(now, site)
		moved := fast && !sameProbes(names, s.probes[site])
		if fast != s.fast[site] || entered || moved {
			s.fast[site], s.probes[site] = fast, names
			out = append(out, reprobe{site: site, fast: fast, now: entered, probes: names})
		}
	}
	return out
}

// sameProbes reports whether a and b name the same probes, nil (every
// probe) being no set of names.
func sameProbes(a, b []string) bool {
	return (a == nil) == (b == nil) && slices.Equal(a, b)
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
			// probes 0 means every probe of the site.
			w.log.Info("site suspect: re-probing at the fast interval", "site", string(c.site), "at_once", c.now, "probes", len(c.probes))
		} else {
			w.log.Info("site settled: probing at the interval", "site", string(c.site))
		}
		if w.cfg.Reprobe == nil {
			continue
		}
		if c.fast {
			w.cfg.Reprobe.SetFastProbes(string(c.site), c.probes)
		}
		if c.now {
			w.cfg.Reprobe.ProbeNow(string(c.site))
		}
		w.cfg.Reprobe.SetFast(string(c.site), c.fast)
	}
}

// suspectLoop reads the replicated state after every applied command and
// re-probes the sites a committed report shows failing. On the leader, a
// site newly suspect also pushes the commit to the followers at once (see
// pushCommit).
func (w *Watcher) suspectLoop(ctx context.Context) {
	var prev []failover.Site
	for {
		sus := w.machine.Suspicion(w.cfg.Node)
		p, _ := w.replicated.get(w.machine)
		w.susp.setPolicy(p)
		w.reprobe(w.susp.view(sus))
		for _, site := range sus.Suspect {
			if !slices.Contains(prev, site) {
				w.pushCommit(ctx)
				break
			}
		}
		prev = sus.Suspect
		select {
		case <-ctx.Done():
			return
		case <-w.cfg.FSM.suspectChanged:
		}
	}
}

// committer is a Cluster that can make every member apply what is
// committed now; *cluster.Node's Barrier does it with a raft barrier.
type committer interface {
	Barrier(ctx context.Context) error
}

// pushCommit, on the leader, appends a raft barrier so that the followers
// learn at once that the report making a site suspect is committed: the
// entry carries the leader's commit index. Without it an idle leader tells
// them only at its next heartbeat (hashicorp/raft's CommitTimeout, 50-100
// ms at the default 50ms), and the other watchers' confirming probes, and
// so the decision, wait that long. It costs one barrier entry, never
// applied to the state machine, per site newly suspect. It does not wait.
func (w *Watcher) pushCommit(ctx context.Context) {
	c, ok := w.cfg.Cluster.(committer)
	if !ok {
		return
	}
	w.mu.Lock()
	leading := w.leading
	w.mu.Unlock()
	if !leading {
		return
	}
	go func() {
		bctx, cancel := context.WithTimeout(ctx, w.cfg.Interval)
		defer cancel()
		if err := c.Barrier(bctx); err != nil && bctx.Err() == nil {
			w.log.Debug("commit not pushed to the followers", "err", err)
		}
	}()
}
