package failover

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportRules enforces the package map of DESIGN.md §3: failover imports
// only the standard library and pure stdlib-only leaf packages, and probes, dnsprovider and cluster never
// import failover (directly, transitively, or from their tests).
func TestImportRules(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go tool not found in PATH: %v (the import rule test runs `go list`)", err)
	}
	root := moduleRoot(t)
	const self = module + "/failover"

	t.Run("failover imports only stdlib and pure leaf packages", func(t *testing.T) {
		for _, p := range goList(t, gobin, root, "./failover") {
			for _, dep := range append(p.Deps, p.Imports...) {
				if isStd(dep) || dep == self || leafPackages[dep] {
					continue
				}
				t.Errorf("%s depends on %s, want the standard library and %v only", p.ImportPath, dep, leafPackages)
			}
		}
	})

	t.Run("the leaf packages failover may import import only stdlib", func(t *testing.T) {
		for leaf := range leafPackages {
			for _, p := range goList(t, gobin, root, "./"+strings.TrimPrefix(leaf, module+"/")) {
				for _, dep := range append(p.Deps, p.Imports...) {
					if !isStd(dep) {
						t.Errorf("%s depends on %s, want the standard library only", p.ImportPath, dep)
					}
				}
			}
		}
	})

	t.Run("probes, dnsprovider and cluster never import failover", func(t *testing.T) {
		var dirs []string
		for _, d := range []string{"probes", "dnsprovider", "cluster"} {
			if _, err := os.Stat(filepath.Join(root, d)); err == nil {
				dirs = append(dirs, "./"+d+"/...")
			}
		}
		if len(dirs) == 0 {
			t.Fatalf("got none of probes/, dnsprovider/, cluster/ under %s, want them to exist", root)
		}
		for _, p := range goList(t, gobin, root, dirs...) {
			all := append(append(append(append([]string{}, p.Imports...), p.Deps...), p.TestImports...), p.XTestImports...)
			for _, dep := range all {
				if dep == self || strings.HasPrefix(dep, self+"/") {
					t.Errorf("%s imports %s, want no dependency on failover", p.ImportPath, dep)
				}
			}
		}
	})

	t.Run("openstackauth imports neither failover, probes nor cmd", func(t *testing.T) {
		for _, p := range goList(t, gobin, root, "./internal/openstackauth/...") {
			all := append(append(append(append([]string{}, p.Imports...), p.Deps...), p.TestImports...), p.XTestImports...)
			for _, dep := range all {
				for _, banned := range []string{self, module + "/probes", module + "/cmd"} {
					if dep == banned || strings.HasPrefix(dep, banned+"/") {
						t.Errorf("%s imports %s, want none of failover, probes, cmd", p.ImportPath, dep)
					}
				}
			}
		}
	})
}

const module = "github.com/drwatch/drwatch"

// leafPackages are the only packages of ours the decision core may import:
// pure, stdlib-only vocabulary shared with the rest (the field errors every
// configuration section returns). The test below holds them to that.
var leafPackages = map[string]bool{
	module + "/internal/field": true,
}

type listedPackage struct {
	ImportPath   string
	Standard     bool
	Imports      []string
	Deps         []string
	TestImports  []string
	XTestImports []string
}

// goList runs `go list -e -json` on patterns. -e keeps going when a sibling
// package is mid-edit or a module is not in the cache, and GOPROXY=off keeps
// the test offline: the import lists of our own packages are all it needs.
func goList(t *testing.T, gobin, root string, patterns ...string) []listedPackage {
	t.Helper()
	args := append([]string{"list", "-e", "-json=ImportPath,Standard,Imports,Deps,TestImports,XTestImports"}, patterns...)
	cmd := exec.Command(gobin, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=readonly")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var out []listedPackage
	dec := json.NewDecoder(&stdout)
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		t.Fatalf("go list %v: got no packages, want some", patterns)
	}
	return out
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
