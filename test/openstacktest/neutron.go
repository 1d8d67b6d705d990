package openstacktest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/drwatch/drwatch/test/daemon"
)

// Neutron runs when Options.Neutron is set: neutron-server (Debian's
// eventlet server, one process: api_workers and rpc_workers 0) with the ML2
// core plugin and the router service plugin, on the stack's MariaDB,
// RabbitMQ and Keystone. No agent runs: networks, subnets, ports, security
// groups, routers and their extra routes are database-level API operations.
//
// Nova binds the ports a server boots with, and refuses a port whose
// binding failed (PortBindingFailed). ML2 binds through the openvswitch
// mechanism driver, which binds a port to a host that has a live Open
// vSwitch agent. With Options.Nova every fake hypervisor gets one in
// Neutron's agents table (l2AgentRows): a row the agent would write by
// reporting its state, with a heartbeat that never ages, since no agent runs
// here. Neutron's binding code is then the real one (vif_type "ovs"); only
// the dataplane, which nothing here reads, is missing.

const (
	neutronPass = "neutronpw"
	// NeutronMaxRoutes is neutron.conf's max_routes: how many extra routes
	// one router may hold. Neutron's default is 30; a small value lets a
	// test reach the limit with a handful of routes.
	NeutronMaxRoutes = 16
)

// neutronBinaries are what Options.Neutron runs, with their Debian package.
var neutronBinaries = []struct{ path, pkg string }{
	{"/usr/bin/neutron-server", "neutron-server"},
	{"/usr/bin/neutron-db-manage", "python3-neutron (neutron-server)"},
	{"/etc/neutron/api-paste.ini", "neutron-common (neutron-server)"},
}

func checkNeutronBinaries() error {
	for _, b := range neutronBinaries {
		if _, err := os.Stat(b.path); err != nil {
			return fmt.Errorf("%s missing: install Debian package %s (make install-test-deps): %w", b.path, b.pkg, ErrNoBinary)
		}
	}
	return nil
}

