package quickstart

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cluster"
	testdaemon "github.com/drwatch/drwatch/test/daemon"
	"github.com/drwatch/drwatch/test/dnsservers"
	"github.com/drwatch/drwatch/test/poll"
	"github.com/miekg/dns"
)

const (
	repoRoot = "../.."
	docPath  = repoRoot + "/docs/operations.md"
)

// block is one fenced code block of the quick start.
type block struct {
	kind string // quickstart, quickstart-env, quickstart-daemons, quickstart-stop, quickstart-poll
	arg  string // the word after the kind: quickstart-poll's condition
	line int    // first line of the code, 1-based, for failure messages
	code string
}

var fence = regexp.MustCompile("^```sh (quickstart[-a-z]*)(?: ([a-z-]+))?\\s*$")

// parseBlocks returns the quick start's blocks in document order.
func parseBlocks(doc []byte) ([]block, error) {
	var out []block
	var cur *block
	var buf strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(doc))
	n := 0
	for sc.Scan() {
		n++
		l := sc.Text()
		switch {
		case cur == nil:
			if m := fence.FindStringSubmatch(l); m != nil {
				cur = &block{kind: m[1], arg: m[2], line: n + 1}
				buf.Reset()
			}
		case strings.TrimSpace(l) == "```":
			cur.code = buf.String()
			out = append(out, *cur)
			cur = nil
		default:
			buf.WriteString(l)
			buf.WriteByte('\n')
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("line %d: block %s is not closed", cur.line, cur.kind)
	}
	for _, b := range out {
		switch b.kind {
		case "quickstart", "quickstart-env", "quickstart-daemons", "quickstart-stop":
			if b.arg != "" {
				return nil, fmt.Errorf("line %d: block %s takes no argument, got %q", b.line, b.kind, b.arg)
			}
		case "quickstart-poll":
			if _, ok := pollConditions[b.arg]; !ok {
				return nil, fmt.Errorf("line %d: unknown poll condition %q", b.line, b.arg)
			}
		default:
			return nil, fmt.Errorf("line %d: unknown block kind %q", b.line, b.kind)
		}
	}
	return out, sc.Err()
}

var envVar = regexp.MustCompile(`(?:^|\s)([A-Z][A-Z0-9_]*)=`)

// envNames returns the variables an env block assigns (comments ignored).
func envNames(code string) []string {
	var names []string
	for _, l := range strings.Split(code, "\n") {
		if i := strings.Index(l, "#"); i >= 0 {
			l = l[:i]
		}
		for _, m := range envVar.FindAllStringSubmatch(l, -1) {
			names = append(names, m[1])
		}
	}
	sort.Strings(names)
	return names
}

