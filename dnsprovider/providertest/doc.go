// Package providertest is the one conformance suite every dnsprovider
// implementation runs: the embedded server, real BIND9 and Knot DNS through
// the RFC 2136 client, real PowerDNS through libdns/powerdns, real
// Designate with its BIND9 backend (test/openstacktest), and the
// simulator's in-memory authority (test/sim/simdns), which has no wire and
// so gives the SOA serial and the verifier itself (Target.Serial,
// Target.NewVerifier).
//
// Run(t, factory) checks reads, unconditional set and its idempotency (the
// SOA serial does not move when nothing changes), multi-RRset atomic
// compare-and-swap with a fence, a first write guarded by "RRset does not
// exist", a stale writer being rejected, refused credentials, and
// verification against every authoritative server. Targets without
// compare-and-swap log that and run the rest.
//
// Only tests import it, never the code of a package outside test/. Like the
// rest of dnsprovider it never imports failover, cluster or probes.
package providertest
