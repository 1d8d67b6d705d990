// Package poll is how tests wait: they check a condition every tick until
// it holds or a deadline passes, and never sleep in the hope that
// something has happened.
//
// It imports no drwatch package outside test/ (its tests may): what the
// tests run against owes nothing to the code under test. Only tests import
// it, never the code of a package outside test/.
package poll
