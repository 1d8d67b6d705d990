// Package caddytest starts a real Caddy (the Debian package caddy) for tests:
// an HTTPS site with `tls internal` on 127.0.0.1 and a free high port, with
// a few fixed routes, its own storage and admin off, so that several can run
// at once. Stop and Start simulate a killed and restarted Caddy.
//
// Routes, on every host name of the site:
//
//	/heartbeat      200 "ok <name>"
//	/broken         503 "broken"
//	/redirect       302 to /heartbeat (same host)
//	/redirect-away  302 to https://elsewhere.example.test/heartbeat
//	anything else   200 "hello from <name>"
//
// When caddy is not installed, Start fails the test naming the package; it
// never skips.
//
// It imports no drwatch package outside test/ (its tests may): what the
// tests run against owes nothing to the code under test. Only tests import
// it, never the code of a package outside test/.
package caddytest
