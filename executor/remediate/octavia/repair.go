package octavia

import (
	"fmt"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/repair"
)

// Repair declares octavia-stuck-lb for the list in executor/remediate/all.
// It reaches Octavia with the credentials of its own section.
var Repair = repair.Repair{Name: Name, Section: "octavia_stuck_lb",
	Needs:    []repair.Client{repair.OpenStack},
	Settings: func(c *remediate.Config) *remediate.Settings { return &c.OctaviaStuckLB.Settings },
	Build: func(env repair.Env, cfg remediate.Config) (remediate.Entry, error) {
		o := cfg.OctaviaStuckLB
		lb, err := New(o, env.Log.With("remediation", Name))
		if err != nil {
			return remediate.Entry{}, fmt.Errorf("remediations.octavia_stuck_lb: %w", err)
		}
		return remediate.Entry{Remediator: lb, Settings: o.Settings}, nil
	}}
