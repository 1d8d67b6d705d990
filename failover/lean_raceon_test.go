//go:build race

package failover

// leanRandomSchedules is how many random schedules the lean equivalence
// test replays by default: one under -race, which slows its JSON thirtyfold.
const leanRandomSchedules = 1
