// Package remediate runs remediations: further leader-only reconcilers with
// the same contract as the DNS reconciler (DESIGN.md §2.4).
//
// A [Remediator] reads the actual world in Plan and returns the actions that
// would fix it; Apply performs one. Both are idempotent. The [Runner] owns
// everything the remediators share, so that no remediator can get it wrong:
//
//   - modes: each remediator is off (the default), dry-run or on;
//   - caps: at most MaxPerPass actions per pass and MaxPerHour per hour (a
//     target that failed counts once in the hour however often it failed);
//     an action a cap stops is recorded as skipped_cap, never silently
//     dropped, and recorded again only when what holds it changes (its Key,
//     its result or the cap), not every pass;
//   - fairness: targets least recently attempted go first; a failed target
//     waits out an exponential backoff (not after [ErrPrecondition]: the
//     next Plan decides afresh); one whose failure wraps
//     [ErrNeedsAdmin] is recorded as needing an admin and parked until its
//     plan changes;
//   - the disruption brake: a remediator that is a [Census] acts on none of
//     its targets while more than brake_share of its population qualifies
//     at once (and, unless it disrupts nodes, at least [BrakeMinAffected]
//     members: a floor would let 2 of 3 nodes go); every action is
//     recorded as skipped_cap with the reason and
//     drwatch_remediation_brake_engaged{remediation} is 1;
//   - the node disruption budget: the remediations of one Kubernetes
//     cluster (Entry.Cluster) together disrupt at most
//     Entry.MaxDisruptedNodes nodes at a time (reboots, out-of-service
//     taints, force-deletes from a node that is not Ready:
//     Action.Disrupts); a node stays disrupted, by what a [Disruptor] says
//     of the actions the replicated budget shows applied, until it is
//     Ready again or gone, and an action on another node waits, recorded
//     as skipped_cap naming the node it waits for;
//   - leadership: it calls VerifyLeader right before every Apply;
//   - audit: every action (planned, applied, failed, skipped_cap, dry_run,
//     blocked; a held or skipped one once per change of its state) is proposed to the replicated log as a failover.Remediation with the
//     current decision generation, and counted in
//     drwatch_remediation_actions_total{remediation,result};
//   - idempotency across leaders (invariant 6): an action's Key is stable,
//     and an action whose Key the replicated budget shows as applied is never
//     applied again, so a new leader does not redo its predecessor's work.
//
// An Apply refused for now by a guard of the target system (ErrBlocked: a
// PodDisruptionBudget) is recorded as blocked: it uses no cap, is not backed
// off, and is tried again next pass.
//
// The hourly count, the applied keys, the backoffs and the parked targets
// come from the replicated budget (failover.RemediationBudget), not from
// memory nor from the bounded records alone, so neither a leader change
// nor any amount of record traffic resets or doubles them (invariant 13).
//
// Each failover group with remediations of its own has its own Runner
// (RunnerConfig.Group, State from GroupState): its records carry the
// group, its generation and budget are the group's, so one group's actions
// never use another's caps nor count as its applied keys. Its node
// disruption budgets are its own too, which is why the config refuses two
// runners' node-disrupting repairs on one Kubernetes cluster.
//
// The repairs live in packages of their own (kube, octavia, debris,
// openstack); each declares itself as a repair.Repair, and package all
// lists them and builds the enabled ones.
//
// Remediation packages (this one and those below it) never import cluster:
// the Runner declares the leadership it needs as an interface.
package remediate
