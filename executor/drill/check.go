package drill

// Check is one readiness check of a drill: its name, whether it passed,
// and why, with the numbers. Its fields are those of the drill executor's
// failover.DrillCheck, in the same order, so one converts to the other.
type Check struct {
	Name   string `json:"name"`
	Pass   bool   `json:"pass"`
	Reason string `json:"reason"`
}

// Metric names of the drills. The drill executor registers them; the
// alert rules and the dashboard in deploy/ rely on these names.
const (
	// MetricLastSuccess is a gauge: unix seconds of the last drill that
	// passed, 0 while none has.
	MetricLastSuccess = "drwatch_drill_last_success_timestamp_seconds"
	// MetricRTO is a gauge by step: the last drill's measured step times
	// (commit, write, each server's propagation) and its estimate.
	MetricRTO = "drwatch_drill_rto_seconds"
	// MetricFailures is a counter of drills that failed.
	MetricFailures = "drwatch_drill_failures_total"
	// MetricSchedule is a gauge: drill.schedule in seconds, 0 when
	// scheduled drills are off. DrwatchDrillOverdue needs it.
	MetricSchedule = "drwatch_drill_schedule_seconds"
)
