// Package octavia holds the octavia-stuck-lb remediator (seed 000): after a
// site meltdown, Octavia comes back last and its load balancers are often
// left in provisioning_status ERROR, or stuck PENDING_*, which tenants
// cannot fix on their own.
//
// The remediator acts on one project: project_id, or the project the
// credentials are scoped to. Admin credentials list (and may fail over)
// every project's load balancers, so the list asks for the project and every
// load balancer is checked against it, in Plan, Census and Apply.
//
// Plan lists the watched load balancers and proposes a "failover" for each
// one in ERROR, or PENDING_* for longer than the pending timeout (measured
// from the API's updated_at). A load balancer in ERROR is failed over only
// when its operating_status is OFFLINE or ERROR: ERROR provisioning says
// the control plane failed, not that traffic stopped, and a failover that
// fails cuts a load balancer that still served. Any other operating_status
// (ONLINE, DEGRADED, DRAINING, NO_MONITOR, none) makes the action
// report-only. Apply calls the Octavia failover API
// (PUT /v2/lbaas/loadbalancers/{id}/failover) and follows the load balancer
// until it is ACTIVE again. The failover API is admin-only under Octavia's
// default policy: a 403 becomes a *NeedsAdminError carrying the exact command
// an admin must run, which the Runner records as the failure's detail. It,
// and a 409 on a load balancer stuck PENDING_*, wrap remediate.ErrNeedsAdmin,
// so the Runner parks the load balancer until its state changes.
//
// One stuck episode is keyed by the load balancer's ID and updated_at, so it
// is failed over once. Octavia stores updated_at with one-second
// resolution: a new ERROR written within the same second as the previous
// one's status change shares its key and is skipped as done until
// updated_at moves again. With real amphorae a failover flow takes far
// longer than a second, so this is a limit on paper rather than in the
// field; the octavia probe still reports the load balancer.
//
// Every Plan and Apply authenticates afresh with Keystone: nothing cached can
// hide a dead or restored control plane.
//
// Pools (kube.LoadBalancerPools) reads, for drain-trap, the members of the
// pools of the load balancer the OpenStack cloud provider made for a
// Service: found by its loadbalancer.openstack.org/load-balancer-id
// annotation, else by the name kube_service_<cluster>_<namespace>_<name>
// within the credentials' own project. A load balancer not ACTIVE is an
// error (its pools may be changing), so drain-trap moves nothing.
//
// Like every remediation package it never imports cluster.
package octavia
