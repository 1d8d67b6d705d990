# Keystone + Octavia API + octavia-worker (with MariaDB and RabbitMQ) for
# test/openstacktest. Debian 12 packages; no systemd unit is ever started
# (policy-rc.d refuses, and the harness runs every daemon itself).
present() {
  command -v keystone-manage >/dev/null 2>&1 &&
    [ -x /usr/bin/keystone-wsgi-public ] &&
    command -v octavia-wsgi >/dev/null 2>&1 &&
    command -v octavia-worker >/dev/null 2>&1 &&
    command -v octavia-db-manage >/dev/null 2>&1 &&
    command -v uwsgi >/dev/null 2>&1 &&
    [ -e /usr/lib/uwsgi/plugins/python3_plugin.so ] &&
    command -v mariadbd >/dev/null 2>&1 &&
    command -v mariadb-install-db >/dev/null 2>&1 &&
    [ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] &&
    command -v epmd >/dev/null 2>&1 &&
    /usr/bin/python3 -c 'import pymysql' >/dev/null 2>&1
}
install() {
  apt_install keystone octavia-api octavia-worker uwsgi-plugin-python3 \
    mariadb-server python3-pymysql rabbitmq-server
}
