// Package idleconn opens idle connections from chosen loopback source
// addresses, for tests of how a server budgets them: TCP connections that
// have not sent anything yet, and HTTPS ones kept alive after a request.
//
// It imports no drwatch package outside test/ (its tests may): what the
// tests run against owes nothing to the code under test. Only tests import
// it, never the code of a package outside test/.
package idleconn
