package repair_test

import (
	"testing"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/repair"
)

// Defaults and Validate reach the sections of the config: the tags'
// defaults are set, and a section's problem is named under its key, after
// the problems of the part that belongs to no repair.
func TestSectionsAreDefaultedAndValidatedUnderTheirKey(t *testing.T) {
	var cfg config
	repair.Defaults(&cfg)
	if cfg.StaleLeases.Site != "primary" || cfg.StaleLeases.MaxPerPass != remediate.DefaultMaxPerPass || cfg.Interval != remediate.DefaultInterval {
		t.Fatalf("got %+v, want the tags' defaults", cfg)
	}
	cfg.StaleLeases.Site = "moon"
	cfg.Interval = -1
	got := repair.Validate(&cfg)
	if len(got) != 2 || got[0].Path != "interval" || got[1].Path != "stale_leases.site" {
		t.Fatalf("got %v, want interval, then stale_leases.site", got)
	}
}
