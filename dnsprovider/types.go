package dnsprovider

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/drwatch/drwatch/dnsprovider/internal/tsig"
	"github.com/drwatch/drwatch/internal/dnsname"
	"github.com/libdns/libdns"
	"github.com/miekg/dns"
)

// RRsetID names one RRset: an owner name and a type.
type RRsetID struct {
	// Name is relative to the zone, as in libdns ("www", "@" for the apex).
	Name string
	// Type is the upper-case record type ("A", "AAAA", "CNAME", "TXT").
	Type string
}

func (id RRsetID) String() string { return id.Name + "/" + id.Type }

// RRset is every record of one (name, type) with its TTL. An RRset with no
// Values means "no such RRset" (absent in the zone).
type RRset struct {
	Name string
	Type string
	TTL  time.Duration
	// Values are the records' data in zone-file presentation, unescaped and,
	// for TXT, unquoted (libdns.RR.Data conventions): "203.0.113.10", "gen=42".
	Values []string
}

// ID returns the RRset's (name, type).
func (s RRset) ID() RRsetID { return RRsetID{Name: s.Name, Type: s.Type} }

func (s RRset) String() string {
	if len(s.Values) == 0 {
		return fmt.Sprintf("%s/%s (absent)", s.Name, s.Type)
	}
	return fmt.Sprintf("%s/%s ttl=%s [%s]", s.Name, s.Type, s.TTL, strings.Join(s.Values, " "))
}

// Provider reads and writes RRsets in one zone. It is shaped after libdns
// (GetRecords, SetRecords), except that reads name the RRsets wanted: an RFC
// 2136 server is read by direct queries, not by a zone transfer.
//
// Implementations are safe for concurrent use. Errors are classified with
// IsRetryable and IsTerminal.
type Provider interface {
	// Zone returns the zone's canonical FQDN ("example.org.").
	Zone() string

	// GetRecords returns the current RRsets named by want, one per entry, in
	// the same order; an absent RRset comes back with no Values. It writes
	// nothing and is safe to repeat. Errors: ErrWrongZone, ErrBadReply,
	// *AuthError, *RcodeError, transport errors.
	GetRecords(ctx context.Context, want []RRsetID) ([]RRset, error)

	// SetRecords makes each given RRset hold exactly the given values and TTL,
	// unconditionally (libdns SetRecords semantics; an RRset with no Values is
	// deleted). It first reads what is there and writes only the RRsets that
	// differ, so re-applying the same input writes nothing (idempotent), and
	// returns the RRsets it wrote. It is the break-glass path and the write path
	// of providers without compare-and-swap; it never touches the fence.
	// Atomicity is the implementation's: one UPDATE message for RFC 2136,
	// per-RRset calls for HTTP providers.
	SetRecords(ctx context.Context, sets []RRset) ([]RRset, error)
}

// CompareAndSwapper is the optional compare-and-swap capability. Only RFC
// 2136 (BIND, Knot, the embedded server) has it; see the package doc for
// what providers without it mean for fencing.
type CompareAndSwapper interface {
	Provider

	// FenceName returns the fence TXT record's name relative to the zone
	// (default "_drwatch").
	FenceName() string

	// GetFence reads the fence: the generation of the decision that last
	// wrote the records, or 0 when there is no fence record yet. Safe to
	// repeat. Errors: as GetRecords, plus ErrBadFence for a fence TXT that is
	// not "gen=N".
	GetFence(ctx context.Context) (uint64, error)

	// Swap atomically replaces expected with desired and the fence gen=fenceOld
	// with gen=fenceNew, only if the zone still holds exactly expected (by value,
	// TTL ignored; an expected RRset with no Values must be absent) and the
	// fence still says fenceOld (0: no fence record). All RRsets move together
	// or none does. Every desired RRset must appear in expected.
	//
	// A failed prerequisite returns a *ConflictError (errors.Is ErrConflict)
	// carrying a fresh read of what is there now; it is not retryable as is:
	// the caller re-plans from the new state. Other errors follow
	// IsRetryable/IsTerminal. Repeating a Swap that succeeded returns a
	// conflict (the fence moved), so a caller that lost the reply re-reads and
	// finds its own fenceNew. Safe for concurrent use; the server serialises.
	Swap(ctx context.Context, expected, desired []RRset, fenceOld, fenceNew uint64) error
}

// SwapOp is one Swap of a SwapBatch: Swap's arguments and the provider,
// fenced on its own record, that makes it.
type SwapOp struct {
	Provider           CompareAndSwapper
	Expected, Desired  []RRset
	FenceOld, FenceNew uint64
}

