package repair_test

import (
	"errors"
	"testing"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/repair"
)

// A config that does not hold a listed repair's section is refused with
// ErrNoSection naming the section, instead of building the repair from
// nothing; the repair whose section it holds is found by its key.
func TestAssembleRefusesARepairWhoseSectionIsMissing(t *testing.T) {
	found := repair.For("stale-leases", "stale_leases", nil,
		func(c *staleLeasesConfig) *remediate.Settings { return &c.Settings },
		func(repair.Env, remediate.Config, staleLeasesConfig) (remediate.Entry, error) {
			return remediate.Entry{Remediator: staleLeases{}}, nil
		})
	missing := found
	missing.Name, missing.Section = "old-leases", "old_leases"

	cfg := config{StaleLeases: staleLeasesConfig{Settings: remediate.Settings{Mode: remediate.ModeDryRun}}}
	if s := repair.SectionOf(&cfg, found); s != &cfg.StaleLeases {
		t.Fatalf("SectionOf stale_leases: got %v, want the config's field", s)
	}
	if es, err := repair.Assemble(&cfg, []repair.Repair{found}, repair.Env{}); err != nil || len(es) != 1 {
		t.Fatalf("got %d entries, %v; want stale-leases built", len(es), err)
	}
	_, err := repair.Assemble(&cfg, []repair.Repair{found, missing}, repair.Env{})
	if !errors.Is(err, repair.ErrNoSection) || err.Error() != "old-leases: no section in the config: remediations.old_leases" {
		t.Fatalf("got %v, want ErrNoSection naming remediations.old_leases", err)
	}
}

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
