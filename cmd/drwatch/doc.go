// Command drwatch is the out-of-cluster disaster-recovery failover service.
//
// It is the shell: one cobra command per file (root.go lists them), the
// wiring of `drwatch serve` (package node) and the client side of the HTTP
// API. It may import every package of the module but the test harness
// (test/...) and the test-only helpers, and no library package imports it.
package main