// startNeutron creates and migrates (or loads from the schema cache) the
// neutron database and starts neutron-server; waitNeutron waits until it
// serves. A no-op unless opts.Neutron.
func (s *Stack) startNeutron(ctx context.Context, opts Options, p stackPorts) error {
	if !opts.Neutron {
		return nil
	}
	if err := checkNeutronBinaries(); err != nil {
		return err
	}
	ports, err := daemon.FreePorts(1)
	if err != nil {
		return err
	}
	s.NeutronURL = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	if err := s.mysql(ctx, "", `CREATE DATABASE neutron; GRANT ALL ON neutron.* TO 'os'@'127.0.0.1';`); err != nil {
		return err
	}
	dir := s.path("neutron")
	for _, d := range []string{"conf.d", "state", "lock"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return err
		}
	}
	conf := filepath.Join(dir, "neutron.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(`[DEFAULT]
use_stderr = true
bind_host = 127.0.0.1
bind_port = %[1]d
core_plugin = ml2
service_plugins = router
auth_strategy = keystone
api_paste_config = /etc/neutron/api-paste.ini
transport_url = rabbit://guest:guest@127.0.0.1:%[2]d/
state_path = %[3]s
# Everything in the one process the harness started, so that stopping its
# process group stops all of Neutron.
api_workers = 0
rpc_workers = 0
rpc_state_report_workers = 0
notify_nova_on_port_status_changes = false
notify_nova_on_port_data_changes = false
allow_overlapping_ips = true
max_routes = %[4]d
# No agent runs: no DHCP port, no DHCP agent notification on each write.
enable_traditional_dhcp = false
dhcp_agent_notification = false
[quotas]
# No quota bookkeeping: it costs transactions on every create, and many
# tests share one project.
quota_driver = neutron.db.quota.driver_null.DbQuotaDriverNull
[database]
connection = mysql+pymysql://os:%[5]s@127.0.0.1:%[6]d/neutron
[keystone_authtoken]
www_authenticate_uri = http://127.0.0.1:%[7]d
auth_url = http://127.0.0.1:%[7]d
auth_type = password
username = neutron
password = %[8]s
project_name = service
user_domain_name = Default
project_domain_name = Default
[oslo_concurrency]
lock_path = %[9]s
[ml2]
type_drivers = flat,vxlan
tenant_network_types = vxlan
mechanism_drivers = openvswitch
extension_drivers = port_security
[ml2_type_flat]
flat_networks = *
[ml2_type_vxlan]
vni_ranges = 1:1000
[securitygroup]
enable_security_group = true
`, ports[0], p.rabbit, filepath.Join(dir, "state"), NeutronMaxRoutes, dbPassword, p.mysql, p.keystone,
		neutronPass, filepath.Join(dir, "lock"))), 0o600); err != nil {
		return err
	}
	// An empty --config-dir keeps oslo.config from reading conf.d
	// directories under /etc/neutron.
	args := []string{"--config-file", conf, "--config-dir", filepath.Join(dir, "conf.d")}
	t0 := time.Now()
	how := "loaded from the schema cache"
	cache := neutronSchemaCache()
	if _, err := os.Stat(cache); cache != "" && err == nil {
		if err := s.loadDump(ctx, "neutron", cache); err != nil {
			return err
		}
	} else {
		how = "migrated (neutron-db-manage upgrade heads)"
		if err := s.run(ctx, "neutron-db.log", "/usr/bin/neutron-db-manage", append(args, "upgrade", "heads")...); err != nil {
			return fmt.Errorf("neutron-db-manage upgrade heads: %w", err)
		}
		if cache != "" {
			// Best effort, like the Keystone and Octavia dumps.
			s.saveDump(ctx, "neutron", cache)
		}
	}
	if opts.Nova {
		if err := s.mysql(ctx, "neutron", l2AgentRows(NovaHosts)); err != nil {
			return fmt.Errorf("neutron l2 agents: %w", err)
		}
	}
	if opts.Logger != nil {
		opts.Logger.Info("openstacktest neutron database", "how", how, "took", time.Since(t0).Round(100*time.Millisecond))
	}
	s.neutronT0 = time.Now()
	return s.startProc("neutron", "/usr/bin/neutron-server", args, "neutron.log")
}

// l2AgentRows is the SQL that records a live Open vSwitch agent on each
// host, as neutron-openvswitch-agent's first state report would: tunnel
// type vxlan (the tenant networks' type) and no bridge mappings. Its
// heartbeat lies in 2099, so Neutron (agent_down_time 75 s) never counts
// it down.
func l2AgentRows(hosts []string) string {
	var rows []string
	for i, h := range hosts {
		rows = append(rows, fmt.Sprintf(`('a9e00000-0000-4000-8000-%012d','Open vSwitch agent','neutron-openvswitch-agent','N/A','%s',1,
NOW(),NOW(),'2099-01-01 00:00:00','{"tunnel_types": ["vxlan"], "bridge_mappings": {}, "ovs_hybrid_plug": false, "integration_bridge": "br-int"}',0)`, i+1, h))
	}
	return "INSERT INTO agents (id, agent_type, `binary`, topic, host, admin_state_up, created_at, started_at, heartbeat_timestamp, configurations, `load`) VALUES " +
		strings.Join(rows, ",")
}

// waitNeutron waits until neutron-server answers its version list.
func (s *Stack) waitNeutron(ctx context.Context, logger *slog.Logger) error {
	if s.NeutronURL == "" {
		return nil
	}
	if err := s.waitHTTP(ctx, "neutron", s.NeutronURL+"/", "neutron.log"); err != nil {
		return err
	}
	logger.Info("openstacktest step done", "step", "neutron-server", "since_its_start", time.Since(s.neutronT0).Round(100*time.Millisecond))
	return nil
}

// neutronSchemaCache names the dump of the migrated neutron database: a file
// in the Keystone and Octavia dump's directory (same MariaDB), named for the
// installed Neutron packages, or "" when caching is off or that directory
// does not exist yet.
func neutronSchemaCache() string {
	dir := schemaCacheDir()
	if dir == "" {
		return ""
	}
	if _, err := os.Stat(dir); err != nil {
		return ""
	}
	out, err := exec.Command("dpkg-query", "-W", "-f", "${Package}=${Version}\n",
		"python3-neutron", "python3-neutron-lib").Output()
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(append(out, "neutron-1"...))
	return filepath.Join(dir, "neutron-"+hex.EncodeToString(sum[:6])+".sql")
}

// loadDump loads a mariadb-dump file into db.
func (s *Stack) loadDump(ctx context.Context, db, file string) error {
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("schema cache: %w", err)
	}
	defer f.Close()
	cmd := exec.CommandContext(ctx, "mariadb", "--no-defaults", "-S", s.mysqlSock, "-uroot", db)
	cmd.Stdin = f
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("load cached %s schema (remove %s to rebuild): %w: %s", db, file, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// saveDump writes db's dump to file through a temporary file and a rename,
// so that a concurrent run never reads half a dump.
func (s *Stack) saveDump(ctx context.Context, db, file string) {
	tmp, err := os.CreateTemp(filepath.Dir(file), ".tmp-"+db+"-")
	if err != nil {
		return
	}
	defer os.Remove(tmp.Name())
	cmd := exec.CommandContext(ctx, "mariadb-dump", "--no-defaults", "-S", s.mysqlSock, "-uroot", "--single-transaction", db)
	cmd.Stdout = tmp
	err = cmd.Run()
	if cerr := tmp.Close(); err == nil && cerr == nil {
		os.Rename(tmp.Name(), file)
	}
}

// neutronIdentities makes the neutron service user (admin in the service
// project) and the "network" catalog entry. A no-op without Neutron.
func (s *Stack) neutronIdentities(ctx context.Context, adminToken, serviceProjectID, adminRoleID string) error {
	if s.NeutronURL == "" {
		return nil
	}
	k := &keystoneAdmin{s: s, ctx: ctx, token: adminToken}
	if err := k.serviceUser("neutron", neutronPass, serviceProjectID, adminRoleID); err != nil {
		return err
	}
	return k.catalog("network", "neutron", s.NeutronURL)
}

// NeutronCall does one Neutron API request as c (path from the API root,
// e.g. "/v2.0/networks"), decoding the answer into out when out is not nil.
// A status of 300 or more is an error that carries Neutron's answer.
func (s *Stack) NeutronCall(ctx context.Context, c Credentials, method, path string, in, out any) error {
	if s.NeutronURL == "" {
		return fmt.Errorf("neutron call %s %s: the stack runs without Neutron (Options.Neutron)", method, path)
	}
	tok, err := s.Token(ctx, c)
	if err != nil {
		return err
	}
	_, err = s.call(ctx, method, s.NeutronURL+path, tok, in, out)
	return err
}

// neutronStopGrace is how long neutron-server gets to stop on TERM.
const neutronStopGrace = 5 * time.Second

// NeutronState sums up every Neutron resource's standard attributes: how
// many there are, the sum of their revision_numbers and the latest
// updated_at. Every create, update or delete through the API changes it,
// so equal states before and after mean Neutron took no write.
func (s *Stack) NeutronState(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "mariadb", "--no-defaults", "-S", s.mysqlSock, "-uroot", "-N", "neutron", "-e",
		"SELECT COUNT(*), COALESCE(SUM(revision_number), 0), COALESCE(MAX(updated_at), '') FROM standardattributes").Output()
	if err != nil {
		return "", fmt.Errorf("neutron state: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}
