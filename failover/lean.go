package failover

import (
	"hash/fnv"
	"math"
	"time"
)

// Lean reporting. A watcher at 100 probes a second that sent every result
// of every round would replicate about 16 KB per report, nearly all of it
// "still up, 4 ms". A lean report (Observe with Base) sends only what the
// log does not already know, and the machine repeats each probe's last
// recorded result for the rest of the covered sites. Because the repeat
// runs the same hysteresis on the same results, a lean report changes the
// state exactly as the full one would, except for the latency and
// completion time a repeated result keeps (TestLeanReportsDecideAsFullReports).
//
// The pacing of what is sent anyway, for the status page:
const (
	// LeanLatencyEvery is how often at most a probe's latency goes out
	// when its level changed materially: the level (a moving average of
	// the logarithm of its latency over its rounds, each weighing
	// LeanLevelWeight) differs from the level when a result last went out
	// by LeanMaterialMS and by a factor of two. One https probe on a busy
	// host scatters by a factor of three from one round to the next;
	// compared sample with sample, nearly every probe went out every
	// LeanLatencyEvery. A one-round blip moves the level by a quarter of
	// its factor, a lasting change moves it all the way in a few rounds.
	LeanLatencyEvery = 10 * time.Second
	// LeanLevelWeight is the weight of the newest round in a probe's
	// latency level.
	LeanLevelWeight = 0.25
	// LeanMaterialMS is the smallest latency change, in milliseconds, that
	// counts as material.
	LeanMaterialMS = 20
	// LeanRefreshEvery is how often at most a result whose latency moved,
	// but not materially, goes out again: the latency the status page shows
	// is at most this old. Each probe is due at its own offset within the
	// second half of the period, so refreshes spread over time.
	LeanRefreshEvery = time.Minute
	// LeanBackoff is how long a watcher sends full reports after the
	// machine refused a lean report: a leader that predates lean reports
	// refuses every one, and a minute of full reports costs less than a
	// lost round each interval. A report whose outcome is unknown (a
	// timeout on a busy cluster) is no refusal and starts no backoff.
	LeanBackoff = time.Minute
)

// LeanEncoder turns one watcher's full rounds into lean reports, from what
// the log holds of this watcher's applied reports (its committed view). It
// is pure: the caller passes in the replicated policy and its own clock.
// Use: o := Encode(round); propose o; then exactly one of Applied (the
// machine applied o, not as a duplicate), Refused (the machine refused o),
// Lost (outcome unknown) or NotSent (o certainly never reached the log).
// A round goes out full whenever the view may not match the log: before
// the first applied report, after any report that was not known applied,
// under a policy other than the replicated one, and for LeanBackoff after
// the machine refused a lean report. A lean report leaves PolicyHash
// empty: it goes out only under its base's policy, the replicated one.
//
// A result goes into a lean report when its OK, Class, Phase, Reason or
// CertExpiry differs from the view, when it failed and the probe has fewer
// than fall recorded failures in a row (so the failure that starts an
// episode and the one that makes the probe DOWN carry their own completion
// times, and Timings come out as from full reports), when it failed and
// its streak (ProbeResult.Streak) is not the recorded one's plus one, as
// the machine would repeat it, when its latency
// level changed materially (at most every LeanLatencyEvery), when
// its latency changed at all and LeanRefreshEvery passed, when the probe
// has no recorded result, and whenever its site is not covered: a round that
// lacks a result for some probe of the policy's site sends that site's
// results as they are. Results for probes the policy does not name always
// go out. The zero value is ready to use; it is not safe for concurrent use.
type LeanEncoder struct {
	view      map[string]*leanProbe
	base      uint64 // Seq of the last report known applied; 0: none
	hash      string // the policy hash that report was under
	fullUntil int64  // full reports until then, after a lean one failed
	pending   *leanPending
}

// leanProbe is what the log holds of one probe from this watcher.
type leanProbe struct {
	last       ProbeResult // the recorded result (its CompletedAt aside)
	fails      int         // recorded failures in a row, never more than the log's
	sentAt     int64       // when a result of the probe last went out
	recordedAt int64       // when a report that recorded it was known applied
	level      float64     // the latency level: a moving average of ln(ms) over the rounds, sent or not
	sentLevel  float64     // the level when a result last went out
}

