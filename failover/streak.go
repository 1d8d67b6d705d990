package failover

// StreakCounter keeps one watcher's own failure streaks, probe by probe,
// over every round it probes, whether or not its reports commit, and
// stamps them on its reports (ProbeResult.Streak, StreakAt, StreakFellAt).
// While no leader can commit a report (an election) the log learns nothing
// of the rounds a watcher fails; the streak carries them in the first
// report that commits after, so the machine counts them (invariant 1: each
// is a consecutive fresh round of that watcher) and the decision's Timings
// keep the watcher's own times, whoever was leader.
//
// A streak ends with a success, and starts again from one when a failure
// completes more than the policy's stale window after the probe's previous
// result: rounds that far apart are not consecutive fresh rounds (a frozen
// scheduler, a suspended process). It is pure and not safe for concurrent
// use; the zero value is ready.
type StreakCounter struct {
	probes map[string]*streak
}

// streak is one probe's current run.
type streak struct {
	n           int
	first, fell int64 // CompletedAt of the first failure and of the fall-th
	lastAt      int64 // CompletedAt of the probe's last result
}

// Stamp counts o's results (a round of this watcher, as built) into the
// streaks under the replicated policy p, and returns o with each failure
// stamped with its streak when format, the cluster's effective log format,
// reads the stamps (2 and later); below it returns o as built, the old
// form every server reads. A result is counted once: one that completed
// no later than the probe's last counted result is not counted again (a
// round counted when it arrived and stamped when it is sent, or an older
// result carried into a merged round), and is stamped only if it is that
// last result, since an older one's streak is no longer known. Results
// without a completion time, or for probes p does not name, are neither
// counted nor stamped. With no policy (nil) nothing is counted.
func (c *StreakCounter) Stamp(o Observe, p *Policy, format int) Observe {
	if p == nil {
		return o
	}
	if c.probes == nil {
		c.probes = map[string]*streak{}
	}
	stamped := format >= fieldFormats["ProbeResult.streak"]
	if stamped {
		o.Results = append([]ProbeResult(nil), o.Results...)
	}
	stale := int64(p.stale())
	for i, r := range o.Results {
		k := probeKey(r.Site, r.Probe)
		if _, ok := p.probe(r.Site, r.Probe); !ok || r.CompletedAt == 0 {
			continue
		}
		st := c.probes[k]
		if st == nil {
			st = &streak{}
			c.probes[k] = st
		}
		if gap := r.CompletedAt - st.lastAt; gap > 0 {
			st.lastAt = r.CompletedAt
			switch {
			case r.OK:
				*st = streak{lastAt: r.CompletedAt}
			case st.n == 0 || gap > stale:
				*st = streak{n: 1, first: r.CompletedAt, lastAt: r.CompletedAt}
			default:
				st.n++
			}
			if !r.OK && st.n == p.Fall {
				st.fell = r.CompletedAt
			}
		}
		if stamped && !r.OK && st.n > 0 && r.CompletedAt == st.lastAt {
			o.Results[i].Streak, o.Results[i].StreakAt, o.Results[i].StreakFellAt = st.n, st.first, st.fell
		}
	}
	return o
}
