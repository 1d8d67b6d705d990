// Package kube holds the Kubernetes remediators, each a remediate.Remediator
// over a kubeapi client (client-go's REST client, with only the API groups
// drwatch calls):
//
//   - dead-node-out-of-service (seeds 003, 004): a node NotReady or Unknown for
//     longer than a threshold whose guest the cloud confirms down (powered
//     off, crashed, unknown to its hypervisor, on a host an operator forced
//     down, or gone; never Nova's ERROR status alone, nor a host that only
//     missed its heartbeats, whose taint is report-only and names the
//     fence) gets the
//     node.kubernetes.io/out-of-service=nodeshutdown:NoExecute taint, so
//     Kubernetes force-deletes its pods and detaches their volumes; the
//     taint drwatch set is removed when the node is Ready again. An UNKNOWN
//     instance state, or a failed check, never taints (fail closed). On a
//     cluster older than 1.26 (the API server's /version) the taint is
//     planned report-only: recorded with the reason, never applied.
//   - drain-trap (seed 002): a LoadBalancer Service with
//     externalTrafficPolicy Local whose ready endpoints all sit on nodes out
//     of its load balancer's pool (labelled
//     node.kubernetes.io/exclude-from-external-load-balancers, deleted, or
//     not a member of the pool the cloud reports; never cordon or readiness
//     alone): one controller-owned pod on a cordoned node is evicted through
//     the Eviction API, so PodDisruptionBudgets hold, and the next only once
//     every pod of the Service is Ready again. A budget's refusal is recorded
//     as blocked. When the pool cannot be read, nothing moves. A pod is
//     evicted only when a Ready, schedulable pool node other than its own
//     matches its nodeSelector and required node affinity and tolerates the
//     node's NoSchedule and NoExecute taints (k8s.io/component-helpers, the
//     scheduler's own matching); otherwise its replacement would stay
//     Pending, and the eviction is planned report-only.
//   - orphaned-pods (seed 000): a pod still Terminating longer than a
//     threshold past its deletion deadline is force-deleted (grace period 0),
//     except a pod held by finalizers, and a StatefulSet's pod or a pod with a
//     ReadWriteOnce(Pod) volume whose node is not confirmed down (node gone,
//     or the cloud says the instance is dead): those are planned
//     report-only, never applied. Opt-in (reboot_node), a reboot is the
//     fence for such a held pod when it blocks something (a StatefulSet's
//     replacement of it, another pod waiting for its claim): the node is
//     cordoned and rebooted through Nova, its boot ID recorded; once it is
//     back Ready under a new boot ID, pods still stuck after a wait are
//     force-deleted, the held ones included. A node whose held pods block
//     nothing is never rebooted (a partitioned node still serving stays
//     so); drwatch's own cordon is lifted once the node is Ready again.
//
// dead-node-out-of-service and orphaned-pods are remediate.Disruptors: the
// taints and reboots they applied keep a node disrupted until it is Ready
// again (after a reboot: under a new boot ID) or gone, and the runner lets
// the repairs of one cluster disrupt at most max_disrupted_nodes nodes at
// a time.
//   - backup-warmup: when the decision makes the backup active, the listed
//     Deployments and StatefulSets on the backup cluster are scaled up to their
//     configured replicas (through the scale subresource), and Ready reports
//     whether they are ready, for the DNS flip to wait on. Optionally
//     (scale_down_at_failback) they return to their idle replicas after a
//     failback, once it is verified at every authoritative server and one
//     TTL of its records has passed.
//
// Plans read through the API only and never write. Applies re-read the
// object and re-check the precondition, write with the object's UID (or
// resourceVersion) as a precondition, and treat an effect already in place
// as success.
//
// Each repair declares itself (DeadNodeRepair, DrainTrapRepair,
// OrphanedPodsRepair, BackupWarmupRepair) for the list in
// executor/remediate/all, which builds the enabled ones with the site's
// client and what the site's cloud offers (package repair).
//
// Like every remediation package it never imports cluster.
package kube
