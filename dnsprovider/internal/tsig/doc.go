// Package tsig holds TSIG keys (RFC 8945) for drwatch's RFC 2136 client and the
// embedded server: parsing key files and an HMAC provider for miekg/dns that
// pins each key to one algorithm, as BIND does.
//
// A Key never prints its secret: String and Format show the name and algorithm
// only, so a key that ends up in an error or a log line leaks nothing.
//
// Like the rest of dnsprovider it never imports failover, cluster or probes.
package tsig
