// Package dnsservers starts real authoritative DNS servers for drwatch's
// tests: BIND9 and Knot DNS with a TSIG-guarded dynamic zone, and PowerDNS
// with its HTTP API. Each server runs from a temp dir, bound to 127.0.0.1 on
// a free high port, in its own process group that Close kills.
//
// The package's tests run the dnsprovider conformance suite against all
// three, and the benchmark compares our RFC 2136 client with nsupdate.
// A missing binary is an error naming the Debian package
// (install with `make install-test-deps`).
//
// It imports no drwatch package outside test/ (its tests may): what the
// tests run against owes nothing to the code under test. Only tests import
// it, never the code of a package outside test/.
package dnsservers
