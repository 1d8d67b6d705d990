package openstacktest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/drwatch/drwatch/test/daemon"
)

// Cinder runs beside Octavia when Options.Cinder is set: cinder-api,
// cinder-scheduler and cinder-volume on the same MariaDB, RabbitMQ and
// Keystone, with the fake volume driver Debian ships in python3-cinder
// (cinder.tests.fake_driver.FakeLoggingVolumeDriver). That driver is Cinder's
// own LVM driver with every command logged instead of run: the API, the
// scheduler, the volume manager, quotas and the state machine are Cinder's,
// and a volume goes creating → available → deleting → gone as Cinder decides.
// Only the states a broken backend leaves behind (stuck deleting,
// error_deleting) are written into the database ([Stack.SetVolumeStatus]).

// cinderBinaries are what Options.Cinder needs, with their Debian packages.
var cinderBinaries = []struct{ path, pkg string }{
	{"/usr/bin/cinder-api", "cinder-api"},
	{"/usr/bin/cinder-scheduler", "cinder-scheduler"},
	{"/usr/bin/cinder-volume", "cinder-volume"},
	{"/usr/bin/cinder-manage", "cinder-common"},
	{"/usr/lib/python3/dist-packages/cinder/tests/fake_driver.py", "python3-cinder"},
	{"/etc/cinder/api-paste.ini", "cinder-api"},
}

const (
	cinderPass = "cinderpw"
	// cinderHost is cinder-volume's host name; its backend is
	// cinderHost@fake.
	cinderHost = "drwatch-test"
)

// pythonBin runs the OpenStack scripts: PATH may lead python3 to a pyenv
// shim without Debian's packages.
const pythonBin = "/usr/bin/python3"

// startCinder creates and fills the cinder database (from the schema cache
// when it has one), writes cinder.conf and starts the three services, then
// waits until the API answers and cinder-volume has reported to the
// scheduler. It needs MariaDB and RabbitMQ running; Keystone is needed only
// per request. A no-op without opts.Cinder.
func (s *Stack) startCinder(ctx context.Context, opts Options, p stackPorts) error {
	if !opts.Cinder {
		return nil
	}
	if err := checkBinaryList(cinderBinaries); err != nil {
		return err
	}
	t0 := time.Now()
	defer func() {
		if opts.Logger != nil {
			opts.Logger.Info("openstacktest cinder started", "took", time.Since(t0).Round(100*time.Millisecond))
		}
	}()
	ports, err := daemon.FreePorts(1)
	if err != nil {
		return err
	}
	s.CinderURL = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	if err := s.mysql(ctx, "", `CREATE DATABASE cinder;
GRANT ALL ON cinder.* TO 'os'@'127.0.0.1';`); err != nil {
		return err
	}
	state := s.path("cinder")
	if err := os.MkdirAll(filepath.Join(state, "locks"), 0o700); err != nil {
		return err
	}
	conf := fmt.Sprintf(`[DEFAULT]
use_stderr = true
transport_url = rabbit://guest:guest@127.0.0.1:%[1]d/
auth_strategy = keystone
host = %[2]s
my_ip = 127.0.0.1
state_path = %[3]s
api_paste_config = /etc/cinder/api-paste.ini
osapi_volume_listen = 127.0.0.1
osapi_volume_listen_port = %[4]d
osapi_volume_workers = 1
enabled_backends = fake
default_volume_type = __DEFAULT__
# Report every 2 s (default 10), so the scheduler knows the backend soon
# after start-up.
report_interval = 2
periodic_interval = 5
# The scheduler logs the backend's reports at debug level only: New waits
# for the first one. The rest keeps oslo.log's defaults.
default_log_levels = cinder.scheduler.host_manager=DEBUG,amqp=WARN,amqplib=WARN,sqlalchemy=WARN,oslo.messaging=INFO,oslo_messaging=INFO,iso8601=WARN,requests.packages.urllib3.connectionpool=WARN,urllib3.connectionpool=WARN,websocket=WARN,keystonemiddleware=WARN,routes.middleware=WARN,stevedore=WARN,taskflow=WARN,keystoneauth=WARN,oslo.cache=INFO,oslo_policy=INFO,dogpile.core.dogpile=INFO
[fake]
volume_driver = cinder.tests.fake_driver.FakeLoggingVolumeDriver
volume_backend_name = fake
target_helper = fake
[database]
connection = mysql+pymysql://os:%[5]s@127.0.0.1:%[6]d/cinder
[oslo_concurrency]
lock_path = %[3]s/locks
[coordination]
backend_url = file://%[3]s/locks
[keystone_authtoken]
www_authenticate_uri = %[7]s
auth_url = %[7]s
auth_type = password
project_name = service
project_domain_name = Default
user_domain_name = Default
username = cinder
password = %[8]s
[oslo_policy]
enforce_new_defaults = false
`, p.rabbit, cinderHost, state, ports[0], dbPassword, p.mysql, s.AuthURL, cinderPass)
	if err := os.WriteFile(s.path("cinder.conf"), []byte(conf), 0o600); err != nil {
		return err
	}
	if err := s.prepareCinderDatabase(ctx); err != nil {
		return err
	}
	confArgs := []string{"--config-file", s.path("cinder.conf")}
	for _, svc := range []string{"cinder-api", "cinder-scheduler", "cinder-volume"} {
		if err := s.startProc(svc, pythonBin, append([]string{"/usr/bin/" + svc}, confArgs...), svc+".log"); err != nil {
			return err
		}
	}
	// The root answers 300 (its version list) without a token.
	err = s.poll(ctx, "cinder-api", func() error {
		_, err := s.call(ctx, http.MethodGet, s.CinderURL+"/", "", nil, nil)
		if err != nil && strings.Contains(err.Error(), "status 300") {
			return nil
		}
		return errors.Join(err, errors.New("no version list yet"))
	})
	if err != nil {
		return fmt.Errorf("%w; log: %s", err, daemon.Tail(s.path("cinder-api.log"), 10))
	}
	// A volume created before the scheduler has heard of the backend
	// fails with "No valid backend".
	return s.waitLog(ctx, "cinder-scheduler", "cinder-scheduler.log", "Received volume service update from")
}

