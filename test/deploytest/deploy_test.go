package deploytest

import (
	"bufio"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/drwatch/drwatch/cmd/drwatch/config"
)

const root = "../.."

// unit is a parsed systemd unit: section -> key -> values, in file order.
// A key may repeat (LoadCredential=, SystemCallFilter=).
type unit map[string]map[string][]string

func parseUnit(t *testing.T, path string) unit {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := unit{}
	section := ""
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		switch {
		case s == "" || strings.HasPrefix(s, "#") || strings.HasPrefix(s, ";"):
		case strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]"):
			section = s[1 : len(s)-1]
			if u[section] == nil {
				u[section] = map[string][]string{}
			}
		default:
			k, v, ok := strings.Cut(s, "=")
			if !ok || section == "" {
				t.Fatalf("%s:%d: got %q, want key=value inside a section", path, line, s)
			}
			if strings.HasSuffix(v, "\\") {
				t.Fatalf("%s:%d: continuation lines are not supported by this test", path, line)
			}
			u[section][k] = append(u[section][k], v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestSystemdUnitHardening(t *testing.T) {
	u := parseUnit(t, filepath.Join(root, "deploy/systemd/drwatch.service"))
	svc := u["Service"]
	if svc == nil {
		t.Fatal("no [Service] section")
	}
	// Each directive with the one value it must have (the last assignment
	// wins in systemd, so check the last).
	want := map[string]string{
		"NoNewPrivileges":         "yes",
		"ProtectSystem":           "strict",
		"ProtectHome":             "yes",
		"PrivateTmp":              "yes",
		"PrivateDevices":          "yes",
		"RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
		"CapabilityBoundingSet":   "",
		"AmbientCapabilities":     "",
		"UMask":                   "0077",
		"Restart":                 "on-failure",
		"StateDirectory":          "drwatch",
		"ConfigurationDirectory":  "drwatch",
		"DynamicUser":             "yes",
		"KillSignal":              "SIGTERM",
		"RestrictNamespaces":      "yes",
		"RestrictSUIDSGID":        "yes",
		"LockPersonality":         "yes",
		"MemoryDenyWriteExecute":  "yes",
		"SystemCallArchitectures": "native",
		"ProtectKernelTunables":   "yes",
		"ProtectKernelModules":    "yes",
		"ProtectControlGroups":    "yes",
	}
	for k, v := range want {
		t.Run(k, func(t *testing.T) {
			got, ok := svc[k]
			if !ok {
				t.Fatalf("%s: got absent, want %s=%s", k, k, v)
			}
			if last := got[len(got)-1]; last != v {
				t.Errorf("%s: got %q, want %q", k, last, v)
			}
		})
	}
	t.Run("SystemCallFilter", func(t *testing.T) {
		if !slices.Contains(svc["SystemCallFilter"], "@system-service") {
			t.Errorf("SystemCallFilter: got %q, want @system-service among them", svc["SystemCallFilter"])
		}
	})
	t.Run("ExecStartPre validates the config ExecStart serves", func(t *testing.T) {
		pre, start := strings.Join(svc["ExecStartPre"], ";"), strings.Join(svc["ExecStart"], ";")
		m := regexp.MustCompile(`--config (\S+)`)
		pc, sc := m.FindStringSubmatch(pre), m.FindStringSubmatch(start)
		if !strings.Contains(pre, "drwatch config validate") || !strings.Contains(start, "drwatch serve") || pc == nil || sc == nil || pc[1] != sc[1] {
			t.Errorf("got ExecStartPre %q ExecStart %q, want 'config validate' and 'serve' on one --config file", pre, start)
		}
		if !strings.HasPrefix(sc[1], "/etc/drwatch/") {
			t.Errorf("config %s: want it under ConfigurationDirectory /etc/drwatch", sc[1])
		}
	})
	t.Run("secrets come from LoadCredential", func(t *testing.T) {
		creds := svc["LoadCredential"]
		var names []string
		for _, c := range creds {
			name, src, ok := strings.Cut(c, ":")
			if !ok || !strings.HasPrefix(src, "/etc/drwatch/private/") {
				t.Errorf("LoadCredential=%s: want name:/etc/drwatch/private/FILE", c)
			}
			names = append(names, name)
		}
		for _, n := range []string{"node.key", "tokens", "tsig.key"} {
			if !slices.Contains(names, n) {
				t.Errorf("LoadCredential: got %v, want %s among them", names, n)
			}
		}
	})
	t.Run("stop timeout leaves room for the leadership hand-over", func(t *testing.T) {
		// drwatch serve gives its own shutdown 20 s (serve.go).
		got := svc["TimeoutStopSec"]
		if len(got) == 0 || got[len(got)-1] == "infinity" {
			t.Fatalf("TimeoutStopSec: got %v, want a bound above 20s", got)
		}
		v := strings.TrimSuffix(got[len(got)-1], "s")
		if n := atoi(v); n <= 20 {
			t.Errorf("TimeoutStopSec: got %s, want more than 20s", got[len(got)-1])
		}
	})
}

func atoi(s string) int {
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			return -1
		}
		n = n*10 + int(r-'0')
	}
	return n
}