func TestParseBlocks(t *testing.T) {
	doc := "x\n```sh quickstart-env\nA=1 B=2 # C=3\n```\n```sh quickstart\necho $A\n```\n```go\nno\n```\n```sh quickstart-poll no-leader\ns\n```\n"
	bs, err := parseBlocks([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 3 || bs[0].kind != "quickstart-env" || bs[1].code != "echo $A\n" || bs[1].line != 6 || bs[2].arg != "no-leader" {
		t.Fatalf("got %+v, want the env block, one quickstart block at line 6, one poll for no-leader", bs)
	}
	if _, err := parseBlocks([]byte("```sh quickstart-poll bogus\n```\n")); err == nil {
		t.Error("unknown poll condition: got nil error, want one")
	}
	if got := envNames(bs[0].code); !slices.Equal(got, []string{"A", "B"}) {
		t.Errorf("envNames: got %v, want [A B]", got)
	}
	if _, err := parseBlocks([]byte("```sh quickstart-bogus\n```\n")); err == nil {
		t.Error("unknown kind: got nil error, want one")
	}
	if _, err := parseBlocks([]byte("```sh quickstart\necho\n")); err == nil {
		t.Error("unclosed block: got nil error, want one")
	}
}

// eventually checks every half second: each check runs the CLI.
func eventually(t *testing.T, d time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	poll.UntilEvery(t, d, 500*time.Millisecond, cond, format, args...)
}

// freePorts returns n distinct ports free on 127.0.0.1, reserved for this
// test process and outside the kernel's ephemeral range, so that no
// outgoing connection takes one between now and the watcher's bind.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	ports, err := testdaemon.FreePorts(n)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

// startSites serves GET /heartbeat over TLS for host on two loopback
// addresses with one port, as the primary and backup site would, and
// returns the port and the CA file to trust.
func startSites(t *testing.T, dir, host string, ips ...string) (int, string) {
	t.Helper()
	caPEM, caKeyPEM, err := cluster.NewCA("quickstart sites", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ca, caKey, err := cluster.ParseCA(caPEM, caKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	// A site certificate: an ordinary server certificate for host. (The
	// node identity SAN IssueNodeCert adds is harmless here.)
	certPEM, keyPEM, err := cluster.IssueNodeCert(ca, caKey, "site", []string{host}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "sites-ca.crt")
	if err := os.WriteFile(caFile, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /heartbeat", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	for attempt := 0; ; attempt++ {
		var lns []net.Listener
		first, err := net.Listen("tcp", ips[0]+":0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, first)
		port := first.Addr().(*net.TCPAddr).Port
		ok := true
		for _, ip := range ips[1:] {
			l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
			if err != nil {
				ok = false
				break
			}
			lns = append(lns, l)
		}
		if !ok {
			for _, l := range lns {
				l.Close()
			}
			if attempt > 20 {
				t.Fatalf("no port free on all of %v", ips)
			}
			continue
		}
		for _, l := range lns {
			srv := &http.Server{Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{pair}}, ReadHeaderTimeout: 5 * time.Second}
			go srv.ServeTLS(l, "", "")
			t.Cleanup(func() { srv.Close() })
		}
		return port, caFile
	}
}

// buildBinary builds drwatch from this tree into dir and returns dir.
func buildBinary(t *testing.T, dir string) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go not found in PATH: %v", err)
	}
	// The same flags as test/e2e's build, so that the two share the build
	// cache: a cold build of client-go costs minutes on a small machine.
	cmd := exec.Command(gobin, "build", "-o", filepath.Join(dir, "drwatch"), "./cmd/drwatch")
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/drwatch: %v\n%s", err, out)
	}
	return dir
}

// daemon is one long-running process of a quickstart-daemons block.
type daemon struct {
	line   string
	cmd    *exec.Cmd
	log    string
	exited chan struct{} // closed when the process has exited; err is then set
	err    error
	// stopped: the document stopped it (quickstart-stop), so its exit is expected.
	stopped bool
}

// stop sends sig to the daemon's process group (SIGINT is Ctrl-C in its
// terminal), and kills it if it has not exited after 30 s. It returns the
// exit error.
func (d *daemon) stop(sig syscall.Signal) error {
	select {
	case <-d.exited:
		return d.err
	default:
	}
	_ = syscall.Kill(-d.cmd.Process.Pid, sig)
	select {
	case <-d.exited:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		<-d.exited
	}
	return d.err
}

// shell runs the quick start's blocks with bash in one environment.
type shell struct {
	t       *testing.T
	env     []string
	dir     string
	daemons []*daemon
}

func (s *shell) command(code string) *exec.Cmd {
	cmd := exec.Command("bash", "--noprofile", "--norc", "-euo", "pipefail", "-c", code)
	cmd.Env = s.env
	cmd.Dir = s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

func (s *shell) run(b block) (string, error) {
	cmd := s.command(b.code)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Stdin = strings.NewReader("")
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), err
	case <-time.After(4 * time.Minute):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return out.String(), fmt.Errorf("block at line %d did not finish within 4m", b.line)
	}
}

func (s *shell) logs() string {
	var b strings.Builder
	for _, d := range s.daemons {
		log, _ := os.ReadFile(d.log)
		lines := strings.Split(strings.TrimRight(string(log), "\n"), "\n")
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		fmt.Fprintf(&b, "--- %s (last %d lines)\n%s\n", d.line, len(lines), strings.Join(lines, "\n"))
	}
	return b.String()
}

