# BIND9 9.18: authoritative RFC 2136 + TSIG server for the dnsprovider conformance
# suite (test/dnsservers) and the nsupdate baseline in the dnsprovider benchmark.
present() { command -v named >/dev/null && command -v nsupdate >/dev/null && command -v tsig-keygen >/dev/null && command -v named-checkconf >/dev/null; }
install() { apt_install bind9 bind9-dnsutils; }
