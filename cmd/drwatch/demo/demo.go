package demo

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/drwatch/drwatch/cluster"
	"github.com/drwatch/drwatch/cmd/drwatch/api"
	"github.com/drwatch/drwatch/cmd/drwatch/config"
	"github.com/drwatch/drwatch/cmd/drwatch/node"
	"github.com/drwatch/drwatch/dnsprovider/dnstest"
	"github.com/drwatch/drwatch/failover"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// The demo's zone and addresses (documentation ranges: nothing is dialled).
// PrimaryIP and BackupIP are the LMS's (lms and studio, the default group's
// records); WikiPrimaryIP and WikiBackupIP the wiki's (group WikiGroup).
const (
	Zone          = "demo.test."
	PrimaryIP     = "203.0.113.10"
	BackupIP      = "198.51.100.10"
	WikiPrimaryIP = "203.0.113.30"
	WikiBackupIP  = "198.51.100.30"
)

// The demo guards two platforms, each a failover group: the LMS is the
// default group (the top-level sites and dns.records, so every command
// without --group acts on it, as in a config from before groups) and the
// wiki is the group WikiGroup. Both name the region's Kubernetes API.
const (
	LMSGroup  = failover.DefaultGroup
	WikiGroup = "wiki"
)

// Options configure a demo run.
type Options struct {
	// Dir holds the generated configs, certificates, secrets and logs.
	// Empty: a temporary directory, removed at the end.
	Dir string
	// Out receives the narration.
	Out io.Writer
	// LogLevel of the nodes' log, written to Dir/demo.log.
	LogLevel slog.Level
	// Interval is the probe round interval (default 1s); the probe timeout
	// is 70% of it. Tests under the race detector use a slower cadence.
	Interval time.Duration
	// Fall is the policy's fall (default 3): failed rounds before a watcher
	// votes DOWN. A larger one keeps the pending countdown on screen longer.
	Fall int
	// PreFailoverHook, when set, is a command (argv) every watcher runs as
	// its pre-failover hook.
	PreFailoverHook []string
	// CredentialsReloadEvery is how often the watchers look at their TLS
	// files (default node.CredentialsReloadEvery).
	CredentialsReloadEvery time.Duration
}

// Demo is a running demo cluster.
type Demo struct {
	Dir        string
	Sites      map[string]*Site
	DNS        *dnstest.Server
	Nodes      []*node.Node
	APIURLs    []string
	ControlURL string
	CAFile     string
	TokenFile  string
	Configs    []string

	out      io.Writer
	start    time.Time
	interval time.Duration
	fall     int
	preHook  []string
	reload   time.Duration
	ca       *x509.Certificate // the demo CA, to renew certificates in tests
	caKey    crypto.Signer
	log      *slog.Logger
	cfgs     []*config.Config
	tmp      bool
	logFile  *os.File
	servers  []*http.Server
	control  *http.Server
	mu       sync.Mutex
}

