// Package deploytest checks the deployment files in deploy/ that no test
// could otherwise run here: the systemd unit keeps its hardening directives,
// and the Dockerfile keeps building a static, non-root, minimal image stamped
// with the Makefile's -ldflags. Neither systemd (as PID 1) nor a container
// engine runs on the development machines, so these tests read the files.
//
// The Debian package is the exception: it is built with `make deb` and
// really installed, upgraded, removed and purged with dpkg on the test
// machine (as root, serialised by a lock, refusing to run beside a real
// drwatch), with lintian and systemd-analyze verify as its checkers.
//
// It reads files (and checks the example configs with cmd/drwatch/config),
// so it never imports cmd/drwatch/node or cmd/drwatch/demo.
package deploytest
