package e2e

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"text/template"
	"time"

	"github.com/drwatch/drwatch/cluster"
	"github.com/drwatch/drwatch/cmd/drwatch/api"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/caddytest"
	"github.com/drwatch/drwatch/test/daemon"
	"github.com/drwatch/drwatch/test/dnsservers"
	"github.com/drwatch/drwatch/test/faultproxy"
	"github.com/drwatch/drwatch/test/poll"
	"github.com/miekg/dns"
	"golang.org/x/sys/unix"
)

// The zone (test/dnsservers' BIND serves it), the flipped name and the
// addresses each site's record carries. The addresses are data in DNS
// answers only: nothing dials them.
const (
	Zone      = dnsservers.Zone
	Name      = "lms." + Zone
	PrimaryIP = "127.0.10.1"
	BackupIP  = "127.0.20.1"
	FenceName = "_drwatch." + Zone
)

// IDs are the watchers' node IDs.
var IDs = []string{"a", "b", "c"}

// Options are the knobs of one world. Zero values take the defaults below.
type Options struct {
	Interval    time.Duration // probe round (default 1s)
	Timeout     time.Duration // probe timeout (default 700ms)
	Fall, Rise  int           // default 3 and 2
	Quorum      int           // default 2
	BlockWindow time.Duration // default 10m
	// ManualOnly sets auto_failover: false.
	ManualOnly bool
	// Heartbeat is raft heartbeat and election timeout (default 1s).
	Heartbeat time.Duration
	// LogLevel of the nodes (default info).
	LogLevel string
	// PlainSites, when set, makes every watcher probe each site over plain
	// HTTP at this host:port (http://lms.example.test/heartbeat) instead of
	// its Caddy through a per-watcher proxy: the peer benchmark shares these
	// endpoints with PowerDNS.
	PlainSites map[failover.Site]string
	// ProbesPerSite adds non-critical copies of the lms probe (lms-2, ...)
	// so a node runs this many probes per site per round (cost benchmark).
	ProbesPerSite int
	// DrillCertMinValidity is drill.cert_min_validity (default 1h: Caddy's
	// internal certificates live 12 h).
	DrillCertMinValidity time.Duration
	// RaftExtra is more keys for each node's raft: section, as YAML flow
	// mapping entries ("snapshot_threshold: 2048, trailing_logs: 1024"): the
	// cost benchmark reruns old retention settings with it.
	RaftExtra string
	// Groups, when it names groups, makes the world guard failover groups
	// instead of (or, WithDefault, beside) the one pair of lms records
	// (groups.go).
	Groups GroupOptions
}

func (o *Options) defaults() {
	if o.Interval == 0 {
		o.Interval = time.Second
	}
	if o.Timeout == 0 {
		o.Timeout = 700 * time.Millisecond
	}
	if o.Fall == 0 {
		o.Fall = 3
	}
	if o.Rise == 0 {
		o.Rise = 2
	}
	if o.Quorum == 0 {
		o.Quorum = 2
	}
	if o.BlockWindow == 0 {
		o.BlockWindow = 10 * time.Minute
	}
	if o.Heartbeat == 0 {
		o.Heartbeat = time.Second
	}
	if o.LogLevel == "" {
		o.LogLevel = "info"
	}
	if o.DrillCertMinValidity == 0 {
		o.DrillCertMinValidity = time.Hour
	}
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildDir  string
)

// Binary builds ./cmd/drwatch once per test binary and returns its path.
// E2E_RACE=1 builds it with the race detector (slower; catches races in
// the daemon itself).
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "drwatch-e2e-bin-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(buildDir, "drwatch")
		args := []string{"build", "-o", binPath}
		if os.Getenv("E2E_RACE") == "1" {
			args = append(args, "-race")
		}
		args = append(args, "github.com/drwatch/drwatch/cmd/drwatch")
		cmd := exec.Command("go", args...)
		cmd.Dir = moduleRoot()
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build drwatch: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// RemoveBinary deletes the built binary (call from TestMain after m.Run).
func RemoveBinary() {
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
}

