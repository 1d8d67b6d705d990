//go:build !linux

package caddytest

import "syscall"

// sysProcAttr puts caddy in its own process group, so Stop kills only it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
