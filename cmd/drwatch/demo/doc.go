// Package demo runs drwatch on one machine with nothing installed: three
// watcher nodes on loopback (real Raft over mutual TLS, certificates made on
// the fly), two simulated sites, and the embedded authoritative DNS server.
//
// The simulated sites are simulators, and say so: each serves an HTTPS
// heartbeat like Caddy's in front of the LMS, a Kubernetes-style /readyz, and
// a tiny Keystone + Octavia API that answers the calls the octavia probe
// makes. A site can be taken down (every listener closed, so probes see
// connection refused, as when a region melts down) and brought back.
//
// It runs where nothing is installed, so it never imports the test harness
// (test/...), whose helpers start installed servers.
package demo