// makeVar returns the value of "NAME := ..." or "NAME ?= ..." in the Makefile.
func makeVar(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + name + `\s*[:?]?=\s*(.*)$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("Makefile: no %s", name)
	}
	return strings.TrimSpace(string(m[1]))
}

func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "deploy/Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	df := strings.Join(lines, "\n")
	var from []string
	for _, l := range lines {
		if strings.HasPrefix(l, "FROM ") {
			from = append(from, l)
		}
	}
	t.Run("multi-stage: golang builder, distroless nonroot runtime", func(t *testing.T) {
		if len(from) != 2 || !strings.HasPrefix(from[0], "FROM golang:1.26") || !strings.Contains(from[0], " AS build") ||
			from[1] != "FROM gcr.io/distroless/static-debian12:nonroot" {
			t.Errorf("got stages %q, want golang:1.26 AS build then distroless/static-debian12:nonroot", from)
		}
	})
	t.Run("static, trimmed, stamped like make build", func(t *testing.T) {
		for _, want := range []string{"CGO_ENABLED=0 go build -trimpath", "./cmd/drwatch"} {
			if !strings.Contains(df, want) {
				t.Errorf("Dockerfile lacks %q", want)
			}
		}
		// The Makefile's LDFLAGS with its $(VAR) references as ${VAR}.
		ld := regexp.MustCompile(`\$\((\w+)\)`).ReplaceAllString(makeVar(t, "LDFLAGS"), "$${$1}")
		if !strings.Contains(df, `-ldflags "`+ld+`"`) {
			t.Errorf("Dockerfile -ldflags differ from the Makefile's LDFLAGS: want -ldflags %q", ld)
		}
		for _, arg := range []string{"VERSION", "COMMIT", "DATE"} {
			if !strings.Contains(df, "ARG "+arg+"=") {
				t.Errorf("Dockerfile lacks ARG %s", arg)
			}
		}
	})
	t.Run("runs as non-root", func(t *testing.T) {
		users := regexp.MustCompile(`(?m)^USER (\S+)$`).FindAllStringSubmatch(df, -1)
		if len(users) == 0 || strings.HasPrefix(users[len(users)-1][1], "0") || strings.HasPrefix(users[len(users)-1][1], "root") {
			t.Errorf("got USER %v, want a non-root user last", users)
		}
	})
	t.Run("serves the systemd unit's config path", func(t *testing.T) {
		if !strings.Contains(df, `CMD ["serve", "--config", "/etc/drwatch/drwatch.yaml"]`) {
			t.Error(`Dockerfile lacks CMD ["serve", "--config", "/etc/drwatch/drwatch.yaml"]`)
		}
	})
}

// Every secret the example configs read from the credentials directory is
// loaded by the unit, and every credential the unit loads is used: a
// mismatch means a watcher that cannot start (missing credential file) or a
// secret read from a path systemd never fills.
func TestExampleCredentialsMatchTheUnit(t *testing.T) {
	u := parseUnit(t, filepath.Join(root, "deploy/systemd/drwatch.service"))
	loaded := map[string]bool{}
	for _, c := range u["Service"]["LoadCredential"] {
		name, _, _ := strings.Cut(c, ":")
		loaded[name] = true
	}
	files, err := filepath.Glob(filepath.Join(root, "deploy/examples/*.yaml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("got %d example configs (%v), want 3", len(files), err)
	}
	credPath := regexp.MustCompile(`/run/credentials/drwatch\.service/([A-Za-z0-9._-]+)`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// What the config reads: a commented-out line reads nothing (the
		// example says which LoadCredential= its uncommented form needs).
		used := map[string]bool{}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			for _, m := range credPath.FindAllStringSubmatch(line, -1) {
				used[m[1]] = true
			}
		}
		for name := range used {
			if !loaded[name] {
				t.Errorf("%s reads /run/credentials/drwatch.service/%s: got no LoadCredential=%s:... in the unit", filepath.Base(f), name, name)
			}
		}
		for name := range loaded {
			if !used[name] {
				t.Errorf("the unit loads credential %s: got no use of it in %s", name, filepath.Base(f))
			}
		}
		// Secrets never sit in /etc/drwatch itself, where the config and the
		// public certificates are.
		for _, key := range []string{"key_file:", "tokens_file:", "token_file:", "clouds_file:"} {
			for _, l := range strings.Split(string(b), "\n") {
				if i := strings.Index(l, key); i >= 0 && strings.HasPrefix(strings.TrimSpace(l[i+len(key):]), "/etc/drwatch/") {
					t.Errorf("%s: %s: secrets come from the credentials directory, got %q", filepath.Base(f), key, strings.TrimSpace(l))
				}
			}
		}
	}
}

var (
	mdLink  = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	fenced  = regexp.MustCompile("(?ms)^```.*?^```")
)

// slug is GitHub's anchor for a heading: lower case, punctuation other
// than '-' dropped, spaces as '-'.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(fenced.ReplaceAllString(string(b), ""), -1) {
		out[slug(strings.ReplaceAll(m[1], "`", ""))] = true
	}
	return out
}

