package watcher

import (
	"os/exec"
	"strings"
	"testing"
)

// The runtime is a library that cmd builds: it must never depend on the
// CLI, the config file or the HTTP API, directly or transitively, nor from
// its tests.
func TestWatcherImportsNoCommand(t *testing.T) {
	const cmd = "github.com/drwatch/drwatch/cmd/"
	out, err := exec.Command("go", "list", "-e", "-deps", "-test", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps -test: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, cmd) {
			t.Errorf("internal/watcher depends on %s, want nothing under cmd/", dep)
		}
	}
}
