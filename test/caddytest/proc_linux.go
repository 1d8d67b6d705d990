package caddytest

import "syscall"

// sysProcAttr puts caddy in its own process group (so Stop kills only it and
// its children) and kills it if the test binary dies without cleaning up.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