func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// World is one complete set-up: BIND, two Caddy sites with a fault proxy
// per (watcher, site), a fault proxy (TCP) plus a relay (UDP) on the
// reconciler's path to BIND, and three watcher processes.
type World struct {
	T    testing.TB
	Dir  string
	Bin  string
	Opts Options

	BIND *dnsservers.Server
	// DNS maps a watcher ID to its own path to BIND for its provider (the
	// reconciler's reads and writes); dns.verify.servers points at BIND
	// directly.
	DNS map[string]*DNSPath
	// Sites are the two sites' Caddys; in a world of groups, the region's
	// (RegionHost), which every group probes as "region".
	Sites map[failover.Site]*Site
	// Region are the region's Caddys as the groups' probe "region" dials
	// them: Sites, or with GroupOptions.WithDefault the same Caddys behind
	// proxies of their own, so that cutting the default group's paths
	// (Site.SetMode) leaves the groups' region probe alone.
	Region map[failover.Site]*Site
	// Groups are the failover groups (Options.Groups), in its order.
	Groups []*Group
	Nodes  []*Node

	CAFile, TokenFile, Token, Actor string

	started time.Time

	bindMu  sync.Mutex
	bindCmd *exec.Cmd // named after a RestartBIND
	bindOff bool
	bindEnd chan struct{}
}

// SetDNSMode sets every watcher's TCP path to BIND (the UPDATEs) to m.
func (w *World) SetDNSMode(m faultproxy.Mode) {
	for _, id := range IDs {
		w.DNS[id].Proxy.SetMode(m)
	}
}

// Partition cuts n off from every other node, both ways: its proxy holds
// everything sent to it, and the others' proxies hold everything it sends.
// The held bytes flow again after Heal, as after a real partition.
func (w *World) Partition(n *Node) {
	for _, m := range w.Nodes {
		if m != n {
			w.Cut(n, m)
		}
	}
}

// Cut cuts the link between a and b, both ways.
func (w *World) Cut(a, b *Node) {
	a.RaftProxy.SetModeFrom(b.IP, faultproxy.Blackhole)
	b.RaftProxy.SetModeFrom(a.IP, faultproxy.Blackhole)
}

// Heal lifts every partition and cut between nodes.
func (w *World) Heal() {
	for _, m := range w.Nodes {
		for _, n := range w.Nodes {
			m.RaftProxy.ClearModeFrom(n.IP)
		}
		m.RaftProxy.SetMode(faultproxy.Pass)
	}
}

// Site is one Caddy with one fault proxy per watcher in front of it.
type Site struct {
	Name  failover.Site
	IP    string // the record value while this site is active
	Caddy *caddytest.Caddy
	// Proxies maps a watcher ID to the proxy its probes of this site dial.
	Proxies map[string]*faultproxy.Proxy
}

// SetMode sets every watcher's proxy to this site to m.
func (s *Site) SetMode(m faultproxy.Mode) {
	for _, id := range IDs {
		s.Proxies[id].SetMode(m)
	}
}

// Start builds a world for t, starts its three watchers and waits until
// they have a leader and see both sites UP at quorum. Everything is torn
// down in t.Cleanup; on failure the tail of every log is printed.
func Start(t testing.TB, o Options) *World {
	t.Helper()
	w := New(t, o)
	for _, n := range w.Nodes {
		if err := n.Start(); err != nil {
			t.Fatalf("start node %s: %v", n.ID, err)
		}
	}
	w.WaitHealthy(90 * time.Second)
	return w
}

