package clusterhealth

import (
	"slices"
	"testing"
	"time"

	"github.com/drwatch/drwatch/internal/field"
)

// Validate names each problem by its path inside the cluster_health
// section, for the config loader to prefix.
func TestConfigValidatePathsAreRelativeToTheSection(t *testing.T) {
	c := Config{Interval: time.Second, Timeout: 5 * time.Second, LBPendingAfter: -time.Minute, TerminatingAfter: -2 * time.Minute, CCMLease: "cloud-controller-manager", EventWindow: -time.Hour}
	want := field.Errors{
		{Path: "interval", Msg: "1s must be >= 10s"},
		{Path: "timeout", Msg: "5s must be > 0 and below interval (1s)"},
		{Path: "lb_pending_after", Msg: "-1m0s must be > 0"},
		{Path: "terminating_after", Msg: "-2m0s must be > 0"},
		{Path: "ccm_lease", Msg: `"cloud-controller-manager" must be namespace/name`},
		{Path: "event_window", Msg: "-1h0m0s must be > 0"},
	}
	if got := c.Defaulted().Validate(); !slices.Equal(got, want) {
		t.Errorf("got\n%v\nwant\n%v", got, want)
	}
	if got := (Config{}).Defaulted().Validate(); got != nil {
		t.Errorf("defaults: got %v, want no problem", got)
	}
}
