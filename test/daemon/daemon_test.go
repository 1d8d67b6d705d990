package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drwatch/drwatch/test/poll"
)

// Stop reaches the whole process group: a child that ignores TERM and
// outlives its parent is killed too.
func TestStopKillsTheGroup(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "d.log")
	pidFile := filepath.Join(dir, "child.pid")
	p, err := Start("/bin/sh", []string{"-c", `echo started; sh -c 'trap "" TERM; echo $$ > ` + pidFile + `; while :; do sleep 1; done' & wait`}, Options{LogPath: log})
	if err != nil {
		t.Fatal(err)
	}
	var child int
	if !poll.WithinEvery(10*time.Second, 10*time.Millisecond, func() bool {
		if b, err := os.ReadFile(pidFile); err == nil {
			child, _ = parseInt(strings.TrimSpace(string(b)))
		}
		return child != 0
	}) {
		t.Fatal("child never started")
	}
	pgid := p.Pid()
	if !groupRunning(pgid) {
		t.Fatal("groupRunning sees no process of a running group")
	}
	p.Stop(200 * time.Millisecond)
	if !p.Exited() {
		t.Error("Exited is false after Stop")
	}
	if groupRunning(pgid) {
		t.Error("a process of the group still runs after Stop returned")
	}
	// The kernel reaps the killed child asynchronously.
	if !poll.WithinEvery(5*time.Second, 10*time.Millisecond, func() bool { return syscall.Kill(child, 0) != nil }) {
		t.Errorf("child %d survived Stop", child)
	}
	if got := Tail(log, 1); got != "started" {
		t.Errorf("Tail: got %q, want started", got)
	}
}

// Kill is a crash: the daemon gets no TERM to clean up on. A daemon that
// would write "clean exit" on TERM never writes it.
func TestKillIsACrash(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "d.log")
	p, err := Start("/bin/sh", []string{"-c", `trap 'echo clean exit; exit 0' TERM; echo started; while :; do sleep 1; done`}, Options{LogPath: log})
	if err != nil {
		t.Fatal(err)
	}
	poll.UntilEvery(t, 10*time.Second, 10*time.Millisecond, func() bool { return Tail(log, 1) == "started" }, "the daemon has started")
	p.Kill()
	if !p.Exited() {
		t.Error("Exited is false after Kill")
	}
	if got := Tail(log, 1); got != "started" {
		t.Errorf("last log line after Kill: got %q, want started (no TERM handler ran)", got)
	}
}

func parseInt(s string) (int, bool) {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, s != ""
}
