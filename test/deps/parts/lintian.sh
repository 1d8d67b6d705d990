# lintian, Debian's package checker, and systemd-analyze (package systemd) for
# the Debian package test in test/deploytest: `make deb` builds the package,
# lintian must find no error or warning in it, and systemd-analyze verify
# checks the unit it installs (dpkg itself is in every Debian system).
present() { command -v lintian >/dev/null && command -v systemd-analyze >/dev/null && command -v dpkg-deb >/dev/null; }
install() { apt_install lintian systemd; }
