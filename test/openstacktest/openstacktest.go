package openstacktest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drwatch/drwatch/test/daemon"
)

// ErrNoBinary means a required program is not installed. Its message names
// the Debian package.
var ErrNoBinary = errors.New("binary not found")

// Credentials are a Keystone user scoped to a project, both in the Default
// domain.
type Credentials struct {
	Username    string
	Password    string
	UserID      string
	ProjectName string
	ProjectID   string
	// Domain is the name of the user's and the project's domain ("Default").
	Domain string
}

// Stack is a running Keystone + Octavia control plane. Exported fields are
// read-only; methods are safe for concurrent use.
type Stack struct {
	// AuthURL is Keystone's versioned endpoint, http://127.0.0.1:<port>/v3.
	AuthURL string
	// OctaviaURL is the Octavia API root, http://127.0.0.1:<port>; it is also
	// the load-balancer endpoint in the catalog.
	OctaviaURL string
	// Region is the catalog region, "RegionOne".
	Region string
	// Admin has role admin in project admin.
	Admin Credentials
	// Member has roles member and load-balancer_member in project "demo". It
	// owns the load balancers CreateLB makes.
	Member Credentials
	// MemberAppCredID and MemberAppCredSecret are an application credential
	// of Member (unrestricted roles of the demo project).
	MemberAppCredID     string
	MemberAppCredSecret string
	// CloudsFile is a clouds.yaml with clouds "admin", "member" (password)
	// and "member-appcred" (application credential), region RegionOne.
	CloudsFile string
	// VIPNetworkID is the made-up network load balancers are created on; the
	// noop network driver accepts any ID.
	VIPNetworkID string
	// CinderURL is the Cinder API root, http://127.0.0.1:<port>, with
	// Options.Cinder; "" without. The catalog's volumev3 endpoint is
	// CinderURL/v3/%(project_id)s.
	CinderURL string
	// NeutronURL is the Neutron API root, http://127.0.0.1:<port> (the
	// "network" endpoint in the catalog); empty without Options.Neutron.
	NeutronURL string
	neutronT0  time.Time // when neutron-server was started
	// Dir holds all state and logs.
	Dir string
	// ComputeURL (Nova, http://127.0.0.1:<port>/v2.1) and PlacementURL are
	// set with Options.Nova, and are the catalog's compute and placement
	// endpoints.
	ComputeURL, PlacementURL string
	// DesignateURL is the Designate API root, http://127.0.0.1:<port> (the
	// "dns" endpoint in the catalog); empty without Options.Designate.
	DesignateURL string

	mu        sync.Mutex
	closed    bool
	procs     map[string]*daemon.Process
	ksIni     string
	mysqlSock string
	nova      novaState
	designate designateState
}

// Options tunes New. The zero value is ready to use.
type Options struct {
	// Dir is the parent of the state directory; empty means os.TempDir().
	Dir string
	// Logger, when set, gets one Info line per start-up step with its
	// duration; nil logs nothing.
	Logger *slog.Logger
	// Cinder also runs cinder-api, cinder-scheduler and cinder-volume with
	// the fake volume driver (cinder.go).
	Cinder bool
	// Neutron also runs neutron-server (see neutron.go).
	Neutron bool
	// Nova adds Placement and Nova (nova.go): API, conductor, scheduler
	// and one fake-driver nova-compute per NovaHosts entry.
	Nova bool
	// Designate adds designate-api, -central, -worker, -producer and -mdns
	// with the BIND9 backend and a private named (designate.go).
	Designate bool
}

const (
	dbPassword    = "dbpw"
	octaviaPass   = "octaviapw"
	adminPassword = "adminpw"
	memberPass    = "memberpw"
	vipNetwork    = "11111111-2222-3333-4444-555555555555"
)

// StartTimeout bounds Start. The stack needs 30-60 s on two busy cores,
// several minutes on an overloaded machine.
const StartTimeout = 8 * time.Minute

