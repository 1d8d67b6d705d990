# Knot DNS 3.2: a second real RFC 2136 + TSIG server for the dnsprovider conformance suite.
present() { command -v knotd >/dev/null && command -v knotc >/dev/null && command -v kdig >/dev/null; }
install() { apt_install knot knot-dnsutils; }
