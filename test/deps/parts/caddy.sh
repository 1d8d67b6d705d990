# Caddy 2.6 from Debian: the real HTTPS endpoint (tls internal) of test/caddytest,
# used by the probes tests and the end-to-end suite. The package's systemd unit
# never starts here (no systemd); tests run their own caddy on 127.0.0.1.
present() { command -v caddy >/dev/null 2>&1 && caddy version >/dev/null 2>&1; }
install() { apt_install caddy; }
