// Package idleconn opens idle TCP connections from chosen loopback source
// addresses, for tests of how a server budgets connections that have not
// authenticated yet.
//
// It imports no drwatch package outside test/ (its tests may): what the
// tests run against owes nothing to the code under test. Only tests import
// it, never the code of a package outside test/.
package idleconn
