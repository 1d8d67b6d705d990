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
// verifies and reports.
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
// It never imports cluster: it declares the leadership it needs
// (VerifyLeader, Propose) as an interface.
package reconcile
