// Package reconcile is the leader's loop that makes DNS match the decision
// core's desired state.
//
// It is level-triggered, in the controller-runtime manner: each pass reads
// the desired state from the local replica and the actual state from the DNS
// provider, writes only the difference as a compare-and-swap carrying the
// decision's generation as the fencing token, verifies that every
// authoritative server serves the new answer, and proposes an ActionResult
// so that the history and the next leader know what happened. A pass is safe
// to repeat, and a new leader resumes a half-done flip without redoing a
// finished one: if DNS already carries the desired records and fence, it only
// verifies and reports. The written record is proposed while the servers
// are verified, not before (with many groups their records commit one
// after the other, and verified_at would wait for the last); the verified
// record, and any post-flip hook, still wait for it, so the log says
// written before verified and a node deposed since records and runs
// nothing more.
//
// Safety rules, each one tested:
//   - It writes only for a decision (generation > 0); before the first
//     decision it observes and reports drift, never "corrects" the operator's DNS.
//   - It never overwrites a fence newer than the generation it is driving:
//     a newer decision reached DNS, so this replica lags or this node was deposed.
//   - It calls VerifyLeader right before every write.
//   - Once a decision is verified, later drift is reported, not silently
//     reverted; a human resolves it with a new decision (failover, failback).
//
// One Reconciler drives one failover group (Config.Group): the leader runs
// one per group, concurrently, each on its group's desired state
// (GroupState) and fenced on its group's own record, so a deposed leader's
// write for one group is refused by that group's fence and never touches
// another group's records, and one group's failing zone never delays
// another's write.
//
// Reconcilers of one zone on one RFC 2136 server may share their writes
// (BatchWrites): a region outage that moves N groups of a zone is one
// UPDATE, not N. The batch only changes how the compare-and-swap reaches
// the server, nothing else: each group still reads its own records and
// fence, runs its own gates, has its own answer verified and proposes its
// own ActionResults, and the one message carries every group's own fence
// prerequisite, so a stale write for group A fails the message and never
// moves group B. Smaller designs were rejected: one leader-wide pass
// over every group would share one backoff and let a group's slow gate
// or verification hold back the rest; a batch that stays refused as a
// whole would let one group's conflict block the others. Hence, when the
// server refuses the message (a prerequisite, REFUSED, too large), each
// member writes on its own, as without a batch, and gets its own outcome
// (written, conflict, stale); when the outcome is unknown (transport), it
// is every member's error and their next passes re-read. A member writes
// as soon as every sibling with an unwritten decision has joined or
// finished its pass, and never waits for one longer than the window.
// Providers without RFC 2136 compare-and-swap, and groups alone in their
// zone, write on their own as before.
//
// A batch member plans its write from its last pass's read of its records
// and fence, when no write of its own came after it and every one of its
// RRsets changes, instead of reading them again: in a region outage that
// is two signed queries per group fewer between the decision and the
// UPDATE. The read is evidence of what to expect, never of what is done:
// the UPDATE's prerequisites on those records and that fence make the
// server refuse the batch if DNS changed since, and a member whose plan
// was refused reads again and writes on its own, as every member of a
// refused batch does, so a newer fence still stops a deposed leader
// (ErrStale). A member alone in its batch (one group's flip among
// settled siblings) sends its plan itself, under the same prerequisites,
// and reads again only if the server refuses them.
//
// The members whose batched write landed are verified together, right
// after the UPDATE (TogetherVerifier, dnsprovider.Verifier.VerifyEach):
// each server is asked for every member's records and fence in one round
// of queries over a few sockets, not over a socket per query from a
// goroutine per member and server. Each member still gets its own
// Verification, as soon as its own records are served everywhere, and
// records it itself; members whose verifiers ask other servers are
// verified apart.
//
// The leader wakes a group's loop on an applied command only when the
// command may concern it (Reconciler.Wants): a settled group, verified or
// without a decision, reads its DNS once an interval to report drift,
// not once per probe report, so many groups cost the DNS server and the
// leader reads in proportion to their number, not to the report rate.
//
// It never imports cluster: it declares the leadership it needs
// (VerifyLeader, Propose) as an interface.
package reconcile