// leanPending is the report awaiting its outcome.
type leanPending struct {
	obs    Observe
	policy *Policy
	hash   string // the policy hash of its round (obs leaves it out when lean)
	at     int64
	// keepView is set on a full report sent while the view matched the
	// log under its policy (no site covered): the log keeps its older
	// states for the probes it leaves out, and so does the view.
	keepView bool
}

// Encode returns the report to propose for the full round o (Base 0, as
// the watcher built it) at the caller's clock now: lean when the view
// allows, else o itself. p and hash are the replicated policy and its hash
// as the local replica has them (nil, "" when none).
func (e *LeanEncoder) Encode(o Observe, p *Policy, hash string, now int64) Observe {
	if e.pending != nil {
		e.Lost()
	}
	out, keep := e.encode(o, p, hash, now)
	e.pending = &leanPending{obs: out, policy: p, hash: o.PolicyHash, at: now, keepView: keep}
	return out
}

// encode returns the report for o, and whether the view still matches the
// log for the probes a full report leaves out (see leanPending.keepView).
func (e *LeanEncoder) encode(o Observe, p *Policy, hash string, now int64) (Observe, bool) {
	if e.base == 0 || p == nil || o.Base != 0 || o.Seq == 0 || o.Seq == e.base ||
		o.PolicyHash != hash || hash != e.hash || now < e.fullUntil {
		return o, false
	}
	for _, v := range e.view {
		if now-v.recordedAt >= int64(p.stale())/2 {
			// The log may have aged the probe out (stale_after, on the
			// leader's clock: a round without it, a silence) and will
			// count its failures from one again: resend them until fall,
			// so that their times are their own.
			v.fails = 0
		}
	}
	has := make(map[string]bool, len(o.Results))
	var roundAt int64
	for _, r := range o.Results {
		k := probeKey(r.Site, r.Probe)
		if has[k] {
			return o, false // the machine refuses it; it must refuse the same round
		}
		has[k] = true
		roundAt = max(roundAt, r.CompletedAt)
	}
	// The policy is the base's (o.PolicyHash == e.hash): the report
	// leaves its hash out.
	lean := Observe{Node: o.Node, Seq: o.Seq, Base: e.base, RoundAt: roundAt, Results: []ProbeResult{}}
	covered := map[Site]bool{}
	for _, site := range sites {
		all := len(p.siteProbes(site)) > 0
		for _, ref := range p.siteProbes(site) {
			all = all && has[probeKey(site, ref.Name)]
		}
		if all {
			covered[site] = true
			lean.Sites = append(lean.Sites, site)
		}
	}
	if len(lean.Sites) == 0 {
		// A round of some probes of a site (a fast round of one failover
		// group's) goes out full, but the view held until now.
		return o, true
	}
	for _, r := range o.Results {
		if v := e.view[probeKey(r.Site, r.Probe)]; v != nil {
			v.observe(r.LatencyMS)
		}
	}
	for _, r := range o.Results {
		k := probeKey(r.Site, r.Probe)
		if _, ok := p.probe(r.Site, r.Probe); !ok || !covered[r.Site] || e.send(k, r, p.Fall, now) {
			lean.Results = append(lean.Results, r)
		}
	}
	return lean, false
}

// send reports whether r must go out in a lean report (see LeanEncoder).
func (e *LeanEncoder) send(k string, r ProbeResult, fall int, now int64) bool {
	v := e.view[k]
	switch {
	case v == nil:
		return true
	case r.OK != v.last.OK || r.Class != v.last.Class || r.Phase != v.last.Phase || r.Reason != v.last.Reason || r.CertExpiry != v.last.CertExpiry:
		return true
	case !r.OK && v.fails < fall:
		return true
	case !r.OK && (r.Streak != 0 || v.last.Streak != 0) && (r.Streak != v.last.Streak+1 || r.StreakAt != v.last.StreakAt || r.StreakFellAt != v.last.StreakFellAt):
		// The machine repeats a failure as one more of its streak; a
		// streak that is not that (it started again) goes out.
		return true
	}
	since := now - v.sentAt
	switch {
	case r.LatencyMS == v.last.LatencyMS:
		return false
	case since >= int64(LeanLatencyEvery) && material(v.level, v.sentLevel):
		return true
	}
	return since >= int64(LeanRefreshEvery)-refreshOffset(k)
}

