# prometheus-blackbox-exporter (Debian): the cost benchmark's peer
# (test/e2e BenchmarkCostPerNode) probes the same Caddy at the same rate
# with it. The package ships an init script; the policy-rc.d that answers
# 101 ("action forbidden") keeps its postinst from starting a daemon on
# :9115 on a machine with no systemd; it is removed again if we created it.
present() { command -v prometheus-blackbox-exporter >/dev/null 2>&1; }
install() {
  local prc=/usr/sbin/policy-rc.d created=0 rc=0
  if [ ! -e "$prc" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$prc" && chmod 0755 "$prc" && created=1
  fi
  apt_install prometheus-blackbox-exporter || rc=$?
  if [ "$created" -eq 1 ]; then rm -f "$prc"; fi
  return "$rc"
}
