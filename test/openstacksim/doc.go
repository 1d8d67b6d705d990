// Package openstacksim is an in-memory SIMULATOR of the slices of the
// OpenStack Keystone v3, Neutron v2.0 and Nova v2.1 APIs that drwatch's
// OpenStack remediators call. It is not OpenStack: it was written from the
// public API references (and the shapes gophercloud v2 decodes), serves
// those JSON shapes over HTTP on 127.0.0.1, applies changes in memory and
// validates requests the way the real services do for these calls.
//
// What still uses it, and why. Neutron and Nova are real now
// (test/openstacktest, Options.Neutron and Options.Nova): the instance
// state, dead-node, reboot and never-ready-instances tests of
// failover/remediate/openstack run against real Nova, the route GC, route
// quota and security-group tests against neutron-server. The remainder:
// the route GC and security-group tests keep this simulator's Nova on the
// real Neutron (UseNeutron: addresses, security groups and
// addSecurityGroup go to the real ports), since their servers need
// addresses on Neutron ports, and Nova here creates servers with networks
// "none" (no L2 agent binds a port); porting them means creating each
// server's port with device_id and device_owner compute:nova, not yet
// done. And cmd/drwatch/node health_test.go, which builds clients from one
// catalog holding a network and a compute endpoint, would need the whole
// real stack in its package for one router read.
//
// Covered:
//
//   - Keystone: POST /v3/auth/tokens with an application credential (ID and
//     secret), 201 with X-Subject-Token and a catalog holding "network" and
//     "compute" public endpoints in one region; wrong credentials give 401.
//     Every other call needs a token this simulator issued (else 401).
//   - Neutron: GET/PUT /v2.0/routers/{id} (PUT replaces the routes: counted,
//     so tests can prove it is never used), PUT .../add_extraroutes and
//     .../remove_extraroutes (set semantics, revision_number bumped on
//     change, 400 RoutesExhausted past max_routes); GET /v2.0/ports
//     (filters device_id, network_id, id), GET/PUT /v2.0/ports/{id}
//     (security_groups, allowed_address_pairs, name; If-Match
//     "revision_number=N" compare-and-swap, 412 on a stale revision as real
//     Neutron's RevisionNumberConstraintFailed); GET /v2.0/security-groups
//     (filters name, id). 404 NotFound bodies in Neutron's shape.
//   - Nova: GET /v2.1/servers/detail and /v2.1/servers (filters name as a
//     regular expression searched in the name, status), GET
//     /v2.1/servers/{id} (status, metadata, addresses with fixed IPs,
//     security_groups derived from the ports' groups, created,
//     OS-SRV-USG:launched_at), POST .../action with reboot SOFT/HARD (409
//     when the state forbids it, as Nova's InstanceInvalidState) and
//     addSecurityGroup (applied to every port of the server; 404 for an
//     unknown group), GET .../os-instance-actions (create and reboot
//     actions). 404 itemNotFound bodies in Nova's shape. Servers carry
//     OS-EXT-STS:power_state (Server.Power, else derived from the status)
//     and, for an admin token only (AdminAppCredID), OS-EXT-SRV-ATTR:host.
//     GET /v2.1/os-services (filters binary, host) is admin only (403
//     otherwise); a down or forced-down service has state "down", and
//     forced_down appears from microversion 2.11.
//   - Nova server lists page like Nova: at most max_limit servers
//     (SetMaxLimit, default 1000), limit and marker, a servers_links "next"
//     link when a page is full; SetPageFault fails the pages after the
//     first with 500. Servers in a down cell (SetCellDown) are listed as
//     Nova's down-cell support does: a minimal record with status UNKNOWN
//     from microversion 2.69 on and only for a list with no filter, paging
//     or sorting parameter; skipped silently otherwise.
//
// With UseNeutron, Nova reads and changes a real Neutron's ports instead
// of the simulator's own (see Neutron).
//
// Not covered: Neutron pagination (everything fits in one page), other
// microversion differences than the down-cell records and forced_down's
// 2.11, GET of a down-cell server, policy and roles beyond those two
// admin-only reads (every token may do everything else), how Nova arrives
// at a power or service state (tests set them), token expiry and
// revocation, any other resource or attribute, and asynchrony (a reboot is
// complete, ACTIVE, when the 202 returns; Neutron's agents, the ASR and DVS
// back ends from the field reports are not modelled).
//
// It imports no drwatch package outside test/ (its tests may): what the
// tests run against owes nothing to the code under test. Only tests import
// it, never the code of a package outside test/.
package openstacksim
