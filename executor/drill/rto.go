package drill

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/drwatch/drwatch/failover"
)

// ServerPropagation is how long after the write one authoritative server
// first served the new answer.
type ServerPropagation struct {
	Server string
	After  time.Duration
}

// Measured are a drill's step times: the Drill command's commit through
// Raft, the canary write (compare-and-swap included), and each
// authoritative server's propagation, measured from the write.
type Measured struct {
	Commit      time.Duration
	Write       time.Duration
	Propagation []ServerPropagation
	// OK is set when the drill wrote and verified the canary, so the
	// times above were measured; a drill that did not has none to add.
	OK bool
}

// MeasuredFrom reads a drill's step times from its record.
func MeasuredFrom(d failover.DrillRecord) Measured {
	t, ok := d.Times()
	m := Measured{Commit: t.Commit, Write: t.Write, OK: ok}
	for _, s := range t.Servers {
		m.Propagation = append(m.Propagation, ServerPropagation{Server: s.Server, After: s.After})
	}
	if ok && len(m.Propagation) == 0 {
		m.Propagation = []ServerPropagation{{Server: "all servers", After: t.Propagation}}
	}
	return m
}

// RTO is the time a real failover would take now to reach most clients,
// in its parts.
type RTO struct {
	// DetectionMin and DetectionMax are the policy's detection floor:
	// (fall-1)×fast_interval to fall×interval plus the probe timeout.
	DetectionMin, DetectionMax time.Duration
	// DecisionAndWrite is the measured commit plus write.
	DecisionAndWrite time.Duration
	// Propagation is the slowest server's, measured.
	Propagation time.Duration
	// Servers are the measured per-server times, sorted by server.
	Servers []ServerPropagation
	// TTL is the longest TTL of the records: a resolver that cached the
	// old answer just before the write keeps it that long.
	TTL time.Duration
	// Total is DetectionMax + DecisionAndWrite + Propagation + TTL: every
	// client that honours the TTL has the new answer by then (some
	// clients cache longer than the TTL, hence "most").
	Total time.Duration
	// Measured is false when the drill measured no decision, write or
	// propagation (it did not write and verify the canary): Total is then
	// detection and TTL only.
	Measured bool
}

// EstimateRTO combines a drill's measured steps with the policy's
// detection floor (probeTimeout: the longest timeout of a critical probe)
// and the records' longest TTL.
func EstimateRTO(p failover.Policy, probeTimeout time.Duration, m Measured) RTO {
	r := RTO{DecisionAndWrite: m.Commit + m.Write, Servers: slices.Clone(m.Propagation), TTL: longestTTL(p), Measured: m.OK}
	r.DetectionMin, r.DetectionMax = p.DetectionFloor(probeTimeout)
	slices.SortFunc(r.Servers, func(a, b ServerPropagation) int { return strings.Compare(a.Server, b.Server) })
	for _, s := range r.Servers {
		r.Propagation = max(r.Propagation, s.After)
	}
	r.Total = r.DetectionMax + r.DecisionAndWrite + r.Propagation + r.TTL
	return r
}

func longestTTL(p failover.Policy) time.Duration {
	var ttl time.Duration
	for _, r := range p.Records {
		ttl = max(ttl, time.Duration(r.TTL)*time.Second)
	}
	return ttl
}

// String is the sentence a drill reports (failover.DrillRTO.Summary).
func (r RTO) String() string {
	return failover.DrillRTO{Detection: r.DetectionMax, Decision: r.DecisionAndWrite, Propagation: r.Propagation, TTL: r.TTL}.Summary()
}

// DefaultRTOBudget is the RTO budget when none is configured.
const DefaultRTOBudget = 5 * time.Minute

// TTLCheck compares the records' TTL, with the rest of the failover (the
// detection floor, the measured decision and write, the slowest server's
// propagation), against the RTO budget (DefaultRTOBudget when 0): it
// passes when detection ≤ max + decision and write + propagation + TTL
// fits in the budget. The reason gives every number.
func TTLCheck(r RTO, budget time.Duration) Check {
	if budget <= 0 {
		budget = DefaultRTOBudget
	}
	c := Check{Name: "ttl vs rto budget", Pass: r.TTL > 0 && r.Total <= budget}
	if r.TTL == 0 {
		c.Reason = "no record has a TTL: nothing to compare with the RTO budget"
		return c
	}
	verdict := "within"
	if !c.Pass {
		verdict = "over"
	}
	if r.Measured {
		c.Reason = fmt.Sprintf("TTL %s + detection ≤ %s + decision and write %s + propagation %s = %s, %s the RTO budget %s (drill.rto_budget)",
			failover.SecondsText(r.TTL), failover.SecondsText(r.DetectionMax), failover.SecondsText(r.DecisionAndWrite), failover.SecondsText(r.Propagation), failover.SecondsText(r.Total), verdict, failover.SecondsText(budget))
	} else {
		c.Reason = fmt.Sprintf("TTL %s + detection ≤ %s = %s, %s the RTO budget %s (drill.rto_budget); decision, write and propagation not measured: the drill did not write and verify the canary",
			failover.SecondsText(r.TTL), failover.SecondsText(r.DetectionMax), failover.SecondsText(r.Total), verdict, failover.SecondsText(budget))
	}
	if !c.Pass {
		if rest := r.Total - r.TTL; rest < budget {
			c.Reason += fmt.Sprintf("; a TTL of at most %s would fit", failover.SecondsText(budget-rest))
		}
	}
	return c
}
