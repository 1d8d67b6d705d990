package openstacktest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/drwatch/drwatch/test/daemon"
	"github.com/drwatch/drwatch/test/faultproxy"
)

// NovaHosts are the hypervisors of a stack started with Options.Nova: one
// nova-compute process each, with the fake virt driver.
var NovaHosts = []string{"cmp-1", "cmp-2", "cmp-3"}

// ImageID is the one image the stack's image endpoint knows; servers boot
// from it.
const ImageID = "c0ffee00-0000-4000-8000-000000000001"

const (
	novaPass      = "novapw"
	placementPass = "placementpw"
	// novaReportInterval and novaServiceDownTime make a stopped
	// nova-compute show as down in os-services within seconds (defaults:
	// 10 s and 60 s).
	novaReportInterval  = 2
	novaServiceDownTime = 12
	// novaDiscoverHostsInterval is how often nova-scheduler maps new
	// compute nodes to their cell (default: never; nova-manage does it).
	novaDiscoverHostsInterval = 2
)

// novaBinaries lists what Options.Nova adds, with the Debian package of
// each.
var novaBinaries = []struct{ path, pkg string }{
	{"nova-manage", "nova-common"},
	{"/usr/bin/nova-api-wsgi", "nova-api"},
	{"nova-conductor", "nova-conductor"},
	{"nova-scheduler", "nova-scheduler"},
	{"nova-compute", "nova-compute"},
	{"placement-manage", "placement-api"},
	{"/usr/bin/placement-api", "placement-api"},
	{"/etc/nova/api-paste.ini", "nova-api"},
}

// novaState is the part of Stack that Options.Nova adds.
type novaState struct {
	// cellProxy sits between nova-api and the cell1 database: the cell
	// mapping points at it, so SetCellDown can cut the API off from the
	// cell while conductor and compute keep their direct connection.
	cellProxy *faultproxy.Proxy
	// cell0Proxy does the same for cell0, where the servers no host
	// took live (SetCell0Down).
	cell0Proxy *faultproxy.Proxy
	stubs      *http.Server
	stubLn     net.Listener
	mysqlPort  int
	once       sync.Once
	mu         sync.Mutex
	tokens     map[string]cachedToken
	board      serverBoard
}

func checkNovaBinaries() error { return checkBinaryList(novaBinaries) }

// startNova brings up Placement and Nova on the running MariaDB, RabbitMQ
// and Keystone: databases (from the schema cache when it has them),
// Keystone users and catalog entries, then placement-api and nova-api
// (uwsgi), nova-conductor, nova-scheduler and one nova-compute per
// NovaHosts entry. It returns once every compute service is up and mapped
// to cell1, so a server can be scheduled at once.
func (s *Stack) startNova(ctx context.Context, p stackPorts, step func(string)) error {
	if err := checkNovaBinaries(); err != nil {
		return err
	}
	ports, err := daemon.FreePorts(2)
	if err != nil {
		return err
	}
	s.PlacementURL = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	s.ComputeURL = fmt.Sprintf("http://127.0.0.1:%d/v2.1", ports[1])
	s.nova.mysqlPort = p.mysql
	s.nova.cellProxy, err = faultproxy.New("127.0.0.1:0", fmt.Sprintf("127.0.0.1:%d", p.mysql))
	if err != nil {
		return fmt.Errorf("cell database proxy: %w", err)
	}
	s.nova.cell0Proxy, err = faultproxy.New("127.0.0.1:0", fmt.Sprintf("127.0.0.1:%d", p.mysql))
	if err != nil {
		return fmt.Errorf("cell0 database proxy: %w", err)
	}
	if err := s.startNovaStubs(); err != nil {
		return err
	}
	if err := s.mysql(ctx, "", fmt.Sprintf(`CREATE DATABASE nova_api; CREATE DATABASE nova; CREATE DATABASE nova_cell0; CREATE DATABASE placement;
CREATE USER IF NOT EXISTS 'os'@'127.0.0.1' IDENTIFIED BY '%s';
GRANT ALL ON nova_api.* TO 'os'@'127.0.0.1'; GRANT ALL ON nova.* TO 'os'@'127.0.0.1';
GRANT ALL ON nova_cell0.* TO 'os'@'127.0.0.1'; GRANT ALL ON placement.* TO 'os'@'127.0.0.1';`, dbPassword)); err != nil {
		return err
	}
	if err := s.writeNovaConfigs(p, ports[0], ports[1]); err != nil {
		return err
	}
	if err := s.prepareNovaDatabases(ctx, p); err != nil {
		return err
	}
	step("nova databases")
	if err := s.createNovaIdentities(ctx); err != nil {
		return err
	}
	step("nova identities")
	env := []string{"OS_PLACEMENT_CONFIG_DIR=" + s.path("placement")}
	if err := s.startProcEnv("placement-api", "uwsgi", []string{"--ini", s.path("placement-uwsgi.ini")}, env, "placement-uwsgi.out"); err != nil {
		return err
	}
	if err := s.startNovaAPIProc(); err != nil {
		return err
	}
	for _, svc := range []string{"nova-conductor", "nova-scheduler"} {
		if err := s.startProc(svc, svc, []string{"--config-file", s.path("nova/nova.conf")}, svc+".log"); err != nil {
			return err
		}
	}
	if err := s.waitHTTP(ctx, "placement-api", s.PlacementURL+"/", "placement.log"); err != nil {
		return err
	}
	step("placement-api")
	// The computes report their resource providers to Placement at start.
	for _, h := range NovaHosts {
		if err := s.startCompute(h); err != nil {
			return err
		}
	}
	if err := s.waitHTTP(ctx, "nova-api", strings.TrimSuffix(s.ComputeURL, "/v2.1")+"/", "nova-api.log"); err != nil {
		return err
	}
	step("nova-api")
	if err := s.waitComputes(ctx); err != nil {
		return err
	}
	step("nova-compute")
	return nil
}