// New prepares a world (servers, proxies, configs) without starting the watchers.
func New(t testing.TB, o Options) *World {
	t.Helper()
	o.defaults()
	w := &World{T: t, Dir: t.TempDir(), Bin: Binary(t), Opts: o, Sites: map[failover.Site]*Site{}, Region: map[failover.Site]*Site{}, Actor: "operator", started: time.Now()}
	t.Cleanup(func() {
		if t.Failed() {
			w.dumpLogs()
		}
	})

	bindDir := w.path("bind")
	must(t, os.MkdirAll(bindDir, 0o755))
	var err error
	if w.BIND, err = dnsservers.StartBIND(bindDir); err != nil {
		t.Fatalf("bind: %v", err)
	}
	t.Cleanup(w.closeBIND)
	must(t, w.seedZone(w.seedRecords()))

	w.DNS = map[string]*DNSPath{}
	for _, id := range IDs {
		p, err := newDNSPath(w.BIND.Addr)
		if err != nil {
			t.Fatalf("dns proxy: %v", err)
		}
		t.Cleanup(p.Close)
		w.DNS[id] = p
	}

	var hosts []string
	if o.Groups.hasDefault() {
		hosts = append(hosts, strings.TrimSuffix(Name, "."))
	}
	if o.Groups.enabled() {
		hosts = append(hosts, RegionHost)
	}
	for _, s := range []struct {
		name failover.Site
		ip   string
	}{{failover.Primary, PrimaryIP}, {failover.Backup, BackupIP}} {
		cdir := w.path("caddy-" + string(s.name))
		must(t, os.MkdirAll(cdir, 0o755))
		c := caddytest.Start(t, caddytest.Options{Name: string(s.name), Hosts: hosts, Dir: cdir})
		w.Sites[s.name] = w.newSite(s.name, s.ip, c)
		w.Region[s.name] = w.Sites[s.name]
		if o.Groups.enabled() && o.Groups.WithDefault {
			w.Region[s.name] = w.newSite(s.name, s.ip, c)
		}
	}
	if o.Groups.enabled() {
		w.startGroups()
	}

	must(t, w.writeSecrets())
	for i, id := range IDs {
		// Each node has its own loopback IP and dials its peers from it
		// (cluster binds the dialer to the bind IP), so the proxy in front
		// of a node can cut some peers off and not others.
		ip := fmt.Sprintf("127.0.0.%d", 11+i)
		ports := freePorts(t, ip, 2)
		n := &Node{ID: id, IP: ip, RaftAddr: ports[0], APIAddr: ports[1], w: w,
			ConfigPath: w.path("node-" + id + ".yaml"), DataDir: w.path("data-" + id), LogPath: w.path("node-" + id + ".log")}
		var err error
		if n.RaftProxy, err = faultproxy.New("127.0.0.1:0", n.RaftAddr); err != nil {
			t.Fatalf("raft proxy: %v", err)
		}
		t.Cleanup(func() { _ = n.RaftProxy.Close() })
		w.Nodes = append(w.Nodes, n)
	}
	must(t, w.writeCerts())
	for _, n := range w.Nodes {
		must(t, w.writeConfig(n))
	}
	t.Cleanup(func() {
		for _, n := range w.Nodes {
			n.Kill()
		}
	})
	return w
}

