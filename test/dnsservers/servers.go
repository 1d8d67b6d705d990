package dnsservers

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/drwatch/drwatch/test/daemon"
	"github.com/drwatch/drwatch/test/poll"
	"github.com/miekg/dns"
)

// Zone is the zone every server here serves.
const Zone = "example.test."

// Key names configured on BIND and Knot.
const (
	KeySHA256 = "drwatch-key."
	KeySHA512 = "drwatch-512."
)

// KeyTXTOnly is a third key BIND is configured with (hmac-sha256, the same
// secret), whose update-policy grant covers TXT records only: the key an
// ACME DNS-01 solver holds. A test uses it as the attacker who may write
// TXT in the zone and nothing else.
const KeyTXTOnly = "acme-txt."

// KeyNoWiki is a fourth key BIND is configured with (hmac-sha256, the same
// secret), granted every name of each zone but "wiki": a key whose
// update-policy leaves out one platform's records.
const KeyNoWiki = "no-wiki."

// Server is one running server.
type Server struct {
	Name string
	// Addr is the DNS "host:port" (UDP and TCP).
	Addr string
	// Secret is the base64 TSIG secret of every key (BIND, Knot).
	Secret string
	// APIURL and APIKey are PowerDNS's HTTP API (PowerDNS only).
	APIURL, APIKey string
	// Dir is the server's temp dir (logs, config).
	Dir string

	proc *daemon.Process
}

// Close stops the server's process group and waits for it.
func (s *Server) Close() error {
	if s == nil || s.proc == nil {
		return nil
	}
	s.proc.Stop(10 * time.Second)
	return nil
}

// Log returns the server's log so far (for failure messages).
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "server.log"))
	return string(b)
}

func need(bin, pkg string) (string, error) {
	p, err := exec.LookPath(bin)
	if err != nil {
		// Debian puts daemons in /usr/sbin, which a non-root PATH may lack.
		for _, dir := range []string{"/usr/sbin", "/sbin"} {
			if _, serr := os.Stat(filepath.Join(dir, bin)); serr == nil {
				return filepath.Join(dir, bin), nil
			}
		}
		return "", fmt.Errorf("%s not found in PATH: install Debian package %s (make install-test-deps)", bin, pkg)
	}
	return p, nil
}

// FreePort returns a port free for both UDP and TCP on 127.0.0.1 and
// reserved for this test process (daemon.FreePorts).
func FreePort() (int, error) {
	p, err := daemon.FreePorts(1)
	if err != nil {
		return 0, err
	}
	return p[0], nil
}

func newSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

func start(name, dir string, bin string, args ...string) (*Server, error) {
	proc, err := daemon.Start(bin, args, daemon.Options{LogPath: filepath.Join(dir, "server.log"), Dir: dir})
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return &Server{Name: name, Dir: dir, proc: proc}, nil
}

// waitSOA polls until the server answers the zone's SOA or the process dies.
func (s *Server) waitSOA(d time.Duration) error {
	c := &dns.Client{Net: "tcp", Timeout: 500 * time.Millisecond}
	var answered bool
	var err error
	poll.WithinEvery(d, 50*time.Millisecond, func() bool {
		m := new(dns.Msg)
		m.SetQuestion(Zone, dns.TypeSOA)
		var r *dns.Msg
		r, _, err = c.Exchange(m, s.Addr)
		answered = err == nil && r.Rcode == dns.RcodeSuccess && len(r.Answer) > 0
		return answered || s.proc.Exited()
	})
	switch {
	case answered:
		return nil
	case s.proc.Exited():
		return fmt.Errorf("%s exited\n%s", s.Name, s.Log())
	}
	return fmt.Errorf("%s did not answer SOA on %s within %s: %v\n%s", s.Name, s.Addr, d, err, s.Log())
}

