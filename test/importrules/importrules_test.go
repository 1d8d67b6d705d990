package importrules

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// What a row says of its packages' dependencies.
const (
	// only: their code depends, directly or not, on the standard library
	// and the listed packages and on nothing else.
	only = "only"
	// never: neither their code (directly or not) nor their tests
	// import a listed package.
	never = "never"
	// neverInCode: their code does not depend on a listed package, directly
	// or not; their tests may.
	neverInCode = "never-in-code"
)

// rules is the package map, one row a rule; each package's doc.go says the
// same in words. Both columns of paths are space-separated and relative to
// the module: "dir" is one package, "dir/..." is dir and every package
// below it, "..." is every package, and "-dir/..." takes a tree out of the
// packages a row holds. A path that matches no package fails the test, so
// a row cannot outlive what it guards.
//
// Each top-level folder is one layer, and the rows go up them; a layer
// imports only the layers below it, so every import points down:
//
//   - internal/: the leaves every layer shares (field, dnsname,
//     regularfile, openstackauth, kubeconfig, kubeapi); they import no
//     package of the module outside internal/.
//   - failover/: the core, the pure decision state machine the Raft log
//     drives; the standard library and two leaves, and no network client.
//   - probes/, dnsprovider/, cluster/: the parts the core decides from, acts
//     through and is replicated by; beside the core, they import neither it
//     nor each other.
//   - monitor/: the read-only monitors (cluster health); they reach the
//     clusters through the leaves (internal/kubeconfig, internal/kubeapi)
//     and never import an executor.
//   - executor/: the leader's executors, which act on the world: the DNS
//     reconciler, drill runs and their readiness checks, the repairs and
//     their runner; a repair may read a monitor's findings.
//   - watcher/: the node runtime (reports, the leader's loops), which drives
//     the core, the parts, the executors and the monitors.
//   - cmd/: the shell, which builds a node from its config file and runs it.
//   - test/: harnesses and suites; their tests may import any layer.
//   - deploy/ and docs/ hold no Go.
var rules = []struct{ pkgs, kind, deps string }{
	// Leaves: nothing of the module above them. OpenStack credentials and kubeconfigs serve the
	// probes and the repairs alike, so they belong to neither. Their tests may run against the
	// real servers of test/ (internal/kubeapi's against a kube-apiserver); their code never
	// imports test/ (the row of test helpers below).
	{"internal/...", never, "cluster/... cmd/... dnsprovider/... executor/... failover/... monitor/... probes/... watcher"},
	// Every reader of a file a config field names goes through it, so it depends on nothing.
	{"internal/regularfile", only, ""},
	{"internal/field", only, ""},
	{"internal/dnsname", only, ""},
	// The pure decision core and the vocabulary it shares (failover/DESIGN.md); outside holds it to
	// no network client either.
	{"failover", only, "internal/field internal/dnsname"},
	// The parts the core decides from and acts through know nothing of it, of each other or of the
	// layers above.
	{"probes/...", never, "executor/... failover/... monitor/... watcher cluster/... dnsprovider/..."},
	{"dnsprovider/...", never, "executor/... failover/... monitor/... watcher cluster/... probes/..."},
	{"cluster/...", never, "executor/... failover/... monitor/... watcher dnsprovider/... probes/..."},
	// Monitors sit below the executors: a repair may read a monitor's findings (the OpenStack repairs
	// build cluster health's Neutron route-quota reader: openstack.RouteQuotaReader returns a
	// clusterhealth.RouteQuotaFunc), and a monitor never reaches an executor. It reaches its clusters
	// as the repairs do, through the leaves below both: internal/kubeconfig's cluster list and
	// connection (remediations.kubernetes) and internal/kubeapi's client.
	{"monitor/...", never, "executor/..."},
	// Executors and monitors are libraries the runtime drives: neither reaches up into it or the shell.
	{"executor/... monitor/...", never, "watcher cmd/..."},
	// The leader's loops act through the leadership interfaces the core declares, never the Raft plumbing,
	// and know the probes only by the results the core was given.
	{"executor/reconcile executor/drillrun executor/remediate/... monitor/...", never, "cluster/... probes/..."},
	// A drill's readiness checks verify the backup's TLS as the probes do and plan the remediations
	// read-only; they never reach the Raft plumbing (nor, as above, the watcher's runtime or the shell).
	{"executor/drill", never, "cluster/..."},
	// The repair extension point sits below every repair and imports none; the list of repairs
	// (executor/remediate/all) sits above them all, and no repair imports it.
	{"executor/remediate/repair", never, "executor/remediate/all executor/remediate/kube executor/remediate/openstack executor/remediate/octavia executor/remediate/debris"},
	{"executor/remediate/... -executor/remediate/all", neverInCode, "executor/remediate/all"},
	// The watcher's runtime (reports, the leader's loops) is a library the node wires; it may drive
	// the core, the parts, the executors and the monitors, but never reaches into the shell.
	{"watcher", never, "cmd/..."},
	// The shell: no library reaches up into it, and its parts depend one way.
	{"... -cmd/... -test/...", never, "cmd/..."},
	{"cmd/drwatch/config", never, "cmd/drwatch/api/... cmd/drwatch/node cmd/drwatch/demo"},
	{"cmd/drwatch/api", never, "cmd/drwatch/config cmd/drwatch/node cmd/drwatch/demo"},
	{"cmd/drwatch/api/apitest", never, "cmd/drwatch/api"},
	{"cmd/drwatch/node", never, "cmd/drwatch/demo"},
	// The binary and the demo may wire everything but the harness of the tests, which needs servers installed.
	{"cmd/drwatch cmd/drwatch/demo", neverInCode, "test/..."},
	// Test helpers serve tests only.
	{"... -test/...", neverInCode, "test/... cmd/drwatch/api/apitest dnsprovider/providertest executor/remediate/remediatetest"},
	// The real servers and tools tests run against owe nothing to drwatch.
	{"test/poll test/fakeclock test/daemon test/faultproxy test/idleconn test/caddytest test/dnsservers test/kubetest test/openstacktest", neverInCode, "cluster/... cmd/... dnsprovider/... executor/... failover/... internal/... monitor/... probes/... watcher"},
	{"test/clustertest", never, "cmd/... dnsprovider/... executor/... failover/... monitor/... probes/... watcher"},
	// The suites that check the product from outside run the binary and read files.
	{"test/e2e test/quickstart test/deploytest", never, "cmd/drwatch/node cmd/drwatch/demo"},
	{"test/promrules test/bench", never, "cluster/... cmd/... dnsprovider/... executor/... failover/... internal/... monitor/... probes/... watcher"},
	// The simulator runs the real parts the node wires (cluster, the core, the watcher's runtime) in one
	// process, never the shell.
	{"test/sim/...", never, "cmd/..."},
	{"test/importrules", never, "cluster/... cmd/... dnsprovider/... executor/... failover/... internal/... monitor/... probes/... test/... watcher"},
}

