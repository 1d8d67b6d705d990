// Package probes looks at a site from one watcher's vantage point.
//
// Every probe type has the same shape, [ProbeFunc], kept in the plain map
// [Probers] from type name to function, as prometheus/blackbox_exporter does.
// The caller owns the deadline (ctx), the registry and the outcome metrics.
// Probers are stateless: they never retry, sleep or judge health over time;
// counting failures is the decision core's job. A [Result] keeps the failed
// phase and the reason, not a bare bool.
//
// The [Scheduler] runs every probe of both sites once per interval and emits
// one [Round] of results per interval.
//
// probes never imports failover.
package probes
