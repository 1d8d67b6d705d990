# Nova (API, conductor, scheduler, compute with the fake virt driver) and
# Placement for test/openstacktest with Options.Nova. Debian 12 packages; no
# systemd unit is ever started (policy-rc.d refuses, and the harness runs
# every daemon itself). MariaDB, RabbitMQ, Keystone and uwsgi come from
# openstack.sh.
present() {
  command -v nova-manage >/dev/null 2>&1 &&
    [ -x /usr/bin/nova-api-wsgi ] &&
    [ -e /etc/nova/api-paste.ini ] &&
    command -v nova-conductor >/dev/null 2>&1 &&
    command -v nova-scheduler >/dev/null 2>&1 &&
    command -v nova-compute >/dev/null 2>&1 &&
    command -v placement-manage >/dev/null 2>&1 &&
    [ -x /usr/bin/placement-api ]
}
install() {
  apt_install nova-api nova-conductor nova-scheduler nova-compute placement-api
}