func (s *shell) startDaemons(b block) {
	for _, line := range strings.Split(b.code, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		logPath := filepath.Join(s.dir, fmt.Sprintf("daemon-%d.log", len(s.daemons)))
		f, err := os.Create(logPath)
		if err != nil {
			s.t.Fatal(err)
		}
		cmd := s.command(line)
		cmd.Stdout, cmd.Stderr = f, f
		if err := cmd.Start(); err != nil {
			f.Close()
			s.t.Fatalf("line %d: %s: %v", b.line, line, err)
		}
		d := &daemon{line: line, cmd: cmd, log: logPath, exited: make(chan struct{})}
		go func() {
			d.err = cmd.Wait()
			f.Close()
			close(d.exited)
		}()
		s.daemons = append(s.daemons, d)
	}
}

// pollConditions are what a quickstart-poll block waits for in the output
// of `drwatch status`, by the block's argument.
var pollWant = map[string]string{"": "a leader and both sites UP", "no-leader": "no leader", "backup-active": "a leader, the backup active and verified, and the primary UP"}

var pollConditions = map[string]func(out string) bool{
	// A leader is named and both sites are UP at quorum.
	"": func(out string) bool {
		return regexp.MustCompile(`(?m)^leader:\s+[a-z0-9][a-z0-9-]* \(term`).MatchString(out) &&
			regexp.MustCompile(`(?m)^primary\s+UP\s`).MatchString(out) &&
			regexp.MustCompile(`(?m)^backup\s+UP\s`).MatchString(out)
	},
	// A leader is named, the backup is the active site and the leader has
	// verified it in DNS (the history's break_glass row then says
	// verified), and the primary is UP at quorum again (what a failback
	// needs: the restarted watchers have reported).
	"backup-active": func(out string) bool {
		return regexp.MustCompile(`(?m)^leader:\s+[a-z0-9][a-z0-9-]* \(term`).MatchString(out) &&
			regexp.MustCompile(`(?m)^active site: backup `).MatchString(out) &&
			regexp.MustCompile(`(?m)^desired:\s+gen \d+, backup, verified=true`).MatchString(out) &&
			regexp.MustCompile(`(?m)^primary\s+UP\s`).MatchString(out)
	},
	// The watcher serving the status knows of no leader.
	"no-leader": func(out string) bool {
		return regexp.MustCompile(`(?m)^leader:\s+- \(term`).MatchString(out)
	},
}

