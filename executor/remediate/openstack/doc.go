// Package openstack holds the remediators that repair a Kubernetes
// cluster's OpenStack project through Neutron and Nova (seed 001, the
// Kubernikus routegc and flight controllers), each a remediate.Remediator
// over gophercloud v2 service clients, and a Nova-backed
// kube.InstanceChecker:
//
//   - neutron-route-gc: in the cluster's router, an extra route into the
//     pod CIDR is removed with remove_extraroutes (never a full route-list
//     replace) only when it is provably this cluster's and provably stale,
//     judged from the cluster's Kubernetes nodes (Node.spec.podCIDRs and
//     InternalIPs, read through NodePodCIDRs) and every Nova server of the
//     project: its destination is a node's pod CIDR and its next hop is
//     not that node, or its destination is no node's pod CIDR and its next
//     hop is a node (whose pod CIDR differs: a reused address) or a cluster
//     instance that is no node. A route whose next hop any instance
//     outside the cluster holds is never touched. A Nova listing that may
//     be partial (a down cell's UNKNOWN record at microversion 2.69, more
//     than one page) removes nothing and Plan returns one "warn" action
//     saying why; a listing or node read that fails is an error. When the
//     routes left would be within a margin of Neutron's max_routes, Plan
//     also returns one action with Verb "warn" (VerbWarn): Apply treats it
//     as a no-op, so the warning is recorded once per route count in the
//     replicated history (and counted like any action by the Runner's caps).
//     With no cluster instance, no node, or no node matching a cluster
//     instance, Plan refuses to judge (error). Neutron re-validates every
//     route the router keeps on each remove_extraroutes (max_routes, next
//     hops in the router's subnets and not its own addresses), so a router
//     over max_routes by two or more, or one invalid route left on it,
//     makes every removal fail: Apply then says so and names the invalid
//     routes (not a precondition: the next pass cannot do better).
//   - security-groups: a cluster instance none of whose ports carries the
//     required security group gets it back through Nova's addSecurityGroup;
//     a node port (the port holding the instance's address) whose
//     allowed_address_pairs do not cover the pod CIDR gets it added with a
//     port update carrying If-Match: revision_number from Plan, so a port
//     changed since Plan is refused by Neutron (412) and Apply returns
//     remediate.ErrPrecondition; the next pass plans afresh. A port with
//     port security off filters nothing and Neutron refuses groups (400)
//     and pairs (409) on it: it needs neither, and gets neither. A port at
//     Neutron's max_allowed_address_pair fails with an error saying so.
//   - never-ready-instances: an instance ACTIVE for longer than T (and T
//     since its last reboot), younger than the age bound (an old VM with
//     no Ready node is no failed boot), whose node never became Ready
//     (NodeReadiness)
//     is soft rebooted, then hard rebooted, never more: the reboots are
//     counted from Nova's os-instance-actions, and the keys
//     reboot/<id>/1 and reboot/<id>/2 are all there are, so the Runner's
//     records cap it at two even if Nova forgets. At the cap Plan returns a
//     "warn" action once, for the human. Its reboots disrupt the instance's
//     node (remediate.Disruptor): with the Kubernetes repairs of its site
//     they share one node disruption budget, and a rebooted instance holds
//     it until its node is Ready or the instance is gone or shut off.
//   - NovaInstances implements kube.InstanceChecker for
//     dead-node-out-of-service from the guest's power state
//     (OS-EXT-STS:power_state SHUTDOWN, CRASHED, NOSTATE), from the
//     nova-compute service of its host (forced down by an operator; needs
//     admin credentials, skipped without them; a service only down is
//     HOST_DOWN, not down, and FenceAdvice names the command that records
//     the host's fence), and from a 404 for the node's
//     providerID (GONE). Nova's ERROR status is ERROR, which is not down;
//     anything else (paused, suspended, no power state, no single name
//     match, any error) is ACTIVE or UNKNOWN, so the caller fails closed.
//
// A cluster instance is one the Selector matches: the cluster's metadata
// key and value, narrowed by a name prefix. A prefix alone also matches a
// neighbouring cluster's instances and VMs that are no nodes, so the config
// allows it in dry-run only. All three repairs are a remediate.Census, so
// the Runner's disruption brake holds each when most of its population
// (cluster instances, or the router's routes into the pod CIDR) qualifies
// at once.
//
// Each repair declares itself (RouteGCRepair, SecurityGroupsRepair,
// NeverReadyRepair) for the list in executor/remediate/all; NewCloud is the
// cloud of remediations.openstack that they, and dead-node, orphaned-pods
// and drain-trap of the same site, are built with. Nothing is built by
// touching the cloud: the clients authenticate on first use and retry on
// the next use after a failure, so a watcher starts while the primary's
// Keystone is down.
// RouteQuotaReader gives the cluster-health page the router's route quota
// through the same lazy clients.
//
// Plans only read. Applies re-read and re-check their precondition, and
// treat an effect already in place as success.
//
// Like every remediation package it never imports cluster.
package openstack
