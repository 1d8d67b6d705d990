// Package e2e holds drwatch's end-to-end and chaos tests: three real
// `drwatch serve` processes built from the tree, real BIND9 as the
// authoritative DNS (RFC 2136 + TSIG), two real Caddy sites, and userspace
// fault proxies between the watchers and each site and between the leader
// and BIND. Everything listens on 127.0.0.1.
//
// The harness (harness.go) starts and tears down one such world per test.
// The tests check their invariants only from the outside: BIND's answers,
// `drwatch history -o json` and `drwatch status -o json` on every node, and
// the processes' exit codes. docs/testing.md says what each test proves and
// how to run it.
//
// It checks the product from outside, so it never imports cmd/drwatch/node
// or cmd/drwatch/demo: it runs the binary and reads what it prints and
// serves.
package e2e