func TestQuickStart(t *testing.T) {
	for _, bin := range []struct{ name, pkg string }{{"bash", "bash"}, {"dig", "bind9-dnsutils"}} {
		if _, err := exec.LookPath(bin.name); err != nil {
			t.Fatalf("%s not found in PATH: install Debian package %s (make install-test-deps)", bin.name, bin.pkg)
		}
	}
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := parseBlocks(doc)
	if err != nil {
		t.Fatalf("%s: %v", docPath, err)
	}

	tmp := t.TempDir()
	bind, err := dnsservers.StartBIND(mkdir(t, tmp, "bind"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bind.Close() })
	keyFile := filepath.Join(tmp, "tsig.key")
	// The key clause tsig-keygen writes.
	key := fmt.Sprintf("key \"%s\" {\n\talgorithm hmac-sha256;\n\tsecret \"%s\";\n};\n", strings.TrimSuffix(dnsservers.KeySHA256, "."), bind.Secret)
	if err := os.WriteFile(keyFile, []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
	siteHost := "lms." + strings.TrimSuffix(dnsservers.Zone, ".")
	primaryIP, backupIP := "127.0.0.2", "127.0.0.3"
	// The operator's zone already has the record, at the primary ("the
	// record's value today" in the variable block).
	seedRecord(t, bind, fmt.Sprintf("%s. 30 IN A %s", siteHost, primaryIP))
	httpsPort, siteCA := startSites(t, tmp, siteHost, primaryIP, backupIP)
	t0 := time.Now()
	bin := buildBinary(t, mkdir(t, tmp, "bin"))
	t.Logf("go build ./cmd/drwatch: %s", time.Since(t0).Round(time.Millisecond))

	dnsHost, dnsPort, _ := net.SplitHostPort(bind.Addr)
	vars := map[string]string{
		"DIR":           filepath.Join(tmp, "trial"),
		"WATCHER_IP":    "127.0.0.1",
		"DNS_HOST":      dnsHost,
		"DNS_PORT":      dnsPort,
		"ZONE":          dnsservers.Zone,
		"TSIG_KEY_NAME": dnsservers.KeySHA256,
		"TSIG_KEY_FILE": keyFile,
		"SITE_HOST":     siteHost,
		"HTTPS_PORT":    strconv.Itoa(httpsPort),
		"PRIMARY_IP":    primaryIP,
		"BACKUP_IP":     backupIP,
		"SITE_CA_FILE":  siteCA,
	}
	ports := freePorts(t, 6)
	for i, n := range []string{"A", "B", "C"} {
		vars[n+"_RAFT_PORT"] = strconv.Itoa(ports[2*i])
		vars[n+"_API_PORT"] = strconv.Itoa(ports[2*i+1])
	}

	// What a login shell has; USER is the break-glass write's default actor.
	env := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + tmp, "USER=operator", "LANG=C.UTF-8"}
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	s := &shell{t: t, env: env, dir: tmp}
	t.Cleanup(func() {
		for _, d := range s.daemons {
			d.stop(syscall.SIGTERM)
		}
	})

	var outputs, polls []string
	kinds := map[string]int{}
	for _, b := range blocks {
		kinds[b.kind]++
		switch b.kind {
		case "quickstart-env":
			var want []string
			for k := range vars {
				want = append(want, k)
			}
			sort.Strings(want)
			if got := envNames(b.code); !slices.Equal(got, want) {
				t.Fatalf("%s:%d: the env block sets %v; the test sets %v: keep them the same", docPath, b.line, got, want)
			}
		case "quickstart":
			t0 := time.Now()
			out, err := s.run(b)
			if err != nil {
				t.Fatalf("%s:%d: block failed: %v\n%s\n%s\n%s", docPath, b.line, err, b.code, out, s.logs())
			}
			t.Logf("%s:%d (%s):\n%s", docPath, b.line, time.Since(t0).Round(time.Millisecond), out)
			outputs = append(outputs, out)
		case "quickstart-daemons":
			s.startDaemons(b)
		case "quickstart-stop":
			for _, line := range strings.Split(b.code, "\n") {
				line = strings.TrimSpace(line)
				if line == "" || strings.HasPrefix(line, "#") {
					continue
				}
				found := false
				for _, d := range s.daemons {
					if d.line == line && !d.stopped {
						found, d.stopped = true, true
						t0 := time.Now()
						if err := d.stop(syscall.SIGINT); err != nil {
							t.Errorf("%s:%d: %q: got exit %v on Ctrl-C (SIGINT), want 0\n%s", docPath, b.line, line, err, s.logs())
						}
						t.Logf("%s: stopped by SIGINT in %s", line, time.Since(t0).Round(time.Millisecond))
					}
				}
				if !found {
					t.Fatalf("%s:%d: %q is not running: it must be started by an earlier quickstart-daemons block", docPath, b.line, line)
				}
			}
		case "quickstart-poll":
			t0 := time.Now()
			last := &lazy{}
			eventually(t, 2*time.Minute, func() bool {
				for _, d := range s.daemons {
					select {
					case <-d.exited:
						if !d.stopped {
							t.Fatalf("%q exited early: %v\n%s", d.line, d.err, s.logs())
						}
					default:
					}
				}
				out, err := s.run(b)
				last.s = out
				return err == nil && pollConditions[b.arg](out)
			}, "%s:%d shows %s; last output:\n%s\n%s", docPath, b.line, pollWant[b.arg], last, s)
			t.Logf("%s:%d (%s until ready):\n%s", docPath, b.line, time.Since(t0).Round(time.Millisecond), last.s)
			if len(polls) == 0 {
				// Before the first decision the leader writes nothing, as
				// step 4 says: not even the fencing record.
				if got := lookup(t, bind.Addr, "_drwatch."+dnsservers.Zone, dns.TypeTXT); len(got) != 0 {
					t.Errorf("fencing record before any decision: got %v, want none (nothing written before a decision)", got)
				}
			}
			polls = append(polls, last.s)
		}
	}
	for _, k := range []string{"quickstart-env", "quickstart", "quickstart-daemons", "quickstart-stop", "quickstart-poll"} {
		if kinds[k] == 0 {
			t.Fatalf("%s has no %q block", docPath, k)
		}
	}

	// Before the first decision nothing is verified, and DNS already
	// matches: the record points at the primary, as step 4 says.
	if !strings.Contains(polls[0], "desired:     gen 0, primary, verified=false; dns matches desired: true") {
		t.Errorf("first status: got\n%s\nwant 'gen 0, primary, verified=false; dns matches desired: true' (the zone at the primary, nothing written before a decision)", polls[0])
	}
	// What the operator should have seen: the failover verified at the
	// server, the record at the backup then back at the primary; the
	// break-glass write at the backup, kept (and recorded) when quorum
	// returned; the failback after it verified.
	all := strings.Join(outputs, "\n")
	if n := strings.Count(all, "verified at every authoritative server after"); n != 3 {
		t.Errorf("got %d verified flips, want 3 (failover, failback, failback after the break glass):\n%s", n, all)
	}
	var answers []string
	for _, l := range strings.Split(all, "\n") {
		if net.ParseIP(strings.TrimSpace(l)) != nil {
			answers = append(answers, strings.TrimSpace(l))
		}
	}
	if want := []string{primaryIP, backupIP, primaryIP, backupIP, backupIP, primaryIP}; !slices.Equal(answers, want) {
		t.Errorf("dig answers: got %v, want %v (the canary after the drill, failover, failback, break glass, quorum back, failback)", answers, want)
	}
	// The first thing the operator ran after serve: a drill that passed and
	// said what a real failover would take.
	for _, want := range []string{"PASSED", "primary_verified", "a real failover now would reach most clients in ≈"} {
		if !strings.Contains(all, want) {
			t.Errorf("the drill's output lacks %q:\n%s", want, all)
		}
	}
	// History rows: INDEX GEN AT KIND MOVE ACTOR OUTCOME REASON.
	for _, want := range []string{`manual_failover\s+primary->backup\s+ops\s+verified\s+quick start drill`, `break_glass.*primary->backup\s+operator\s+verified\s+break-glass drill`} {
		if !regexp.MustCompile(`(?m)^\d+\s+\d+\s+\S+\s+` + want).MatchString(all) {
			t.Errorf("the history has no row matching %q:\n%s", want, all)
		}
	}
	// The watchers stop cleanly on SIGTERM, as the document says.
	for _, d := range s.daemons {
		if d.stopped {
			continue
		}
		t0 := time.Now()
		if err := d.stop(syscall.SIGTERM); err != nil {
			t.Errorf("%q: got exit %v on SIGTERM, want 0\n%s", d.line, err, s.logs())
		}
		t.Logf("%s: stopped by SIGTERM in %s", d.line, time.Since(t0).Round(time.Millisecond))
	}
}

