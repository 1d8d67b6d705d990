// Package probes looks at a site from one watcher's vantage point.
//
// Every probe type has the same shape, [ProbeFunc], and one line in the
// table of probe types (types.go), as prometheus/blackbox_exporter's prober
// map: its name, its prober and its section of [Spec]. Decoding, the
// file's rules, the scheduler's check, the files a probe reads
// ([Spec.Files]) and the plain map [Probers] from type name to function
// all come from that table. A new type is its own file (its section type,
// with tags, Validate and the file's rules, and its prober), its field in
// Spec (and its name in the doc tag of Spec.Type), one line of the table
// and the regenerated docs/configuration.md.
// The caller owns the deadline (ctx), the registry and the outcome metrics.
// Probers are stateless: they never retry, sleep or judge health over time;
// counting failures is the decision core's job. A [Result] keeps the failed
// phase and the reason, not a bare bool.
//
// # http and tcp
//
// [ProbeHTTP] makes one GET (or HEAD) on a new connection every run (a fresh
// Transport, keep-alives off, HTTP/1.1, no environment proxy), so a load
// balancer that stops accepting connections shows up at once. With
// [HTTPSpec].TLSResume (the file's default 10s) the handshake resumes the
// session of the endpoint's last full handshake and offers only the key
// exchange group its server chose, until that handshake is TLSResume old;
// a failed run forgets it (tlsresume.go). This is the one state probers
// keep, with the CA bundles: a cache, never a judgement. The TCP dial
// goes to [HTTPSpec].ConnectTo, the site's own address, while SNI and Host
// come from the URL: after a DNS flip the primary's probe still reaches the
// primary rather than reporting the backup healthy. Redirects are followed
// only when asked and never to another scheme, host or port. Reasons name
// the phase and the cause ("connect 127.0.0.1:8443: connection refused",
// "tls handshake: x509: certificate signed by unknown authority",
// "status 503, want [200]") and never carry URLs, header values or more
// than a short excerpt of a body.
//
// [ProbeTCP] connects, and optionally completes a TLS handshake.
//
// Phases timed (Result.Phases): dns, connect, tls, first_byte. Classes used:
// dns, refused (refused, reset or closed before an answer), timeout, tls,
// cert_expiry (expired, or valid for less than CertMinValidity), status,
// body, config, error.
//
// # Scheduler
//
// The [Scheduler] runs every probe of every site once per interval and
// emits one [Round] per interval. Ticks are absolute, on a wall-clock grid
// (Unix epoch + phase + k·interval), so the schedule never drifts and
// watchers given phases index/N × interval sample at N distinct moments
// (SchedulerOptions.Phase, Scheduler.SetPhase); each probe starts at a fixed offset from the
// tick (a hash of its site and name, bounded by a fraction of the interval),
// so probes spread out the same way every round. A semaphore bounds
// concurrency. The scheduler enforces each probe's timeout itself: a prober
// that ignores its context is abandoned after timeout + grace, reported as
// a timeout, and not started again until it returns. Rounds are delivered
// latest-wins: a slow consumer loses stale rounds (counted), never stalls
// probing; a replaced round's results for probes the newer round did not
// run are carried into it. With no interval, RunOnce drives rounds by hand.
//
// Re-probing a suspect site (HAProxy's fastinter): with a FastInterval,
// Scheduler.SetFast makes Run also run rounds of only that site's probes
// (Round.Fast) on a grid FastInterval apart with the same phase, and
// Scheduler.ProbeNow asks for one such round at once. The full rounds keep
// their grid; a fast tick a full tick covers is left to it. A round that
// covers a site is never less than FastInterval after the previous one when
// either is fast, so re-probing adds at most one round per FastInterval per
// site; and a probe never runs in two rounds at once (a fast round due while
// a round of its probes runs is skipped, a full round waits for a fast round's
// probe). Scheduler.SetFastProbes restricts a site's fast rounds to some of
// its probes (a suspect failover group's), so that they cost what that
// group's probes cost and wait only for those. The scheduler only probes:
// which site is suspect, and for how long, is the watcher's judgement.
//
// # Metrics
//
// [Metrics] (drwatch_probe_*) are recorded by the scheduler, never by
// probers. Labels are site, probe, type, phase and class only: values from
// configuration or from closed sets in code, never reasons or addresses.
//
// # Configuration
//
// [Spec] is also one probe of the configuration file: its yaml, doc, default
// and types tags are the file's keys, the reference's text and the
// defaults, and [Spec.Validate] and [ValidateProbes] are the file's rules,
// with paths relative to the probe or the list. The configuration loader
// decodes into Spec, applies the tags' defaults, prefixes the paths and adds
// only what crosses sections and whether files exist; [ConfiguredSite] turns
// a site's configured probes into the scheduler's input. Each type's own
// Validate is what its prober accepts, a little more than the file allows
// (an anonymous or http kubernetes server, a kubeconfig with a server
// override, a connect_to without a port). Adding a probe field is adding it
// here, with its tags and rules.
//
// probes never imports failover, cluster or dnsprovider: a Result is
// evidence, and what it means is decided elsewhere.
package probes