func (s *Stack) startCompute(host string) error {
	return s.startProc("nova-compute-"+host, "nova-compute",
		[]string{"--config-file", s.path("nova/nova.conf"), "--config-file", s.path("nova/compute-" + host + ".conf")},
		"nova-compute-"+host+".log")
}

// waitComputes waits until every host's nova-compute service is up and
// its compute node is mapped to cell1, so that the scheduler takes it. The
// scheduler maps new compute nodes itself every
// novaDiscoverHostsInterval seconds: a nova-manage cell_v2
// discover_hosts would cost seconds of CPU per try.
func (s *Stack) waitComputes(ctx context.Context) error {
	err := s.poll(ctx, "nova-scheduler", func() error {
		svcs, err := s.ComputeServices(ctx)
		if err != nil {
			return err
		}
		up := 0
		for _, sv := range svcs {
			if sv.State == "up" {
				up++
			}
		}
		if up < len(NovaHosts) {
			return fmt.Errorf("%d of %d nova-compute services up", up, len(NovaHosts))
		}
		out, err := exec.CommandContext(ctx, "mariadb", "--no-defaults", "-S", s.mysqlSock, "-uroot", "-N", "nova_api",
			"-e", "SELECT COUNT(*) FROM host_mappings").Output()
		if err != nil {
			return err
		}
		if n, _ := strconv.Atoi(strings.TrimSpace(string(out))); n < len(NovaHosts) {
			return fmt.Errorf("%d of %d hosts mapped to cell1", n, len(NovaHosts))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w; log: %s", err, daemon.Tail(s.path("nova-compute-"+NovaHosts[0]+".log"), 10))
	}
	return nil
}

func (s *Stack) writeNovaConfigs(p stackPorts, placementPort, novaPort int) error {
	for _, d := range []string{"nova", "placement", "nova-state", "nova-locks"} {
		if err := os.MkdirAll(s.path(d), 0o700); err != nil {
			return err
		}
	}
	paste, err := os.ReadFile("/etc/nova/api-paste.ini")
	if err != nil {
		return fmt.Errorf("nova api-paste.ini (Debian package nova-api): %w", err)
	}
	db := func(name string) string {
		return fmt.Sprintf("mysql+pymysql://os:%s@127.0.0.1:%d/%s", dbPassword, p.mysql, name)
	}
	auth := func(user, pass string) string {
		return fmt.Sprintf(`auth_url = http://127.0.0.1:%d
auth_type = password
username = %s
password = %s
project_name = service
user_domain_name = Default
project_domain_name = Default
region_name = %s
`, p.keystone, user, pass, s.Region)
	}
	files := map[string]string{
		"nova/api-paste.ini": string(paste),
		"nova/nova.conf": fmt.Sprintf(`[DEFAULT]
use_stderr = true
transport_url = rabbit://guest:guest@127.0.0.1:%[1]d/
compute_driver = fake.FakeDriver
state_path = %[2]s
instances_path = %[2]s/instances
my_ip = 127.0.0.1
report_interval = %[3]d
service_down_time = %[4]d
# Periodic tasks start at once, not after a random delay of up to 60 s:
# the scheduler's host discovery among them.
periodic_fuzzy_delay = 0
# The info cache heal asks Neutron about every instance each minute.
heal_instance_info_cache_interval = -1
# Power states written into the database by tests (SetPowerState) must
# stay: the fake driver would "correct" them to RUNNING.
sync_power_state_interval = -1
[api]
auth_strategy = keystone
[api_database]
connection = %[5]s
[database]
connection = %[6]s
[keystone_authtoken]
www_authenticate_uri = http://127.0.0.1:%[7]d
%[8]s[placement]
%[9]svalid_interfaces = public
[neutron]
%[8]sendpoint_override = %[10]s
[glance]
endpoint_override = %[11]s
[scheduler]
workers = 1
discover_hosts_in_cells_interval = %[14]d
[conductor]
workers = 1
[oslo_concurrency]
lock_path = %[12]s
[oslo_messaging_notifications]
driver = noop
[quota]
# The tests make more servers than the default quota of 10.
instances = -1
cores = -1
ram = -1
[vnc]
enabled = false
[spice]
enabled = false
[cinder]
os_region_name = %[13]s
`, p.rabbit, s.path("nova-state"), novaReportInterval, novaServiceDownTime, db("nova_api"), db("nova"),
			p.keystone, auth("nova", novaPass), auth("placement", placementPass), s.neutronForNova(), s.imageEndpoint(),
			s.path("nova-locks"), s.Region, novaDiscoverHostsInterval),
		"placement/placement.conf": fmt.Sprintf(`[DEFAULT]
use_stderr = true
[api]
auth_strategy = keystone
[placement_database]
connection = %s
[keystone_authtoken]
www_authenticate_uri = http://127.0.0.1:%d
%s`, db("placement"), p.keystone, auth("placement", placementPass)),
		"placement-uwsgi.ini": uwsgiIni(placementPort, "/usr/bin/placement-api", 1, 4, s.path("placement.log")),
		// nova-api monkey-patches eventlet, whose hub belongs to one
		// thread: with several uwsgi threads a request hangs ("cannot
		// switch to a different thread"). Concurrency comes from processes.
		"nova-api-uwsgi.ini": uwsgiIni(novaPort, "/usr/bin/nova-api-wsgi", 2, 1, s.path("nova-api.log")),
	}
	for _, h := range NovaHosts {
		files["nova/compute-"+h+".conf"] = fmt.Sprintf("[DEFAULT]\nhost = %s\n", h)
	}
	for name, body := range files {
		if err := os.WriteFile(s.path(name), []byte(body), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// uwsgiIni is the uwsgi configuration of a WSGI script served on port,
// with extra lines (env = ...) before its log.
func uwsgiIni(port int, wsgiFile string, processes, threads int, log string, extra ...string) string {
	var more string
	for _, l := range extra {
		more += l + "\n"
	}
	return fmt.Sprintf(`[uwsgi]
plugins = python3
http-socket = 127.0.0.1:%d
wsgi-file = %s
master = true
processes = %d
threads = %d
enable-threads = true
lazy-apps = true
die-on-term = true
need-app = true
buffer-size = 65535
; http-socket has no keep-alive: tell clients, or they see connection resets
add-header = Connection: close
%slogto = %s
`, port, wsgiFile, processes, threads, more, log)
}

// novaSchemaDBs are the databases the Nova schema cache holds.
var novaSchemaDBs = []string{"nova_api", "nova", "nova_cell0", "placement"}

// prepareNovaDatabases migrates the Nova API, cell0, cell1 and Placement
// databases and maps the cells, or loads them from the schema cache, then
// points the cell mappings at this run's ports (cell1's database through
// the cell proxy, cell0's through the cell0 proxy).
func (s *Stack) prepareNovaDatabases(ctx context.Context, p stackPorts) error {
	cache := novaSchemaCacheDir()
	loaded := false
	if cache != "" {
		if _, err := os.Stat(filepath.Join(cache, "placement.sql")); err == nil {
			if err := s.loadDumps(ctx, cache, novaSchemaDBs); err != nil {
				return err
			}
			loaded = true
		}
	}
	if !loaded {
		conf := s.path("nova/nova.conf")
		placementDB := make(chan error, 1)
		go func() {
			placementDB <- s.run(ctx, "placement-db.log", "placement-manage", "--config-file", s.path("placement/placement.conf"), "db", "sync")
		}()
		novaErr := func() error {
			for _, args := range [][]string{
				{"api_db", "sync"},
				{"cell_v2", "map_cell0", "--database_connection", fmt.Sprintf("mysql+pymysql://os:%s@127.0.0.1:%d/nova_cell0", dbPassword, p.mysql)},
				{"cell_v2", "create_cell", "--name", "cell1", "--verbose"},
				{"db", "sync"},
			} {
				if err := s.run(ctx, "nova-manage.log", "nova-manage", append([]string{"--config-file", conf}, args...)...); err != nil {
					return fmt.Errorf("nova-manage %s: %w", strings.Join(args[:2], " "), err)
				}
			}
			return nil
		}()
		if err := <-placementDB; err != nil {
			return fmt.Errorf("placement-manage db sync: %w", err)
		}
		if novaErr != nil {
			return novaErr
		}
		if cache != "" {
			s.saveDumps(ctx, cache, novaSchemaDBs)
		}
	}
	return s.mysql(ctx, "nova_api", fmt.Sprintf(`UPDATE cell_mappings SET database_connection='mysql+pymysql://os:%[1]s@%[5]s/nova_cell0' WHERE name='cell0';
UPDATE cell_mappings SET database_connection='mysql+pymysql://os:%[1]s@%[3]s/nova', transport_url='rabbit://guest:guest@127.0.0.1:%[4]d/' WHERE name='cell1';`,
		dbPassword, p.mysql, s.nova.cellProxy.Addr(), p.rabbit, s.nova.cell0Proxy.Addr()))
}

// novaSchemaVersion changes whenever what the cached Nova dump contains
// changes (cell names, what is mapped).
const novaSchemaVersion = "1"

// novaSchemaCacheDir names the cache of migrated Nova and Placement
// databases for the installed packages, beside the Keystone and Octavia
// one (same base directory and OPENSTACKTEST_NO_CACHE switch).
func novaSchemaCacheDir() string {
	base := schemaCacheDir()
	if base == "" {
		return ""
	}
	out, err := exec.Command("dpkg-query", "-W", "-f", "${Package}=${Version}\n",
		"python3-nova", "python3-placement", "mariadb-server").Output()
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(append(out, novaSchemaVersion...))
	return filepath.Join(filepath.Dir(base), "openstacktest-nova-schema-"+hex.EncodeToString(sum[:6]))
}

// createNovaIdentities adds the nova and placement service users, the
// compute and placement catalog entries, and the admin role for the admin
// user in the demo project (so tests can place the Member's servers on a
// chosen host, an admin-only request), with clouds.yaml entry
// "demo-admin" for it.
func (s *Stack) createNovaIdentities(ctx context.Context) error {
	admin, err := s.Token(ctx, s.Admin)
	if err != nil {
		return err
	}
	k := &keystoneAdmin{s: s, ctx: ctx, token: admin}
	svc, err := k.one("projects", "service")
	if err != nil {
		return err
	}
	adminRole, err := k.one("roles", "admin")
	if err != nil {
		return err
	}
	for _, u := range []struct{ name, pass string }{{"nova", novaPass}, {"placement", placementPass}} {
		if err := k.serviceUser(u.name, u.pass, svc, adminRole); err != nil {
			return err
		}
	}
	if err := k.grant(s.Member.ProjectID, s.Admin.UserID, adminRole); err != nil {
		return err
	}
	// clouds.yaml gains "demo-admin": that admin in the demo project, as an
	// operator gives a watcher admin rights in the cluster's project.
	f, err := os.OpenFile(s.CloudsFile, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, `  demo-admin:
    auth:
      auth_url: %s
      username: %s
      password: %s
      project_name: %s
      user_domain_name: Default
      project_domain_name: Default
    region_name: %s
    interface: public
    identity_api_version: 3
`, s.AuthURL, s.Admin.Username, s.Admin.Password, s.Member.ProjectName, s.Region)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := k.catalog("compute", "nova", s.ComputeURL); err != nil {
		return err
	}
	return k.catalog("placement", "placement", s.PlacementURL)
}

// neutronForNova is the network endpoint Nova calls: the real
// neutron-server with Options.Neutron, else the in-process stand-in of
// startNovaStubs.
func (s *Stack) neutronForNova() string {
	if s.NeutronURL != "" {
		return s.NeutronURL
	}
	return "http://" + s.nova.stubLn.Addr().String() + "/network"
}

// imageEndpoint is the image (Glance) endpoint Nova reads ImageID from:
// Debian 12 here has no glance-api installed, and the fake virt driver
// never reads image data, only the record, which startNovaStubs serves.
func (s *Stack) imageEndpoint() string { return "http://" + s.nova.stubLn.Addr().String() + "/image" }

// startNovaStubs serves the two records Nova needs from services the
// stack does not run: ImageID's image record (Glance v2: the record and
// its schema), and, without Options.Neutron, an empty Neutron (no ports,
// so Nova's server views find no security groups and no addresses; servers
// are created with networks "none").
func (s *Stack) startNovaStubs() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("nova stubs: %w", err)
	}
	s.nova.stubLn = ln
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	image := map[string]any{
		"id": ImageID, "name": "fake", "status": "active", "visibility": "public", "protected": false,
		"size": 1 << 20, "min_ram": 0, "min_disk": 0, "disk_format": "raw", "container_format": "bare",
		"owner": "", "checksum": "", "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
		"tags": []string{}, "file": "/v2/images/" + ImageID + "/file", "schema": "/v2/schemas/image",
		"self": "/v2/images/" + ImageID,
	}
	mux.HandleFunc("GET /image/{$}", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusMultipleChoices)
		reply(w, map[string]any{"versions": []any{map[string]any{"id": "v2.9", "status": "CURRENT",
			"links": []any{map[string]any{"rel": "self", "href": "http://" + r.Host + "/image/v2/"}}}}})
	})
	mux.HandleFunc("GET /image/v2/schemas/image", func(w http.ResponseWriter, r *http.Request) {
		reply(w, map[string]any{"name": "image", "additionalProperties": map[string]any{"type": "string"},
			"properties": map[string]any{
				"id": map[string]any{"type": "string"}, "name": map[string]any{"type": []string{"null", "string"}},
				"status": map[string]any{"type": "string"}, "visibility": map[string]any{"type": "string"},
				"protected": map[string]any{"type": "boolean"}, "size": map[string]any{"type": []string{"null", "integer"}},
				"min_ram": map[string]any{"type": "integer"}, "min_disk": map[string]any{"type": "integer"},
				"disk_format": map[string]any{"type": []string{"null", "string"}}, "container_format": map[string]any{"type": []string{"null", "string"}},
				"owner": map[string]any{"type": []string{"null", "string"}}, "checksum": map[string]any{"type": []string{"null", "string"}},
				"created_at": map[string]any{"type": "string"}, "updated_at": map[string]any{"type": "string"},
				"tags": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
				"file": map[string]any{"type": "string"}, "schema": map[string]any{"type": "string"}, "self": map[string]any{"type": "string"},
			}})
	})
	mux.HandleFunc("GET /image/v2/images/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != ImageID {
			http.Error(w, `{"message": "image not found"}`, http.StatusNotFound)
			return
		}
		reply(w, image)
	})
	mux.HandleFunc("GET /network/{$}", func(w http.ResponseWriter, r *http.Request) {
		reply(w, map[string]any{"versions": []any{map[string]any{"id": "v2.0", "status": "CURRENT",
			"links": []any{map[string]any{"rel": "self", "href": "http://" + r.Host + "/network/v2.0/"}}}}})
	})
	mux.HandleFunc("GET /network/v2.0/{kind}", func(w http.ResponseWriter, r *http.Request) {
		kind := strings.ReplaceAll(r.PathValue("kind"), "-", "_")
		reply(w, map[string]any{kind: []any{}})
	})
	s.nova.stubs = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go s.nova.stubs.Serve(ln)
	return nil
}

