# promtool (from Debian's prometheus package): test/promrules runs
# `promtool check rules` and `promtool test rules` on deploy/prometheus.
# The package ships a Prometheus server with an init script; on a machine
# with no systemd, invoke-rc.d could start it from the postinst and leave a
# daemon listening on :9090 on every interface. A policy-rc.d that answers
# 101 ("action forbidden") stops that; it is removed again if we created it.
present() { command -v promtool >/dev/null 2>&1 && promtool --version >/dev/null 2>&1; }
install() {
  local prc=/usr/sbin/policy-rc.d created=0 rc=0
  if [ ! -e "$prc" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$prc" && chmod 0755 "$prc" && created=1
  fi
  apt_install prometheus || rc=$?
  if [ "$created" -eq 1 ]; then rm -f "$prc"; fi
  return "$rc"
}
