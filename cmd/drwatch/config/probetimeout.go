package config

import "time"

// CriticalProbeTimeout is the longest timeout of a critical probe of
// either site (defaults applied): a blackholed site fails a round only
// after it, so estimates of the time to a flip add it.
func (s Sites) CriticalProbeTimeout() time.Duration {
	var longest time.Duration
	for _, site := range []Site{s.Primary, s.Backup} {
		for _, p := range site.Probes {
			if p.IsCritical() {
				longest = max(longest, p.Timeout)
			}
		}
	}
	return longest
}
