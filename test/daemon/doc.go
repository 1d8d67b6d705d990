// Package daemon starts and stops the real servers the integration tests
// use, each in its own process group: stopping kills every child (uwsgi
// workers, Erlang's beam), and Pdeathsig kills the daemon if the test binary
// itself dies, so no test run leaves servers behind.
//
// It imports no drwatch package outside test/ (its tests may): what the
// tests run against owes nothing to the code under test. Only tests import
// it, never the code of a package outside test/.
package daemon
