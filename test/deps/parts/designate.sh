# Designate 15 (Antelope; Debian 12 security update 1:15.0.2) for
# test/openstacktest's Options.Designate: designate-api, -central, -worker,
# -producer and -mdns, driving a private BIND9 (bind9.sh) through rndc. It
# runs on the MariaDB, RabbitMQ and Keystone of openstack.sh. The packages'
# postinst scripts ask debconf whether to configure a database
# (dbconfig-common) and register a Keystone endpoint: both are preseeded to
# "no", since the harness creates its own database and catalog entries. Their
# init scripts are kept from starting by a policy-rc.d that answers 101
# ("action forbidden"), removed again if we created it.
present() {
  [ -x /usr/bin/designate-api ] &&
    [ -x /usr/bin/designate-central ] &&
    [ -x /usr/bin/designate-worker ] &&
    [ -x /usr/bin/designate-producer ] &&
    [ -x /usr/bin/designate-mdns ] &&
    [ -x /usr/bin/designate-manage ] &&
    /usr/bin/python3 -c 'import designate.backend.impl_bind9, pymysql' >/dev/null 2>&1
}
install() {
  local prc=/usr/sbin/policy-rc.d created=0 rc=0
  if [ ! -e "$prc" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$prc" && chmod 0755 "$prc" && created=1
  fi
  if [ "$(id -u)" -eq 0 ]; then
    debconf-set-selections <<'SEL'
designate-common designate/configure_db boolean false
designate-api designate/register-endpoint boolean false
SEL
  fi
  apt_install designate-api designate-central designate-worker \
    designate-producer designate-mdns python3-pymysql || rc=$?
  if [ "$created" -eq 1 ]; then rm -f "$prc"; fi
  return "$rc"
}