// Start brings up the sites, the DNS server and three watchers.
func Start(ctx context.Context, o Options) (d *Demo, err error) {
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.Fall <= 0 {
		o.Fall = 3
	}
	d = &Demo{Dir: o.Dir, Sites: map[string]*Site{}, out: o.Out, start: time.Now(), interval: o.Interval, fall: o.Fall, preHook: o.PreFailoverHook, reload: o.CredentialsReloadEvery}
	if d.out == nil {
		d.out = io.Discard
	}
	// Every failure below returns a nil *Demo, so the cleanup holds on to
	// the one being built.
	built := d
	defer func() {
		if err != nil {
			built.Close()
		}
	}()
	if d.Dir == "" {
		if d.Dir, err = os.MkdirTemp("", "drwatch-demo-"); err != nil {
			return nil, err
		}
		d.tmp = true
	} else if err = os.MkdirAll(d.Dir, 0o700); err != nil {
		return nil, err
	} else {
		// Every run gets new ports, so an earlier run's Raft state (which
		// holds the old addresses) would never elect: start clean.
		old, _ := filepath.Glob(filepath.Join(d.Dir, "data-*"))
		for _, p := range old {
			if err := os.RemoveAll(p); err != nil {
				return nil, err
			}
		}
	}
	// The nodes' configs name their files under Dir, and a file field
	// takes an absolute path.
	if d.Dir, err = filepath.Abs(d.Dir); err != nil {
		return nil, err
	}
	if d.logFile, err = os.OpenFile(filepath.Join(d.Dir, "demo.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600); err != nil {
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(d.logFile, &slog.HandlerOptions{Level: o.LogLevel}))

	// Certificates: one CA for the cluster, the API and the simulated sites.
	caPEM, caKeyPEM, err := cluster.NewCA("drwatch demo CA", 24*time.Hour)
	if err != nil {
		return nil, err
	}
	ca, caKey, err := cluster.ParseCA(caPEM, caKeyPEM)
	if err != nil {
		return nil, err
	}
	d.ca, d.caKey = ca, caKey
	d.CAFile = d.path("ca.crt")
	siteCert, siteKey, err := cluster.IssueNodeCert(ca, caKey, "sites", []string{"lms." + strings.TrimSuffix(Zone, "."), "studio." + strings.TrimSuffix(Zone, "."), "wiki." + strings.TrimSuffix(Zone, "."), "127.0.0.1", "localhost"}, 24*time.Hour)
	if err != nil {
		return nil, err
	}
	siteTLS, err := tls.X509KeyPair(siteCert, siteKey)
	if err != nil {
		return nil, err
	}

	// Secrets, each in its own file, as in production.
	secrets := map[string]string{}
	for _, name := range []string{"operator-token", "kube-token", "appcred-id", "appcred-secret"} {
		secrets[name] = randomHex(16)
	}
	tsig := base64.StdEncoding.EncodeToString([]byte(randomHex(16)))
	files := map[string]string{
		"ca.crt":         string(caPEM),
		"tokens":         "# actor:token, one per line\ndemo:" + secrets["operator-token"] + "\n",
		"token":          secrets["operator-token"] + "\n",
		"kube-token":     secrets["kube-token"] + "\n",
		"appcred-id":     secrets["appcred-id"] + "\n",
		"appcred-secret": secrets["appcred-secret"] + "\n",
		"tsig.key":       fmt.Sprintf("key \"drwatch.\" {\n\talgorithm hmac-sha256;\n\tsecret \"%s\";\n};\n", tsig),
		// The break-glass key signs `dns set` markers; a real cluster keeps
		// it with the operators, the demo beside the rest.
		"break-glass.key": base64.StdEncoding.EncodeToString([]byte(randomHex(16))) + "\n",
	}
	for name, content := range files {
		if err := os.WriteFile(d.path(name), []byte(content), 0o600); err != nil {
			return nil, err
		}
	}
	d.TokenFile = d.path("token")

	for _, name := range []string{"primary", "backup"} {
		s, err := newSite(name, siteTLS, secrets["kube-token"], secrets["appcred-id"], secrets["appcred-secret"])
		if err != nil {
			return nil, err
		}
		d.Sites[name] = s
	}
	if d.DNS, err = dnstest.Start("127.0.0.1:0", Zone, dnstest.Key{Name: "drwatch.", Algorithm: "hmac-sha256", Secret: tsig}); err != nil {
		return nil, err
	}
	// The configured ttl (5, in the config below): DNS matches the records
	// before the first decision, as a zone set up for drwatch would.
	if err := d.DNS.Seed("lms 5 IN A "+PrimaryIP, "studio 5 IN A "+PrimaryIP, "wiki 5 IN A "+WikiPrimaryIP); err != nil {
		return nil, err
	}

	// Three watchers: real configs on disk, loaded through the normal path.
	ids := []string{"a", "b", "c"}
	ports, err := freePorts(2 * len(ids))
	if err != nil {
		return nil, err
	}
	var peers []peerAddr
	for i, id := range ids {
		peers = append(peers, peerAddr{ID: id, Raft: ports[2*i], API: ports[2*i+1]})
	}
	for _, p := range peers {
		cert, key, err := cluster.IssueNodeCert(ca, caKey, p.ID, []string{"127.0.0.1", "localhost"}, 24*time.Hour)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(d.path("node-"+p.ID+".crt"), cert, 0o600); err != nil {
			return nil, err
		}
		if err := os.WriteFile(d.path("node-"+p.ID+".key"), key, 0o600); err != nil {
			return nil, err
		}
		cfgPath := d.path("node-" + p.ID + ".yaml")
		if err := d.writeConfig(cfgPath, p, peers); err != nil {
			return nil, err
		}
		d.Configs = append(d.Configs, cfgPath)
	}
	d.log = log
	for i, p := range peers {
		cfg, err := config.Load(d.Configs[i], config.Options{})
		if err != nil {
			return nil, fmt.Errorf("demo config %s: %w", d.Configs[i], err)
		}
		d.cfgs = append(d.cfgs, cfg)
		d.Nodes = append(d.Nodes, nil)
		d.servers = append(d.servers, nil)
		d.APIURLs = append(d.APIURLs, "https://"+cfg.Node.APIAddr)
		if err := d.StartNode(ctx, i); err != nil {
			return nil, fmt.Errorf("start watcher %s: %w", p.ID, err)
		}
	}
	if err := d.startControl(); err != nil {
		return nil, err
	}
	return d, nil
}

type peerAddr struct {
	ID        string
	Raft, API string
}

func (d *Demo) path(name string) string { return filepath.Join(d.Dir, name) }

var configTmpl = template.Must(template.New("cfg").Parse(`# drwatch demo watcher {{.Self.ID}} (generated by drwatch demo)
node: { id: {{.Self.ID}}, data_dir: "{{.Dir}}/data-{{.Self.ID}}", raft_addr: "{{.Self.Raft}}", api_addr: "{{.Self.API}}" }
tls: { ca_file: "{{.Dir}}/ca.crt", cert_file: "{{.Dir}}/node-{{.Self.ID}}.crt", key_file: "{{.Dir}}/node-{{.Self.ID}}.key" }
peers:
{{- range .Peers}}
  - { id: {{.ID}}, raft_addr: "{{.Raft}}", api_addr: "{{.API}}" }
{{- end}}
api: { tokens_file: "{{.Dir}}/tokens" }
raft: { heartbeat_timeout: 1s, election_timeout: 1s, leader_lease_timeout: 500ms }
policy: { interval: {{.Interval}}, timeout: {{.Timeout}}, fall: {{.Fall}}, rise: 2, quorum: 2, auto_failover: true, block_window: 10m, failback: manual }
sites:
{{- range .Sites}}
  {{.Name}}:
    probes:
      - { name: lms, type: http, url: "https://lms.demo.test/heartbeat", connect_to: "{{.LMS}}", ca_file: "{{$.Dir}}/ca.crt", cert_min_validity: 1h }
      - { name: studio, type: http, url: "https://studio.demo.test/heartbeat", connect_to: "{{.LMS}}", ca_file: "{{$.Dir}}/ca.crt" }
      - {{template "kube" .}}
      - { name: ingress-lb, type: octavia, auth_url: "https://{{.OpenStack}}/v3", region: RegionOne, ca_file: "{{$.Dir}}/ca.crt",
          application_credential_id_file: "{{$.Dir}}/appcred-id", application_credential_secret_file: "{{$.Dir}}/appcred-secret",
          loadbalancer: ingress, critical: false }
{{- end}}
dns:
  provider: rfc2136
  zone: demo.test.
  rfc2136: { server: "{{.DNS}}", key_name: drwatch., key_file: "{{.Dir}}/tsig.key" }
  verify: { servers: [ "{{.DNS}}" ], timeout: 10s }
  break_glass: { key_file: "{{.Dir}}/break-glass.key" }
  records:
    - { name: lms,    type: A, ttl: 5, primary: [ {{.PrimaryIP}} ], backup: [ {{.BackupIP}} ] }
    - { name: studio, type: A, ttl: 5, primary: [ {{.PrimaryIP}} ], backup: [ {{.BackupIP}} ] }
# The second platform: the wiki, with its own Caddy and record, and the
# region's Kubernetes API, defined as above, run once per round for both.
groups:
  - name: {{.WikiGroup}}
    sites:
{{- range .Sites}}
      {{.Name}}:
        probes:
          - { name: wiki, type: http, url: "https://wiki.demo.test/heartbeat", connect_to: "{{.Wiki}}", ca_file: "{{$.Dir}}/ca.crt" }
          - {{template "kube" .}}
{{- end}}
    dns:
      records:
        - { name: wiki, type: A, ttl: 5, primary: [ {{.WikiPrimaryIP}} ], backup: [ {{.WikiBackupIP}} ] }
drill: { cert_min_validity: 1h }   # the demo's certificates live a day
{{- if .PreHook}}
hooks:
  pre_failover:
    - { name: demo-check, command: [ {{range $i, $a := .PreHook}}{{if $i}}, {{end}}{{printf "%q" $a}}{{end}} ], timeout: 5s }
{{- end}}
log: { level: info }
{{- define "kube"}}{ name: kube-api, type: kubernetes, server: "https://{{.Kube}}", ca_file: "{{.Dir}}/ca.crt", token_file: "{{.Dir}}/kube-token" }{{end}}
`))

// siteAddrs is one site's endpoints as the config template names them;
// Dir is there for the template shared by both groups' kube-api.
type siteAddrs struct{ Name, LMS, Wiki, Kube, OpenStack, Dir string }

func (d *Demo) writeConfig(path string, self peerAddr, peers []peerAddr) error {
	var sites []siteAddrs
	for _, name := range []string{"primary", "backup"} {
		s := d.Sites[name]
		sites = append(sites, siteAddrs{Name: name, LMS: s.Addr(EndpointLMS), Wiki: s.Addr(EndpointWiki), Kube: s.Addr(EndpointKube), OpenStack: s.Addr(EndpointOpenStack), Dir: d.Dir})
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	err = configTmpl.Execute(f, map[string]any{"Self": self, "Peers": peers, "Dir": d.Dir, "Sites": sites,
		"DNS": d.DNS.Addr(), "PrimaryIP": PrimaryIP, "BackupIP": BackupIP,
		"WikiGroup": WikiGroup, "WikiPrimaryIP": WikiPrimaryIP, "WikiBackupIP": WikiBackupIP,
		"Interval": d.interval.String(), "Timeout": (d.interval * 7 / 10).String(), "Fall": d.fall, "PreHook": d.preHook})
	return errors.Join(err, f.Close())
}

// startControl serves the outage switch on loopback (plain HTTP, demo only).
func (d *Demo) startControl() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	d.ControlURL = "http://" + ln.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /sites/{site}/{state}", func(w http.ResponseWriter, r *http.Request) {
		s, ok := d.Sites[r.PathValue("site")]
		state := r.PathValue("state")
		if !ok || (state != "up" && state != "down") {
			http.Error(w, "want POST /sites/{primary|backup}/{up|down}", http.StatusNotFound)
			return
		}
		if err := s.SetUp(state == "up"); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		d.say("site %s is now %s (from the control endpoint)", s.Name, strings.ToUpper(state))
		fmt.Fprintf(w, "%s is %s\n", s.Name, state)
	})
	// One endpoint alone: one platform's Caddy, or the region's Kubernetes API.
	mux.HandleFunc("POST /sites/{site}/{endpoint}/{state}", func(w http.ResponseWriter, r *http.Request) {
		s, ok := d.Sites[r.PathValue("site")]
		endpoint, state := r.PathValue("endpoint"), r.PathValue("state")
		if !ok || !slices.Contains(Endpoints, endpoint) || (state != "up" && state != "down") {
			http.Error(w, "want POST /sites/{primary|backup}/{"+strings.Join(Endpoints, "|")+"}/{up|down}", http.StatusNotFound)
			return
		}
		if err := s.SetEndpointUp(endpoint, state == "up"); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		d.say("site %s endpoint %s is now %s (from the control endpoint)", s.Name, endpoint, strings.ToUpper(state))
		fmt.Fprintf(w, "%s %s is %s\n", s.Name, endpoint, state)
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "POST /sites/{primary|backup}/{up|down}: the whole site")
		fmt.Fprintln(w, "POST /sites/{primary|backup}/{"+strings.Join(Endpoints, "|")+"}/{up|down}: one endpoint")
	})
	d.control = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = d.control.Serve(ln) }()
	return nil
}

