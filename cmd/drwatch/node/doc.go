// Package node assembles one drwatch watcher from its configuration:
// probes → reports → cluster → decision core → reconciler (leader only) →
// DNS, plus the HTTP API. `drwatch serve` runs one; `drwatch demo` runs three
// in one process, each with its own ports, data directory and certificate.
package node