// prepareCinderDatabase loads the cinder schema from the cache, or runs
// cinder-manage db sync and stores its dump there for the next run.
func (s *Stack) prepareCinderDatabase(ctx context.Context) error {
	cache := schemaCacheDir()
	dump := filepath.Join(cache, "cinder.sql")
	if cache != "" {
		if f, err := os.Open(dump); err == nil {
			defer f.Close()
			cmd := exec.CommandContext(ctx, "mariadb", "--no-defaults", "-S", s.mysqlSock, "-uroot", "cinder")
			cmd.Stdin = f
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("load cached cinder schema (remove %s to rebuild): %w: %s", dump, err, strings.TrimSpace(string(out)))
			}
			return nil
		}
	}
	if err := s.run(ctx, "cinder-db.log", pythonBin, "/usr/bin/cinder-manage", "--config-file", s.path("cinder.conf"), "db", "sync"); err != nil {
		return fmt.Errorf("cinder-manage db sync: %w", err)
	}
	if cache == "" {
		return nil
	}
	// Best effort, as for the other databases: the cache directory may not
	// exist yet (it is made after the keystone and octavia dumps).
	if err := os.MkdirAll(cache, 0o700); err != nil {
		return nil
	}
	f, err := os.CreateTemp(cache, ".cinder-*.sql")
	if err != nil {
		return nil
	}
	defer os.Remove(f.Name())
	cmd := exec.CommandContext(ctx, "mariadb-dump", "--no-defaults", "-S", s.mysqlSock, "-uroot", "--single-transaction", "cinder")
	cmd.Stdout = f
	err = cmd.Run()
	f.Close()
	if err == nil {
		os.Rename(f.Name(), dump)
	}
	return nil
}

// createCinderIdentities adds the cinder service user (admin in project
// service) and the volumev3 catalog entry. A no-op when Cinder is off.
func (s *Stack) createCinderIdentities(ctx context.Context, adminToken string) error {
	if s.CinderURL == "" {
		return nil
	}
	k := &keystoneAdmin{s: s, ctx: ctx, token: adminToken}
	return k.service("cinder", cinderPass, "volumev3", "cinderv3", s.CinderURL+"/v3/%(project_id)s")
}

