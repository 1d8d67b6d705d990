package failover

import (
	"time"

	"github.com/drwatch/drwatch/internal/field"
)

// PolicySpec is the `policy:` section of a node's config file, as the
// operator writes it: its yaml, doc and default tags (which the config
// loader applies and documents), its derived defaults and its rules.
//
// It is a spec and not the Policy itself, as a probe's spec is not its
// result: Policy is the replicated rule set every replica decides by, set
// through the log, whose JSON and hash must not move when the file's shape
// does. Build makes it from this section and what the other sections give
// (the peers that vote, each site's probes, the zone and its records). The
// section also carries what only this node uses (timeout, the probes'
// default timeout), which never enters the log.
type PolicySpec struct {
	Interval      time.Duration `yaml:"interval" default:"2s" doc:"One probe round per interval."`
	Timeout       time.Duration `yaml:"timeout" default:"1500ms" doc:"Default per-probe timeout; must be below interval."`
	Fall          int           `yaml:"fall" default:"3" doc:"Consecutive failed rounds before a watcher votes a site DOWN."`
	Rise          int           `yaml:"rise" default:"5" doc:"Consecutive good rounds before a DOWN site is UP again for a watcher."`
	Quorum        int           `yaml:"quorum" default:"majority of peers" doc:"Watchers that must agree before a site is DOWN or UP; a majority of the peers."`
	StaleAfter    time.Duration `yaml:"stale_after" default:"3 × interval" doc:"A watcher whose last report is older abstains."`
	AutoFailover  *bool         `yaml:"auto_failover" default:"true" doc:"Fail over automatically when the quorum sees the active site DOWN and the other UP."`
	BlockWindow   time.Duration `yaml:"block_window" default:"1h" doc:"After an automatic flip, further automatic flips wait for 'drwatch ack', a manual move, or this window."`
	Failback      string        `yaml:"failback" default:"manual" doc:"'manual', or 'auto' to return to the primary after failback_after of quorum UP."`
	FailbackAfter time.Duration `yaml:"failback_after" doc:"With failback: auto, how long the primary must be UP at quorum without a break."`
	MaxPause      time.Duration `yaml:"max_pause" default:"24h" doc:"Longest 'drwatch pause --until' accepted; a longer one is refused (a pause until 'drwatch resume' is not bounded). At most a year."`
	FailbackGate  []string      `yaml:"failback_gate" doc:"Primary probes (typically its Octavia load balancers, often not critical) that must be UP at quorum before any failback; refused with exit 3 otherwise, unless --force."`
	FastInterval  time.Duration `yaml:"fast_interval" default:"interval / 4, at least 100ms" doc:"How often a watcher re-probes a site it suspects (its own critical probe just failed, or a committed report shows one failing) until the site settles; between 100ms and interval. Recovery is never probed faster."`
}

// WithDerivedDefaults returns s with the defaults that depend on other
// values, for each field the file left out (set reports whether it wrote
// the field, by its path inside the section): quorum is a majority of the
// nodes, when there are any, stale_after three intervals, and
// fast_interval DefaultFastInterval(interval). A field the
// file sets, even to zero, is left for Validate to judge.
func (s PolicySpec) WithDerivedDefaults(nodes int, set func(path string) bool) PolicySpec {
	if !set("quorum") && nodes > 0 {
		s.Quorum = nodes/2 + 1
	}
	if !set("stale_after") {
		s.StaleAfter = 3 * s.Interval
	}
	if !set("fast_interval") {
		s.FastInterval = DefaultFastInterval(s.Interval)
	}
	return s
}

// Validate reports every problem of the section at once, each naming its
// field by its path inside the section ("failback_after"). The rules that
// need other sections are the caller's: quorum against the peers, and
// failback_gate against the primary's probes.
func (s PolicySpec) Validate() field.Errors {
	var errs field.Errors
	positive := func(path string, d time.Duration) bool {
		if d <= 0 {
			errs.Add(path, "%s must be > 0", d)
		}
		return d > 0
	}
	atMost := func(path string, d, limit time.Duration) bool {
		if d > limit {
			errs.Add(path, "%s must be ≤ %s", d, limit)
		}
		return d <= limit
	}
	okInterval := positive("interval", s.Interval) && atMost("interval", s.Interval, MaxInterval)
	if positive("timeout", s.Timeout) && okInterval && s.Timeout >= s.Interval {
		errs.Add("timeout", "%s must be < interval (%s)", s.Timeout, s.Interval)
	}
	if okInterval {
		if err := CheckFastInterval(s.FastInterval, s.Interval); err != nil {
			errs.Add("fast_interval", "%v", err)
		}
	}
	if s.Fall < 1 {
		errs.Add("fall", "%d must be ≥ 1", s.Fall)
	}
	if s.Rise < 1 {
		errs.Add("rise", "%d must be ≥ 1", s.Rise)
	}
	if okInterval && s.StaleAfter <= s.Interval {
		errs.Add("stale_after", "%s must be > interval (%s)", s.StaleAfter, s.Interval)
	}
	atMost("stale_after", s.StaleAfter, MaxWindow)
	if s.BlockWindow < 0 {
		errs.Add("block_window", "%s must be ≥ 0", s.BlockWindow)
	}
	atMost("block_window", s.BlockWindow, MaxWindow)
	atMost("failback_after", s.FailbackAfter, MaxWindow)
	_ = positive("max_pause", s.MaxPause) && atMost("max_pause", s.MaxPause, MaxWindow)
	switch s.Failback {
	case FailbackManual:
		if s.FailbackAfter != 0 {
			errs.Add("failback_after", "set only with failback: auto")
		}
	case FailbackAuto:
		if s.FailbackAfter <= 0 {
			errs.Add("failback_after", "required > 0 with failback: auto")
		}
	default:
		errs.Add("failback", "%q must be manual or auto", s.Failback)
	}
	return errs
}

// Build returns the replicated Policy the section describes, for the
// voting nodes, each site's probes, and the zone and records that move,
// which the other sections give. auto_failover left out means on.
func (s PolicySpec) Build(nodes []string, sites map[Site]SitePolicy, zone string, records []Record) Policy {
	return Policy{
		Nodes:        nodes,
		Quorum:       s.Quorum,
		Fall:         s.Fall,
		Rise:         s.Rise,
		Interval:     s.Interval,
		StaleAfter:   s.StaleAfter,
		AutoFailover: s.AutoFailover == nil || *s.AutoFailover,
		BlockWindow:  s.BlockWindow,
		Failback:     FailbackPolicy{Mode: s.Failback, After: s.FailbackAfter},
		Sites:        sites,
		Zone:         zone,
		Records:      records,
		FailbackGate: s.FailbackGate,
		MaxPause:     s.MaxPause,
		FastInterval: s.FastInterval,
	}
}
