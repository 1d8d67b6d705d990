package octavia

import (
	"fmt"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/repair"
)

// Repair declares octavia-stuck-lb for the list in executor/remediate/all.
// It reaches Octavia with the credentials of its own section.
var Repair = repair.For(Name, "octavia_stuck_lb", []repair.Client{repair.OpenStack},
	func(c *OctaviaStuckLBConfig) *remediate.Settings { return &c.Settings },
	func(env repair.Env, _ remediate.Config, o OctaviaStuckLBConfig) (remediate.Entry, error) {
		lb, err := New(o, env.Log.With("remediation", Name))
		if err != nil {
			return remediate.Entry{}, fmt.Errorf("remediations.octavia_stuck_lb: %w", err)
		}
		return remediate.Entry{Remediator: lb, Settings: o.Settings}, nil
	})
