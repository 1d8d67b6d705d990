// Package dnstest is a small embedded authoritative DNS server with RFC 2136
// dynamic updates, TSIG and BIND's prerequisite semantics. drwatch uses it for
// `drwatch demo` and for fast unit tests of the RFC 2136 client; the same
// conformance suite runs against it and against real BIND9 and Knot DNS.
//
// It serves one zone over UDP and TCP. Queries need no key (a signed query
// gets a signed answer); UPDATE must be signed with a configured key:
// unsigned is REFUSED, a bad key or signature is NOTAUTH (BADKEY/BADSIG), as
// BIND answers. An UPDATE is applied all-or-nothing and bumps the SOA serial
// only when it changed something.
//
// Like the rest of dnsprovider it never imports failover, cluster or probes.
// It is no test-only helper: `drwatch demo` serves DNS with it.
package dnstest
