package node

import (
	"context"
	"log/slog"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/config"
	"github.com/drwatch/drwatch/executor/drill"
	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/failover"
)

// DrillReadiness builds the readiness checks a drill runs, from the node's
// config and its replica m: the backup's certificate for every public
// name (the https probes' hosts, at the backup's address) with at least
// certMinValidity left, the records' TTL with the detection floor against
// rtoBudget (0: drill.DefaultRTOBudget), with the commit, write and
// propagation the ending drill measured, and the remediations' dry-run
// plan as if the backup were active. The remediators are built once, here,
// with their own clients; the returned function builds nothing and writes
// nothing.
func DrillReadiness(c *config.Config, m *failover.Machine, certMinValidity, rtoBudget time.Duration, log *slog.Logger, now func() time.Time) (func(context.Context, failover.DrillRecord) []drill.Check, error) {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	afterFailover := func() remediate.Decision {
		return remediate.Decision{Gen: max(1, m.Desired().Gen), Active: failover.Backup}
	}
	fixes, err := remediatorsFor(c, afterFailover, log, now)
	if err != nil {
		return nil, err
	}
	sites := c.ProbedSites().Specs()
	probeTimeout := c.ProbedSites().CriticalProbeTimeout()
	return func(ctx context.Context, d failover.DrillRecord) []drill.Check {
		policy := c.ReplicatedPolicy()
		if p := m.View().Policy; p != nil {
			policy = *p // the replicated one decides, as in a real failover
		}
		return drill.Readiness(ctx, drill.Input{
			Now: now(), Certificates: drill.CertTargets(sites, policy), CertMinValidity: certMinValidity,
			Policy: policy, ProbeTimeout: probeTimeout, Measured: drill.MeasuredFrom(d), RTOBudget: rtoBudget, Remediations: fixes,
		})
	}, nil
}