// StartNode starts watcher i (again) from its config and data directory.
func (d *Demo) StartNode(ctx context.Context, i int) error {
	cfg := d.cfgs[i]
	reg := prometheus.NewRegistry()
	n, err := node.Start(ctx, node.Options{Config: cfg, Logger: d.log, CredentialsReloadEvery: d.reload, Registry: reg})
	if err != nil {
		return err
	}
	tokens, err := api.LoadTokens(cfg.API.TokensFile)
	if err == nil {
		var srv *http.Server
		if srv, _, err = api.Listen(cfg.Node.APIAddr, api.ServerTLS(n.Credentials(), cfg.API.ClientCerts == "required"), n, api.Options{Tokens: tokens, Logger: d.log, Registerer: reg}); err == nil {
			d.mu.Lock()
			d.Nodes[i], d.servers[i] = n, srv
			d.mu.Unlock()
			return nil
		}
	}
	_ = n.Shutdown(context.WithoutCancel(ctx))
	return err
}

// StopNode shuts watcher i down gracefully (its API too).
func (d *Demo) StopNode(ctx context.Context, i int) error {
	d.mu.Lock()
	n, srv := d.Nodes[i], d.servers[i]
	d.Nodes[i], d.servers[i] = nil, nil
	d.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
	if n == nil {
		return nil
	}
	return n.Shutdown(ctx)
}

