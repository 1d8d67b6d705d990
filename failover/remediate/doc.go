// Package remediate runs remediations: further leader-only reconcilers with
// the same contract as the DNS reconciler (DESIGN.md §2.4).
//
// A [Remediator] reads the actual world in Plan and returns the actions that
// would fix it; Apply performs one. Both are idempotent. The [Runner] owns
// everything the remediators share, so that no remediator can get it wrong:
//
//   - modes: each remediator is off (the default), dry-run or on;
//   - caps: at most MaxPerPass actions per pass and MaxPerHour per hour; an
//     action a cap stops is recorded as skipped_cap, never silently dropped;
//   - leadership: it calls VerifyLeader right before every Apply;
//   - audit: every action (planned, applied, failed, skipped_cap, dry_run,
//     blocked) is proposed to the replicated log as a failover.Remediation with the
//     current decision generation, and counted in
//     drwatch_remediation_actions_total{remediation,result};
//   - idempotency across leaders (invariant 6): an action's Key is stable,
//     and an action whose Key the replicated records show as applied is never
//     applied again, so a new leader does not redo its predecessor's work.
//
// An Apply refused for now by a guard of the target system (ErrBlocked: a
// PodDisruptionBudget) is recorded as blocked: it uses no cap and is tried
// again next pass.
//
// The hourly count comes from the replicated records, not from memory, so a
// leader change neither resets nor doubles it.
//
// The Kubernetes remediators live in package kube.
package remediate
