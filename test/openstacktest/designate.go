package openstacktest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
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
)

// Designate runs beside Keystone when Options.Designate is set:
// designate-api, designate-central, designate-worker, designate-producer
// and designate-mdns on the stack's MariaDB, RabbitMQ and Keystone, with
// the BIND9 backend driving a private named. The worker adds and deletes
// zones in named with rndc addzone/delzone over named's own control
// channel; named then pulls each zone from designate-mdns by AXFR, on the
// NOTIFY mdns sends after every change, and the worker polls named's SOA
// serial before it marks a change ACTIVE. Everything is Designate's own:
// the API, the policy, the state machine, the serials and the transfers.
// A zone goes to ERROR the real way, with named stopped
// ([Stack.StopDesignateBackend]); only a zone stuck in PENDING or being
// deleted, which a working worker never leaves behind for long, is written
// into the database ([Stack.SetZoneStatus]), as SetLBStatus does for
// Octavia. No file under /etc/designate or /etc/bind is read.

// designateBinaries are what Options.Designate needs, with their Debian
// packages.
var designateBinaries = []struct{ path, pkg string }{
	{"/usr/bin/designate-api", "designate-api"},
	{"/usr/bin/designate-central", "designate-central"},
	{"/usr/bin/designate-worker", "designate-worker"},
	{"/usr/bin/designate-producer", "designate-producer"},
	{"/usr/bin/designate-mdns", "designate-mdns"},
	{"/usr/bin/designate-manage", "designate-common"},
	{"/usr/lib/python3/dist-packages/designate/backend/impl_bind9.py", "python3-designate"},
	// The API's paste pipeline as the package ships it: its postinst
	// copies it to /etc/designate, which the stack never reads.
	{designatePaste, "designate-common"},
	{"named", "bind9"},
	{"rndc", "bind9-utils"},
}

const (
	designatePass  = "designatepw"
	designatePaste = "/usr/share/designate-common/api-paste.ini"
	// DesignatePoolNS is the name server the pool puts in every zone's NS
	// RRset.
	DesignatePoolNS = "ns1.drwatch-designate.test."
	// designateServices are the Designate daemons the stack runs.
	designateServices = "designate-central designate-mdns designate-worker designate-producer designate-api"
)

// designateState is what the stack keeps of its Designate.
type designateState struct {
	dir       string // state directory
	namedAddr string // 127.0.0.1:port of the private named
}

