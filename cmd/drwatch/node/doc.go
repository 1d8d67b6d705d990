// Package node assembles one drwatch watcher from its configuration:
// probes → reports → cluster → decision core → reconciler (leader only) →
// DNS, plus the HTTP API. `drwatch serve` runs one; `drwatch demo` runs three
// in one process, each with its own ports, data directory and certificate.
//
// It may import every library package; it never imports cmd/drwatch/demo
// (which builds on it) or the test harness (test/...).
package node