// The operator documents link to files and sections that exist.
func TestDocLinks(t *testing.T) {
	for _, doc := range []string{"docs/architecture.md", "docs/operations.md", "docs/security.md"} {
		t.Run(doc, func(t *testing.T) {
			path := filepath.Join(root, doc)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			text := fenced.ReplaceAllString(string(b), "")
			for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
				target := m[1]
				if strings.Contains(target, "://") {
					continue
				}
				file, anchor, _ := strings.Cut(target, "#")
				dest := path
				if file != "" {
					dest = filepath.Join(filepath.Dir(path), file)
				}
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("link %s: got %v, want an existing file", target, err)
					continue
				}
				if anchor != "" && strings.HasSuffix(dest, ".md") && !anchors(t, dest)[anchor] {
					t.Errorf("link %s: got no heading with anchor #%s in %s", target, anchor, filepath.Base(dest))
				}
			}
		})
	}
}

// The three example configs are one cluster: they differ only in node:, as
// their header says (the policy is replicated from the leader, and a watcher
// whose file differs is flagged), and each one's node: matches its entry in
// peers:.
func TestExamplesAreOneCluster(t *testing.T) {
	var first *config.Config
	for _, id := range []string{"a", "b", "c"} {
		path := filepath.Join(root, "deploy/examples/node-"+id+".yaml")
		c, err := config.Load(path, config.Options{SkipFileChecks: true})
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if c.Node.ID != id {
			t.Errorf("%s: got node.id %q, want %q", path, c.Node.ID, id)
		}
		var self *config.Peer
		for i := range c.Peers {
			if c.Peers[i].ID == id {
				self = &c.Peers[i]
			}
		}
		if self == nil || self.RaftAddr != c.Node.RaftAddr || self.APIAddr != c.Node.APIAddr {
			t.Errorf("%s: got peers entry %+v for node %+v, want the same addresses", path, self, c.Node)
		}
		c.Node = config.Node{}
		if first == nil {
			first = c
			continue
		}
		if !reflect.DeepEqual(first, c) {
			t.Errorf("%s differs from node-a.yaml outside node:", path)
		}
	}
}
