package reconcile

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/internal/dnsname"
)

// BreakGlassName is the TXT record, relative to the zone, that a break-glass
// write (`drwatch dns set --no-quorum`) leaves beside the records it wrote.
// The DNS itself carries the note, so whichever node leads when quorum
// returns finds it and, once it has proved the write happened, records it
// in the log and removes it.
//
// The marker is evidence, never an instruction (invariant 12): whoever may
// write TXT in the zone (an ACME DNS-01 key) may write one, so it counts
// only when its MAC verifies under the break-glass key, it covers this
// zone and these records, it is fresh, and the servers really serve the
// records of the site it names. Anything else is recorded as
// break_glass_rejected and changes nothing.
const BreakGlassName = "_drwatch-breakglass"

// BreakGlassMarker describes a DNS write made without quorum.
//
// Version 1 markers (before break-glass keys) carry no Scope and no MAC:
// they parse, so the leader can say what they claimed, but never count.
// String writes version 2 whenever MAC is set.
type BreakGlassMarker struct {
	ID     string // random, so that recording it twice can be detected
	Site   failover.Site
	Actor  string
	At     time.Time
	Reason string
	// Override names the rule the writer overrode, "" for none: with
	// OverrideLeader, a node reported a leader with quorum and the
	// operator wrote anyway (`dns set --ignore-leader`).
	Override string
	// Scope is MarkerScope of the zone and the site's records.
	Scope string
	// MAC is the hex HMAC-SHA256 of the rest under the break-glass key.
	MAC string
}

// OverrideLeader is the Override of a break-glass write made although a
// node reported a leader with quorum.
const OverrideLeader = "leader_reported"

// ErrBadMarker means the break-glass TXT record could not be parsed.
var ErrBadMarker = errors.New("malformed break-glass marker")

// ErrBadBreakGlassKey means a break-glass key file does not hold a key.
var ErrBadBreakGlassKey = errors.New("bad break-glass key")

// MaxMarkerLen bounds the marker's text (one TXT string is at most 255 bytes
// on the wire; longer values are split, and we keep well under a few).
const MaxMarkerLen = 1024

// DefaultBreakGlassMaxAge is how old a marker may be when the leader finds
// it, unless dns.break_glass.max_age says otherwise: long enough for quorum
// to come back after a regional outage, short enough that a marker copied
// from an old write is refused.
const DefaultBreakGlassMaxAge = 72 * time.Hour

// MarkerClockSkew is how far in the leader's future a marker's time may
// be: the CLI runs on an operator's machine, not on the leader's clock.
const MarkerClockSkew = 5 * time.Minute

// MinBreakGlassKeyLen is the shortest key accepted, in bytes (decoded):
// an HMAC-SHA256 key shorter than the hash is weaker than the hash.
const MinBreakGlassKeyLen = 32

// ParseBreakGlassKey decodes a break-glass key file: the key in standard
// base64 (as `head -c 32 /dev/urandom | base64` writes it), surrounding
// white space ignored. Errors never quote the file.
func ParseBreakGlassKey(b []byte) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: not base64", ErrBadBreakGlassKey)
	case len(key) < MinBreakGlassKeyLen:
		return nil, fmt.Errorf("%w: %d bytes, want at least %d (head -c 32 /dev/urandom | base64)", ErrBadBreakGlassKey, len(key), MinBreakGlassKeyLen)
	}
	return key, nil
}

// MarkerScope is the digest a marker carries of what it covers: the zone
// and a site's records (names made absolute and lower-case, types, values
// in canonical form), sorted, TTLs left out. A marker written for another
// cluster sharing the zone, or for other records, names another scope.
func MarkerScope(zone string, site []dnsprovider.RRset) string {
	lines := make([]string, 0, len(site))
	for _, s := range site {
		lines = append(lines, dnsname.Absolute(s.Name, zone)+" "+strings.ToUpper(s.Type)+" "+strings.Join(dnsname.Values(s.Type, s.Values), " "))
	}
	slices.Sort(lines)
	h := sha256.Sum256([]byte("drwatch break-glass scope\n" + dnsname.Absolute("@", zone) + "\n" + strings.Join(lines, "\n")))
	return hex.EncodeToString(h[:16])
}