// stopCinder stops the Cinder services, cinder-volume first (it may be
// finishing a delete).
func (s *Stack) stopCinder() {
	s.stopProc("cinder-volume", 10*time.Second)
	s.stopProc("cinder-scheduler", 5*time.Second)
	s.stopProc("cinder-api", 5*time.Second)
}

// StopCinderVolume stops cinder-volume, so that a delete the API accepts
// stays "deleting" (nothing consumes its message), as with a dead backend.
// Idempotent.
func (s *Stack) StopCinderVolume() {
	s.stopProc("cinder-volume", 10*time.Second)
}

// Volume is what VolumeStatus reports of a Cinder volume.
type Volume struct {
	ID       string            `json:"id"`
	Name     string            `json:"name"`
	Status   string            `json:"status"`
	Metadata map[string]string `json:"metadata"`
}

// ErrNotFound means the API answered 404.
var ErrNotFound = errors.New("not found")

// CreateVolume creates a 1 GiB volume named name with metadata in the
// project of c and waits until it is available. It returns its ID.
func (s *Stack) CreateVolume(ctx context.Context, c Credentials, name string, metadata map[string]string) (string, error) {
	if s.CinderURL == "" {
		return "", errors.New("cinder is not running: set Options.Cinder")
	}
	tok, err := s.Token(ctx, c)
	if err != nil {
		return "", err
	}
	var out struct {
		Volume Volume `json:"volume"`
	}
	if _, err := s.call(ctx, http.MethodPost, s.volumesURL(c)+"/volumes", tok, map[string]any{
		"volume": map[string]any{"name": name, "size": 1, "metadata": metadata}}, &out); err != nil {
		return "", fmt.Errorf("create volume %s: %w", name, err)
	}
	id := out.Volume.ID
	var last string
	for {
		v, err := s.VolumeStatus(ctx, c, id)
		if err == nil {
			last = v.Status
			switch last {
			case "available":
				return id, nil
			case "error":
				return "", fmt.Errorf("volume %s went to error; log: %s", id, daemon.Tail(s.path("cinder-volume.log"), 10))
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("volume %s: status %q, want available: %w", id, last, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (s *Stack) volumesURL(c Credentials) string {
	return s.CinderURL + "/v3/" + c.ProjectID
}

// VolumeStatus reads a volume of c's project through the API. A deleted
// volume is an error wrapping ErrNotFound.
func (s *Stack) VolumeStatus(ctx context.Context, c Credentials, id string) (Volume, error) {
	tok, err := s.Token(ctx, c)
	if err != nil {
		return Volume{}, err
	}
	var out struct {
		Volume Volume `json:"volume"`
	}
	if _, err := s.call(ctx, http.MethodGet, s.volumesURL(c)+"/volumes/"+id, tok, nil, &out); err != nil {
		if strings.Contains(err.Error(), "status 404") {
			return Volume{}, fmt.Errorf("volume %s: %w", id, ErrNotFound)
		}
		return Volume{}, err
	}
	return out.Volume, nil
}

// SetVolumeStatus writes a volume's status straight into Cinder's
// database, as a backend that died mid-delete leaves it ("deleting") or
// one whose delete failed ("error_deleting"): the fake driver never fails.
// updatedAt is the row's updated_at (UTC, one-second resolution); zero
// means now.
func (s *Stack) SetVolumeStatus(ctx context.Context, id, status string, updatedAt time.Time) error {
	for _, r := range status {
		if (r < 'a' || r > 'z') && r != '_' && r != '-' {
			return fmt.Errorf("volume status %q: want a lower-case status word", status)
		}
	}
	if status == "" || !isUUIDish(id) {
		return fmt.Errorf("set volume status %q: bad id or status", id)
	}
	at := "UTC_TIMESTAMP()"
	if !updatedAt.IsZero() {
		at = "'" + updatedAt.UTC().Format("2006-01-02 15:04:05") + "'"
	}
	return s.mysql(ctx, "cinder", fmt.Sprintf("UPDATE volumes SET status='%s', updated_at=%s WHERE id='%s'", status, at, id))
}
