package daemon

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/drwatch/drwatch/test/poll"
)

// Options configure Start.
type Options struct {
	// LogPath receives the daemon's stdout and stderr (appended, mode 0600).
	LogPath string
	// Dir is the working directory; empty keeps the caller's.
	Dir string
	// Env is added to the test's environment.
	Env []string
}

// Process is one running daemon.
type Process struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// Start runs bin with args in a new process group.
func Start(bin string, args []string, o Options) (*Process, error) {
	logf, err := os.OpenFile(o.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = o.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	if o.Env != nil {
		cmd.Env = append(os.Environ(), o.Env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the daemon's process (and process group) ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the daemon has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the daemon has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends TERM to the process group, waits up to grace, then KILLs the
// group (children may linger after a clean exit) and waits until no process
// of the group runs: a worker still dying would hold the listening socket,
// and a client would see its connection reset instead of refused.
func (p *Process) Stop(grace time.Duration) {
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
	}
	p.Kill()
}

// Kill sends KILL to the process group at once, as a crash would, and
// waits until no process of the group runs (zombies aside: they hold no
// socket).
func (p *Process) Kill() {
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.done
	poll.WithinEvery(10*time.Second, 5*time.Millisecond, func() bool { return !groupRunning(pgid) })
}

// groupRunning reports whether a process of group pgid is alive and not a
// zombie, from /proc/<pid>/stat ("pid (comm) state ppid pgrp ...").
func groupRunning(pgid int) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:]) // state ppid pgrp ...
		if len(f) >= 3 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" && f[0] != "X" {
			return true
		}
	}
	return false
}

// Tail returns the last n lines of a log file, for error messages.
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