// stopNova stops what startNova started, computes first. Idempotent.
func (s *Stack) stopNova() {
	s.nova.once.Do(func() {
		var wg sync.WaitGroup
		for _, name := range []string{"nova-api", "placement-api", "nova-scheduler", "nova-conductor"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.stopProc(name, 5*time.Second)
			}()
		}
		for _, h := range NovaHosts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.stopProc("nova-compute-"+h, 5*time.Second)
			}()
		}
		wg.Wait()
		if s.nova.stubs != nil {
			s.nova.stubs.Close()
		}
		if s.nova.cell0Proxy != nil {
			s.nova.cell0Proxy.Close()
		}
		if s.nova.cellProxy != nil {
			s.nova.cellProxy.Close()
		}
	})
}

// StopCompute stops host's nova-compute, as a dead hypervisor would: its
// service goes down in os-services within seconds. Idempotent.
func (s *Stack) StopCompute(host string) { s.stopProc("nova-compute-"+host, 5*time.Second) }

// StartCompute starts host's nova-compute again and waits until its
// service is up. A no-op when it runs.
func (s *Stack) StartCompute(ctx context.Context, host string) error {
	if !s.alive("nova-compute-" + host) {
		if err := s.startCompute(host); err != nil {
			return err
		}
	}
	return s.WaitService(ctx, host, "up")
}