// newSite puts one fault proxy per watcher in front of Caddy c.
func (w *World) newSite(name failover.Site, ip string, c *caddytest.Caddy) *Site {
	site := &Site{Name: name, IP: ip, Caddy: c, Proxies: map[string]*faultproxy.Proxy{}}
	for _, id := range IDs {
		p, err := faultproxy.New("127.0.0.1:0", c.Addr)
		if err != nil {
			w.T.Fatalf("site proxy: %v", err)
		}
		w.T.Cleanup(func() { _ = p.Close() })
		site.Proxies[id] = p
	}
	return site
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (w *World) path(name string) string { return filepath.Join(w.Dir, name) }

// Node returns the watcher with id.
func (w *World) Node(id string) *Node {
	for _, n := range w.Nodes {
		if n.ID == id {
			return n
		}
	}
	w.T.Fatalf("no node %q", id)
	return nil
}

func (w *World) tsigKey() (name, secret string) { return dnsservers.KeySHA256, w.BIND.Secret }

// seedRecords are the records the zone holds before drwatch starts: the
// primary's address of each flipped name.
func (w *World) seedRecords() []string {
	var rrs []string
	if w.Opts.Groups.hasDefault() {
		rrs = append(rrs, Name+" 5 IN A "+PrimaryIP)
	}
	for i, g := range w.Opts.Groups.Names {
		rrs = append(rrs, g+"."+Zone+" 5 IN A "+groupIP(failover.Primary, i))
	}
	return rrs
}

// seedZone puts records in the zone in one UPDATE, as an operator would
// before installing drwatch.
func (w *World) seedZone(records []string) error {
	m := new(dns.Msg)
	m.SetUpdate(Zone)
	var rrs []dns.RR
	for _, r := range records {
		rr, err := dns.NewRR(r)
		if err != nil {
			return err
		}
		rrs = append(rrs, rr)
	}
	m.Insert(rrs)
	name, secret := w.tsigKey()
	m.SetTsig(name, dns.HmacSHA256, 300, time.Now().Unix())
	c := &dns.Client{Net: "tcp", Timeout: 5 * time.Second, TsigSecret: map[string]string{name: secret}}
	r, _, err := c.Exchange(m, w.BIND.Addr)
	if err != nil {
		return fmt.Errorf("seed zone: %w", err)
	}
	if r.Rcode != dns.RcodeSuccess {
		return fmt.Errorf("seed zone: rcode %s", dns.RcodeToString[r.Rcode])
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (w *World) writeSecrets() error {
	w.Token = randomHex(16)
	name, secret := w.tsigKey()
	files := map[string]string{
		"tokens":   "# actor:token\n" + w.Actor + ":" + w.Token + "\n",
		"token":    w.Token + "\n",
		"tsig.key": fmt.Sprintf("key \"%s\" {\n\talgorithm hmac-sha256;\n\tsecret \"%s\";\n};\n", strings.TrimSuffix(name, "."), secret),
	}
	for name, content := range files {
		if err := os.WriteFile(w.path(name), []byte(content), 0o600); err != nil {
			return err
		}
	}
	w.TokenFile = w.path("token")
	return nil
}

func (w *World) writeCerts() error {
	caPEM, caKeyPEM, err := cluster.NewCA("drwatch e2e CA", 24*time.Hour)
	if err != nil {
		return err
	}
	ca, caKey, err := cluster.ParseCA(caPEM, caKeyPEM)
	if err != nil {
		return err
	}
	w.CAFile = w.path("ca.crt")
	if err := os.WriteFile(w.CAFile, caPEM, 0o600); err != nil {
		return err
	}
	for _, n := range w.Nodes {
		cert, key, err := cluster.IssueNodeCert(ca, caKey, n.ID, []string{n.IP, "127.0.0.1", "localhost"}, 24*time.Hour)
		if err != nil {
			return err
		}
		if err := os.WriteFile(w.path("node-"+n.ID+".crt"), cert, 0o600); err != nil {
			return err
		}
		if err := os.WriteFile(w.path("node-"+n.ID+".key"), key, 0o600); err != nil {
			return err
		}
	}
	return nil
}

var configTmpl = template.Must(template.New("cfg").Parse(`# drwatch e2e watcher {{.Self.ID}}
node: { id: {{.Self.ID}}, data_dir: "{{.Self.DataDir}}", raft_addr: "{{.Self.RaftAddr}}", api_addr: "{{.Self.APIAddr}}" }
tls: { ca_file: "{{.Dir}}/ca.crt", cert_file: "{{.Dir}}/node-{{.Self.ID}}.crt", key_file: "{{.Dir}}/node-{{.Self.ID}}.key" }
peers:
{{- range .Peers}}
  - { id: {{.ID}}, raft_addr: "{{.RaftProxy.Addr}}", api_addr: "{{.APIAddr}}" }
{{- end}}
api: { tokens_file: "{{.Dir}}/tokens" }
raft: { heartbeat_timeout: {{.HB}}, election_timeout: {{.HB}}, leader_lease_timeout: {{.Lease}}{{with .O.RaftExtra}}, {{.}}{{end}} }
policy: { interval: {{.O.Interval}}, timeout: {{.O.Timeout}}, fall: {{.O.Fall}}, rise: {{.O.Rise}}, quorum: {{.O.Quorum}}, auto_failover: {{.Auto}}, block_window: {{.O.BlockWindow}}, failback: manual }
{{if .Groups}}{{template "groups" .}}{{end}}{{if .Default}}sites:
{{- range .Sites}}
  {{.Name}}:
    probes:
      - { name: lms, type: http, url: "{{.URL}}", connect_to: "{{.ConnectTo}}"{{if .CA}}, ca_file: "{{.CA}}"{{end}} }
{{- $site := .}}{{range $.Extra}}
      - { name: lms-{{.}}, type: http, critical: false, url: "{{$site.URL}}", connect_to: "{{$site.ConnectTo}}"{{if $site.CA}}, ca_file: "{{$site.CA}}"{{end}} }
{{- end}}
{{- end}}
{{end}}dns:
  provider: rfc2136
  zone: {{.Zone}}
  rfc2136: { server: "{{.DNSPath}}", key_name: {{.KeyName}}, key_file: "{{.Dir}}/tsig.key" }
  verify: { servers: [ "{{.BIND}}" ], timeout: 10s }
{{- if .Default}}
  records:
    - { name: lms, type: A, ttl: 5, primary: [ {{.PrimaryIP}} ], backup: [ {{.BackupIP}} ] }
{{- end}}
drill: { {{with .DrillRecord}}record: {{.}}, {{end}}cert_min_validity: {{.O.DrillCertMinValidity}} }
log: { level: {{.O.LogLevel}} }
{{define "groups"}}groups:
{{- range .Groups}}
  - name: {{.Name}}
    sites:
{{- range .Sites}}
      {{.Name}}:
        probes:
{{- range .Probes}}
          - { name: {{.Name}}, type: http, url: "{{.URL}}", connect_to: "{{.ConnectTo}}", ca_file: "{{.CA}}" }
{{- end}}
{{- end}}
    dns:
      records:
        - { name: {{.Name}}, type: A, ttl: 5, primary: [ {{.PrimaryIP}} ], backup: [ {{.BackupIP}} ] }
{{- end}}
{{end}}`))

func (w *World) writeConfig(n *Node) error {
	type siteCfg struct{ Name, URL, ConnectTo, CA string }
	var sites []siteCfg
	for _, s := range []failover.Site{failover.Primary, failover.Backup} {
		if addr, ok := w.Opts.PlainSites[s]; ok {
			sites = append(sites, siteCfg{Name: string(s), URL: "http://" + strings.TrimSuffix(Name, ".") + "/heartbeat", ConnectTo: addr})
			continue
		}
		site := w.Sites[s]
		sites = append(sites, siteCfg{Name: string(s), URL: "https://" + strings.TrimSuffix(Name, ".") + "/heartbeat",
			ConnectTo: site.Proxies[n.ID].Addr(), CA: site.Caddy.CAFile})
	}
	keyName, _ := w.tsigKey()
	var extra []int
	for i := 2; i <= w.Opts.ProbesPerSite; i++ {
		extra = append(extra, i)
	}
	var b bytes.Buffer
	err := configTmpl.Execute(&b, map[string]any{
		"Self": n, "Peers": w.Nodes, "Dir": w.Dir, "O": w.Opts, "Auto": !w.Opts.ManualOnly,
		"HB": w.Opts.Heartbeat, "Lease": w.Opts.Heartbeat / 2, "Sites": sites,
		"Zone": Zone, "Extra": extra,
		"DNSPath": w.DNS[n.ID].Proxy.Addr(), "KeyName": keyName, "BIND": w.BIND.Addr,
		"PrimaryIP": PrimaryIP, "BackupIP": BackupIP,
		"Groups": w.groupConfigs(n), "Default": w.Opts.Groups.hasDefault(), "DrillRecord": w.drillRecord(),
	})
	if err != nil {
		return err
	}
	return os.WriteFile(n.ConfigPath, b.Bytes(), 0o600)
}

func freePorts(t testing.TB, ip string, n int) []string {
	t.Helper()
	ports, err := daemon.FreePortsOn(ip, n)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, n)
	for i, p := range ports {
		out[i] = net.JoinHostPort(ip, strconv.Itoa(p))
	}
	return out
}

// --- watcher processes ---

// Node is one `drwatch serve` process (which may be stopped and started).
type Node struct {
	ID string
	// IP is the node's own loopback address: it listens on it (RaftAddr,
	// APIAddr) and dials its peers from it.
	IP, RaftAddr, APIAddr string
	// RaftProxy stands in front of RaftAddr; the peers (and the node's own
	// advertised address) point at it. Partition and Cut drive it.
	RaftProxy                    *faultproxy.Proxy
	ConfigPath, DataDir, LogPath string
	// FileLimit, when set, is the process's open file limit (soft and
	// hard, so Go does not raise it) from the next Start on.
	FileLimit uint64
	// Bin, when set, is the binary the node runs from the next Start on
	// (an earlier release, for the upgrade test); default the world's.
	Bin string
	// WithoutGroups leaves the groups out of the node's config (an earlier
	// release's loader refuses them) from the next WriteConfig on.
	WithoutGroups bool

	w      *World
	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	code   int
}

// URL is the node's API base URL.
func (n *Node) URL() string { return "https://" + n.APIAddr }

// Start launches the process (a no-op if it runs). Its output is appended
// to LogPath, so the log survives restarts.
func (n *Node) Start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		return nil
	}
	logf, err := os.OpenFile(n.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "=== e2e: start %s at %s\n", n.ID, time.Now().Format(time.RFC3339Nano))
	bin := cmp.Or(n.Bin, n.w.Bin)
	cmd := exec.Command(bin, "serve", "--config", n.ConfigPath)
	if n.FileLimit > 0 {
		// Set before the binary runs: it sizes its API budget at start.
		// The shell execs the binary, so the pid stays the node's.
		cmd = exec.Command("/bin/sh", "-c", `ulimit -n "$0" && exec "$@"`,
			strconv.FormatUint(n.FileLimit, 10), bin, "serve", "--config", n.ConfigPath)
	}
	cmd.Env = cleanEnv()
	// Through a pipe, not the file itself, so that a file-size limit put
	// on the process (LimitFileSize) never silences its log.
	lw := &lockedWriter{w: logf}
	cmd.Stdout, cmd.Stderr = lw, lw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	exited := make(chan struct{})
	go func() {
		err := cmd.Wait()
		logf.Close()
		code := 0
		if err != nil {
			code = -1
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			}
		}
		n.mu.Lock()
		n.code = code
		n.mu.Unlock()
		close(exited)
	}()
	n.cmd, n.exited = cmd, exited
	return nil
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Pid returns the process ID (0 when stopped).
func (n *Node) Pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return 0
	}
	return n.cmd.Process.Pid
}

