package failover

import (
	"fmt"
	"strings"
)

// CmdBreakGlassRejected records a break-glass marker the leader refused.
const CmdBreakGlassRejected CommandType = "break_glass_rejected"

// KindBreakGlassRejected is the history kind of a refused break-glass
// marker: a TXT record that claimed a write without quorum and did not
// prove it. It is an audit entry; it never moves traffic.
const KindBreakGlassRejected = "break_glass_rejected"

// Why a break-glass marker was refused (BreakGlassRejected.Why).
const (
	// MarkerMalformed: the TXT value does not parse as a marker.
	MarkerMalformed = "malformed"
	// MarkerUnauthenticated: a marker without a MAC (version 1), or a
	// node with no break-glass key configured, which trusts none.
	MarkerUnauthenticated = "unauthenticated"
	// MarkerForged: the MAC does not verify under the break-glass key.
	MarkerForged = "forged"
	// MarkerForeign: the MAC verifies only for other records or another
	// zone: the marker belongs to another cluster or another record set.
	MarkerForeign = "foreign"
	// MarkerStale: written longer ago than the allowed age, or in the future.
	MarkerStale = "stale"
	// MarkerNotServed: authentic, but the servers do not serve the records
	// of the site it names, so no write happened that it could be evidence of.
	MarkerNotServed = "records_not_served"
)

// BreakGlassRejected records that the leader found a break-glass marker
// in DNS and refused it. DNS content is evidence, never an instruction
// (invariant 12): this changes nothing but the history, so a key that may
// write only TXT records cannot move traffic. Older versions cannot decode
// it (upgrade followers first, as for drills).
type BreakGlassRejected struct {
	// Marker identifies the TXT value (a hash of it), so one marker is
	// recorded once however often it is read.
	Marker string `json:"marker"`
	// Why is one of the Marker* constants.
	Why string `json:"why"`
	// Reason says why in words.
	Reason string `json:"reason,omitempty"`
	// Claim is what the marker claimed (site, actor, time, reason), escaped.
	// Nothing in it is authenticated.
	Claim string `json:"claim,omitempty"`
	// Actor is the node that found the marker, never the actor the
	// marker claims.
	Actor string `json:"actor,omitempty"`
}

// CommandType implements Payload.
func (BreakGlassRejected) CommandType() CommandType { return CmdBreakGlassRejected }

// text holds the claim to the text rule with the reason: both are printed
// in the history, and the claim comes from whoever could write TXT.
func (b BreakGlassRejected) text() (reason, actor string) { return b.Reason + " " + b.Claim, b.Actor }

func (b BreakGlassRejected) apply(s *state, a applyArgs) error {
	return s.breakGlassRejected(a.index, a.now, &b, a.res)
}

// RejectedMarkerDetail is the Detail of a KindBreakGlassRejected entry for
// marker: the reconciler finds recorded markers by it.
func RejectedMarkerDetail(marker string) string { return "marker " + marker }

func (s *state) breakGlassRejected(index uint64, now int64, c *BreakGlassRejected, res *Result) error {
	switch c.Why {
	case MarkerMalformed, MarkerUnauthenticated, MarkerForged, MarkerForeign, MarkerStale, MarkerNotServed:
	default:
		return fmt.Errorf("break glass rejected: why %q is unknown: %w", c.Why, ErrBadCommand)
	}
	if c.Marker == "" {
		return fmt.Errorf("break glass rejected: marker is required: %w", ErrBadCommand)
	}
	detail := RejectedMarkerDetail(c.Marker)
	res.Kind = KindBreakGlassRejected
	for i := range s.History {
		if e := &s.History[i]; e.Kind == KindBreakGlassRejected && e.Detail == detail {
			// Raft may deliver a retried command twice; a marker is
			// recorded once.
			res.Message = "break-glass " + detail + " already recorded"
			return nil
		}
	}
	s.Now = now
	reason := c.Reason
	if c.Claim != "" {
		reason = strings.TrimSpace(reason + "; it claims " + c.Claim)
	}
	s.appendHistory(Entry{Index: index, At: now, Kind: KindBreakGlassRejected, Actor: c.Actor, Reason: reason, Rule: c.Why, Detail: detail})
	res.Message = "break-glass " + detail + " rejected (" + c.Why + ")"
	return nil
}
