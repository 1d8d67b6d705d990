package reconcile

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/failover"
)

// BreakGlassName is the TXT record, relative to the zone, that a break-glass
// write (`drwatch dns set --no-quorum`) leaves beside the records it wrote.
// The DNS itself carries the note, so whichever node leads when quorum
// returns finds it, records the write in the log, and removes it.
const BreakGlassName = "_drwatch-breakglass"

// BreakGlassMarker describes a DNS write made without quorum.
type BreakGlassMarker struct {
	ID     string // random, so that recording it twice can be detected
	Site   failover.Site
	Actor  string
	At     time.Time
	Reason string
}

// ErrBadMarker means the break-glass TXT record could not be parsed.
var ErrBadMarker = errors.New("malformed break-glass marker")

// MaxMarkerLen bounds the marker's text (one TXT string is at most 255 bytes
// on the wire; longer values are split, and we keep well under a few).
const MaxMarkerLen = 1024

// String encodes the marker as one line of key=value pairs; values are
// percent-encoded so the reason may hold anything.
func (m BreakGlassMarker) String() string {
	return fmt.Sprintf("v=1;id=%s;site=%s;actor=%s;at=%d;reason=%s", url.QueryEscape(m.ID), m.Site,
		url.QueryEscape(m.Actor), m.At.Unix(), url.QueryEscape(m.Reason))
}

// Check reports why m cannot be written: its encoded text must fit
// MaxMarkerLen, or ParseBreakGlassMarker would refuse the marker and the
// write would never be recorded. Percent-encoding can triple a reason.
func (m BreakGlassMarker) Check() error {
	if n := len(m.String()); n > MaxMarkerLen {
		return fmt.Errorf("%w: %d bytes once encoded, limit %d: shorten the reason or the actor", ErrBadMarker, n, MaxMarkerLen)
	}
	return nil
}

// ParseBreakGlassMarker parses String's output. It rejects anything else.
func ParseBreakGlassMarker(s string) (BreakGlassMarker, error) {
	var m BreakGlassMarker
	if len(s) > MaxMarkerLen {
		return m, fmt.Errorf("%w: longer than %d bytes", ErrBadMarker, MaxMarkerLen)
	}
	fields := map[string]string{}
	for _, kv := range strings.Split(s, ";") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return m, fmt.Errorf("%w: %q is not key=value", ErrBadMarker, kv)
		}
		if _, dup := fields[k]; dup {
			return m, fmt.Errorf("%w: key %q repeats", ErrBadMarker, k)
		}
		uv, err := url.QueryUnescape(v)
		if err != nil {
			return m, fmt.Errorf("%w: %s: %v", ErrBadMarker, k, err)
		}
		fields[k] = uv
	}
	if fields["v"] != "1" {
		return m, fmt.Errorf("%w: version %q", ErrBadMarker, fields["v"])
	}
	m.ID, m.Actor, m.Reason = fields["id"], fields["actor"], fields["reason"]
	m.Site = failover.Site(fields["site"])
	if !m.Site.Valid() {
		return m, fmt.Errorf("%w: site %q", ErrBadMarker, fields["site"])
	}
	if m.ID == "" {
		return m, fmt.Errorf("%w: no id", ErrBadMarker)
	}
	at, err := strconv.ParseInt(fields["at"], 10, 64)
	if err != nil || at <= 0 {
		return m, fmt.Errorf("%w: at %q", ErrBadMarker, fields["at"])
	}
	m.At = time.Unix(at, 0)
	if len(fields) != 6 {
		return m, fmt.Errorf("%w: want exactly v, id, site, actor, at, reason", ErrBadMarker)
	}
	return m, nil
}

// MarkerRRset is the TXT RRset a break-glass write adds.
func (m BreakGlassMarker) MarkerRRset(ttl time.Duration) dnsprovider.RRset {
	return dnsprovider.RRset{Name: BreakGlassName, Type: "TXT", TTL: ttl, Values: []string{m.String()}}
}

// historian is the optional State capability the reconciler uses to tell
// whether a break-glass write was already recorded.
type historian interface {
	History() []failover.Entry
}

// breakGlassTag is appended to the recorded reason so a repeated attempt
// (leader lost between proposing and removing the marker) is recognised.
func breakGlassTag(id string) string { return "[break-glass " + id + "]" }

// recordBreakGlass records a pending break-glass write in the log and then
// removes the marker. It returns true when it changed anything.
func (r *Reconciler) recordBreakGlass(ctx context.Context) (bool, error) {
	sets, err := r.cfg.DNS.GetRecords(ctx, []dnsprovider.RRsetID{{Name: BreakGlassName, Type: "TXT"}})
	if err != nil {
		return false, fmt.Errorf("read break-glass marker: %w", err)
	}
	if len(sets) == 0 || len(sets[0].Values) == 0 {
		return false, nil
	}
	if len(sets[0].Values) != 1 {
		return false, fmt.Errorf("%w: %d TXT values at %s; remove all but one by hand", ErrBadMarker, len(sets[0].Values), BreakGlassName)
	}
	m, err := ParseBreakGlassMarker(sets[0].Values[0])
	if err != nil {
		return false, fmt.Errorf("break-glass marker at %s: %w; fix or remove it by hand", BreakGlassName, err)
	}
	recorded := false
	if h, ok := r.cfg.State.(historian); ok {
		for _, e := range h.History() {
			if e.Kind == failover.KindBreakGlass && strings.Contains(e.Reason, breakGlassTag(m.ID)) {
				recorded = true
			}
		}
	}
	if !recorded {
		// The marker was written by a CLI that may predate the text rule:
		// escape rather than refuse, so the write is still recorded.
		reason := failover.EscapeText(strings.TrimSpace(m.Reason + " " + breakGlassTag(m.ID)))
		actor := failover.EscapeText(m.Actor)
		if err := r.proposeCmd(ctx, failover.Command{Payload: failover.BreakGlass{Site: m.Site, Actor: actor, Reason: reason, WrittenAt: m.At.UnixNano()}}); err != nil {
			return false, fmt.Errorf("record break-glass write: %w", err)
		}
		r.log.Warn("break-glass dns write recorded", "site", m.Site, "actor", m.Actor, "at", m.At)
	}
	if err := r.cfg.Cluster.VerifyLeader(ctx); err != nil {
		return true, fmt.Errorf("verify leader before removing the break-glass marker: %w", err)
	}
	if _, err := r.cfg.DNS.SetRecords(ctx, []dnsprovider.RRset{{Name: BreakGlassName, Type: "TXT", TTL: sets[0].TTL}}); err != nil {
		return true, fmt.Errorf("remove break-glass marker: %w", err)
	}
	return true, nil
}