// startDesignate creates and fills the designate database (from the schema
// cache when it has one), writes designate.conf, pools.yaml and the named
// configuration, and starts named and the five Designate services. It
// needs MariaDB and RabbitMQ running; Keystone is needed only per request.
// waitDesignate then loads the pool and waits until the API answers. A
// no-op without opts.Designate.
func (s *Stack) startDesignate(ctx context.Context, opts Options, p stackPorts) error {
	if !opts.Designate {
		return nil
	}
	if err := checkBinaryList(designateBinaries); err != nil {
		return err
	}
	ports, err := daemon.FreePorts(4)
	if err != nil {
		return err
	}
	api, mdns, dnsPort, rndcPort := ports[0], ports[1], ports[2], ports[3]
	s.DesignateURL = fmt.Sprintf("http://127.0.0.1:%d", api)
	s.designate.namedAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(dnsPort))
	dir := s.path("designate")
	s.designate.dir = dir
	for _, d := range []string{"locks", "named", "conf.d"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return err
		}
	}
	if err := s.mysql(ctx, "", `CREATE DATABASE designate;
GRANT ALL ON designate.* TO 'os'@'127.0.0.1';`); err != nil {
		return err
	}
	if err := s.startNamed(dir, dnsPort, rndcPort); err != nil {
		return err
	}
	conf := fmt.Sprintf(`[DEFAULT]
use_stderr = true
transport_url = rabbit://guest:guest@127.0.0.1:%[1]d/
state_path = %[2]s
# rndc runs as the test's user: no sudo, no rootwrap.
root_helper = env
[oslo_concurrency]
lock_path = %[2]s/locks
[storage:sqlalchemy]
connection = mysql+pymysql://os:%[3]s@127.0.0.1:%[4]d/designate
[service:api]
listen = 127.0.0.1:%[5]d
api_base_uri = http://127.0.0.1:%[5]d/
api_paste_config = %[9]s
auth_strategy = keystone
enable_api_v2 = true
workers = 1
[service:central]
workers = 1
managed_resource_email = hostmaster@drwatch-designate.test
[service:mdns]
listen = 127.0.0.1:%[6]d
workers = 1
[service:worker]
workers = 1
# Poll named for the new serial 1 s after a change (default 5 s), and
# retry every second: a change goes ACTIVE about a second after named has
# it, not five.
poll_delay = 1
poll_retry_interval = 1
[service:producer]
workers = 1
# Retry zones in ERROR every 5 s (default 120 s), so a test sees a zone
# recover soon after its name server is back.
[producer_task:worker_periodic_recovery]
interval = 5
[keystone_authtoken]
www_authenticate_uri = %[7]s
auth_url = %[7]s
auth_type = password
project_name = service
project_domain_name = Default
user_domain_name = Default
username = designate
password = %[8]s
[oslo_policy]
enforce_new_defaults = false
`, p.rabbit, dir, dbPassword, p.mysql, api, mdns, s.AuthURL, designatePass, designatePaste)
	if err := os.WriteFile(s.path("designate.conf"), []byte(conf), 0o600); err != nil {
		return err
	}
	pools := fmt.Sprintf(`- name: default
  description: drwatch test pool
  attributes: {}
  ns_records:
    - hostname: %[1]s
      priority: 1
  nameservers:
    - host: 127.0.0.1
      port: %[2]d
  targets:
    - type: bind9
      description: private named
      masters:
        - host: 127.0.0.1
          port: %[3]d
      options:
        host: 127.0.0.1
        port: %[2]d
        rndc_host: 127.0.0.1
        rndc_port: %[4]d
        rndc_config_file: %[5]s
`, DesignatePoolNS, dnsPort, mdns, rndcPort, filepath.Join(dir, "named", "rndc.conf"))
	if err := os.WriteFile(s.path("pools.yaml"), []byte(pools), 0o600); err != nil {
		return err
	}
	if err := s.prepareDesignateDatabase(ctx, opts); err != nil {
		return err
	}
	for _, svc := range strings.Fields(designateServices) {
		if err := s.startProc(svc, pythonBin, append([]string{"/usr/bin/" + svc}, s.designateArgs()...), svc+".log"); err != nil {
			return err
		}
	}
	return nil
}

// designateArgs are the config arguments every Designate program gets. An
// empty --config-dir keeps oslo.config from reading /etc/designate.
func (s *Stack) designateArgs() []string {
	return []string{"--config-file", s.path("designate.conf"), "--config-dir", filepath.Join(s.designate.dir, "conf.d")}
}

// startNamed starts the private named Designate's bind9 backend drives:
// new zones allowed (rndc addzone), a control channel on rndcPort with its
// own key, NOTIFY accepted from loopback (designate-mdns), no recursion.
func (s *Stack) startNamed(dir string, dnsPort, rndcPort int) error {
	nd := filepath.Join(dir, "named")
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return err
	}
	key := fmt.Sprintf(`key "rndc-key" { algorithm hmac-sha256; secret "%s"; };`, base64.StdEncoding.EncodeToString(raw))
	conf := fmt.Sprintf(`%[1]s
controls { inet 127.0.0.1 port %[3]d allow { 127.0.0.1; } keys { "rndc-key"; }; };
options {
    directory "%[2]s";
    pid-file "%[2]s/named.pid";
    session-keyfile "%[2]s/session.key";
    managed-keys-directory "%[2]s";
    listen-on port %[4]d { 127.0.0.1; };
    listen-on-v6 { none; };
    recursion no;
    dnssec-validation no;
    allow-new-zones yes;
    allow-notify { 127.0.0.1; };
    allow-transfer { none; };
    request-ixfr no;
    notify no;
};
`, key, nd, rndcPort, dnsPort)
	rndc := fmt.Sprintf("%s\noptions { default-key \"rndc-key\"; default-server 127.0.0.1; default-port %d; };\n", key, rndcPort)
	if err := os.WriteFile(filepath.Join(nd, "named.conf"), []byte(conf), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(nd, "rndc.conf"), []byte(rndc), 0o600); err != nil {
		return err
	}
	return s.StartDesignateBackend()
}

// StopDesignateBackend stops the private named, as a pool target that
// died: the worker's NOTIFY and serial polls go unanswered, and its rndc
// calls fail. Idempotent.
func (s *Stack) StopDesignateBackend() {
	s.stopProc("named", 5*time.Second)
}