// BatchSwapper is the optional capability of making the Swaps of several
// providers of one zone, each fenced on its own record, in one atomic
// write. Only RFC 2136 has it: one UPDATE message carries them all.
type BatchSwapper interface {
	CompareAndSwapper

	// BatchKey names where a write goes: providers may share a SwapBatch
	// only when their keys are equal. Pure; safe for concurrent use.
	BatchKey() string

	// SwapBatch makes every op's Swap at once, all or none: each op keeps
	// its own prerequisites, its fence included, so no op is written
	// unless every op's zone state and fence are still what it expected.
	// Every op's provider must be a BatchSwapper with this one's BatchKey,
	// and no two ops may name one RRset or fence (ErrConfig).
	//
	// A failed prerequisite of any op fails them all with ErrConflict,
	// without a re-read: to learn which op conflicts, and to write the
	// others, make each op's Swap on its own. Other errors follow
	// IsRetryable/IsTerminal; a message too large for one write is
	// ErrTooLarge. Safe for concurrent use.
	SwapBatch(ctx context.Context, ops []SwapOp) error
}

// FenceTTL is the TTL Swap writes the fence TXT record with.
const FenceTTL = 60 * time.Second

// FenceText is the fence TXT record's text for a generation.
func FenceText(gen uint64) string { return fmt.Sprintf("gen=%d", gen) }

// ParseFence parses a fence TXT record's text ("gen=42").
func ParseFence(text string) (uint64, error) {
	var gen uint64
	rest, ok := strings.CutPrefix(strings.TrimSpace(text), "gen=")
	if !ok || rest == "" {
		return 0, ErrBadFence
	}
	for _, c := range rest {
		if c < '0' || c > '9' {
			return 0, ErrBadFence
		}
		if gen > (1<<64-1-uint64(c-'0'))/10 {
			return 0, ErrBadFence
		}
		gen = gen*10 + uint64(c-'0')
	}
	return gen, nil
}

// fenceFromSet interprets the fence RRset: absent is 0; exactly one "gen=N".
func fenceFromSet(s RRset) (uint64, error) {
	switch len(s.Values) {
	case 0:
		return 0, nil
	case 1:
		return ParseFence(s.Values[0])
	default:
		return 0, fmt.Errorf("%w: %d fence records", ErrBadFence, len(s.Values))
	}
}

// AbsoluteName returns the lower-case FQDN of a zone-relative name ("@" is
// the apex; a name ending in "." is already absolute), as the decision
// core and the config name it (dnsname.Absolute).
func AbsoluteName(name, zone string) string { return dnsname.Absolute(name, zone) }

// RelativeName returns a FQDN relative to the zone ("@" for the apex).
func RelativeName(fqdn, zone string) string {
	fqdn, zone = dns.CanonicalName(fqdn), dns.CanonicalName(zone)
	if fqdn == zone {
		return "@"
	}
	return strings.TrimSuffix(fqdn, "."+zone)
}

// inZone reports whether fqdn is the zone apex or below it.
func inZone(fqdn, zone string) bool {
	return dns.IsSubDomain(dns.CanonicalName(zone), dns.CanonicalName(fqdn))
}

// toRRs converts an RRset to miekg/dns records.
func toRRs(s RRset, zone string) ([]dns.RR, error) {
	owner := AbsoluteName(s.Name, zone)
	if !inZone(owner, zone) {
		return nil, fmt.Errorf("%w: %s is outside zone %s", ErrWrongZone, owner, zone)
	}
	t, ok := dns.StringToType[strings.ToUpper(s.Type)]
	if !ok {
		return nil, fmt.Errorf("rrset %s: unknown type %q", s.ID(), s.Type)
	}
	ttl := uint32(s.TTL / time.Second)
	out := make([]dns.RR, 0, len(s.Values))
	for _, v := range s.Values {
		hdr := dns.RR_Header{Name: owner, Rrtype: t, Class: dns.ClassINET, Ttl: ttl}
		if t == dns.TypeTXT {
			out = append(out, &dns.TXT{Hdr: hdr, Txt: splitTXT(v)})
			continue
		}
		rr, err := dns.NewRR(fmt.Sprintf("%s %d IN %s %s", owner, ttl, dns.TypeToString[t], v))
		if err != nil || rr == nil {
			return nil, fmt.Errorf("rrset %s: bad value %q", s.ID(), v)
		}
		out = append(out, rr)
	}
	return out, nil
}

// splitTXT cuts text into the 255-byte character-strings of RFC 1035 §3.3.14,
// escaping what presentation format needs (miekg keeps TXT strings escaped).
func splitTXT(v string) []string {
	var parts []string
	for {
		n := min(len(v), 255)
		parts = append(parts, escapeTXT(v[:n]))
		v = v[n:]
		if v == "" {
			return parts
		}
	}
}

