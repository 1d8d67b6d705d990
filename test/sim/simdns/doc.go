// Package simdns is the simulator's DNS authority: an in-memory zone that
// implements dnsprovider.Provider, dnsprovider.CompareAndSwapper and
// dnsprovider.BatchSwapper with
// BIND's semantics for RFC 2136 prerequisites and fencing, as the RFC 2136
// client sees them through BIND or dnsprovider/dnstest.
//
// It opens no socket, starts no goroutine and reads no clock: every call
// runs to completion on the caller's goroutine, so it runs inside a
// testing/synctest bubble and a seeded schedule replays exactly. It is safe
// for concurrent use (one mutex; never held while a hook runs).
//
// # Semantics
//
// Swap checks, all-or-nothing, "RRset exists with exactly these values"
// (RFC 2136 §2.4.2) for every expected RRset with values, "RRset does not
// exist" (§2.4.3) for every empty one, and the same for the fence TXT
// ("gen=N"; absent when fenceOld is 0). A failed prerequisite changes
// nothing and returns a *dnsprovider.ConflictError carrying a fresh read,
// with the rcode BIND answers (YXRRSET for a "does not exist" that exists,
// NXRRSET otherwise). Like BIND, the authority does not compare fenceNew
// with fenceOld beyond the client's own checks (non-zero, different): a
// caller that swaps to a lower generation while holding the current one is
// obeyed, and FenceWentBackwards reports it, so the simulator's invariant
// catches the caller rather than the fake hiding it. A deposed writer
// holds a lower fenceOld than the zone and is refused by construction.
// The SOA serial moves only when a write changed something.
//
// SwapBatch is the RFC 2136 client's one UPDATE carrying several swaps,
// each on its own fence TXT (one per failover group of the zone): one
// call, which checks every swap's prerequisites before applying any and
// applies all of them or none, with one serial bump and one History
// entry. A failed prerequisite of any swap fails the whole message with
// dnsprovider.ErrConflict and no re-read, as BIND answers one rcode for
// the message. Clients batch only with clients of the same BatchKey: the
// same authority (the server), zone, and key (a client made with
// Unauthorised never shares a message with a good one).
//
// # Mapped wire behaviour
//
// TSIG is a wire matter. A client made with Unauthorised answers every call
// with the *dnsprovider.AuthError that BIND's NOTAUTH/BADSIG produces
// through the RFC 2136 client (terminal, errors.Is ErrAuth), and changes
// nothing. Verification (Verifier) asks the in-memory zone itself, the one
// authoritative server of the simulated world.
//
// # Faults and observation
//
// Between calls the simulator sets faults (Inject, or InjectWrites to spare
// reads): the next N calls, or all until Clear, time out without applying
// (os.ErrDeadlineExceeded, as a network timeout), are answered REFUSED or
// SERVFAIL (*dnsprovider.RcodeError), or apply and lose the reply (the ambiguous write: the zone changes, the
// caller gets a timeout). A hook (SetHook) is called before and after each
// call takes effect, so the simulator can interleave. Records, Fence,
// Serial, History and FenceWentBackwards observe the zone for invariants;
// every listing is sorted.
//
// test/sim/... may import anything in the module except cmd/...: the
// simulator runs the real parts, never the shell.
package simdns
