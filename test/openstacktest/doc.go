// Package openstacktest runs a real, small OpenStack control plane for
// integration tests: MariaDB, RabbitMQ, Keystone (uwsgi) and the Octavia API
// (uwsgi) with octavia-worker, and with Options.Neutron neutron-server, with
// Options.Nova Placement and Nova.
//
// Octavia uses the amphora provider with the noop amphora, compute, network
// and volume drivers, so a load balancer goes from PENDING_CREATE to ACTIVE in
// about a second without Nova or Neutron, and the failover API works. Error
// states that the noop drivers never produce are written straight into
// MariaDB ([Stack.SetLBStatus]).
//
// Neutron (neutron.go) is neutron-server 21 (Zed) with the ML2 core plugin
// (flat and vxlan type drivers, the openvswitch mechanism driver,
// port_security) and the router service plugin, and no agent process:
// networks, subnets, ports, security groups, routers and extra routes are
// database operations that need no dataplane, and the API validates them as in production (extraroute
// nexthops, max_routes, If-Match revisions, allowed_address_pairs).
// neutron.conf sets max_routes to [NeutronMaxRoutes]. Keystone's catalog
// has it as the "network" endpoint ([Stack.NeutronURL]); the service user is
// "neutron" in project service.
//
// Options.Nova (nova.go) adds placement-api and nova-api (uwsgi; nova-api
// as two single-threaded processes, since its eventlet hub hangs under
// uwsgi threads), nova-conductor, nova-scheduler and one nova-compute per
// NovaHosts entry ("cmp-1", "cmp-2", "cmp-3") with compute_driver
// fake.FakeDriver, in cell1 (cell0 for servers no host takes);
// nova-scheduler maps new compute nodes to cell1 itself every 2 s
// (discover_hosts_in_cells_interval, with no random delay before the
// first run), where a nova-manage run would cost seconds of CPU. Catalog
// endpoints "compute" and "placement". Servers boot from ImageID with
// networks "none" (microversion 2.37): states come the real way where Nova
// can produce them: ACTIVE from the fake driver, ERROR with NOSTATE from
// NoValidHost (FlavorHuge), SHUTOFF, PAUSED, SUSPENDED through server
// actions, ERROR with a running guest through os-resetState, a down
// compute service by StopCompute (report_interval 2 s, service_down_time
// 12 s: down about 13 s after the stop), forced_down and disabled through
// os-services (SetService), a down cell by SetCellDown (cell1's mapping
// points nova-api at the cell database through a fault proxy, which then
// resets every connection; SetCell0Down does the same for cell0, where
// the servers no host took live). Power states the fake driver never produces
// (CRASHED, NULL, a server held in BUILD) are written into the cell
// database (SetPowerState), as SetLBStatus does for Octavia. WaitServer
// reads its server once, then watches for it in one list of the servers
// Nova changed lately (changes-since, all tenants), shared by every
// WaitServer running: a GET per waiting server each poll, each with the
// Neutron query nova-api makes for a server view, kept two busy cores busy
// with polling alone while tests booted a dozen servers. WaitServerGone
// waits for a deleted server the same way.
//
// Two services Nova calls are stand-ins served by the harness itself:
// Debian 12 here has no glance-api installed, so an image endpoint serves
// ImageID's record and schema (the fake driver never reads image data);
// and without Options.Neutron a network endpoint answers every list with
// an empty one (no ports, so a server has no addresses or security groups;
// Nova's own view code asks Neutron for them on every server read).
// Neither is in the catalog. With Options.Neutron, Nova uses the real
// neutron-server, and a server boots with ports made in Neutron beforehand
// (ServerOpts.Ports): Nova binds each to its host, which ML2's openvswitch
// driver allows because every fake hypervisor has an Open vSwitch agent
// row in Neutron's agents table (written at start, with a heartbeat that
// never ages: no agent runs), sets device_id and device_owner compute:nova,
// and keeps the port in its network info cache, where server views take
// "addresses" from. A port made later with a server's device_id is not in
// them: Nova refreshes that cache only on its own attach, on a
// network-changed event for a port it already has, or in the periodic heal
// (off here). Servers without Ports boot with networks "none".
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
// Neutron packages. Nova's and Placement's
// migrated databases (nova_api with the cell mappings, nova, nova_cell0,
// placement) have their own dump beside it,
// openstacktest-nova-schema-<hash of python3-nova, python3-placement and
// mariadb-server versions>: migrating takes 14 s of a quiet machine, loading
// the dump 2 s. Nova adds 15 s to the start on a quiet machine (40-60 s at
// a load average above 10) and about 1.2 GB of memory (RSS of its ten
// processes).
//
// Packages (Debian 12): keystone octavia-api octavia-worker
// uwsgi-plugin-python3 mariadb-server python3-pymysql rabbitmq-server,
// neutron-server for Neutron, and nova-api nova-conductor nova-scheduler
// nova-compute placement-api for Nova, all installed by make
// install-test-deps (test/deps/parts/openstack.sh, neutron.sh, nova.sh).
//
// With Options.Cinder it also runs cinder-api, cinder-scheduler and
// cinder-volume with Cinder's own fake volume driver (cinder.go); volumes
// then go available and are deleted as Cinder decides, and the states a
// broken backend leaves (stuck deleting, error_deleting) are written into
// the cinder database ([Stack.SetVolumeStatus]). Packages: cinder-api
// cinder-scheduler cinder-volume (test/deps/parts/cinder.sh).
//
// With Options.Designate it runs Designate 15 (designate.go):
// designate-api, -central, -worker, -producer and -mdns, with the BIND9
// backend driving a private named on its own ports (rndc addzone/delzone
// over named's control channel; named pulls each zone from designate-mdns
// by AXFR on mdns's NOTIFY), configured by pools.yaml and designate-manage
// pool update. The catalog's "dns" endpoint is [Stack.DesignateURL];
// [Stack.CreateZone] creates a zone and waits until it is ACTIVE,
// [Stack.StopDesignateBackend] stops named (the zone's next change goes to
// ERROR), and a zone stuck PENDING or being deleted is written into the
// designate database ([Stack.SetZoneStatus]). Packages: designate-api
// designate-central designate-worker designate-producer designate-mdns
// (test/deps/parts/designate.sh) and bind9.
//
// It imports no drwatch package outside test/ (its tests may): what the
// tests run against owes nothing to the code under test. Only tests import
// it, never the code of a package outside test/.
package openstacktest
