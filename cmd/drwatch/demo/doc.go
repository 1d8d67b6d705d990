// Package demo runs drwatch on one machine with nothing installed: three
// watcher nodes on loopback (real Raft over mutual TLS, certificates made on
// the fly), two simulated sites, and the embedded authoritative DNS server.
//
// The sites host two platforms, each a failover group: the LMS (the
// default group) and a wiki (group wiki), which both name the region's
// Kubernetes API. The scenarios (Scenarios) script an outage of the LMS
// alone and one of the region that moves both.
//
// The simulated sites are simulators, and say so: each serves an HTTPS
// heartbeat like Caddy's in front of the LMS, another in front of the wiki,
// a Kubernetes-style /readyz, and a tiny Keystone + Octavia API that answers
// the calls the octavia probe makes. A site can be taken down (every
// listener closed, so probes see connection refused, as when a region melts
// down) and brought back, and so can each endpoint alone.
//
// It runs where nothing is installed, so it never imports the test harness
// (test/...), whose helpers start installed servers.
package demo
