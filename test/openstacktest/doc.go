// Package openstacktest runs a real, small OpenStack control plane for
// integration tests: MariaDB, RabbitMQ, Keystone (uwsgi) and the Octavia API
// (uwsgi) with octavia-worker, and with Options.Neutron also neutron-server.
//
// Octavia uses the amphora provider with the noop amphora, compute, network
// and volume drivers, so a load balancer goes from PENDING_CREATE to ACTIVE in
// about a second without Nova or Neutron, and the failover API works. Error
// states that the noop drivers never produce are written straight into
// MariaDB ([Stack.SetLBStatus]).
//
// Neutron (neutron.go) is neutron-server 21 (Zed) with the ML2 core plugin
// (flat and vxlan type drivers, no mechanism driver, port_security) and the
// router service plugin, and no agent: networks, subnets, ports, security
// groups, routers and extra routes are database operations that need no
// dataplane, and the API validates them as in production (extraroute
// nexthops, max_routes, If-Match revisions, allowed_address_pairs).
// neutron.conf sets max_routes to [NeutronMaxRoutes]. Keystone's catalog
// has it as the "network" endpoint ([Stack.NeutronURL]); the service user is
// "neutron" in project service.
//
// Everything binds to 127.0.0.1 on free ports and keeps its state in one
// temporary directory. Close stops only the processes it started (their
// process groups) and removes the directory.
//
// The stack takes 30-60 s to start on two busy cores and about 1 GB of
// memory: start it once per test package, with [New] from TestMain or behind
// a sync.Once. The first start on a machine runs the Keystone and Octavia
// schema migrations (most of that time) and stores a dump of the migrated,
// bootstrapped databases under
// ${XDG_CACHE_HOME:-$HOME/.cache}/drwatch/openstacktest-schema-<hash of the
// package versions>; later starts load it in about a second.
// OPENSTACKTEST_NO_CACHE=1 turns the cache off. The migrated neutron
// database is a file of its own in that directory, named for the installed
// Neutron packages.
//
// Packages (Debian 12): keystone octavia-api octavia-worker
// uwsgi-plugin-python3 mariadb-server python3-pymysql rabbitmq-server, and
// neutron-server for Neutron, all installed by make install-test-deps
// (test/deps/parts/openstack.sh and neutron.sh).
//
// With Options.Cinder it also runs cinder-api, cinder-scheduler and
// cinder-volume with Cinder's own fake volume driver (cinder.go); volumes
// then go available and are deleted as Cinder decides, and the states a
// broken backend leaves (stuck deleting, error_deleting) are written into
// the cinder database ([Stack.SetVolumeStatus]). Packages: cinder-api
// cinder-scheduler cinder-volume (test/deps/parts/cinder.sh).
//
// It imports no drwatch package outside test/ (its tests may): what the
// tests run against owes nothing to the code under test. Only tests import
// it, never the code of a package outside test/.
package openstacktest