// Freeze stops the process with SIGSTOP: to the others it vanishes from
// the network both ways at once, with whatever it was sending in flight.
func (n *Node) Freeze() error { return n.signal(syscall.SIGSTOP) }

// Thaw resumes a frozen process with SIGCONT.
func (n *Node) Thaw() error { return n.signal(syscall.SIGCONT) }

func (n *Node) signal(sig syscall.Signal) error {
	pid := n.Pid()
	if pid == 0 {
		return errors.New("not running")
	}
	return syscall.Kill(-pid, sig)
}

// Running reports whether the process is up.
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return false
	}
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

// Exited reports whether the process the node last started has exited,
// and its exit code if so.
func (n *Node) Exited() (code int, exited bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.exited == nil {
		return 0, false
	}
	select {
	case <-n.exited:
		return n.code, true
	default:
		return 0, false
	}
}

// Kill sends SIGKILL to the process group (a crash) and waits for the exit.
func (n *Node) Kill() {
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.cmd = nil
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGCONT) // a frozen process dies only once resumed
	<-exited
}

// Term sends SIGTERM, waits up to d for the exit and returns the exit code
// (-1 and a kill if it did not exit in time).
func (n *Node) Term(d time.Duration) (int, error) {
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.cmd = nil
	n.mu.Unlock()
	if cmd == nil {
		return 0, errors.New("not running")
	}
	_ = syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(d):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		return -1, fmt.Errorf("node %s did not exit within %s of SIGTERM", n.ID, d)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.code, nil
}