// StartDesignateBackend starts the private named again, with the zones
// Designate added to it (kept in its directory). Starting a running named
// is an error.
func (s *Stack) StartDesignateBackend() error {
	if s.alive("named") {
		return errors.New("named is running")
	}
	nd := filepath.Join(s.designate.dir, "named")
	return s.startProc("named", "named", []string{"-g", "-c", filepath.Join(nd, "named.conf")}, "named.log")
}

// designateSchemaCache is the dump of the migrated designate database, in
// the schema cache directory, named for the installed Designate package.
func designateSchemaCache() string {
	dir := schemaCacheDir()
	if dir == "" {
		return ""
	}
	out, err := exec.Command("dpkg-query", "-W", "-f", "${Package}=${Version}\n", "python3-designate").Output()
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(append(out, "designate-1"...))
	return filepath.Join(dir, "designate-"+hex.EncodeToString(sum[:6])+".sql")
}

// prepareDesignateDatabase loads the designate schema from the cache, or
// runs designate-manage database sync and stores its dump there.
func (s *Stack) prepareDesignateDatabase(ctx context.Context, opts Options) error {
	t0 := time.Now()
	how := "loaded from the schema cache"
	cache := designateSchemaCache()
	if _, err := os.Stat(cache); cache != "" && err == nil {
		if err := s.loadDump(ctx, "designate", cache); err != nil {
			return err
		}
	} else {
		how = "migrated (designate-manage database sync)"
		if err := s.run(ctx, "designate-db.log", pythonBin, append([]string{"/usr/bin/designate-manage"}, append(s.designateArgs(), "database", "sync")...)...); err != nil {
			return fmt.Errorf("designate-manage database sync: %w", err)
		}
		if cache != "" && os.MkdirAll(filepath.Dir(cache), 0o700) == nil {
			// Best effort, like the other dumps.
			s.saveDump(ctx, "designate", cache)
		}
	}
	if opts.Logger != nil {
		opts.Logger.Info("openstacktest designate database", "how", how, "took", time.Since(t0).Round(100*time.Millisecond))
	}
	return nil
}

// waitDesignate loads pools.yaml into Designate (designate-manage pool
// update, through designate-central) and waits until the API answers its
// version list. A no-op without Designate.
func (s *Stack) waitDesignate(ctx context.Context) error {
	if s.DesignateURL == "" {
		return nil
	}
	// pool update is an RPC call to central: central must be consuming.
	if err := s.waitLog(ctx, "designate-central", "designate-central.log", "Starting central service"); err != nil {
		return err
	}
	args := append([]string{"/usr/bin/designate-manage"}, append(s.designateArgs(), "pool", "update", "--file", s.path("pools.yaml"))...)
	err := s.poll(ctx, "designate-central", func() error {
		return s.run(ctx, "designate-pool.log", pythonBin, args...)
	})
	if err != nil {
		return fmt.Errorf("designate-manage pool update: %w", err)
	}
	err = s.poll(ctx, "designate-api", func() error {
		_, err := s.call(ctx, http.MethodGet, s.DesignateURL+"/", "", nil, nil)
		return err
	})
	if err != nil {
		return fmt.Errorf("%w; log: %s", err, daemon.Tail(s.path("designate-api.log"), 10))
	}
	// A zone created before the worker consumes its queue would wait for
	// the producer's recovery task.
	return s.waitLog(ctx, "designate-worker", "designate-worker.log", "Starting worker service")
}

// createDesignateIdentities adds the designate service user (admin in
// project service) and the "dns" catalog entry. A no-op without Designate.
func (s *Stack) createDesignateIdentities(ctx context.Context, adminToken string) error {
	if s.DesignateURL == "" {
		return nil
	}
	k := &keystoneAdmin{s: s, ctx: ctx, token: adminToken}
	return k.service("designate", designatePass, "dns", "designate", s.DesignateURL)
}

// stopDesignate stops the Designate services together (each may take its
// whole grace: oslo.service waits for running work), then named.
func (s *Stack) stopDesignate() {
	var wg sync.WaitGroup
	for _, name := range strings.Fields(designateServices) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.stopProc(name, 5*time.Second)
		}()
	}
	wg.Wait()
	s.stopProc("named", 5*time.Second)
}

// DesignateDNS is the private named's address, host:port: the one name
// server of Designate's pool. Empty without Options.Designate.
func (s *Stack) DesignateDNS() string { return s.designate.namedAddr }