func mkdir(t *testing.T, parent, name string) string {
	t.Helper()
	p := filepath.Join(parent, name)
	if err := os.MkdirAll(p, 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

// String lets a failure message include the daemons' logs lazily.
func (s *shell) String() string { return s.logs() }

// lazy is a string read when a failure message is formatted.
type lazy struct{ s string }

func (l *lazy) String() string { return l.s }

// seedRecord adds rr to the zone with a TSIG-signed dynamic update, as the
// operator's zone held it before drwatch.
func seedRecord(t *testing.T, s *dnsservers.Server, rr string) {
	t.Helper()
	r, err := dns.NewRR(rr)
	if err != nil {
		t.Fatal(err)
	}
	m := new(dns.Msg)
	m.SetUpdate(dnsservers.Zone)
	m.Insert([]dns.RR{r})
	m.SetTsig(dnsservers.KeySHA256, dns.HmacSHA256, 300, time.Now().Unix())
	c := &dns.Client{Net: "tcp", Timeout: 5 * time.Second, TsigSecret: map[string]string{dnsservers.KeySHA256: s.Secret}}
	resp, _, err := c.Exchange(m, s.Addr)
	if err != nil || resp.Rcode != dns.RcodeSuccess {
		t.Fatalf("seed %s: got %v, rcode %v; want NOERROR", rr, err, resp)
	}
}

// lookup returns the answers addr serves for name and qtype.
func lookup(t *testing.T, addr, name string, qtype uint16) []string {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	resp, _, err := (&dns.Client{Net: "tcp", Timeout: 5 * time.Second}).Exchange(m, addr)
	if err != nil {
		t.Fatalf("query %s: %v", name, err)
	}
	var out []string
	for _, rr := range resp.Answer {
		out = append(out, rr.String())
	}
	return out
}
