package dnsprovider

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/drwatch/drwatch/dnsprovider/internal/tsig"
	"github.com/drwatch/drwatch/internal/field"
	"github.com/miekg/dns"
)

// RFC2136Config configures the RFC 2136 provider.
type RFC2136Config struct {
	// Server is the primary's "host:port"; it takes the UPDATEs and the reads.
	Server string `yaml:"server" doc:"host:port of the primary authoritative server."`
	// KeyName is the TSIG key name. Optional when KeyFile is a BIND key clause.
	KeyName string `yaml:"key_name" doc:"TSIG key name, as in the key file; the trailing dot is optional (drwatch and drwatch. name the same key)."`
	// KeyFile holds the key: a BIND `key "name" { algorithm ..; secret ".."; };`
	// clause or a bare base64 secret. Required: drwatch never sends unsigned
	// updates.
	KeyFile string `yaml:"key_file" doc:"File holding the TSIG secret (BIND key clause or bare base64)."`
	// Algorithm is hmac-sha256 (default) or hmac-sha512.
	Algorithm string `yaml:"algorithm" default:"hmac-sha256" doc:"hmac-sha256 or hmac-sha512."`
	// Timeout bounds one exchange (default 5s). A node derives it from its
	// probe interval.
	Timeout time.Duration `yaml:"-"`
}

// RFC2136 reads a zone by direct queries and writes it with signed RFC 2136
// UPDATE messages. Swap is a real compare-and-swap. Safe for concurrent use.
type RFC2136 struct {
	zone  string
	fence string
	ex    exchanger
	log   *slog.Logger
}

var (
	_ Provider          = (*RFC2136)(nil)
	_ CompareAndSwapper = (*RFC2136)(nil)
	_ BatchSwapper      = (*RFC2136)(nil)
)

// NewRFC2136 builds the provider for zone. fenceName is relative to the zone
// ("" means "_drwatch").
func NewRFC2136(zone, fenceName string, c RFC2136Config, log *slog.Logger) (*RFC2136, error) {
	if c.Server == "" {
		return nil, fmt.Errorf("%w: rfc2136.server is empty", ErrConfig)
	}
	if c.KeyFile == "" {
		return nil, fmt.Errorf("%w: rfc2136.key_file is empty", ErrConfig)
	}
	key, err := tsig.ReadFile(c.KeyFile, c.KeyName, c.Algorithm)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return NewRFC2136WithKey(zone, fenceName, c.Server, key, c.Timeout, log)
}

// NewRFC2136WithKey is NewRFC2136 with the key already loaded (tests, demo).
func NewRFC2136WithKey(zone, fenceName, server string, key TSIGKey, timeout time.Duration, log *slog.Logger) (*RFC2136, error) {
	if zone == "" || server == "" {
		return nil, fmt.Errorf("%w: zone and server are required", ErrConfig)
	}
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	zone = dns.CanonicalName(zone)
	if fenceName == "" {
		fenceName = DefaultFenceName
	}
	fenceName = RelativeName(AbsoluteName(fenceName, zone), zone)
	if !inZone(AbsoluteName(fenceName, zone), zone) {
		return nil, fmt.Errorf("%w: fence %s is outside zone %s", ErrConfig, fenceName, zone)
	}
	k := key
	return &RFC2136{
		zone:  zone,
		fence: fenceName,
		ex:    exchanger{server: server, zone: zone, key: &k, timeout: timeout},
		log:   log.With("zone", zone, "server", server),
	}, nil
}

// DefaultFenceName is the fence TXT record's default name, relative to the zone.
const DefaultFenceName = "_drwatch"

// Zone implements Provider.
func (p *RFC2136) Zone() string { return p.zone }

// FenceName implements CompareAndSwapper.
func (p *RFC2136) FenceName() string { return p.fence }

func (p *RFC2136) fenceID() RRsetID { return RRsetID{Name: p.fence, Type: "TXT"} }