// outside is the rule for packages outside the module that a layer must
// not reach: no code of the packages a row holds depends on the listed
// import paths, directly or not ("path/..." is path and below it); tests
// may. Packages are selected as in rules.
var outside = []struct{ pkgs, deps, why string }{
	// client-go's typed clientset imports a client for every API group, and
	// each imports the scheme whose init registers all of k8s.io/api; so
	// does discovery. That is several MiB resident in every watcher, which
	// calls a handful of resources through internal/kubeapi.
	{"... -test/...", "k8s.io/client-go/kubernetes/... k8s.io/client-go/discovery/...",
		"call the cluster through internal/kubeapi, which registers only the groups it uses"},
	// The core does no I/O, never logs and exports no metric: replicas
	// must reach the same decision from the same log. The standard-library
	// rule above already keeps these out; this row names them, so a
	// loosened row cannot let one in unseen.
	{"failover", "github.com/gophercloud/... k8s.io/api/... k8s.io/apimachinery/... k8s.io/client-go/... github.com/miekg/dns/... github.com/libdns/... github.com/mittwald/go-powerdns/... github.com/hashicorp/raft/... github.com/hashicorp/go-hclog/... github.com/prometheus/...",
		"the core decides from the log alone: clients, Raft, loggers and metrics live in the layers above it"},
}