// Sign returns m with Scope set to scope and MAC computed under key.
func (m BreakGlassMarker) Sign(key []byte, scope string) BreakGlassMarker {
	m.Scope = scope
	m.MAC = hex.EncodeToString(markerMAC(key, m.body()))
	return m
}

func markerMAC(key []byte, body string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte("drwatch break-glass v2\n" + body))
	return h.Sum(nil)
}

// body is the version 2 text without the MAC: what the MAC covers.
func (m BreakGlassMarker) body() string {
	return fmt.Sprintf("v=2;id=%s;site=%s;actor=%s;at=%d;override=%s;scope=%s;reason=%s", url.QueryEscape(m.ID), m.Site,
		url.QueryEscape(m.Actor), m.At.Unix(), url.QueryEscape(m.Override), url.QueryEscape(m.Scope), url.QueryEscape(m.Reason))
}

// String encodes the marker as one line of key=value pairs; values are
// percent-encoded so the reason may hold anything. An unsigned marker
// encodes as version 1 did.
func (m BreakGlassMarker) String() string {
	if m.MAC == "" {
		return fmt.Sprintf("v=1;id=%s;site=%s;actor=%s;at=%d;reason=%s", url.QueryEscape(m.ID), m.Site,
			url.QueryEscape(m.Actor), m.At.Unix(), url.QueryEscape(m.Reason))
	}
	return m.body() + ";mac=" + url.QueryEscape(m.MAC)
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

// markerKeys are the keys of each version, in the order String writes them.
var markerKeys = map[string][]string{
	"1": {"v", "id", "site", "actor", "at", "reason"},
	"2": {"v", "id", "site", "actor", "at", "override", "scope", "reason", "mac"},
}

// ParseBreakGlassMarker parses String's output, of either version. It
// rejects anything else. It does not authenticate: see Verify.
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
	keys, ok := markerKeys[fields["v"]]
	if !ok {
		return m, fmt.Errorf("%w: version %q", ErrBadMarker, fields["v"])
	}
	m.ID, m.Actor, m.Reason = fields["id"], fields["actor"], fields["reason"]
	m.Override, m.Scope, m.MAC = fields["override"], fields["scope"], fields["mac"]
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
	if fields["v"] == "2" && (m.Scope == "" || m.MAC == "") {
		return m, fmt.Errorf("%w: version 2 without scope or mac", ErrBadMarker)
	}
	if len(fields) != len(keys) {
		return m, fmt.Errorf("%w: want exactly %s", ErrBadMarker, strings.Join(keys, ", "))
	}
	for _, k := range keys {
		if _, ok := fields[k]; !ok {
			return m, fmt.Errorf("%w: want exactly %s", ErrBadMarker, strings.Join(keys, ", "))
		}
	}
	return m, nil
}

// MarkerError says why a marker does not count. Why is one of the
// failover.Marker* reasons.
type MarkerError struct {
	Why    string
	Detail string
}

func (e *MarkerError) Error() string { return "break-glass marker " + e.Why + ": " + e.Detail }