// GetRecords implements Provider: one signed query per RRset (no AXFR).
func (p *RFC2136) GetRecords(ctx context.Context, want []RRsetID) ([]RRset, error) {
	out := make([]RRset, 0, len(want))
	for _, id := range want {
		id = normalizeID(id, p.zone)
		t, ok := dns.StringToType[id.Type]
		if !ok {
			return nil, fmt.Errorf("read %s: unknown type", id)
		}
		fqdn := AbsoluteName(id.Name, p.zone)
		if !inZone(fqdn, p.zone) {
			return nil, fmt.Errorf("read %s: %w: outside %s", id, ErrConfig, p.zone)
		}
		rrs, err := p.ex.query(ctx, fqdn, t)
		if err != nil {
			return nil, fmt.Errorf("rfc2136 read: %w", err)
		}
		out = append(out, rrsetFrom(id, rrs))
	}
	return out, nil
}

// GetFence implements CompareAndSwapper.
func (p *RFC2136) GetFence(ctx context.Context) (uint64, error) {
	sets, err := p.GetRecords(ctx, []RRsetID{p.fenceID()})
	if err != nil {
		return 0, err
	}
	return fenceFromSet(sets[0])
}

// SetRecords implements Provider: one UPDATE without prerequisites carrying
// every RRset that differs from what a read just returned.
func (p *RFC2136) SetRecords(ctx context.Context, sets []RRset) ([]RRset, error) {
	ids := make([]RRsetID, len(sets))
	for i, s := range sets {
		ids[i] = s.ID()
	}
	cur, err := p.GetRecords(ctx, ids)
	if err != nil {
		return nil, err
	}
	m := new(dns.Msg)
	m.SetUpdate(p.zone)
	var changed []RRset
	for i, s := range sets {
		s.Name, s.Type = cur[i].Name, cur[i].Type
		if sameRRset(s, cur[i]) {
			continue
		}
		if err := p.addReplace(m, s); err != nil {
			return nil, err
		}
		changed = append(changed, s)
	}
	if len(changed) == 0 {
		return nil, nil
	}
	if err := p.send(ctx, m); err != nil {
		return nil, fmt.Errorf("rfc2136 set: %w", err)
	}
	p.log.Info("dns records set", "rrsets", len(changed), "mode", "unconditional")
	return changed, nil
}

// addReplace adds "delete the RRset, then add its records" to the update
// section (RFC 2136 §2.5.2 and §2.5.1).
func (p *RFC2136) addReplace(m *dns.Msg, s RRset) error {
	rrs, err := toRRs(s, p.zone)
	if err != nil {
		return err
	}
	t := dns.StringToType[strings.ToUpper(s.Type)]
	m.RemoveRRset([]dns.RR{&dns.ANY{Hdr: dns.RR_Header{Name: AbsoluteName(s.Name, p.zone), Rrtype: t}}})
	if len(rrs) > 0 {
		m.Insert(rrs)
	}
	return nil
}

// addPrereq adds the prerequisite "this RRset is exactly s": RFC 2136 §2.4.2
// (RRset exists, value dependent) when s has values, §2.4.3 (RRset does not
// exist) when it has none. toRRs builds fresh records, so Used may overwrite
// their class and TTL in place without touching the caller's data.
func (p *RFC2136) addPrereq(m *dns.Msg, s RRset) error {
	rrs, err := toRRs(s, p.zone)
	if err != nil {
		return err
	}
	if len(rrs) == 0 {
		t := dns.StringToType[strings.ToUpper(s.Type)]
		m.RRsetNotUsed([]dns.RR{&dns.ANY{Hdr: dns.RR_Header{Name: AbsoluteName(s.Name, p.zone), Rrtype: t}}})
		return nil
	}
	m.Used(rrs)
	return nil
}

