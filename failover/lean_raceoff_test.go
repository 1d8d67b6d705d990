//go:build !race

package failover

// leanRandomSchedules is how many random schedules the lean equivalence
// test replays by default.
const leanRandomSchedules = 4