const zoneFile = `$TTL 5
@   IN SOA ns1.example.test. hostmaster.example.test. ( 1 60 30 3600 5 )
    IN NS  ns1.example.test.
ns1 IN A   127.0.0.1
app IN A   127.0.0.2
`

// StartBIND starts named for Zone, and for each of extraZones with the
// same content, with update-policy grants for any type to both drwatch
// keys, for TXT only to KeyTXTOnly, and for every name but wiki to
// KeyNoWiki.
func StartBIND(dir string, extraZones ...string) (*Server, error) {
	named, err := need("named", "bind9")
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	secret := newSecret()
	conf := fmt.Sprintf(`key "%[3]s" { algorithm hmac-sha256; secret "%[5]s"; };
key "%[4]s" { algorithm hmac-sha512; secret "%[5]s"; };
key "%[6]s" { algorithm hmac-sha256; secret "%[5]s"; };
key "%[7]s" { algorithm hmac-sha256; secret "%[5]s"; };
options {
    directory "%[1]s";
    pid-file "%[1]s/named.pid";
    session-keyfile "%[1]s/session.key";
    managed-keys-directory "%[1]s";
    listen-on port %[2]d { 127.0.0.1; };
    listen-on-v6 { none; };
    recursion no;
    dnssec-validation no;
    allow-transfer { none; };
    notify no;
};
controls { };
`, dir, port, strings.TrimSuffix(KeySHA256, "."), strings.TrimSuffix(KeySHA512, "."), secret, strings.TrimSuffix(KeyTXTOnly, "."), strings.TrimSuffix(KeyNoWiki, "."))
	for _, z := range append([]string{Zone}, extraZones...) {
		z = strings.TrimSuffix(z, ".")
		conf += fmt.Sprintf(`zone %[2]q {
    type primary;
    file "%[1]s/%[2]s.db";
    update-policy { grant %[3]s zonesub ANY; grant %[4]s zonesub ANY; grant %[5]s zonesub TXT;
        deny %[6]s name wiki.%[2]s. ANY; grant %[6]s zonesub ANY; };
};
`, dir, z, strings.TrimSuffix(KeySHA256, "."), strings.TrimSuffix(KeySHA512, "."), strings.TrimSuffix(KeyTXTOnly, "."), strings.TrimSuffix(KeyNoWiki, "."))
		if z+"." != Zone {
			if err := os.WriteFile(filepath.Join(dir, z+".db"), []byte(zoneFile), 0o644); err != nil {
				return nil, err
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "named.conf"), []byte(conf), 0o600); err != nil {
		return nil, err
	}
	return startWithZoneFile(dir, "example.test.db", port, secret, "named", named, "-g", "-c", filepath.Join(dir, "named.conf"))
}

// startWithZoneFile writes Zone's file as zoneName in dir, starts the
// server and waits until it answers the SOA on port.
func startWithZoneFile(dir, zoneName string, port int, secret, name, bin string, args ...string) (*Server, error) {
	if err := os.WriteFile(filepath.Join(dir, zoneName), []byte(zoneFile), 0o644); err != nil {
		return nil, err
	}
	s, err := start(name, dir, bin, args...)
	if err != nil {
		return nil, err
	}
	s.Addr, s.Secret = fmt.Sprintf("127.0.0.1:%d", port), secret
	if err := s.waitSOA(20 * time.Second); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// StartKnot starts knotd for Zone with an update ACL for both keys.
func StartKnot(dir string) (*Server, error) {
	knotd, err := need("knotd", "knot")
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	secret := newSecret()
	conf := fmt.Sprintf(`server:
    rundir: "%[1]s"
    listen: 127.0.0.1@%[2]d
    automatic-acl: off
log:
  - target: stderr
    any: info
database:
    storage: "%[1]s"
key:
  - id: %[3]s
    algorithm: hmac-sha256
    secret: %[5]s
  - id: %[4]s
    algorithm: hmac-sha512
    secret: %[5]s
acl:
  - id: ddns
    key: [%[3]s, %[4]s]
    action: update
template:
  - id: default
    storage: "%[1]s"
    file: "%%s.zone"
    zonefile-sync: -1
    journal-content: all
zone:
  - domain: example.test
    acl: ddns
`, dir, port, KeySHA256, KeySHA512, secret)
	if err := os.WriteFile(filepath.Join(dir, "knot.conf"), []byte(conf), 0o600); err != nil {
		return nil, err
	}
	return startWithZoneFile(dir, "example.test.zone", port, secret, "knotd", knotd, "-c", filepath.Join(dir, "knot.conf"), "-s", filepath.Join(dir, "knot.sock"))
}

// StartPowerDNS starts pdns_server (gsqlite3) with the HTTP API and creates
// Zone through the API. Caches are off so DNS answers follow API writes.
func StartPowerDNS(dir string) (*Server, error) {
	pdns, err := need("pdns_server", "pdns-server")
	if err != nil {
		return nil, err
	}
	sqlite, err := need("sqlite3", "sqlite3")
	if err != nil {
		return nil, err
	}
	schema := "/usr/share/pdns-backend-sqlite3/schema/schema.sqlite3.sql"
	if _, err := os.Stat(schema); err != nil {
		return nil, fmt.Errorf("%s missing: install Debian package pdns-backend-sqlite3 (make install-test-deps)", schema)
	}
	db := filepath.Join(dir, "pdns.sqlite3")
	sch, err := os.ReadFile(schema)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(sqlite, db)
	cmd.Stdin = bytes.NewReader(sch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("create pdns db: %v: %s", err, out)
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	apiPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	apiKey := strings.TrimRight(newSecret(), "=")
	conf := fmt.Sprintf(`launch=gsqlite3
gsqlite3-database=%[1]s
local-address=127.0.0.1
local-port=%[2]d
socket-dir=%[3]s
guardian=no
daemon=no
disable-syslog=yes
loglevel=4
security-poll-suffix=
api=yes
api-key=%[4]s
webserver=yes
webserver-address=127.0.0.1
webserver-port=%[5]d
webserver-allow-from=127.0.0.0/8
cache-ttl=0
query-cache-ttl=0
negquery-cache-ttl=0
`, db, port, dir, apiKey, apiPort)
	if err := os.WriteFile(filepath.Join(dir, "pdns.conf"), []byte(conf), 0o600); err != nil {
		return nil, err
	}
	s, err := start("pdns_server", dir, pdns, "--config-dir="+dir)
	if err != nil {
		return nil, err
	}
	s.Addr = fmt.Sprintf("127.0.0.1:%d", port)
	s.APIURL, s.APIKey = fmt.Sprintf("http://127.0.0.1:%d", apiPort), apiKey
	if err := s.createPDNSZone(20 * time.Second); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.waitSOA(20 * time.Second); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Server) createPDNSZone(d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	body := `{"name":"example.test.","kind":"Native","nameservers":["ns1.example.test."],
 "rrsets":[{"name":"ns1.example.test.","type":"A","ttl":5,"records":[{"content":"127.0.0.1","disabled":false}]}]}`
	for {
		req, _ := http.NewRequestWithContext(ctx, "POST", s.APIURL+"/api/v1/servers/localhost/zones", strings.NewReader(body))
		req.Header.Set("X-API-Key", s.APIKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusCreated {
				return nil
			}
			return fmt.Errorf("pdns create zone: http %d\n%s", resp.StatusCode, s.Log())
		}
		select {
		case <-s.proc.Done():
			return fmt.Errorf("pdns_server exited\n%s", s.Log())
		case <-ctx.Done():
			return fmt.Errorf("pdns api did not come up: %v\n%s", err, s.Log())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Port returns the DNS port.
func (s *Server) Port() int {
	_, p, _ := net.SplitHostPort(s.Addr)
	n, _ := strconv.Atoi(p)
	return n
}