// Log returns the node's whole log.
func (n *Node) Log() string {
	b, _ := os.ReadFile(n.LogPath)
	return string(b)
}

func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DRWATCH_") {
			env = append(env, kv)
		}
	}
	return env
}

func (w *World) dumpLogs() {
	for _, n := range w.Nodes {
		w.T.Logf("---- tail of node %s log (%s) ----\n%s", n.ID, n.LogPath, tail(n.Log(), 60))
	}
	// A world whose BIND never started has none to show: its error
	// is the failure, and a panic here would hide it.
	if w.BIND != nil {
		w.T.Logf("---- tail of BIND log ----\n%s", tail(w.BIND.Log(), 15))
	}
}

func tail(s string, lines int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

// --- the CLI and the API ---

// CLI runs the drwatch binary against node n (endpoint, CA and token file
// added) and returns stdout, stderr and the exit code.
func (w *World) CLI(n *Node, args ...string) (string, string, int) {
	w.T.Helper()
	full := append(append([]string(nil), args...), "--endpoint", n.URL(), "--ca-file", w.CAFile, "--token-file", w.TokenFile)
	return w.Run(full...)
}

// Run runs the drwatch binary with exactly args (a 3-minute limit).
func (w *World) Run(args ...string) (string, string, int) {
	w.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.Bin, args...)
	cmd.Env = cleanEnv()
	cmd.Stdin = strings.NewReader("")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		code = -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
	}
	return out.String(), errb.String(), code
}

// History runs `drwatch history -o json` against n.
func (w *World) History(n *Node) ([]failover.Entry, error) {
	out, stderr, code := w.CLI(n, "history", "-o", "json")
	if code != 0 {
		return nil, fmt.Errorf("history on %s: exit %d: %s", n.ID, code, stderr)
	}
	var h struct {
		History []failover.Entry `json:"history"`
	}
	if err := json.Unmarshal([]byte(out), &h); err != nil {
		return nil, fmt.Errorf("history on %s: %w", n.ID, err)
	}
	return h.History, nil
}

