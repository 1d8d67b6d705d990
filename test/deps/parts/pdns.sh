# PowerDNS Authoritative 4.7 with the sqlite3 backend and HTTP API, for the
# libdns/powerdns adapter in the dnsprovider conformance suite.
present() { command -v pdns_server >/dev/null && command -v sqlite3 >/dev/null && [ -f /usr/share/pdns-backend-sqlite3/schema/schema.sqlite3.sql ]; }
install() { apt_install pdns-server pdns-backend-sqlite3 sqlite3; }