// WaitService polls until host's nova-compute service has state ("up" or
// "down"), or ctx ends.
func (s *Stack) WaitService(ctx context.Context, host, state string) error {
	var last string
	for {
		svcs, err := s.ComputeServices(ctx)
		if err == nil {
			for _, sv := range svcs {
				if sv.Host == host {
					last = sv.State
				}
			}
			if last == state {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("nova-compute on %s: state %q, want %s: %w", host, last, state, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// StopNovaAPI stops nova-api, so compute requests fail with connection
// refused. Idempotent.
func (s *Stack) StopNovaAPI() { s.stopProc("nova-api", 5*time.Second) }

// StartNovaAPI starts nova-api again and waits until it answers. A no-op
// when it runs.
func (s *Stack) StartNovaAPI(ctx context.Context) error {
	if s.alive("nova-api") {
		return nil
	}
	if err := s.startNovaAPIProc(); err != nil {
		return err
	}
	return s.waitHTTP(ctx, "nova-api", strings.TrimSuffix(s.ComputeURL, "/v2.1")+"/", "nova-api.log")
}

// startNovaAPIProc starts nova-api's uwsgi; it reads its configuration
// from OS_NOVA_CONFIG_DIR.
func (s *Stack) startNovaAPIProc() error {
	env := []string{"OS_NOVA_CONFIG_DIR=" + s.path("nova")}
	return s.startProcEnv("nova-api", "uwsgi", []string{"--ini", s.path("nova-api-uwsgi.ini")}, env, "nova-api-uwsgi.out")
}

// SetCellDown cuts nova-api off from cell1's database (down) or restores
// it. Nova then answers as for a cell whose database is unreachable: a
// list skips the cell's servers, or at microversion 2.69 shows them with
// status UNKNOWN. Conductor and computes keep their own connection.
func (s *Stack) SetCellDown(down bool) {
	if down {
		s.nova.cellProxy.SetMode(faultproxy.Reset)
	} else {
		s.nova.cellProxy.SetMode(faultproxy.Pass)
	}
}

// SetCell0Down does what SetCellDown does for cell0, which holds the
// servers the scheduler found no host for (ERROR, NoValidHost): cell1's
// servers stay readable.
func (s *Stack) SetCell0Down(down bool) {
	if down {
		s.nova.cell0Proxy.SetMode(faultproxy.Reset)
	} else {
		s.nova.cell0Proxy.SetMode(faultproxy.Pass)
	}
}

// ComputeService is a nova-compute service as os-services shows it.
type ComputeService struct {
	ID         string `json:"id"`
	Host       string `json:"host"`
	State      string `json:"state"`
	Status     string `json:"status"`
	ForcedDown bool   `json:"forced_down"`
}

// ComputeServices lists the nova-compute services (admin, microversion
// 2.53: string IDs, forced_down).
func (s *Stack) ComputeServices(ctx context.Context) ([]ComputeService, error) {
	var out struct {
		Services []ComputeService `json:"services"`
	}
	if err := s.Nova(ctx, s.Admin, http.MethodGet, "/os-services?binary=nova-compute", nil, &out); err != nil {
		return nil, err
	}
	return out.Services, nil
}

// SetService changes host's nova-compute service through os-services:
// disabled, forced down, both or neither (admin, microversion 2.53).
func (s *Stack) SetService(ctx context.Context, host string, disabled, forcedDown bool) error {
	svcs, err := s.ComputeServices(ctx)
	if err != nil {
		return err
	}
	for _, sv := range svcs {
		if sv.Host != host {
			continue
		}
		status := "enabled"
		body := map[string]any{"status": status, "forced_down": forcedDown}
		if disabled {
			body["status"] = "disabled"
			body["disabled_reason"] = "test"
		}
		return s.Nova(ctx, s.Admin, http.MethodPut, "/os-services/"+sv.ID, body, nil)
	}
	return fmt.Errorf("no nova-compute service on %s", host)
}

// NovaMicroversion is what Nova calls use: 2.74 lets an admin pick the
// host of a new server, 2.53 gives services string IDs.
const NovaMicroversion = "2.74"

// Nova does one compute API request as c at NovaMicroversion; path is
// under ComputeURL.
func (s *Stack) Nova(ctx context.Context, c Credentials, method, path string, in, out any) error {
	tok, err := s.novaToken(ctx, c)
	if err != nil {
		return err
	}
	_, err = s.callWith(ctx, method, s.ComputeURL+path, tok, map[string]string{"OpenStack-API-Version": "compute " + NovaMicroversion}, in, out)
	return err
}

// novaToken returns a cached token for c, fresh for at least half of
// Keystone's default hour: a new token per call makes Keystone and
// nova-api's token validation the bottleneck while tests poll servers.
func (s *Stack) novaToken(ctx context.Context, c Credentials) (string, error) {
	key := c.Username + "/" + c.ProjectName
	s.nova.mu.Lock()
	t, ok := s.nova.tokens[key]
	s.nova.mu.Unlock()
	if ok && time.Since(t.at) < 30*time.Minute {
		return t.tok, nil
	}
	tok, err := s.Token(ctx, c)
	if err != nil {
		return "", err
	}
	s.nova.mu.Lock()
	if s.nova.tokens == nil {
		s.nova.tokens = map[string]cachedToken{}
	}
	s.nova.tokens[key] = cachedToken{tok: tok, at: time.Now()}
	s.nova.mu.Unlock()
	return tok, nil
}

type cachedToken struct {
	tok string
	at  time.Time
}

// ServerOpts describe a server CreateServer makes in the Member's project.
type ServerOpts struct {
	Name     string
	Metadata map[string]string
	// Host places it on one of NovaHosts (admin, microversion 2.74); empty
	// lets the scheduler pick.
	Host string
	// Flavor is a flavor ID; empty is FlavorSmall.
	Flavor string
	// Ports are Neutron ports (made without device_id) the server boots
	// with, in order; none boots it with networks "none". Nova binds them
	// to the host (Options.Neutron's openvswitch agents), sets their
	// device_id and device_owner, and records them in its network info
	// cache, from which server views take "addresses".
	Ports []string
}

// Flavors the stack creates: FlavorSmall fits every fake hypervisor,
// FlavorHuge none (a server of it goes to ERROR with NoValidHost).
const (
	FlavorSmall = "drwatch-small"
	FlavorHuge  = "drwatch-huge"
)

// Server is what Server reads of a server (as admin).
type Server struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Status     string `json:"status"`
	PowerState *int   `json:"OS-EXT-STS:power_state"`
	Host       string `json:"OS-EXT-SRV-ATTR:host"`
	VMState    string `json:"OS-EXT-STS:vm_state"`
	TaskState  string `json:"OS-EXT-STS:task_state"`
	Fault      *struct {
		Message string `json:"message"`
	} `json:"fault"`
}

// CreateServer creates a server in the Member project from ImageID, with
// o.Ports or networks "none", as admin when o.Host is set (admin has role admin
// in the demo project) and as the Member otherwise. It returns the ID
// without waiting; see WaitServer.
func (s *Stack) CreateServer(ctx context.Context, o ServerOpts) (string, error) {
	if err := s.ensureFlavors(ctx); err != nil {
		return "", err
	}
	flavor := o.Flavor
	if flavor == "" {
		flavor = FlavorSmall
	}
	body := map[string]any{"name": o.Name, "imageRef": ImageID, "flavorRef": flavor, "networks": "none"}
	if len(o.Ports) > 0 {
		nets := make([]map[string]string, len(o.Ports))
		for i, p := range o.Ports {
			nets[i] = map[string]string{"port": p}
		}
		body["networks"] = nets
	}
	if o.Metadata != nil {
		body["metadata"] = o.Metadata
	}
	who := s.Member
	if o.Host != "" {
		body["host"] = o.Host
		who = s.demoAdmin()
	}
	var out struct {
		Server struct{ ID string } `json:"server"`
	}
	if err := s.Nova(ctx, who, http.MethodPost, "/servers", map[string]any{"server": body}, &out); err != nil {
		return "", fmt.Errorf("create server %s: %w", o.Name, err)
	}
	return out.Server.ID, nil
}

// demoAdmin is the admin user scoped to the Member's project.
func (s *Stack) demoAdmin() Credentials {
	c := s.Admin
	c.ProjectName, c.ProjectID = s.Member.ProjectName, s.Member.ProjectID
	return c
}

var flavorsOnce sync.Map // *Stack -> *flavorInit

type flavorInit struct {
	once sync.Once
	err  error
}

// ensureFlavors creates FlavorSmall and FlavorHuge once per stack.
func (s *Stack) ensureFlavors(ctx context.Context) error {
	v, _ := flavorsOnce.LoadOrStore(s, &flavorInit{})
	fi := v.(*flavorInit)
	fi.once.Do(func() {
		// The fake driver reports 600000 GB of disk per host.
		for _, f := range []struct {
			id   string
			disk int
		}{{FlavorSmall, 1}, {FlavorHuge, 1 << 20}} {
			fi.err = s.Nova(ctx, s.Admin, http.MethodPost, "/flavors", map[string]any{"flavor": map[string]any{
				"id": f.id, "name": f.id, "ram": 64, "vcpus": 1, "disk": f.disk}}, nil)
			if fi.err != nil {
				return
			}
		}
	})
	return fi.err
}

// GetServer reads a server as admin.
func (s *Stack) GetServer(ctx context.Context, id string) (Server, error) {
	var out struct {
		Server Server `json:"server"`
	}
	if err := s.Nova(ctx, s.Admin, http.MethodGet, "/servers/"+id, nil, &out); err != nil {
		return Server{}, err
	}
	return out.Server, nil
}

// WaitServer polls until the server's status is want (ERROR is an error
// unless wanted) and no task is running, or ctx ends. It reads the server
// once, then looks for it in lists of the servers Nova changed since,
// which every WaitServer running shares (serverBoard).
func (s *Stack) WaitServer(ctx context.Context, id, want string) (Server, error) {
	start := time.Now()
	k := s.nova.board.register(start)
	defer s.nova.board.unregister(k)
	var last Server
	done := func(v Server) (bool, error) {
		last = v
		if v.Status == want && v.TaskState == "" {
			return true, nil
		}
		if v.Status == "ERROR" && want != "ERROR" {
			msg := ""
			if v.Fault != nil {
				msg = v.Fault.Message
			}
			return true, fmt.Errorf("server %s went to ERROR (%s), want %s", id, msg, want)
		}
		return false, nil
	}
	// Until one read of the server itself succeeds, a server that does
	// not change would never show in the lists.
	read := false
	after := start
	for {
		if !read {
			if v, err := s.GetServer(ctx, id); err == nil {
				read = true
				if ok, err := done(v); ok {
					return v, err
				}
			}
		} else if views, started, err := s.changedServers(ctx, after); err == nil {
			after = started
			// A list's view of a server in cell0 lacks its fault (Nova
			// fills faults from cell1's database only): the end is
			// read from the server itself.
			if v, ok := views[id]; ok {
				last = v
				if v.Status == want || v.Status == "ERROR" {
					if v, err := s.GetServer(ctx, id); err == nil {
						if ok, err := done(v); ok {
							return v, err
						}
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("server %s: status %q task %q, want %s: %w", id, last.Status, last.TaskState, want, ctx.Err())
		case <-time.After(serverPoll):
		}
	}
}

// WaitServerGone polls until Nova answers 404 for the server (deleted),
// or ctx ends, looking for it in the same shared lists as WaitServer
// (a deleted server shows there as DELETED).
func (s *Stack) WaitServerGone(ctx context.Context, id string) error {
	start := time.Now()
	k := s.nova.board.register(start)
	defer s.nova.board.unregister(k)
	gone := func() bool {
		_, err := s.GetServer(ctx, id)
		return err != nil && strings.Contains(err.Error(), ": status 404")
	}
	if gone() {
		return nil
	}
	last := ""
	after := start
	for i := 1; ; i++ {
		select {
		case <-ctx.Done():
			return fmt.Errorf("server %s: status %q, want it gone: %w", id, last, ctx.Err())
		case <-time.After(serverPoll):
		}
		// Every few seconds the server itself too, in case its last
		// change left updated_at behind.
		if i%8 == 0 && gone() {
			return nil
		}
		views, started, err := s.changedServers(ctx, after)
		if err != nil {
			continue
		}
		after = started
		if v, ok := views[id]; ok {
			last = v.Status
			if v.Status == "DELETED" && gone() {
				return nil
			}
		}
	}
}

// ServerAction posts a server action (as admin: "os-stop", "pause",
// "suspend", "reboot", "os-resetState", ...) with its body (nil is null).
func (s *Stack) ServerAction(ctx context.Context, id, action string, body any) error {
	return s.Nova(ctx, s.demoAdmin(), http.MethodPost, "/servers/"+id+"/action", map[string]any{action: body}, nil)
}

// SetPowerState writes a server's power state (OS-EXT-STS:power_state;
// negative writes NULL) and, when not empty, its vm_state and task_state
// straight into the cell database, for states the fake virt driver never
// produces (a crashed guest, a server stuck in BUILD, no power state).
func (s *Stack) SetPowerState(ctx context.Context, id string, power int, vmState, taskState string) error {
	if !isUUIDish(id) {
		return fmt.Errorf("set power state: bad id %q", id)
	}
	sets := []string{"power_state=NULL"}
	if power >= 0 {
		sets[0] = "power_state=" + strconv.Itoa(power)
	}
	for col, v := range map[string]string{"vm_state": vmState, "task_state": taskState} {
		if v == "" {
			continue
		}
		for _, r := range v {
			if (r < 'a' || r > 'z') && r != '_' {
				return fmt.Errorf("set power state: bad %s %q", col, v)
			}
		}
		sets = append(sets, fmt.Sprintf("%s='%s'", col, v))
	}
	return s.mysql(ctx, "nova", fmt.Sprintf("UPDATE instances SET %s WHERE uuid='%s'", strings.Join(sets, ", "), id))
}

// ExecNova runs SQL as the database root user against a Nova database
// ("nova" is cell1, "nova_api"), for states Nova never produces itself.
func (s *Stack) ExecNova(ctx context.Context, db, sql string) error {
	switch db {
	case "nova", "nova_api", "nova_cell0":
	default:
		return errors.New("exec nova: want database nova, nova_api or nova_cell0")
	}
	return s.mysql(ctx, db, sql)
}