// Verify reports, as a *MarkerError, why m does not authenticate as a
// break-glass write for scope (MarkerScope of this zone and the records of
// m.Site) under key at now; nil when it does. With no key no marker is
// trusted: fail closed. Whether the write really happened (the servers
// serve the site's records) is the caller's to check.
func (m BreakGlassMarker) Verify(key []byte, scope string, now time.Time, maxAge time.Duration) error {
	switch {
	case m.MAC == "":
		return &MarkerError{failover.MarkerUnauthenticated, "version 1 marker, without a MAC"}
	case len(key) == 0:
		return &MarkerError{failover.MarkerUnauthenticated, "this node has no break-glass key (dns.break_glass.key_file), so it trusts no marker"}
	case m.Scope != scope:
		return &MarkerError{failover.MarkerForeign, "it covers another zone or other records than this cluster's for site " + string(m.Site)}
	}
	got, err := hex.DecodeString(m.MAC)
	if err != nil || !hmac.Equal(got, markerMAC(key, m.body())) {
		return &MarkerError{failover.MarkerForged, "its MAC does not verify under the break-glass key"}
	}
	switch age := now.Sub(m.At); {
	case age > maxAge:
		return &MarkerError{failover.MarkerStale, fmt.Sprintf("written %s ago, more than dns.break_glass.max_age %s", age.Round(time.Second), maxAge)}
	case -age > MarkerClockSkew:
		return &MarkerError{failover.MarkerStale, fmt.Sprintf("written %s in the future, more than the allowed skew %s", (-age).Round(time.Second), MarkerClockSkew)}
	}
	return nil
}

// MarkerHash names a marker's TXT value in the history, so each distinct
// value is recorded once.
func MarkerHash(value string) string {
	h := sha256.Sum256([]byte(value))
	return hex.EncodeToString(h[:8])
}

// claim describes what a marker says, escaped: none of it is trusted.
func (m BreakGlassMarker) claim() string {
	s := fmt.Sprintf("site=%s actor=%q at=%s reason=%q", m.Site, m.Actor, m.At.UTC().Format(time.RFC3339), m.Reason)
	if m.Override != "" {
		s += " override=" + m.Override
	}
	return failover.EscapeText(s)
}

// MarkerRRset is the TXT RRset a break-glass write adds.
func (m BreakGlassMarker) MarkerRRset(ttl time.Duration) dnsprovider.RRset {
	return dnsprovider.RRset{Name: BreakGlassName, Type: "TXT", TTL: ttl, Values: []string{m.String()}}
}

// historian is the optional State capability the reconciler uses to tell
// whether a break-glass marker was already recorded.
type historian interface {
	History() []failover.Entry
}

// policyReader is the optional State capability the reconciler uses to
// learn the records of a marker's site. Without it no marker counts.
type policyReader interface {
	Policy() (*failover.Policy, string)
}

// checker asks every authoritative server once (dnsprovider.Verifier).
type checker interface {
	Check(ctx context.Context, desired []dnsprovider.RRset) (*dnsprovider.Verification, error)
}

// breakGlassTag is appended to the recorded reason so a repeated attempt
// (leader lost between proposing and removing the marker) is recognised.
func breakGlassTag(id string) string { return "[break-glass " + id + "]" }

// maxSeenMarkers bounds the reconciler's memory of markers already dealt
// with; past it the memory starts again from the history.
const maxSeenMarkers = 1024

// recordBreakGlass reads the break-glass TXT values and deals with each
// once: one that proves a write without quorum is recorded as break_glass
// and removed; any other is recorded as break_glass_rejected and left in
// place. Nothing here writes an A record, whatever the TXT says. It
// returns true when it changed anything.
func (r *Reconciler) recordBreakGlass(ctx context.Context) (bool, error) {
	sets, err := r.cfg.DNS.GetRecords(ctx, []dnsprovider.RRsetID{{Name: BreakGlassName, Type: "TXT"}})
	if err != nil {
		return false, fmt.Errorf("read break-glass marker: %w", err)
	}
	if len(sets) == 0 || len(sets[0].Values) == 0 {
		return false, nil
	}
	changed := false
	values := slices.Clone(sets[0].Values)
	slices.Sort(values)
	var accepted []string
	for _, v := range values {
		ok, c, err := r.breakGlassValue(ctx, v)
		changed = changed || c
		if err != nil {
			return changed, err
		}
		if ok {
			accepted = append(accepted, v)
		}
	}
	if len(accepted) == 0 {
		return changed, nil
	}
	// Remove only what was recorded as a write: another value may be
	// another cluster's marker (the name is per zone), or evidence of an
	// attempt the operator should see.
	rest := slices.DeleteFunc(slices.Clone(sets[0].Values), func(v string) bool { return slices.Contains(accepted, v) })
	if err := r.cfg.Cluster.VerifyLeader(ctx); err != nil {
		return true, fmt.Errorf("verify leader before removing the break-glass marker: %w", err)
	}
	if _, err := r.cfg.DNS.SetRecords(ctx, []dnsprovider.RRset{{Name: BreakGlassName, Type: "TXT", TTL: sets[0].TTL, Values: rest}}); err != nil {
		return true, fmt.Errorf("remove break-glass marker: %w", err)
	}
	return true, nil
}