// observe adds a round's latency to the probe's level.
func (v *leanProbe) observe(latency int64) {
	v.level += LeanLevelWeight * (logMS(latency) - v.level)
}

func logMS(latency int64) float64 { return math.Log(float64(max(latency, 1))) }

// material reports whether the levels a and b differ materially: by
// LeanMaterialMS and by a factor of two.
func material(a, b float64) bool {
	lo, hi := math.Exp(min(a, b)), math.Exp(max(a, b))
	return hi-lo >= LeanMaterialMS && hi >= 2*lo
}

// refreshOffset spreads the probes' refreshes over the second half of
// LeanRefreshEvery, by name, so that they do not all fall due in the round
// after a full report.
func refreshOffset(k string) int64 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(k))
	return int64(h.Sum32()) % int64(LeanRefreshEvery/2)
}

// Applied records that the machine applied the pending report, as a new
// round (not a duplicate): the view becomes what the log now holds.
func (e *LeanEncoder) Applied(now int64) {
	pd := e.pending
	e.pending = nil
	if pd == nil {
		return
	}
	o, p := pd.obs, pd.policy
	if p == nil || pd.hash == "" {
		e.reset()
		return
	}
	if o.Base == 0 && !pd.keepView {
		// Probes missing from a full report keep older states in the log;
		// forgetting them only sends them again.
		e.view = map[string]*leanProbe{}
	}
	sent := make(map[string]bool, len(o.Results))
	for _, r := range o.Results {
		k := probeKey(r.Site, r.Probe)
		sent[k] = true
		if _, ok := p.probe(r.Site, r.Probe); !ok {
			continue
		}
		v := e.view[k]
		if v == nil {
			v = &leanProbe{level: logMS(r.LatencyMS)}
			e.view[k] = v
		}
		v.last, v.sentAt, v.recordedAt, v.sentLevel = r, pd.at, now, v.level
		v.count(r.OK)
	}
	for _, site := range o.Sites {
		for _, ref := range p.siteProbes(site) {
			if v := e.view[probeKey(site, ref.Name)]; v != nil && !sent[probeKey(site, ref.Name)] {
				v.recordedAt = now
				v.count(v.last.OK)
				if !v.last.OK && v.last.Streak > 0 {
					v.last.Streak++ // as the machine repeats it
				}
			}
		}
	}
	e.base, e.hash = o.Seq, pd.hash
}

func (v *leanProbe) count(ok bool) {
	if ok {
		v.fails = 0
	} else {
		v.fails++
	}
}

// Refused records that the machine refused the pending report: the next
// report is full, and after a lean one, reports stay full for LeanBackoff.
func (e *LeanEncoder) Refused(now int64) {
	if pd := e.pending; pd != nil && pd.obs.Base != 0 {
		e.fullUntil = now + int64(LeanBackoff)
	}
	e.Lost()
}

// Lost records that the pending report's outcome is unknown (it may be
// applied yet): the next report is full.
func (e *LeanEncoder) Lost() {
	e.pending = nil
	e.reset()
}

// Pending returns the report awaiting its outcome and the clock it was
// encoded at; ok is false when there is none. A caller that could not
// learn the outcome in time may look for it in the log (the node's last
// applied Seq) before the next Encode, and call Applied with at.
func (e *LeanEncoder) Pending() (o Observe, at int64, ok bool) {
	if e.pending == nil {
		return Observe{}, 0, false
	}
	return e.pending.obs, e.pending.at, true
}

// NotSent records that the pending report never reached the log: the view
// still holds.
func (e *LeanEncoder) NotSent() { e.pending = nil }

func (e *LeanEncoder) reset() {
	e.view, e.base, e.hash = nil, 0, ""
}