// Running returns the watchers that are up.
func (d *Demo) Running() []*node.Node {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []*node.Node
	for _, n := range d.Nodes {
		if n != nil {
			out = append(out, n)
		}
	}
	return out
}

// Close stops everything in reverse order and removes a temporary directory.
func (d *Demo) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if d.control != nil {
		_ = d.control.Close()
	}
	for _, s := range d.servers {
		if s != nil {
			_ = s.Close()
		}
	}
	var wg sync.WaitGroup
	for _, n := range d.Running() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = n.Shutdown(ctx)
		}()
	}
	wg.Wait()
	if d.DNS != nil {
		_ = d.DNS.Close()
	}
	for _, s := range d.Sites {
		s.Close()
	}
	if d.logFile != nil {
		_ = d.logFile.Close()
	}
	if d.tmp {
		_ = os.RemoveAll(d.Dir)
	}
}

// LogTail returns the last n lines of the watchers' log (for test failures).
func (d *Demo) LogTail(n int) string {
	b, err := os.ReadFile(d.path("demo.log"))
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// say prints one narration line with the elapsed time.
func (d *Demo) say(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Fprintf(d.out, "[%6.1fs] %s\n", time.Since(d.start).Seconds(), fmt.Sprintf(format, args...))
}

// Leader returns the node that currently leads, or nil.
func (d *Demo) Leader() *node.Node {
	for _, n := range d.Running() {
		if n.Cluster().IsLeader() {
			return n
		}
	}
	return nil
}

// View is the leader's (or, with no leader, the first node's) replica view.
func (d *Demo) View() failover.View {
	if l := d.Leader(); l != nil {
		return l.Machine().View()
	}
	if r := d.Running(); len(r) > 0 {
		return r[0].Machine().View()
	}
	return failover.View{}
}

// Resolve asks the embedded authoritative server for name's A records.
func (d *Demo) Resolve(name string) ([]string, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	m.RecursionDesired = false
	c := &dns.Client{Net: "tcp", Timeout: 2 * time.Second}
	r, _, err := c.Exchange(m, d.DNS.Addr())
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

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return hex.EncodeToString(b)
}

func freePorts(n int) ([]string, error) {
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			_ = l.Close()
		}
	}()
	var out []string
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, l)
		out = append(out, l.Addr().String())
	}
	return out, nil
}
