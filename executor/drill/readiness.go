package drill

import (
	"context"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/failover"
)

// Input is everything Readiness checks.
type Input struct {
	// Now is the clock the certificate reasons are worded with.
	Now time.Time
	// Certificates are the public names and the backup's addresses
	// (CertTargets); CertMinValidity is drill.cert_min_validity;
	// CertTimeout bounds each handshake (0: 10 s).
	Certificates    []CertTarget
	CertMinValidity time.Duration
	CertTimeout     time.Duration
	// Policy is the replicated policy (detection floor, records' TTL);
	// ProbeTimeout the longest critical probe timeout.
	Policy       failover.Policy
	ProbeTimeout time.Duration
	// Measured are the drill's step times (MeasuredFrom its record);
	// RTOBudget the budget (0: DefaultRTOBudget).
	Measured  Measured
	RTOBudget time.Duration
	// Remediations are built for a failover to the backup (see PlanCheck).
	Remediations []remediate.Entry
}

// defaultCertTimeout bounds one handshake when Input.CertTimeout is 0.
const defaultCertTimeout = 10 * time.Second

// Readiness runs every readiness check: one per public name's backup
// certificate, the TTL against the RTO budget, and the remediation plan.
func Readiness(ctx context.Context, in Input) []Check {
	timeout := in.CertTimeout
	if timeout <= 0 {
		timeout = defaultCertTimeout
	}
	out := CertificateChecks(ctx, in.Certificates, in.CertMinValidity, timeout, in.Now)
	out = append(out, TTLCheck(EstimateRTO(in.Policy, in.ProbeTimeout, in.Measured), in.RTOBudget))
	return append(out, PlanCheck(ctx, in.Remediations))
}