// Zone is what the Designate API reports of a zone.
type Zone struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Status string `json:"status"`
	Action string `json:"action"`
	Serial int64  `json:"serial"`
}

// CreateZone creates zone name (an FQDN) in the project of c and waits
// until Designate reports it ACTIVE (named serves it). It returns its ID.
func (s *Stack) CreateZone(ctx context.Context, c Credentials, name string) (string, error) {
	if s.DesignateURL == "" {
		return "", errors.New("designate is not running: set Options.Designate")
	}
	tok, err := s.Token(ctx, c)
	if err != nil {
		return "", err
	}
	var z Zone
	if _, err := s.call(ctx, http.MethodPost, s.DesignateURL+"/v2/zones", tok, map[string]any{
		"name": name, "email": "hostmaster@" + strings.TrimSuffix(name, "."), "ttl": 60}, &z); err != nil {
		return "", fmt.Errorf("create zone %s: %w", name, err)
	}
	return z.ID, s.waitZone(ctx, c, z.ID, "ACTIVE", true)
}

// WaitZone waits until zone id of c's project has status want, through
// any other status (a zone in ERROR may recover).
func (s *Stack) WaitZone(ctx context.Context, c Credentials, id, want string) error {
	return s.waitZone(ctx, c, id, want, false)
}

// waitZone is WaitZone; with failOnError a zone in ERROR (when want is
// another status) is an error at once.
func (s *Stack) waitZone(ctx context.Context, c Credentials, id, want string, failOnError bool) error {
	var last Zone
	for {
		z, err := s.GetZone(ctx, c, id)
		if err == nil {
			last = z
			if z.Status == want {
				return nil
			}
			if z.Status == "ERROR" && failOnError {
				return fmt.Errorf("zone %s went to ERROR; worker log: %s", id, daemon.Tail(s.path("designate-worker.log"), 10))
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("zone %s: status %q action %q, want %s: %w", id, last.Status, last.Action, want, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// GetZone reads zone id of c's project through the API.
func (s *Stack) GetZone(ctx context.Context, c Credentials, id string) (Zone, error) {
	tok, err := s.Token(ctx, c)
	if err != nil {
		return Zone{}, err
	}
	var z Zone
	_, err = s.call(ctx, http.MethodGet, s.DesignateURL+"/v2/zones/"+id, tok, nil, &z)
	return z, err
}

// SetZoneStatus writes a zone's status and action straight into
// Designate's database (status "ERROR" or "PENDING", action "UPDATE",
// "CREATE" or "NONE"): what a backend that fails or hangs leaves, which
// the working private named never does for long.
func (s *Stack) SetZoneStatus(ctx context.Context, id, status, action string) error {
	if !isStatusWord(status) || !isStatusWord(action) || !isUUIDish(id) {
		return fmt.Errorf("set zone status %q: bad id, status or action", id)
	}
	return s.mysql(ctx, "designate", fmt.Sprintf("UPDATE zones SET status='%s', action='%s' WHERE id='%s'",
		status, action, strings.ReplaceAll(id, "-", "")))
}

// AddDNSEndpoint adds a public "dns" endpoint at url in region (created
// if missing) to Keystone's catalog, beside Designate's own in Region: a
// second region whose endpoint is, say, a proxy in front of Designate.
func (s *Stack) AddDNSEndpoint(ctx context.Context, region, url string) error {
	admin, err := s.Token(ctx, s.Admin)
	if err != nil {
		return err
	}
	k := &keystoneAdmin{s: s, ctx: ctx, token: admin}
	if err := k.do(http.MethodGet, "/regions/"+region, nil); err != nil {
		if err := k.do(http.MethodPost, "/regions", map[string]any{"region": map[string]any{"id": region}}); err != nil {
			return fmt.Errorf("create region %s: %w", region, err)
		}
	}
	var out struct {
		Services []struct{ ID string } `json:"services"`
	}
	if _, err := s.call(ctx, http.MethodGet, s.AuthURL+"/services?type=dns", admin, nil, &out); err != nil || len(out.Services) != 1 {
		return fmt.Errorf("find dns service: %d found, %v", len(out.Services), err)
	}
	return k.do(http.MethodPost, "/endpoints", map[string]any{"endpoint": map[string]any{
		"service_id": out.Services[0].ID, "interface": "public", "region_id": region, "url": url}})
}