// breakGlassValue deals with one TXT value. accepted is true when the
// value is a proven break-glass write, recorded now or before, that the
// caller removes.
func (r *Reconciler) breakGlassValue(ctx context.Context, value string) (accepted, changed bool, err error) {
	hash := MarkerHash(value)
	if r.seenMarkers[hash] {
		return false, false, nil
	}
	m, perr := ParseBreakGlassMarker(value)
	if r.markerRecorded(hash, m, perr == nil) {
		return perr == nil && r.breakGlassRecorded(m.ID) && r.authentic(m), false, nil
	}
	var mErr *MarkerError
	switch {
	case perr != nil:
		mErr = &MarkerError{failover.MarkerMalformed, perr.Error()}
	default:
		if err := r.judgeMarker(ctx, m); err != nil && !errors.As(err, &mErr) {
			return false, false, err
		}
	}
	if mErr != nil {
		return false, r.rejectMarker(ctx, hash, m, mErr), nil
	}
	// The marker is authentic, fresh and the servers serve its site's
	// records: the write happened. Recording it changes no record.
	reason := failover.EscapeText(strings.TrimSpace(m.Reason + " " + breakGlassTag(m.ID)))
	if m.Override != "" {
		reason += " (overrode " + failover.EscapeText(m.Override) + ")"
	}
	actor := failover.EscapeText(m.Actor)
	if err := r.proposeCmd(ctx, failover.Command{Payload: failover.BreakGlass{Site: m.Site, Actor: actor, Reason: reason, WrittenAt: m.At.UnixNano()}}); err != nil {
		return false, false, fmt.Errorf("record break-glass write: %w", err)
	}
	r.log.Warn("break-glass dns write recorded", "site", m.Site, "actor", m.Actor, "at", m.At, "marker", hash)
	return true, true, nil
}

// markerRecorded reports whether the history already holds the value
// (rejected by its hash, or, for an authenticated marker, recorded as a
// break_glass write by its ID), and remembers the answer when it does.
func (r *Reconciler) markerRecorded(hash string, m BreakGlassMarker, parsed bool) bool {
	h, ok := r.cfg.State.(historian)
	if !ok {
		return false
	}
	detail := failover.RejectedMarkerDetail(hash)
	for _, e := range h.History() {
		if e.Kind == failover.KindBreakGlassRejected && e.Detail == detail {
			r.seeMarker(hash)
			return true
		}
	}
	if parsed && r.breakGlassRecorded(m.ID) && r.authentic(m) {
		// Only its removal is left; remembering it would skip that.
		return true
	}
	return false
}

// authentic reports whether m's MAC and scope verify, whatever its age: a
// recorded write's marker is removed only when it is the real one.
func (r *Reconciler) authentic(m BreakGlassMarker) bool {
	want, ok := r.siteRecords(m.Site)
	return ok && m.Verify(r.cfg.BreakGlassKey, MarkerScope(r.cfg.DNS.Zone(), want), m.At, time.Duration(1<<63-1)) == nil
}

// siteRecords are the records of site under the replicated policy, as the
// provider names them; ok is false before a policy.
func (r *Reconciler) siteRecords(site failover.Site) ([]dnsprovider.RRset, bool) {
	pr, ok := r.cfg.State.(policyReader)
	if !ok {
		return nil, false
	}
	pol, _ := pr.Policy()
	if pol == nil {
		return nil, false
	}
	return toProvider(pol.RRsets(site), r.cfg.DNS.Zone()), true
}

