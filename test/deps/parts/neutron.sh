# neutron-server 21 (Zed) for test/openstacktest's Options.Neutron: the
# eventlet neutron-server with the ML2 core plugin (in python3-neutron; Debian
# 12 has no separate neutron-plugin-ml2 package) and the router service
# plugin, migrated by neutron-db-manage. It runs on the MariaDB, RabbitMQ and
# Keystone of openstack.sh. neutron-server pulls in neutron-api, whose init
# script invoke-rc.d could start from the postinst on a machine with no
# systemd: a policy-rc.d that answers 101 ("action forbidden") stops that, and
# is removed again if we created it.
present() {
  [ -x /usr/bin/neutron-server ] &&
    [ -x /usr/bin/neutron-db-manage ] &&
    [ -e /etc/neutron/api-paste.ini ] &&
    /usr/bin/python3 -c 'import neutron.plugins.ml2, pymysql' >/dev/null 2>&1
}
install() {
  local prc=/usr/sbin/policy-rc.d created=0 rc=0
  if [ ! -e "$prc" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$prc" && chmod 0755 "$prc" && created=1
  fi
  apt_install neutron-server python3-pymysql || rc=$?
  if [ "$created" -eq 1 ]; then rm -f "$prc"; fi
  return "$rc"
}