// TestCodeDependsOnNoCostlyOutsidePackage holds every package of the
// module to the rows of outside.
func TestCodeDependsOnNoCostlyOutsidePackage(t *testing.T) {
	pkgs := listModule(t)
	all := slices.Sorted(maps.Keys(pkgs))
	for _, r := range outside {
		t.Run(r.pkgs+" never-in-code "+r.deps, func(t *testing.T) {
			held, err := selectPackages(all, r.pkgs)
			if err != nil {
				t.Fatalf("packages: %v", err)
			}
			deps := strings.Fields(r.deps)
			// A misspelt path would hold nothing out: each must name a package.
			for _, d := range deps {
				if out, err := goList(t, "-e", "-f", "{{if not .Error}}{{.ImportPath}}{{end}}", d); err != nil || len(bytes.TrimSpace(out)) == 0 {
					t.Fatalf("dependencies: %q names no package (%v): remove or correct the row", d, err)
				}
			}
			for _, name := range held {
				p := pkgs[name]
				for _, d := range dedup(slices.Concat(p.Imports, p.Deps)) {
					if inAnyTree(deps, d) {
						t.Errorf("%s depends on %s, want no dependency on %s: %s", name, d, r.deps, r.why)
					}
				}
			}
		})
	}
}

// TestImportRules holds every package of the module to the rows of rules
// that name it.
func TestImportRules(t *testing.T) {
	pkgs := listModule(t)
	all := slices.Sorted(maps.Keys(pkgs))
	for _, r := range rules {
		t.Run(r.pkgs+" "+r.kind+" "+cmp.Or(r.deps, "stdlib"), func(t *testing.T) {
			held, err := selectPackages(all, r.pkgs)
			if err != nil {
				t.Fatalf("packages: %v", err)
			}
			deps := strings.Fields(r.deps)
			for _, d := range deps {
				if !matchesAny(all, d) {
					t.Fatalf("dependencies: %q names no package of %s: remove or correct the row", d, module)
				}
			}
			for _, name := range held {
				for _, msg := range check(pkgs[name], r.kind, deps) {
					t.Error(msg)
				}
			}
		})
	}
}

// TestRulesNameEveryPackage makes a new package take a position: every
// package of the module is held by a row other than the two that hold all
// of them.
func TestRulesNameEveryPackage(t *testing.T) {
	all := slices.Sorted(maps.Keys(listModule(t)))
	named := map[string]bool{}
	for _, r := range rules {
		if strings.HasPrefix(r.pkgs, "...") {
			continue
		}
		held, err := selectPackages(all, r.pkgs)
		if err != nil {
			t.Fatalf("row %q: %v", r.pkgs, err)
		}
		for _, p := range held {
			named[p] = true
		}
	}
	for _, p := range all {
		if !named[p] {
			t.Errorf("%s is held by no row of its own in rules: add one that says what it must never import (and say it in its doc.go)", p)
		}
	}
}

// check returns one message for each dependency of p that the rule forbids.
func check(p listedPackage, kind string, deps []string) []string {
	var msgs []string
	name := rel(p.ImportPath)
	code := dedup(slices.Concat(p.Imports, p.Deps))
	switch kind {
	case only:
		for _, d := range code {
			if isStd(d) {
				continue
			}
			if r, ok := local(d); ok && inAnyTree(deps, r) {
				continue
			}
			msgs = append(msgs, fmt.Sprintf("%s depends on %s, want the standard library%s only", name, rel(d), andList(deps)))
		}
	case never, neverInCode:
		for _, d := range code {
			if r, ok := local(d); ok && inAnyTree(deps, r) {
				msgs = append(msgs, fmt.Sprintf("%s depends on %s, want no dependency on %s", name, r, strings.Join(deps, " ")))
			}
		}
		if kind == never {
			for _, d := range dedup(slices.Concat(p.TestImports, p.XTestImports)) {
				if r, ok := local(d); ok && inAnyTree(deps, r) {
					msgs = append(msgs, fmt.Sprintf("the tests of %s import %s, want no dependency on %s", name, r, strings.Join(deps, " ")))
				}
			}
		}
	default:
		msgs = append(msgs, fmt.Sprintf("unknown kind %q, want %s, %s or %s", kind, only, never, neverInCode))
	}
	return msgs
}