// Swap implements CompareAndSwapper with ONE signed UPDATE message:
// value-dependent prerequisites for every expected RRset and for the fence,
// then delete+add for every RRset that changes and for the fence.
func (p *RFC2136) Swap(ctx context.Context, expected, desired []RRset, fenceOld, fenceNew uint64) error {
	m := new(dns.Msg)
	m.SetUpdate(p.zone)
	n, err := p.addSwap(m, expected, desired, fenceOld, fenceNew)
	if err != nil {
		return fmt.Errorf("rfc2136 swap: %w", err)
	}
	err = p.send(ctx, m)
	if rc, ok := prereqFailure(err); ok {
		return p.conflict(ctx, rc, expected)
	}
	if err != nil {
		return fmt.Errorf("rfc2136 swap: %w", err)
	}
	p.log.Info("dns records swapped", "gen", fenceNew, "prev_gen", fenceOld, "rrsets", n)
	return nil
}

// addSwap adds one Swap to the UPDATE m: its prerequisites (the expected
// RRsets and this provider's fence) to the prerequisite section, its
// changed RRsets and new fence to the update section. It returns how many
// managed RRsets change.
func (p *RFC2136) addSwap(m *dns.Msg, expected, desired []RRset, fenceOld, fenceNew uint64) (int, error) {
	if fenceNew == 0 || fenceNew == fenceOld {
		return 0, fmt.Errorf("%w: new fence gen=%d must be non-zero and differ from gen=%d", ErrConfig, fenceNew, fenceOld)
	}
	exp := map[RRsetID]RRset{}
	for _, s := range expected {
		id := normalizeID(s.ID(), p.zone)
		if id == p.fenceID() {
			return 0, fmt.Errorf("%w: the fence %s is not a managed RRset", ErrConfig, id)
		}
		s.Name, s.Type = id.Name, id.Type
		exp[id] = s
	}
	for _, s := range expected {
		if err := p.addPrereq(m, exp[normalizeID(s.ID(), p.zone)]); err != nil {
			return 0, err
		}
	}
	fenceWas := RRset{Name: p.fence, Type: "TXT"}
	if fenceOld != 0 {
		fenceWas.Values = []string{FenceText(fenceOld)}
	}
	if err := p.addPrereq(m, fenceWas); err != nil {
		return 0, err
	}
	n := 0
	for _, s := range desired {
		id := normalizeID(s.ID(), p.zone)
		e, ok := exp[id]
		if !ok {
			return 0, fmt.Errorf("%w: desired %s has no expected state", ErrConfig, id)
		}
		s.Name, s.Type = id.Name, id.Type
		if sameRRset(s, e) {
			continue
		}
		if err := p.addReplace(m, s); err != nil {
			return 0, err
		}
		n++
	}
	if err := p.addReplace(m, RRset{Name: p.fence, Type: "TXT", TTL: FenceTTL, Values: []string{FenceText(fenceNew)}}); err != nil {
		return 0, err
	}
	return n, nil
}

// BatchKey implements BatchSwapper: UPDATEs go to one server, for one
// zone, signed with one key, so only providers that agree on all three
// may share a message (a server's update policy may grant each key other
// names).
func (p *RFC2136) BatchKey() string {
	return fmt.Sprintf("rfc2136 %s %s %s %s", p.ex.server, p.zone, p.ex.key.Name, p.ex.key.Algorithm)
}