// StatusCLI runs `drwatch status -o json` against n.
func (w *World) StatusCLI(n *Node) (api.Status, error) {
	var st api.Status
	out, stderr, code := w.CLI(n, "status", "-o", "json")
	if code != 0 {
		return st, fmt.Errorf("status on %s: exit %d: %s", n.ID, code, stderr)
	}
	return st, json.Unmarshal([]byte(out), &st)
}

func (w *World) client() *http.Client {
	pem, _ := os.ReadFile(w.CAFile)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true,
	}}
}

// Status reads GET /api/v1/status from n directly (cheap enough to poll).
func (w *World) Status(n *Node) (api.Status, error) {
	var st api.Status
	resp, err := w.client().Get(n.URL() + "/api/v1/status")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("status %d", resp.StatusCode)
	}
	return st, json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(&st)
}

// get fetches path from n and returns the HTTP status and body.
func (w *World) get(n *Node, path string) (int, string, error) {
	resp, err := w.client().Get(n.URL() + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b), nil
}

// Post sends a write to n with the given bearer token ("" for none) and
// returns the HTTP status and body.
func (w *World) Post(n *Node, path, token, body string) (int, string, error) {
	req, err := http.NewRequest(http.MethodPost, n.URL()+path, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := w.client().Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b), nil
}

// Leader returns the running node that a running node names as leader, or nil.
func (w *World) Leader() *Node {
	for _, n := range w.Nodes {
		if !n.Running() {
			continue
		}
		st, err := w.Status(n)
		if err != nil || st.Leader == "" {
			continue
		}
		for _, m := range w.Nodes {
			if m.ID == st.Leader && m.Running() {
				return m
			}
		}
	}
	return nil
}

// Follower returns a running node that is not the leader.
func (w *World) Follower() *Node {
	l := w.Leader()
	for _, n := range w.Nodes {
		if n.Running() && n != l {
			return n
		}
	}
	return nil
}

// Running returns the running nodes.
func (w *World) Running() []*Node {
	var out []*Node
	for _, n := range w.Nodes {
		if n.Running() {
			out = append(out, n)
		}
	}
	return out
}

// LeaderView returns the leader's status (ok false when there is no leader).
func (w *World) LeaderView() (api.Status, bool) {
	l := w.Leader()
	if l == nil {
		return api.Status{}, false
	}
	st, err := w.Status(l)
	return st, err == nil && st.Leader == l.ID
}

// WaitHealthy waits until the running nodes agree on a leader and the
// leader's replica sees both sites UP at quorum (every group's, in a world
// of groups).
func (w *World) WaitHealthy(d time.Duration) {
	w.T.Helper()
	if w.Opts.Groups.enabled() {
		w.waitGroupsHealthy(d)
		return
	}
	if Within(d, func() bool {
		st, ok := w.LeaderView()
		return ok && st.State.Sites[failover.Primary].Verdict == failover.Up && st.State.Sites[failover.Backup].Verdict == failover.Up
	}) {
		return
	}
	var b strings.Builder
	for _, n := range w.Nodes {
		st, err := w.Status(n)
		if err != nil {
			fmt.Fprintf(&b, "\n  node %s (running %v): %v", n.ID, n.Running(), err)
			continue
		}
		fmt.Fprintf(&b, "\n  node %s: leader %q raft %s term %d; primary %+v; backup %+v; warnings %v",
			n.ID, st.Leader, st.Raft.State, st.Raft.Term, st.State.Sites[failover.Primary], st.State.Sites[failover.Backup], st.Warnings)
	}
	w.T.Fatalf("timed out after %s waiting until a leader sees both sites UP at quorum:%s", d, b.String())
}

// --- BIND ---

// Lookup asks BIND directly (UDP, no proxy) for name's A records.
func (w *World) Lookup(name string) ([]string, error) {
	r, err := w.query(name, dns.TypeA)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			out = append(out, a.A.String())
		}
	}
	return out, nil
}

// Answer is BIND's A answer for Name as one string ("" when none or on error).
func (w *World) Answer() string {
	a, err := w.Lookup(Name)
	if err != nil {
		return "error: " + err.Error()
	}
	return strings.Join(a, ",")
}

// Fence returns the fence TXT text BIND serves ("" when none).
func (w *World) Fence() (string, error) { return w.txt(FenceName) }