func (r *Reconciler) breakGlassRecorded(id string) bool {
	h, ok := r.cfg.State.(historian)
	if !ok {
		return false
	}
	for _, e := range h.History() {
		if e.Kind == failover.KindBreakGlass && strings.Contains(e.Reason, breakGlassTag(id)) {
			return true
		}
	}
	return false
}

func (r *Reconciler) seeMarker(hash string) {
	if r.seenMarkers == nil || len(r.seenMarkers) >= maxSeenMarkers {
		r.seenMarkers = map[string]bool{}
	}
	r.seenMarkers[hash] = true
}

// judgeMarker returns a *MarkerError when m does not prove a write, another
// error when it could not tell (retry), nil when it does.
func (r *Reconciler) judgeMarker(ctx context.Context, m BreakGlassMarker) error {
	want, ok := r.siteRecords(m.Site)
	if !ok {
		return &MarkerError{failover.MarkerUnauthenticated, "no replicated policy to check it against"}
	}
	zone := r.cfg.DNS.Zone()
	if err := m.Verify(r.cfg.BreakGlassKey, MarkerScope(zone, want), r.cfg.Now(), cmp0(r.cfg.BreakGlassMaxAge, DefaultBreakGlassMaxAge)); err != nil {
		return err
	}
	ids := make([]dnsprovider.RRsetID, len(want))
	for i, s := range want {
		ids[i] = s.ID()
	}
	actual, err := r.cfg.DNS.GetRecords(ctx, ids)
	if err != nil {
		return fmt.Errorf("read dns for the break-glass marker: %w", err)
	}
	if !sameValues(actual, want) {
		return &MarkerError{failover.MarkerNotServed, "the zone serves " + describe(actual) + ", not the records of " + string(m.Site)}
	}
	if c, ok := r.cfg.Verifier.(checker); ok {
		// The provider read is the primary server; the others must agree
		// before the write counts, else it may be half made: retry.
		v, err := c.Check(ctx, actual)
		if err == nil {
			err = v.Err()
		}
		if err != nil {
			return fmt.Errorf("break-glass marker for %s: not served everywhere yet: %w", m.Site, err)
		}
	}
	return nil
}

// sameValues is sameRecords without the TTLs: the site's records are
// served whatever TTL the break-glass write gave them.
func sameValues(actual, want []dnsprovider.RRset) bool {
	return slices.EqualFunc(actual, want, func(a, b dnsprovider.RRset) bool {
		return a.Name == b.Name && strings.EqualFold(a.Type, b.Type) && dnsname.SameValues(a.Type, a.Values, b.Values)
	})
}

func cmp0(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// rejectMarker records a refused marker once, at most one per
// MarkerRejectEvery (an attacker may write many distinct values), and
// says so at error level: someone wrote a marker that does not prove a
// write, or the break-glass key is wrong. It changes no record.
func (r *Reconciler) rejectMarker(ctx context.Context, hash string, m BreakGlassMarker, why *MarkerError) bool {
	now := r.cfg.Now()
	log := r.log.With("marker", hash, "why", why.Why, "reason", why.Detail)
	if !r.lastReject.IsZero() && now.Sub(r.lastReject) < cmp0(r.cfg.MarkerRejectEvery, DefaultMarkerRejectEvery) {
		log.Error("break-glass marker refused; not yet recorded (one per interval)")
		return false
	}
	claim := ""
	if m.ID != "" {
		claim = m.claim()
	}
	err := r.proposeCmd(ctx, failover.Command{Payload: failover.BreakGlassRejected{Marker: hash, Why: why.Why,
		Reason: failover.EscapeText(why.Detail), Claim: claim, Actor: r.cfg.Node}})
	if err != nil {
		log.Error("break-glass marker refused; recording it failed", "err", err)
		return false
	}
	r.lastReject = now
	r.seeMarker(hash)
	log.Error("break-glass marker refused and recorded; nothing changed")
	return true
}

// DefaultMarkerRejectEvery is the least time between two recorded
// rejections of break-glass markers.
const DefaultMarkerRejectEvery = time.Minute
