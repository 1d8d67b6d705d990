// Package dnsprovider reads and writes the DNS records drwatch manages, and
// verifies that every authoritative server serves them.
//
// # Shape
//
// A Provider is bound to one zone and works on RRsets: GetRecords(want)
// reads the named (name, type) RRsets, SetRecords(sets) writes them
// unconditionally and only where they differ (libdns semantics). The
// optional CompareAndSwapper adds GetFence and Swap(expected, desired,
// fenceOld, fenceNew). New(Config, logger) selects an implementation by
// name; NewVerifier/NewVerifierFromConfig build the authoritative check.
//
// Providers are one table (providers.go), one line each: the name
// dns.provider takes and the provider's section of Config, which answers
// its rules, the credentials it reads and how it is built. Names, Validate,
// Credentials and New all ask the table. A new provider is its own file
// (its section type and those three methods; a libdns client needs only
// NewLibdns around it), its field and name constant in Config, one line of
// the table and the regenerated docs/configuration.md.
//
// Config is also the `dns:` section of a node's config file: the package
// owns its yaml shape, defaults and documentation (struct tags) and its
// rules (Config.Validate, paths relative to the section). Record names and
// values follow internal/dnsname, the rules the decision core shares. The
// package never imports failover.
//
//	p, err := dnsprovider.New(cfg, logger)
//	cur, err := p.GetRecords(ctx, ids)
//	if cas, ok := p.(dnsprovider.CompareAndSwapper); ok {
//		gen, err := cas.GetFence(ctx)
//		err = cas.Swap(ctx, cur, desired, gen, decisionGen) // *ConflictError: re-read, re-plan
//	} else {
//		_, err = p.SetRecords(ctx, desired) // weaker: see below
//	}
//	res, err := verifier.Verify(ctx, desired) // res.Err() names laggards
//
// # Compare-and-swap and fencing (RFC 2136)
//
// RFC2136 reads by direct signed queries of the managed names (no AXFR, so
// the key needs no transfer rights) and writes with ONE signed UPDATE per
// Swap. The UPDATE carries, for every expected RRset, the value-dependent
// prerequisite "RRset exists with exactly these records" (RFC 2136 §2.4.2;
// miekg/dns Msg.Used, not RRsetUsed), or "RRset does not exist" (§2.4.3)
// when the expected RRset is empty, so a first write is guarded too; the same
// for the fence TXT record (default "_drwatch.<zone>", text "gen=N", N being
// the generation of the decision that wrote the records). Then a delete and
// an add per changed RRset and for the fence. The server applies all of it
// or none of it. A leader that has been deposed still holds the old fence
// generation, so its write fails the prerequisite (BIND answers NXRRSET)
// and comes back as a *ConflictError carrying what is there now.
//
// The optional BatchSwapper puts the Swaps of several providers of one
// zone, each fenced on its own record (one per failover group), in ONE
// UPDATE: SwapBatch adds every op's prerequisites, its own fence's
// included, and every op's updates, and the server checks them all before
// applying any (RFC 2136 §3.2, §3.4). Providers share a message only when
// their BatchKey (server, zone, TSIG key) is equal. A failed prerequisite
// fails the whole message with ErrConflict and no re-read: the caller
// learns which op conflicts by making each Swap on its own.
//
// TSIG hmac-sha256 or hmac-sha512; the key comes from a file in BIND's
// `key "name" { algorithm ..; secret ".."; };` format or holding only the
// base64 secret. Keys print as their name only; no error or log line carries
// a secret. UPDATEs go over TCP; queries over UDP, retried over TCP when
// truncated. An update larger than one DNS message (64 KiB) is refused with
// ErrTooLarge rather than split.
//
// # Providers without compare-and-swap (weaker fencing)
//
// Cloudflare, Route 53, PowerDNS (HTTP API), DigitalOcean, Hetzner (v2,
// Cloud DNS API), deSEC (all through libdns) and OpenStack Designate cannot
// make a write conditional on the records being what the writer last saw.
// For an operator that means: a leader that was deposed between its read and
// its write can overwrite the new leader's records, and nothing in DNS
// refuses it. drwatch narrows that window by calling VerifyLeader on the Raft
// cluster right before each write, and the next reconcile pass of the real
// leader (level-triggered) puts its desired state back; but the window is not
// closed. Writes of several RRsets are also not atomic there. Prefer RFC 2136
// (tested here against BIND9 and Knot DNS) when you can.
//
// Designate: its recordset update takes no precondition (an If-Match is
// ignored: checked against the real service). SetRecords re-reads each
// recordset right before updating it and refuses (*ConflictError) if its
// version moved since the read; a concurrent writer can still slip in
// between that check and the update. A create that Designate refuses as a
// duplicate (409: another writer created the RRset since the read) is a
// *ConflictError too, carrying that writer's RRset. Designate accepts a
// write before its name servers serve it (the zone is PENDING for a few
// seconds after each change); a zone in ERROR (a change did not reach
// every pool target) still takes writes, which it sends when it recovers,
// so SetRecords writes and then returns ErrZoneError (retryable) until
// Designate reports the zone out of ERROR. A zone being deleted is
// ErrWrongZone. Use dns.verify to learn what the name servers serve.
//
// # Errors
//
// IsTerminal: ErrAuth (NOTAUTH/BADSIG/BADKEY, HTTP 401/403), ErrRefused
// (REFUSED), ErrWrongZone (NOTZONE, answers or SOA outside the zone, not
// authoritative), ErrConfig, ErrTooLarge, FORMERR/NOTIMP: log, count, do
// not retry. IsRetryable: SERVFAIL, timeouts, connection errors, ErrZoneError, ErrBadReply
// (malformed, mismatched ID or question, not a response, unsigned or badly
// signed reply; resending a Swap is safe because it is a compare-and-swap).
// Retry runs a function with capped, jittered exponential backoff on
// retryable errors only. ErrConflict is neither: re-read and re-plan.
//
// # Verification
//
// Verifier finds the zone's authoritative servers (the NS set and its
// addresses, asked of the configured resolver, or a fixed list of
// host:port), queries each directly without recursion (RD=0), polls until
// each serves the desired RRsets or the timeout ends, and reports per server
// whether it matched, after how long, and what it served.
//
// Subpackages: dnstest is an embedded authoritative server (RFC 2136, TSIG,
// BIND's prerequisite semantics) for `drwatch demo` and tests; providertest
// is the conformance suite every implementation runs (test/dnsservers runs it
// against real BIND9, Knot DNS and PowerDNS).
//
// dnsprovider and its subpackages never import failover, cluster or probes:
// the reconciler hands them RRsets and a fence, and they know nothing of
// why.
package dnsprovider