// txt returns the text of name's TXT record at BIND ("" when none).
func (w *World) txt(name string) (string, error) {
	r, err := w.query(name, dns.TypeTXT)
	if err != nil {
		return "", err
	}
	for _, rr := range r.Answer {
		if t, ok := rr.(*dns.TXT); ok {
			return strings.Join(t.Txt, ""), nil
		}
	}
	return "", nil
}

// Serial returns the zone's SOA serial at BIND: it grows by one per UPDATE.
func (w *World) Serial() (uint32, error) {
	r, err := w.query(Zone, dns.TypeSOA)
	if err != nil {
		return 0, err
	}
	for _, rr := range r.Answer {
		if s, ok := rr.(*dns.SOA); ok {
			return s.Serial, nil
		}
	}
	return 0, errors.New("no SOA in answer")
}

func (w *World) query(name string, t uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, t)
	m.RecursionDesired = false
	c := &dns.Client{Net: "tcp", Timeout: 2 * time.Second}
	r, _, err := c.Exchange(m, w.BIND.Addr)
	if err != nil {
		return nil, err
	}
	switch r.Rcode {
	case dns.RcodeSuccess:
		return r, nil
	case dns.RcodeNameError:
		return nil, errNXDomain
	}
	return nil, fmt.Errorf("rcode %s", dns.RcodeToString[r.Rcode])
}

// errNXDomain is BIND's answer for a name the zone does not hold.
var errNXDomain = errors.New("rcode NXDOMAIN")

// StopBIND kills named (its zone file and journal stay in its directory).
func (w *World) StopBIND() {
	w.bindMu.Lock()
	defer w.bindMu.Unlock()
	if !w.bindOff {
		w.stopBINDLocked()
	}
	w.bindOff = true
}

func (w *World) stopBINDLocked() {
	if w.bindCmd == nil {
		_ = w.BIND.Close()
		return
	}
	_ = syscall.Kill(-w.bindCmd.Process.Pid, syscall.SIGKILL)
	<-w.bindEnd
	w.bindCmd = nil
}

// RestartBIND starts named again on the same port with the same config,
// keys and zone (with its journal), and waits until it answers the SOA.
func (w *World) RestartBIND() {
	w.T.Helper()
	w.startBIND()
	Eventually(w.T, 20*time.Second, func() bool { _, err := w.Serial(); return err == nil }, "BIND answers again after restart")
}

func (w *World) startBIND() {
	w.bindMu.Lock()
	defer w.bindMu.Unlock()
	if !w.bindOff {
		w.stopBINDLocked()
	}
	named, err := exec.LookPath("named")
	if err != nil {
		named = "/usr/sbin/named"
	}
	logf, err := os.OpenFile(filepath.Join(w.BIND.Dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		w.T.Fatal(err)
	}
	cmd := exec.Command(named, "-g", "-c", filepath.Join(w.BIND.Dir, "named.conf"))
	cmd.Dir = w.BIND.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		w.T.Fatalf("restart named: %v", err)
	}
	end := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(end) }()
	w.bindCmd, w.bindEnd, w.bindOff = cmd, end, false
}

func (w *World) closeBIND() {
	w.bindMu.Lock()
	defer w.bindMu.Unlock()
	if !w.bindOff {
		w.stopBINDLocked()
	}
	w.bindOff = true
}

// --- polling ---

// Eventually polls cond every 50ms until it holds or d passes, then fails t.
func Eventually(t testing.TB, d time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	poll.UntilEvery(t, d, 50*time.Millisecond, cond, format, args...)
}

// Within polls cond every 50ms for up to d and reports whether it held.
func Within(d time.Duration, cond func() bool) bool {
	return poll.WithinEvery(d, 50*time.Millisecond, cond)
}

// LogLines returns the lines of n's log that contain substr.
func LogLines(n *Node, substr string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(n.Log()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), substr) {
			out = append(out, sc.Text())
		}
	}
	return out
}

// LimitFileSize sets the process's RLIMIT_FSIZE to n bytes: from then on
// any write that would grow a file past n fails with EFBIG, which to the
// daemon looks like a full data dir (n = 0: no file may grow at all). The
// node's log goes through a pipe, so it keeps being written.
func (n *Node) LimitFileSize(size uint64) error {
	pid := n.Pid()
	if pid == 0 {
		return errors.New("not running")
	}
	lim := unix.Rlimit{Cur: size, Max: size}
	return unix.Prlimit(pid, unix.RLIMIT_FSIZE, &lim, nil)
}