// SwapBatch implements BatchSwapper with ONE signed UPDATE message that
// carries every op's prerequisites and updates. RFC 2136 §3.2 and §3.4:
// the server checks every prerequisite before it applies any update, and
// applies the whole update section or none of it, so each op keeps its own
// fence prerequisite and no op is written unless all are.
func (p *RFC2136) SwapBatch(ctx context.Context, ops []SwapOp) error {
	m := new(dns.Msg)
	m.SetUpdate(p.zone)
	seen := map[RRsetID]bool{}
	n := 0
	for i, op := range ops {
		q, ok := op.Provider.(*RFC2136)
		if !ok || q.BatchKey() != p.BatchKey() {
			return fmt.Errorf("rfc2136 swap batch: %w: op %d is not for %s", ErrConfig, i, p.BatchKey())
		}
		ids := []RRsetID{q.fenceID()}
		for _, s := range op.Expected {
			ids = append(ids, normalizeID(s.ID(), p.zone))
		}
		for _, id := range ids {
			if seen[id] {
				// Two prerequisites on one RRset would be checked as one
				// (RFC 2136 §3.2.5 builds one RRset per name and type).
				return fmt.Errorf("rfc2136 swap batch: %w: %s is in two swaps", ErrConfig, id)
			}
			seen[id] = true
		}
		k, err := q.addSwap(m, op.Expected, op.Desired, op.FenceOld, op.FenceNew)
		if err != nil {
			return fmt.Errorf("rfc2136 swap batch: op %d: %w", i, err)
		}
		n += k
	}
	err := p.send(ctx, m)
	if rc, ok := prereqFailure(err); ok {
		// Which op failed is the caller's to learn, each Swap on its own.
		return fmt.Errorf("rfc2136 swap batch: %w (%s)", ErrConflict, rcodeName(rc))
	}
	if err != nil {
		return fmt.Errorf("rfc2136 swap batch: %w", err)
	}
	p.log.Info("dns records swapped in one update", "swaps", len(ops), "rrsets", n)
	return nil
}

// conflict re-reads the expected RRsets and the fence after a failed
// prerequisite, so the caller can re-plan from what is there now.
func (p *RFC2136) conflict(ctx context.Context, rc int, expected []RRset) error {
	ce := &ConflictError{Rcode: rcodeName(rc)}
	ids := make([]RRsetID, 0, len(expected)+1)
	for _, s := range expected {
		ids = append(ids, s.ID())
	}
	ids = append(ids, p.fenceID())
	cur, err := p.GetRecords(ctx, ids)
	if err == nil {
		ce.Current = cur[:len(expected)]
		ce.Fence, err = fenceFromSet(cur[len(expected)])
	}
	ce.ReadErr = err
	p.log.Warn("dns swap conflict", "rcode", ce.Rcode, "gen", ce.Fence)
	return fmt.Errorf("rfc2136 swap: %w", ce)
}

// prereqFailure reports whether err is a prerequisite rcode (RFC 2136 §2.2).
func prereqFailure(err error) (int, bool) {
	rc, ok := asRcode(err)
	if !ok {
		return 0, false
	}
	switch rc {
	case dns.RcodeNXRrset, dns.RcodeYXRrset, dns.RcodeNameError, dns.RcodeYXDomain:
		return rc, true
	}
	return 0, false
}

// send sends an UPDATE over TCP and maps its rcode to an error.
func (p *RFC2136) send(ctx context.Context, m *dns.Msg) error {
	m.Compress = true
	// Leave room for the TSIG record (name, algorithm, 64-byte MAC).
	if n := m.Len(); n > dns.MaxMsgSize-512 {
		return fmt.Errorf("update %s: %w (%d bytes)", p.zone, ErrTooLarge, n)
	}
	r, err := p.ex.exchange(ctx, m, "tcp")
	if err != nil {
		return err
	}
	if r.Rcode != dns.RcodeSuccess {
		return &RcodeError{Op: "update", Rcode: r.Rcode}
	}
	return nil
}

func (r *RFC2136Config) validate() field.Errors {
	var errs field.Errors
	errs.HostPort("server", r.Server)
	required(&errs, "key_name", r.KeyName)
	requiredFile(&errs, "key_file", r.KeyFile)
	if r.Algorithm != "hmac-sha256" && r.Algorithm != "hmac-sha512" {
		errs.Add("algorithm", "%q must be hmac-sha256 or hmac-sha512", r.Algorithm)
	}
	return errs
}

func (r *RFC2136Config) credentials() []Credential { return fileCredential("key_file", r.KeyFile) }

func (r *RFC2136Config) build(b build) (Provider, error) {
	return NewRFC2136(b.zone, b.fence, *r, b.logger)
}
