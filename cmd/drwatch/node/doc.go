// Package node assembles one drwatch watcher from its configuration, in one
// pass: the probe scheduler, the DNS provider and verifier, the remediations
// and their gates, the cluster member, then the runtime (package watcher)
// that runs the loops between them; the HTTP API serves from it. `drwatch serve` runs one; `drwatch demo` runs three
// in one process, each with its own ports, data directory and certificate.
//
// It may import every library package; it never imports cmd/drwatch/demo
// (which builds on it) or the test harness (test/...).
package node
