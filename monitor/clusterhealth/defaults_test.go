package clusterhealth

import (
	"testing"
	"time"
)

// The `default` tags are the defaults the monitor runs with: a zero
// section gets the values the constants name, and timeout follows
// interval. Look-alike: a value set in the section is kept.
func TestDefaultedFollowsTheTags(t *testing.T) {
	want := Config{Interval: DefaultInterval, Timeout: DefaultTimeout, LBPendingAfter: DefaultLBPendingAfter,
		TerminatingAfter: DefaultTerminatingAfter, CCMLease: DefaultCCMLease, EventWindow: DefaultEventWindow}
	if got := (Config{}).Defaulted(); got != want {
		t.Errorf("zero section: got %+v, want %+v", got, want)
	}
	got := Config{Interval: 30 * time.Second, CCMLease: "ns/ccm"}.Defaulted()
	if got.Timeout != 15*time.Second || got.Interval != 30*time.Second || got.CCMLease != "ns/ccm" {
		t.Errorf("interval 30s, ccm_lease ns/ccm: got %+v, want timeout 15s and both kept", got)
	}
}
