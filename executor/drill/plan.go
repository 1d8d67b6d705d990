package drill

import (
	"context"
	"fmt"
	"strings"

	"github.com/drwatch/drwatch/executor/remediate"
)

// PlanCheck computes, read-only, the actions of the remediations for a
// failover to the backup and lists them, one line each, in its reason:
// remediation, mode, verb, target and why (report-only and held actions
// say they would not be applied). entries must be built with a decision
// that makes the backup active (remediate.Decision{Active: failover.Backup}),
// so that backup-side repairs plan as after a flip. Plan never writes
// (remediate.PlanAll). It passes when every enabled remediation could
// plan; an error of one fails it, naming the remediation.
func PlanCheck(ctx context.Context, entries []remediate.Entry) Check {
	c := Check{Name: "remediation plan", Pass: true}
	if len(entries) == 0 {
		c.Reason = "no remediation is enabled: a failover to the backup runs none"
		return c
	}
	mode := map[string]remediate.Mode{}
	for _, e := range entries {
		mode[e.Remediator.Name()] = e.Settings.Mode
	}
	planned, err := remediate.PlanAll(ctx, entries)
	lines := []string{fmt.Sprintf("%d action(s) planned for a failover to the backup (dry run, nothing written)", len(planned))}
	for _, a := range planned {
		m, why := string(mode[a.Remediation]), a.Reason
		switch {
		case a.ReportOnly != "":
			m, why = "report-only", a.Reason+"; not applied: "+a.ReportOnly
		case a.Held != "":
			m, why = "held", a.Reason+"; not applied: "+a.Held
		}
		lines = append(lines, fmt.Sprintf("%s (%s): %s %s: %s", a.Remediation, m, a.Verb, a.Target, why))
	}
	if err != nil {
		c.Pass = false
		lines = append(lines, "could not plan: "+err.Error())
	}
	c.Reason = strings.Join(lines, "\n")
	return c
}
