package sim

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A panic in a goroutine of a run (raft's processLogs panicking, say)
// ends the process before the harness can report: the crash output and
// the in-flight file must still name the schedule, with its replay line.
// A schedule that ended normally is no longer listed.
func TestPanicInARunNamesItsSchedule(t *testing.T) {
	if os.Getenv("SIM_TEST_PANIC") == "1" {
		if o := runOne(t, Generate(3), nil); o.failure != "" {
			t.Fatalf("seed 3: %s", o.failure)
		}
		bubbleHook = func() { panic("log not found") }
		runOne(t, Generate(77), []int{2})
		t.Fatal("the run's panic did not end the process")
	}
	file := filepath.Join(t.TempDir(), "inflight")
	cmd := exec.Command(os.Args[0], "-test.run=^TestPanicInARunNamesItsSchedule$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SIM_TEST_PANIC=1", "SIM_INFLIGHT="+file, "GODEBUG=")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("child: err %v, want it to die of the panic\n%s", err, out)
	}
	replay := replayLine(77, []int{2})
	for _, want := range []string{"panic: log not found", `"sim_seed": "77"`, `"sim_replay": "` + replay + `"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("crash output lacks %q:\n%s", want, out)
		}
	}
	listed, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("in-flight file: %v", err)
	}
	if string(listed) != replay+"\n" {
		t.Errorf("in-flight file lists %q, want the running schedule's replay line %q", listed, replay+"\n")
	}
}

// SIM_REPEAT runs each seed that many times in a row before the next.
func TestRepeatRunsEachSeedInARow(t *testing.T) {
	for _, tc := range []struct {
		repeat int
		want   []uint64
	}{
		{1, []uint64{10, 11, 12, 13, 14, 15}},
		{3, []uint64{10, 10, 10, 11, 11, 11}},
	} {
		var got []uint64
		for j := range uint64(6) {
			got = append(got, seedOfRun(10, tc.repeat, j))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("repeat %d: runs 0..5 play seeds %v, want %v", tc.repeat, got, tc.want)
		}
	}
}