func escapeTXT(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < ' ' || c > '~':
			fmt.Fprintf(&b, "\\%03d", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func unescapeTXT(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		if i+3 < len(s) && isDigit(s[i+1]) && isDigit(s[i+2]) && isDigit(s[i+3]) {
			n := int(s[i+1]-'0')*100 + int(s[i+2]-'0')*10 + int(s[i+3]-'0')
			if n < 256 {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i+1])
		i++
	}
	return b.String()
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// rrValue returns one record's value in RRset.Values form.
func rrValue(rr dns.RR) string {
	if t, ok := rr.(*dns.TXT); ok {
		var b strings.Builder
		for _, s := range t.Txt {
			b.WriteString(unescapeTXT(s))
		}
		return b.String()
	}
	return strings.TrimSpace(strings.TrimPrefix(rr.String(), rr.Header().String()))
}

// canonicalValue normalises a value for comparison: the types drwatch flips
// (and TXT) in the canonical form the decision core compares them in
// (dnsname.Value), everything else round-tripped through miekg/dns and
// lower-cased.
func canonicalValue(typ, v string) string {
	if c, ok := dnsname.Value(typ, v); ok {
		return c
	}
	rrs, err := toRRs(RRset{Name: "x", Type: typ, Values: []string{v}}, "invalid.")
	if err != nil || len(rrs) != 1 {
		return v
	}
	return strings.ToLower(rrValue(rrs[0]))
}

// sameValues reports whether two RRsets hold the same records (TTL ignored).
func sameValues(a, b RRset) bool {
	if len(a.Values) != len(b.Values) {
		return false
	}
	ca, cb := canonicalSet(a), canonicalSet(b)
	return slices.Equal(ca, cb)
}

// Equal reports whether s and o hold the same records with the same TTL in
// whole seconds (values compared canonically and in any order; an absent
// RRset equals an absent one whatever its TTL). A TTL difference is a
// difference: resolvers would cache the answer for the wrong time.
func (s RRset) Equal(o RRset) bool { return sameRRset(s, o) }

// sameRRset reports whether two RRsets are equal including TTL (an absent
// RRset equals an absent one whatever its TTL).
func sameRRset(a, b RRset) bool {
	if !sameValues(a, b) {
		return false
	}
	return len(a.Values) == 0 || a.TTL/time.Second == b.TTL/time.Second
}

func canonicalSet(s RRset) []string {
	out := make([]string, len(s.Values))
	for i, v := range s.Values {
		out[i] = canonicalValue(s.Type, v)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// normalizeID returns the ID with a canonical relative name and upper-case type.
func normalizeID(id RRsetID, zone string) RRsetID {
	return RRsetID{Name: RelativeName(AbsoluteName(id.Name, zone), zone), Type: strings.ToUpper(id.Type)}
}

// Records converts RRsets to libdns records (typed where libdns has a type).
func Records(sets []RRset) []libdns.Record {
	var out []libdns.Record
	for _, s := range sets {
		for _, v := range s.Values {
			rr := libdns.RR{Name: s.Name, TTL: s.TTL, Type: strings.ToUpper(s.Type), Data: v}
			if rec, err := rr.Parse(); err == nil {
				out = append(out, rec)
			} else {
				out = append(out, rr)
			}
		}
	}
	return out
}

// RRsets groups libdns records into RRsets, in first-seen order.
func RRsets(recs []libdns.Record) []RRset {
	var out []RRset
	idx := map[RRsetID]int{}
	for _, r := range recs {
		rr := r.RR()
		id := RRsetID{Name: rr.Name, Type: strings.ToUpper(rr.Type)}
		i, ok := idx[id]
		if !ok {
			i = len(out)
			idx[id] = i
			out = append(out, RRset{Name: rr.Name, Type: id.Type, TTL: rr.TTL})
		}
		out[i].Values = append(out[i].Values, rr.Data)
	}
	return out
}

// TSIGKey is a TSIG key (RFC 8945). Its String never shows the secret.
type TSIGKey = tsig.Key

// ParseTSIGKey parses a key file's contents: a BIND key clause, or a bare
// base64 secret (then name is required; algorithm defaults to hmac-sha256).
func ParseTSIGKey(data []byte, name, algorithm string) (TSIGKey, error) {
	return tsig.Parse(data, name, algorithm)
}

// NewTSIGKey builds a key from its parts.
func NewTSIGKey(name, algorithm, secretB64 string) (TSIGKey, error) {
	return tsig.NewKey(name, algorithm, secretB64)
}