// Start starts a stack for one test and stops it in t.Cleanup.
func Start(t testing.TB) *Stack {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	s, err := New(ctx, Options{})
	if err != nil {
		t.Fatalf("openstacktest: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// binaries lists what the stack runs, with the Debian package of each.
var binaries = []struct{ path, pkg string }{
	{"mariadbd", "mariadb-server"},
	{"mariadb-install-db", "mariadb-server"},
	{"mariadb", "mariadb-client"},
	{"epmd", "erlang-base (rabbitmq-server)"},
	{"/usr/lib/rabbitmq/bin/rabbitmq-server", "rabbitmq-server"},
	{"keystone-manage", "keystone"},
	{"/usr/bin/keystone-wsgi-public", "keystone"},
	{"uwsgi", "uwsgi-plugin-python3"},
	{"/usr/lib/uwsgi/plugins/python3_plugin.so", "uwsgi-plugin-python3"},
	{"octavia-db-manage", "octavia-api"},
	{"octavia-wsgi", "octavia-api"},
	{"octavia-worker", "octavia-worker"},
}

func checkBinaries() error { return checkBinaryList(binaries) }

// checkBinaryList fails naming the Debian package of the first program of
// list that is missing.
func checkBinaryList(list []struct{ path, pkg string }) error {
	for _, b := range list {
		if strings.HasPrefix(b.path, "/") {
			if _, err := os.Stat(b.path); err != nil {
				return fmt.Errorf("%s missing: install Debian package %s (make install-test-deps): %w", b.path, b.pkg, ErrNoBinary)
			}
			continue
		}
		if _, err := exec.LookPath(b.path); err != nil {
			return fmt.Errorf("%s not found in PATH: install Debian package %s (make install-test-deps): %w", b.path, b.pkg, ErrNoBinary)
		}
	}
	return nil
}

// New starts the whole stack and returns once Keystone, the Octavia API and
// octavia-worker serve. The caller must Close it. On error nothing is left
// running.
func New(ctx context.Context, opts Options) (_ *Stack, err error) {
	if err := checkBinaries(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(opts.Dir, "openstacktest-")
	if err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	s := &Stack{Dir: dir, Region: "RegionOne", VIPNetworkID: vipNetwork, procs: map[string]*daemon.Process{}}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	t0 := time.Now()
	step := func(name string) {
		logger.Info("openstacktest step done", "step", name, "since_start", time.Since(t0).Round(100*time.Millisecond))
	}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	ports, err := daemon.FreePorts(6)
	if err != nil {
		return nil, err
	}
	p := stackPorts{keystone: ports[0], octavia: ports[1], mysql: ports[2], rabbit: ports[3], rabbitDist: ports[4], epmd: ports[5]}
	s.AuthURL = fmt.Sprintf("http://127.0.0.1:%d/v3", p.keystone)
	s.OctaviaURL = fmt.Sprintf("http://127.0.0.1:%d", p.octavia)
	s.mysqlSock = filepath.Join(dir, "mysql", "mysql.sock")
	s.Admin = Credentials{Username: "admin", Password: adminPassword, ProjectName: "admin", Domain: "Default"}
	s.Member = Credentials{Username: "demo", Password: memberPass, ProjectName: "demo", Domain: "Default"}

	// MariaDB and RabbitMQ are independent; RabbitMQ is only needed by the
	// worker, so it starts in the background while the databases sync.
	rabbitErr := make(chan error, 1)
	rabbitWaited := false
	go func() { rabbitErr <- s.startRabbit(ctx, p) }()
	defer func() {
		// Never leave the goroutine running past New.
		if !rabbitWaited {
			<-rabbitErr
		}
	}()
	if err := s.startMariaDB(ctx, p); err != nil {
		return nil, err
	}
	step("mariadb")
	if err := s.mysql(ctx, "", fmt.Sprintf(`CREATE DATABASE keystone; CREATE DATABASE octavia;
CREATE USER 'os'@'127.0.0.1' IDENTIFIED BY '%s';
GRANT ALL ON keystone.* TO 'os'@'127.0.0.1'; GRANT ALL ON octavia.* TO 'os'@'127.0.0.1';`, dbPassword)); err != nil {
		return nil, err
	}
	if err := s.writeConfigs(p); err != nil {
		return nil, err
	}
	if err := s.prepareDatabases(ctx); err != nil {
		return nil, err
	}
	step("databases")
	if err := s.startNeutron(ctx, opts, p); err != nil {
		return nil, err
	}
	// Start Keystone, the Octavia API and the worker together: each spends
	// seconds importing Python before it serves. The API needs Keystone
	// only per request, the worker only RabbitMQ and the database.
	if err := s.startProc("keystone", "uwsgi", []string{"--ini", s.ksIni}, "keystone-uwsgi.out"); err != nil {
		return nil, err
	}
	if err := s.startProc("octavia-api", "uwsgi", []string{"--ini", s.path("octavia-uwsgi.ini")}, "octavia-uwsgi.out"); err != nil {
		return nil, err
	}
	rabbitWaited = true
	if err := <-rabbitErr; err != nil {
		return nil, err
	}
	step("rabbitmq")
	if err := s.startProc("octavia-worker", "octavia-worker", []string{"--config-file", s.path("octavia.conf")}, "worker.log"); err != nil {
		return nil, err
	}
	// Cinder and Designate boot while Keystone, Octavia and the worker do.
	if err := s.startCinder(ctx, opts, p); err != nil {
		return nil, err
	}
	if err := s.startDesignate(ctx, opts, p); err != nil {
		return nil, err
	}
	if err := s.waitHTTP(ctx, "keystone", s.AuthURL, "keystone.log"); err != nil {
		return nil, err
	}
	step("keystone")
	if err := s.createIdentities(ctx); err != nil {
		return nil, err
	}
	step("keystone identities")
	if err := s.waitHTTP(ctx, "octavia-api", s.OctaviaURL+"/", "octavia.log"); err != nil {
		return nil, err
	}
	step("octavia-api")
	// Casts sent before the worker has declared its queue would be lost.
	if err := s.waitLog(ctx, "octavia-worker", "worker.log", "Starting V2 consumer"); err != nil {
		return nil, err
	}
	step("octavia-worker")
	if err := s.waitNeutron(ctx, logger); err != nil {
		return nil, err
	}
	if err := s.waitDesignate(ctx); err != nil {
		return nil, err
	}
	if s.DesignateURL != "" {
		step("designate")
	}
	if opts.Nova {
		if err := s.startNova(ctx, p, step); err != nil {
			return nil, err
		}
	}
	return s, nil
}

type stackPorts struct {
	keystone, octavia, mysql, rabbit, rabbitDist, epmd int
}

func (s *Stack) path(name string) string { return filepath.Join(s.Dir, name) }

func (s *Stack) startMariaDB(ctx context.Context, p stackPorts) error {
	d := s.path("mysql")
	if err := os.MkdirAll(d, 0o700); err != nil {
		return err
	}
	// A private tmpdir: mariadbd deletes every "#sql*" file in its tmpdir
	// at start, so two stacks starting together on the shared /tmp delete
	// each other's bootstrap temporary tables ("Unknown table
	// 'mysql.tmp_user_sys'").
	tmp := filepath.Join(d, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return err
	}
	u := currentUser()
	if err := s.run(ctx, "mysql-install.log", "mariadb-install-db", "--no-defaults", "--user="+u,
		"--datadir="+filepath.Join(d, "data"), "--tmpdir="+tmp,
		"--auth-root-authentication-method=normal", "--skip-test-db"); err != nil {
		return fmt.Errorf("mariadb-install-db: %w", err)
	}
	if err := s.startProc("mariadb", "mariadbd", []string{"--no-defaults", "--user=" + u,
		"--datadir=" + filepath.Join(d, "data"), "--tmpdir=" + tmp, "--socket=" + s.mysqlSock,
		"--pid-file=" + filepath.Join(d, "mysql.pid"), "--port=" + strconv.Itoa(p.mysql),
		"--bind-address=127.0.0.1", "--skip-name-resolve", "--innodb-buffer-pool-size=64M",
		"--innodb-log-file-size=16M", "--innodb-flush-log-at-trx-commit=2", "--skip-log-bin",
		"--log-error=" + filepath.Join(d, "error.log")}, "mysql.out"); err != nil {
		return err
	}
	return s.poll(ctx, "mariadb", func() error { return s.mysql(ctx, "", "SELECT 1") })
}

// mysql runs SQL as root over the private socket.
func (s *Stack) mysql(ctx context.Context, db, sql string) error {
	args := []string{"--no-defaults", "-S", s.mysqlSock, "-uroot"}
	if db != "" {
		args = append(args, db)
	}
	args = append(args, "-e", sql)
	out, err := exec.CommandContext(ctx, "mariadb", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("mariadb: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Exec runs SQL as the database root user against database db ("octavia" or
// "keystone"), for states the noop drivers never produce.
func (s *Stack) Exec(ctx context.Context, db, sql string) error {
	return s.mysql(ctx, db, sql)
}

func (s *Stack) startRabbit(ctx context.Context, p stackPorts) error {
	d := s.path("rabbit")
	if err := os.MkdirAll(d, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(d, "enabled_plugins"), []byte("[].\n"), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(d, "rabbitmq.conf"), []byte("loopback_users = none\n"), 0o600); err != nil {
		return err
	}
	// Our own epmd in the foreground on a private port: otherwise rabbit
	// spawns "epmd -daemon", which outlives us.
	if err := s.startProc("epmd", "epmd", []string{"-address", "127.0.0.1", "-port", strconv.Itoa(p.epmd)}, "epmd.log"); err != nil {
		return err
	}
	env := []string{
		"HOME=" + d,
		"RABBITMQ_NODENAME=rp@localhost",
		"RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
		"RABBITMQ_NODE_PORT=" + strconv.Itoa(p.rabbit),
		"RABBITMQ_DIST_PORT=" + strconv.Itoa(p.rabbitDist),
		"RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=-kernel inet_dist_use_interface {127,0,0,1}",
		"RABBITMQ_MNESIA_BASE=" + filepath.Join(d, "mnesia"),
		"RABBITMQ_LOG_BASE=" + filepath.Join(d, "log"),
		"RABBITMQ_LOGS=-",
		"RABBITMQ_ENABLED_PLUGINS_FILE=" + filepath.Join(d, "enabled_plugins"),
		"RABBITMQ_CONFIG_FILE=" + filepath.Join(d, "rabbitmq"),
		"RABBITMQ_PID_FILE=" + filepath.Join(d, "pid"),
		// Makes the script exec the Erlang VM instead of running it as a
		// child: then beam is our child, in reach of Pdeathsig and of the
		// process-group kill, and a crashed test leaves no broker behind.
		"RUNNING_UNDER_SYSTEMD=true",
		"ERL_EPMD_ADDRESS=127.0.0.1",
		"ERL_EPMD_PORT=" + strconv.Itoa(p.epmd),
	}
	// /usr/lib/rabbitmq/bin/rabbitmq-server runs as the caller; the
	// /usr/sbin wrapper would switch to the rabbitmq user.
	if err := s.startProcEnv("rabbitmq", "/usr/lib/rabbitmq/bin/rabbitmq-server", nil, env, "rabbit.log"); err != nil {
		return err
	}
	return s.waitLog(ctx, "rabbitmq", "rabbit.log", "Server startup complete")
}

func (s *Stack) writeConfigs(p stackPorts) error {
	dbURL := func(db string) string {
		return fmt.Sprintf("mysql+pymysql://os:%s@127.0.0.1:%d/%s", dbPassword, p.mysql, db)
	}
	files := map[string]string{
		"keystone.conf": fmt.Sprintf(`[DEFAULT]
use_stderr = true
[database]
connection = %s
[identity]
# bcrypt's minimum cost: every token request hashes a password, and the
# default cost makes each one take a second on a busy two-core machine.
password_hash_rounds = 4
[token]
provider = fernet
[fernet_tokens]
key_repository = %s
[fernet_receipts]
key_repository = %s
[credential]
key_repository = %s
[cache]
# In-process cache (one uwsgi process, so no coherence problem): without it
# every request re-reads token, role and catalog data, about a second each on
# a busy machine.
enabled = true
backend = dogpile.cache.memory
`, dbURL("keystone"), s.path("fernet-keys"), s.path("fernet-keys"), s.path("credential-keys")),
		// One process: each one imports all of Keystone, seconds of CPU on
		// a busy two-core machine; threads serve the few concurrent test
		// requests.
		"keystone-uwsgi.ini": uwsgiIni(p.keystone, "/usr/bin/keystone-wsgi-public", 1, 4, s.path("keystone.log"),
			"env = OS_KEYSTONE_CONFIG_FILES="+s.path("keystone.conf")),
		"octavia.conf": fmt.Sprintf(`[DEFAULT]
use_stderr = true
transport_url = rabbit://guest:guest@127.0.0.1:%[1]d/
[api_settings]
bind_host = 127.0.0.1
bind_port = %[2]d
auth_strategy = keystone
enabled_provider_drivers = amphora:Amphora with noop drivers,noop_driver:The noop driver
default_provider_driver = amphora
[database]
connection = %[3]s
[keystone_authtoken]
www_authenticate_uri = http://127.0.0.1:%[4]d
auth_url = http://127.0.0.1:%[4]d
auth_type = password
username = octavia
password = %[5]s
project_name = service
user_domain_name = Default
project_domain_name = Default
[controller_worker]
amphora_driver = amphora_noop_driver
compute_driver = compute_noop_driver
network_driver = network_noop_driver
volume_driver = volume_noop_driver
amp_image_tag = amphora
amp_flavor_id = fake-flavor
amp_boot_network_list = %[6]s
loadbalancer_topology = SINGLE
client_ca = %[7]s
[oslo_messaging]
topic = octavia_prov
[certificates]
ca_certificate = %[7]s
ca_private_key = %[8]s
server_certs_key_passphrase = insecure-key-do-not-use-this-key
[haproxy_amphora]
server_ca = %[7]s
client_cert = %[7]s
`, p.rabbit, p.octavia, dbURL("octavia"), p.keystone, octaviaPass, vipNetwork, s.path("ca.crt"), s.path("ca.key")),
		"octavia-uwsgi.ini": fmt.Sprintf(`[uwsgi]
plugins = python3
http-socket = 127.0.0.1:%d
wsgi-file = /usr/bin/octavia-wsgi
; octavia-wsgi reads its config from sys.argv
pyargv = --config-file %s
master = true
processes = 1
threads = 2
enable-threads = true
lazy-apps = true
die-on-term = true
need-app = true
buffer-size = 65535
add-header = Connection: close
logto = %s
`, p.octavia, s.path("octavia.conf"), s.path("octavia.log")),
	}
	for name, body := range files {
		if err := os.WriteFile(s.path(name), []byte(body), 0o600); err != nil {
			return err
		}
	}
	s.ksIni = s.path("keystone-uwsgi.ini")
	return writeCA(s.path("ca.crt"), s.path("ca.key"))
}

// writeCA makes the certificate authority octavia-worker's certificate
// generator wants, even with the noop amphora driver.
func writeCA(certPath, keyPath string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("ca key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "octavia-test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(48 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("ca certificate: %w", err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("ca key: %w", err)
	}
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600)
}

// prepareDatabases fills the keystone and octavia databases: from the
// schema cache when it has a dump for the installed packages, else by
// running the migrations and Keystone's bootstrap (about a minute of CPU),
// after which it stores the dump for the next run.
func (s *Stack) prepareDatabases(ctx context.Context) error {
	if err := writeFernetKeys(s.path("fernet-keys")); err != nil {
		return err
	}
	if err := writeFernetKeys(s.path("credential-keys")); err != nil {
		return err
	}
	cache := schemaCacheDir()
	if cache != "" {
		if _, err := os.Stat(filepath.Join(cache, "octavia.sql")); err == nil {
			return s.loadSchemaCache(ctx, cache)
		}
	}
	// The two schema migrations touch different databases: run them side
	// by side.
	octDB := make(chan error, 1)
	go func() {
		octDB <- s.run(ctx, "oct-db.log", "octavia-db-manage", "--config-file", s.path("octavia.conf"), "upgrade", "head")
	}()
	ksErr := s.bootstrapKeystone(ctx)
	if err := <-octDB; err != nil {
		return fmt.Errorf("octavia-db-manage: %w", err)
	}
	if ksErr != nil {
		return ksErr
	}
	if cache != "" {
		// Best effort: a failed save only costs the next run time.
		s.saveSchemaCache(ctx, cache)
	}
	return nil
}

// schemaVersion changes whenever what the cached dump contains changes
// (bootstrap arguments, passwords, region).
const schemaVersion = "1"

// schemaCacheDir names the cache of migrated and bootstrapped databases for
// the installed Keystone, Octavia and MariaDB packages, or "" when caching
// is off (OPENSTACKTEST_NO_CACHE=1) or the versions cannot be read.
func schemaCacheDir() string {
	if os.Getenv("OPENSTACKTEST_NO_CACHE") != "" {
		return ""
	}
	out, err := exec.Command("dpkg-query", "-W", "-f", "${Package}=${Version}\n",
		"python3-keystone", "python3-octavia", "python3-cinder", "mariadb-server").Output()
	// A package not installed (python3-cinder without Options.Cinder) makes
	// dpkg-query fail but still prints the others.
	if err != nil && len(out) == 0 {
		return ""
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		base = filepath.Join(home, ".cache")
	}
	sum := sha256.Sum256(append(out, schemaVersion...))
	return filepath.Join(base, "drwatch", "openstacktest-schema-"+hex.EncodeToString(sum[:6]))
}

func (s *Stack) loadSchemaCache(ctx context.Context, dir string) error {
	if err := s.loadDumps(ctx, dir, []string{"keystone", "octavia"}); err != nil {
		return err
	}
	// Bootstrap wrote Keystone's own endpoints with the port of the run that
	// made the dump.
	return s.mysql(ctx, "keystone", fmt.Sprintf("UPDATE endpoint SET url='%s'", s.AuthURL))
}

func (s *Stack) saveSchemaCache(ctx context.Context, dir string) {
	s.saveDumps(ctx, dir, []string{"keystone", "octavia"})
}

// loadDumps loads dir/<db>.sql into each database.
func (s *Stack) loadDumps(ctx context.Context, dir string, dbs []string) error {
	for _, db := range dbs {
		f, err := os.Open(filepath.Join(dir, db+".sql"))
		if err != nil {
			return fmt.Errorf("schema cache: %w", err)
		}
		cmd := exec.CommandContext(ctx, "mariadb", "--no-defaults", "-S", s.mysqlSock, "-uroot", db)
		cmd.Stdin = f
		out, err := cmd.CombinedOutput()
		f.Close()
		if err != nil {
			return fmt.Errorf("load cached %s schema (remove %s to rebuild): %w: %s", db, dir, err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// saveDumps stores a dump of each database in directory dir, made
// atomically; best effort, as a failed save only costs the next run time.
func (s *Stack) saveDumps(ctx context.Context, dir string, dbs []string) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".openstacktest-schema-")
	if err != nil {
		return
	}
	defer os.RemoveAll(tmp)
	for _, db := range dbs {
		f, err := os.Create(filepath.Join(tmp, db+".sql"))
		if err != nil {
			return
		}
		cmd := exec.CommandContext(ctx, "mariadb-dump", "--no-defaults", "-S", s.mysqlSock, "-uroot", "--single-transaction", db)
		cmd.Stdout = f
		err = cmd.Run()
		f.Close()
		if err != nil {
			return
		}
	}
	// Rename is atomic; when a concurrent run got there first, keep theirs.
	os.Rename(tmp, dir)
}

// writeFernetKeys initializes a Keystone key repository the way
// keystone-manage fernet_setup does (keys "0", staged, and "1", primary:
// url-safe base64 of 32 random bytes), without a Python start-up.
func writeFernetKeys(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, name := range []string{"0", "1"} {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(base64.URLEncoding.EncodeToString(key)), 0o600); err != nil {
			return err
		}
	}
	return nil
}

func (s *Stack) bootstrapKeystone(ctx context.Context) error {
	conf := s.path("keystone.conf")
	url := s.AuthURL
	manage := func(step ...string) error {
		args := append([]string{"--config-file", conf}, step...)
		if err := s.run(ctx, "keystone-manage-"+step[0]+".log", "keystone-manage", args...); err != nil {
			return fmt.Errorf("keystone-manage %s: %w", step[0], err)
		}
		return nil
	}
	if err := manage("db_sync"); err != nil {
		return err
	}
	return manage("bootstrap", "--bootstrap-password", adminPassword, "--bootstrap-username", "admin",
		"--bootstrap-project-name", "admin", "--bootstrap-role-name", "admin",
		"--bootstrap-service-name", "keystone", "--bootstrap-region-id", s.Region,
		"--bootstrap-admin-url", url, "--bootstrap-public-url", url, "--bootstrap-internal-url", url)
}

// StartKeystone starts Keystone's uwsgi and waits until it answers. A no-op
// when it runs.
func (s *Stack) StartKeystone(ctx context.Context) error {
	s.mu.Lock()
	p := s.procs["keystone"]
	s.mu.Unlock()
	if p != nil && !p.Exited() {
		return nil
	}
	if err := s.startProc("keystone", "uwsgi", []string{"--ini", s.ksIni}, "keystone-uwsgi.out"); err != nil {
		return err
	}
	return s.waitHTTP(ctx, "keystone", s.AuthURL, "keystone.log")
}

// StopKeystone stops Keystone (its whole uwsgi process group), so that
// authentication fails with connection refused. Idempotent.
func (s *Stack) StopKeystone() error {
	s.stopProc("keystone", 5*time.Second)
	return nil
}

// createIdentities makes the objects Octavia and the tests need: the
// service project and octavia user, the load-balancer roles, the catalog
// entry, the demo member and its application credential, and clouds.yaml.
func (s *Stack) createIdentities(ctx context.Context) error {
	admin, err := s.Token(ctx, s.Admin)
	if err != nil {
		return err
	}
	var out identityOut
	post := func(path string, body any) error {
		out = identityOut{}
		_, err := s.call(ctx, http.MethodPost, s.AuthURL+path, admin, body, &out)
		return err
	}
	get := func(path string) error {
		_, err := s.call(ctx, http.MethodGet, s.AuthURL+path, admin, nil, &out)
		return err
	}
	put := func(path string) error {
		_, err := s.call(ctx, http.MethodPut, s.AuthURL+path, admin, nil, nil)
		return err
	}

	if err := get("/projects?name=admin"); err != nil || len(out.Projects) != 1 {
		return fmt.Errorf("find admin project: %v", err)
	}
	s.Admin.ProjectID = out.Projects[0].ID
	if err := get("/users?name=admin"); err != nil || len(out.Users) != 1 {
		return fmt.Errorf("find admin user: %v", err)
	}
	s.Admin.UserID = out.Users[0].ID

	roles := map[string]string{}
	if err := get("/roles"); err != nil {
		return err
	}
	for _, r := range out.Roles {
		roles[r.Name] = r.ID
	}
	for _, name := range []string{"member", "reader", "load-balancer_member", "load-balancer_admin", "load-balancer_observer"} {
		if roles[name] != "" {
			continue
		}
		if err := post("/roles", map[string]any{"role": map[string]any{"name": name}}); err != nil {
			return err
		}
		roles[name] = out.Role.ID
	}

	project := func(name string) (string, error) {
		if err := post("/projects", map[string]any{"project": map[string]any{"name": name, "domain_id": "default"}}); err != nil {
			return "", err
		}
		return out.Project.ID, nil
	}
	userIn := func(name, password, projectID string, roleNames ...string) (string, error) {
		if err := post("/users", map[string]any{"user": map[string]any{"name": name, "domain_id": "default", "password": password}}); err != nil {
			return "", err
		}
		id := out.User.ID
		for _, r := range roleNames {
			if err := put(fmt.Sprintf("/projects/%s/users/%s/roles/%s", projectID, id, roles[r])); err != nil {
				return "", err
			}
		}
		return id, nil
	}
	svc, err := project("service")
	if err != nil {
		return err
	}
	if _, err := userIn("octavia", octaviaPass, svc, "admin"); err != nil {
		return err
	}
	if err := s.neutronIdentities(ctx, admin, svc, roles["admin"]); err != nil {
		return err
	}
	if s.Member.ProjectID, err = project(s.Member.ProjectName); err != nil {
		return err
	}
	if s.Member.UserID, err = userIn(s.Member.Username, s.Member.Password, s.Member.ProjectID, "member", "load-balancer_member"); err != nil {
		return err
	}
	if err := (&keystoneAdmin{s: s, ctx: ctx, token: admin}).catalog("load-balancer", "octavia", s.OctaviaURL); err != nil {
		return err
	}
	if err := s.createCinderIdentities(ctx, admin); err != nil {
		return err
	}
	if err := s.createDesignateIdentities(ctx, admin); err != nil {
		return err
	}
	// An application credential is created by its own user.
	member, err := s.Token(ctx, s.Member)
	if err != nil {
		return err
	}
	var ac struct {
		ApplicationCredential struct{ ID, Secret string } `json:"application_credential"`
	}
	if _, err := s.call(ctx, http.MethodPost, s.AuthURL+"/users/"+s.Member.UserID+"/application_credentials", member,
		map[string]any{"application_credential": map[string]any{"name": "drwatch-probe"}}, &ac); err != nil {
		return err
	}
	s.MemberAppCredID, s.MemberAppCredSecret = ac.ApplicationCredential.ID, ac.ApplicationCredential.Secret

	s.CloudsFile = s.path("clouds.yaml")
	clouds := fmt.Sprintf(`clouds:
  admin:
    auth:
      auth_url: %[1]s
      username: admin
      password: %[2]s
      project_name: admin
      user_domain_name: Default
      project_domain_name: Default
    region_name: %[3]s
    interface: public
    identity_api_version: 3
  member:
    auth:
      auth_url: %[1]s
      username: %[4]s
      password: %[5]s
      project_name: %[6]s
      user_domain_name: Default
      project_domain_name: Default
    region_name: %[3]s
    interface: public
    identity_api_version: 3
  member-appcred:
    auth_type: v3applicationcredential
    auth:
      auth_url: %[1]s
      application_credential_id: %[7]s
      application_credential_secret: %[8]s
    region_name: %[3]s
    interface: public
    identity_api_version: 3
`, s.AuthURL, adminPassword, s.Region, s.Member.Username, s.Member.Password, s.Member.ProjectName, s.MemberAppCredID, s.MemberAppCredSecret)
	return os.WriteFile(s.CloudsFile, []byte(clouds), 0o600)
}

// identityOut collects the fields createIdentities reads from Keystone's
// answers.
type identityOut struct {
	Project  struct{ ID string }
	User     struct{ ID string }
	Role     struct{ ID string }
	Roles    []struct{ ID, Name string }
	Users    []struct{ ID string }
	Service  struct{ ID string }
	Projects []struct{ ID string }
}

// Token returns a fresh project-scoped Keystone token for c.
func (s *Stack) Token(ctx context.Context, c Credentials) (string, error) {
	body := map[string]any{"auth": map[string]any{
		"identity": map[string]any{"methods": []string{"password"}, "password": map[string]any{
			"user": map[string]any{"name": c.Username, "domain": map[string]any{"name": c.Domain}, "password": c.Password}}},
		"scope": map[string]any{"project": map[string]any{"name": c.ProjectName, "domain": map[string]any{"name": c.Domain}}},
	}}
	h, err := s.call(ctx, http.MethodPost, s.AuthURL+"/auth/tokens", "", body, nil)
	if err != nil {
		return "", fmt.Errorf("token for %s: %w", c.Username, err)
	}
	tok := h.Get("X-Subject-Token")
	if tok == "" {
		return "", fmt.Errorf("token for %s: no X-Subject-Token", c.Username)
	}
	return tok, nil
}

// CreateLB creates a load balancer named name in the Member project (amphora
// provider, noop drivers) and waits until it is ACTIVE. It returns its ID.
func (s *Stack) CreateLB(ctx context.Context, name string) (string, error) {
	return s.CreateLBAs(ctx, s.Member, name)
}

// CreateLBAs is CreateLB in the project of c (s.Admin: another tenant than
// the Member's).
func (s *Stack) CreateLBAs(ctx context.Context, c Credentials, name string) (string, error) {
	tok, err := s.Token(ctx, c)
	if err != nil {
		return "", err
	}
	var out struct {
		LoadBalancer struct{ ID string } `json:"loadbalancer"`
	}
	if _, err := s.call(ctx, http.MethodPost, s.OctaviaURL+"/v2/lbaas/loadbalancers", tok, map[string]any{
		"loadbalancer": map[string]any{"name": name, "vip_network_id": s.VIPNetworkID, "provider": "amphora"}}, &out); err != nil {
		return "", fmt.Errorf("create lb %s: %w", name, err)
	}
	id := out.LoadBalancer.ID
	if err := s.WaitLB(ctx, id, "ACTIVE"); err != nil {
		return "", err
	}
	return id, nil
}

// Pool is what AddListenerPool created.
type Pool struct {
	ListenerID string
	PoolID     string
	MemberIDs  []string
}

// AddListenerPool gives a load balancer of the Member project an HTTP
// listener on port, a round-robin pool behind it and one member per address
// (port 80; addresses are never contacted with the noop drivers), waiting
// for the load balancer to return to ACTIVE after each step.
func (s *Stack) AddListenerPool(ctx context.Context, lbID, name string, port int, memberAddrs ...string) (Pool, error) {
	tok, err := s.Token(ctx, s.Member)
	if err != nil {
		return Pool{}, err
	}
	var p Pool
	var out struct {
		Listener struct{ ID string } `json:"listener"`
		Pool     struct{ ID string } `json:"pool"`
		Member   struct{ ID string } `json:"member"`
	}
	create := func(path string, body any) error {
		if _, err := s.call(ctx, http.MethodPost, s.OctaviaURL+"/v2/lbaas/"+path, tok, body, &out); err != nil {
			return fmt.Errorf("create %s: %w", path, err)
		}
		return s.WaitLB(ctx, lbID, "ACTIVE")
	}
	if err := create("listeners", map[string]any{"listener": map[string]any{
		"loadbalancer_id": lbID, "name": name, "protocol": "HTTP", "protocol_port": port}}); err != nil {
		return Pool{}, err
	}
	p.ListenerID = out.Listener.ID
	if err := create("pools", map[string]any{"pool": map[string]any{
		"listener_id": p.ListenerID, "name": name, "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN"}}); err != nil {
		return Pool{}, err
	}
	p.PoolID = out.Pool.ID
	for i, addr := range memberAddrs {
		if err := create("pools/"+p.PoolID+"/members", map[string]any{"member": map[string]any{
			"name": fmt.Sprintf("%s-%d", name, i+1), "address": addr, "protocol_port": 80}}); err != nil {
			return Pool{}, err
		}
		p.MemberIDs = append(p.MemberIDs, out.Member.ID)
	}
	return p, nil
}

// SetStatus writes the operating status of a listener, pool or member
// (table "listener", "pool" or "member") straight into Octavia's database.
func (s *Stack) SetStatus(ctx context.Context, table, id, operating string) error {
	switch table {
	case "listener", "pool", "member":
	default:
		return fmt.Errorf("table %q: want listener, pool or member", table)
	}
	if !isStatusWord(operating) || !isUUIDish(id) {
		return fmt.Errorf("set %s status: bad id or status", table)
	}
	return s.mysql(ctx, "octavia", fmt.Sprintf("UPDATE %s SET operating_status='%s' WHERE id='%s'", table, operating, id))
}

// LB is what LBStatus reports of a load balancer.
type LB struct {
	ID                 string `json:"id"`
	Name               string `json:"name"`
	ProvisioningStatus string `json:"provisioning_status"`
	OperatingStatus    string `json:"operating_status"`
	VIPAddress         string `json:"vip_address"`
}

// LBStatus reads a load balancer through the API as admin.
func (s *Stack) LBStatus(ctx context.Context, id string) (LB, error) {
	tok, err := s.Token(ctx, s.Admin)
	if err != nil {
		return LB{}, err
	}
	var out struct {
		LoadBalancer LB `json:"loadbalancer"`
	}
	if _, err := s.call(ctx, http.MethodGet, s.OctaviaURL+"/v2/lbaas/loadbalancers/"+id, tok, nil, &out); err != nil {
		return LB{}, err
	}
	return out.LoadBalancer, nil
}

// WaitLB polls until the load balancer's provisioning status is want, or
// ERROR (an error unless want is ERROR), or ctx ends.
func (s *Stack) WaitLB(ctx context.Context, id, want string) error {
	var last string
	for {
		lb, err := s.LBStatus(ctx, id)
		if err == nil {
			last = lb.ProvisioningStatus
			if last == want {
				return nil
			}
			if last == "ERROR" {
				return fmt.Errorf("lb %s went to ERROR, want %s", id, want)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("lb %s: status %q, want %s: %w", id, last, want, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// SetLBStatus writes a load balancer's provisioning and operating status
// straight into Octavia's database, as a broken amphora or a failed update
// would leave them. Empty leaves that column alone. Like every status write
// through Octavia's ORM (oslo.db's TimestampMixin), it also sets updated_at,
// which has one-second resolution.
func (s *Stack) SetLBStatus(ctx context.Context, id, provisioning, operating string) error {
	var sets []string
	for col, v := range map[string]string{"provisioning_status": provisioning, "operating_status": operating} {
		if v == "" {
			continue
		}
		if !isStatusWord(v) {
			return fmt.Errorf("status %q: want an upper-case status word", v)
		}
		sets = append(sets, fmt.Sprintf("%s='%s'", col, v))
	}
	if len(sets) == 0 || !isUUIDish(id) {
		return fmt.Errorf("set lb status %q: nothing to do or bad id", id)
	}
	sets = append(sets, "updated_at=UTC_TIMESTAMP()")
	return s.mysql(ctx, "octavia", fmt.Sprintf("UPDATE load_balancer SET %s WHERE id='%s'", strings.Join(sets, ", "), id))
}

func isStatusWord(v string) bool {
	for _, r := range v {
		if (r < 'A' || r > 'Z') && r != '_' {
			return false
		}
	}
	return v != ""
}

func isUUIDish(v string) bool {
	for _, r := range v {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') && r != '-' {
			return false
		}
	}
	return v != ""
}

// call does one JSON request. uwsgi's http-socket cannot keep a connection
// alive, so every request closes its connection.
func (s *Stack) call(ctx context.Context, method, url, token string, in, out any) (http.Header, error) {
	return s.callWith(ctx, method, url, token, nil, in, out)
}

// callWith is call with extra request headers.
func (s *Stack) callWith(ctx context.Context, method, url, token string, hdr map[string]string, in, out any) (http.Header, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return nil, err
	}
	req.Close = true
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("X-Auth-Token", token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode >= 300 {
		return resp.Header, fmt.Errorf("%s %s: status %d: %s", method, url, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.Header, fmt.Errorf("%s %s: decode: %w", method, url, err)
		}
	}
	return resp.Header, nil
}

// Close stops every daemon (octavia-worker gets TERM and 10 s, the others
// 5 s, then their process groups are killed) and removes Dir. Idempotent.
// Set OPENSTACKTEST_KEEP=1 to keep Dir (logs) for debugging.
func (s *Stack) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	s.stopNova()
	// The worker's graceful stop is slow; stop it alongside the API.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.stopProc("octavia-worker", 10*time.Second)
	}()
	s.stopProc("octavia-api", 5*time.Second)
	s.stopCinder()
	s.stopDesignate()
	s.stopProc("neutron", neutronStopGrace)
	s.stopProc("keystone", 5*time.Second)
	wg.Wait()
	s.stopProc("rabbitmq", 10*time.Second)
	s.stopProc("epmd", 2*time.Second)
	s.stopProc("mariadb", 10*time.Second)
	if os.Getenv("OPENSTACKTEST_KEEP") == "" {
		os.RemoveAll(s.Dir)
	}
}

// run runs a one-shot command to completion, appending its output to log.
func (s *Stack) run(ctx context.Context, log, bin string, args ...string) error {
	f, err := os.OpenFile(s.path(log), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w: %s", err, daemon.Tail(s.path(log), 8))
	}
	return nil
}

func (s *Stack) startProc(name, bin string, args []string, log string) error {
	return s.startProcEnv(name, bin, args, nil, log)
}

func (s *Stack) startProcEnv(name, bin string, args, env []string, log string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("stack closed")
	}
	p, err := daemon.Start(bin, args, daemon.Options{LogPath: s.path(log), Dir: filepath.Dir(s.path(log)), Env: env})
	if err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	s.procs[name] = p
	return nil
}

func (s *Stack) stopProc(name string, grace time.Duration) {
	s.mu.Lock()
	p := s.procs[name]
	delete(s.procs, name)
	s.mu.Unlock()
	if p != nil {
		p.Stop(grace)
	}
}

func (s *Stack) alive(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.procs[name]
	return p != nil && !p.Exited()
}

// poll calls f until it succeeds, the named process exits, or ctx ends.
func (s *Stack) poll(ctx context.Context, name string, f func() error) error {
	var last error
	for {
		if last = f(); last == nil {
			return nil
		}
		if !s.alive(name) {
			return fmt.Errorf("%s exited: %v", name, last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %v: %w", name, last, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *Stack) waitHTTP(ctx context.Context, name, url, log string) error {
	err := s.poll(ctx, name, func() error {
		_, err := s.call(ctx, http.MethodGet, url, "", nil, nil)
		return err
	})
	if err != nil {
		return fmt.Errorf("%w; log: %s", err, daemon.Tail(s.path(log), 10))
	}
	return nil
}

func (s *Stack) waitLog(ctx context.Context, name, log, needle string) error {
	err := s.poll(ctx, name, func() error {
		b, _ := os.ReadFile(s.path(log))
		if bytes.Contains(b, []byte(needle)) {
			return nil
		}
		return fmt.Errorf("no %q in %s yet", needle, log)
	})
	if err != nil {
		return fmt.Errorf("%w; log: %s", err, daemon.Tail(s.path(log), 10))
	}
	return nil
}

func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "root"
}
