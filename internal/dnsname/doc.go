// Package dnsname owns the DNS name and record-value rules that the
// decision core (failover), the providers (dnsprovider) and the config
// loader share: making a zone-relative name absolute, whether a name lies in
// its zone, the syntax of a domain name, and the one canonical form in which
// record values are compared, so that the decision core, the provider's
// write-skip compare and the reconciler never disagree on whether two
// RRsets hold the same records.
//
// What each caller accepts stays the caller's: the replicated policy keeps
// its lenient rules so that old Raft logs replay, the config file keeps its
// stricter ones. This package gives them the same words.
//
// It imports only the standard library and is pure, so that the
// stdlib-only decision core may use it. It must never import another drwatch
// package.
package dnsname
