package demo

import (
	"strings"
	"testing"

	"github.com/drwatch/drwatch/failover"
)

// TestStatusLineBeforeFirstReports: the demo's running status line says
// it waits for the first reports instead of printing empty verdicts.
func TestStatusLineBeforeFirstReports(t *testing.T) {
	got := statusLine(failover.View{Active: failover.Primary}, "203.0.113.10")
	if !strings.Contains(got, "waiting for the first reports") || strings.Contains(got, "primary , backup ;") {
		t.Errorf("before any report: got %q, want it to say it is waiting for the first reports", got)
	}
	v := failover.View{Active: failover.Primary, Nodes: []failover.NodeView{{Node: "a", Reported: true}},
		Sites: map[failover.Site]failover.Tally{failover.Primary: {Verdict: failover.Up}, failover.Backup: {Verdict: failover.Up}}}
	if got := statusLine(v, "203.0.113.10"); !strings.Contains(got, "primary UP, backup UP;") {
		t.Errorf("after a report: got %q, want the verdicts", got)
	}
}
