// Package faultproxy is a userspace TCP proxy that a test controls, to put
// network faults between real processes: pass traffic through, blackhole it
// (accept and never answer, freezing existing connections), reset every
// connection with RST, delay every chunk, or drop a seeded, deterministic
// fraction of new connections.
//
// It speaks plain TCP and knows nothing of the protocol it carries, so it
// works for raft, TLS, HTTP or DNS over TCP alike. It is meant for tests on
// 127.0.0.0/8 only.
//
// It imports no drwatch package outside test/ (its tests may): what the
// tests run against owes nothing to the code under test. Only tests import
// it, never the code of a package outside test/.
package faultproxy