// selectPackages returns the packages of all that the space-separated
// patterns hold, or an error naming a pattern that matches none.
func selectPackages(all []string, patterns string) ([]string, error) {
	var in, out []string
	for _, f := range strings.Fields(patterns) {
		pat, excluded := strings.CutPrefix(f, "-")
		if !matchesAny(all, pat) {
			return nil, fmt.Errorf("%q names no package of %s: remove or correct the row", pat, module)
		}
		if excluded {
			out = append(out, pat)
		} else {
			in = append(in, pat)
		}
	}
	var held []string
	for _, p := range all {
		if inAnyTree(in, p) && !inAnyTree(out, p) {
			held = append(held, p)
		}
	}
	return held, nil
}

// matchesAny reports whether pattern holds at least one of pkgs.
func matchesAny(pkgs []string, pattern string) bool {
	return slices.ContainsFunc(pkgs, func(p string) bool { return inTree(pattern, p) })
}

func inAnyTree(patterns []string, p string) bool {
	return slices.ContainsFunc(patterns, func(pat string) bool { return inTree(pat, p) })
}

// inTree reports whether module-relative package p is pattern or, for
// "dir/...", dir or below it.
func inTree(pattern, p string) bool {
	if pattern == "..." {
		return true
	}
	if dir, ok := strings.CutSuffix(pattern, "/..."); ok {
		return p == dir || strings.HasPrefix(p, dir+"/")
	}
	return p == pattern
}

const module = "github.com/drwatch/drwatch"

// local returns import path p relative to the module, and whether p is in
// the module at all (the standard library has internal/... too).
func local(p string) (string, bool) {
	return strings.CutPrefix(p, module+"/")
}

// rel is p relative to the module; a path outside it is returned whole.
func rel(p string) string {
	if r, ok := local(p); ok {
		return r
	}
	return p
}

func andList(deps []string) string {
	if len(deps) == 0 {
		return ""
	}
	return " and " + strings.Join(deps, " ")
}

func dedup(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

type listedPackage struct {
	ImportPath   string
	Imports      []string
	Deps         []string
	TestImports  []string
	XTestImports []string
}

// listModule runs `go list -e -json ./...` at the module root and returns
// the packages by module-relative path. -e keeps going when a sibling
// package is mid-edit, and GOPROXY=off keeps the test offline: the import
// lists of our own packages are all it needs.
func listModule(t *testing.T) map[string]listedPackage {
	t.Helper()
	stdout, err := goList(t, "-e", "-json=ImportPath,Imports,Deps,TestImports,XTestImports", "./...")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]listedPackage{}
	dec := json.NewDecoder(bytes.NewReader(stdout))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		out[rel(p.ImportPath)] = p
	}
	if len(out) == 0 {
		t.Fatal("go list ./...: got no packages, want the module's")
	}
	return out
}

// goList runs `go list args...` at the module root, offline, and returns
// its standard output, or an error carrying its standard error.
func goList(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go tool not found in PATH: %v (the import rule test runs `go list`)", err)
	}
	args = append([]string{"list"}, args...)
	cmd := exec.Command(gobin, args...)
	cmd.Dir = moduleRoot(t)
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=readonly")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// isStd reports whether an import path belongs to the standard library:
// its first element has no dot (vendor-free module mode).
func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("getwd: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no go.mod above the test directory")
		}
		dir = parent
	}
}
