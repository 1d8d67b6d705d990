//go:build !race

package sim

// raceEnabled says the test binary was built with -race, so a replay
// line asks for it too.
const raceEnabled = false
