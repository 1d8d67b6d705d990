// Package fakeclock is a clock that tests move by hand: its Now is what a
// component under test takes in place of time.Now, and the test steps it
// with Add instead of sleeping.
//
// It imports no drwatch package. Only tests import it, never the code of a
// package outside test/.
package fakeclock
