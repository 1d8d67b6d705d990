package dnsprovider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/libdns/libdns"
	"github.com/miekg/dns"
	"github.com/mittwald/go-powerdns/pdnshttp"
)

// LibdnsClient is what drwatch needs from a libdns provider.
type LibdnsClient interface {
	libdns.RecordGetter
	libdns.RecordSetter
}

// Libdns adapts a libdns provider (Cloudflare, Route 53, PowerDNS,
// DigitalOcean, Hetzner, deSEC). It has NO compare-and-swap: these APIs
// cannot make a write conditional on the current records, so fencing is
// weaker (see the package doc). Safe for concurrent use if the wrapped
// client is (libdns requires it).
type Libdns struct {
	name   string
	zone   string
	client LibdnsClient
	log    *slog.Logger
}

var _ Provider = (*Libdns)(nil)

// NewLibdns wraps client for zone; name labels errors and logs ("cloudflare").
func NewLibdns(name, zone string, client LibdnsClient, log *slog.Logger) *Libdns {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	zone = dns.CanonicalName(zone)
	return &Libdns{name: name, zone: zone, client: client, log: log.With("zone", zone, "provider", name)}
}

// Zone implements Provider.
func (p *Libdns) Zone() string { return p.zone }

// GetRecords implements Provider. libdns can only list the whole zone; the
// wanted RRsets are picked out of that list.
func (p *Libdns) GetRecords(ctx context.Context, want []RRsetID) ([]RRset, error) {
	recs, err := p.client.GetRecords(ctx, p.zone)
	if err != nil {
		return nil, fmt.Errorf("%s read %s: %w", p.name, p.zone, classifyHTTP(err))
	}
	have := map[RRsetID]RRset{}
	for _, s := range RRsets(recs) {
		id := normalizeID(s.ID(), p.zone)
		s.Name, s.Type = id.Name, id.Type
		if s.Type == "TXT" {
			for i, v := range s.Values {
				s.Values[i] = unquoteTXT(v)
			}
		}
		have[id] = s
	}
	out := make([]RRset, len(want))
	for i, id := range want {
		nid := normalizeID(id, p.zone)
		if s, ok := have[nid]; ok {
			s.Name, s.Type = id.Name, nid.Type
			out[i] = s
		} else {
			out[i] = RRset{Name: id.Name, Type: nid.Type}
		}
	}
	return out, nil
}

// unquoteTXT undoes the quoting some APIs (PowerDNS) leave on TXT content.
func unquoteTXT(v string) string {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		if u, err := strconv.Unquote(v); err == nil {
			return u
		}
		return v[1 : len(v)-1]
	}
	return v
}

// SetRecords implements Provider: it reads the zone and calls the libdns
// SetRecords only for RRsets that differ, so a re-apply makes no API write.
// Several RRsets are not atomic here: libdns makes no such promise.
func (p *Libdns) SetRecords(ctx context.Context, sets []RRset) ([]RRset, error) {
	ids := make([]RRsetID, len(sets))
	for i, s := range sets {
		ids[i] = s.ID()
	}
	cur, err := p.GetRecords(ctx, ids)
	if err != nil {
		return nil, err
	}
	var changed, toSet, toDelete []RRset
	for i, s := range sets {
		if sameRRset(s, cur[i]) {
			continue
		}
		changed = append(changed, s)
		if len(s.Values) == 0 {
			toDelete = append(toDelete, cur[i])
		} else {
			toSet = append(toSet, s)
		}
	}
	if len(toSet) > 0 {
		if _, err := p.client.SetRecords(ctx, p.zone, Records(relative(toSet, p.zone))); err != nil {
			return nil, fmt.Errorf("%s set %s: %w", p.name, p.zone, classifyHTTP(err))
		}
	}
	if len(toDelete) > 0 {
		del, ok := p.client.(libdns.RecordDeleter)
		if !ok {
			return nil, fmt.Errorf("%s delete: %w", p.name, ErrUnsupported)
		}
		if _, err := del.DeleteRecords(ctx, p.zone, Records(relative(toDelete, p.zone))); err != nil {
			return nil, fmt.Errorf("%s delete %s: %w", p.name, p.zone, classifyHTTP(err))
		}
	}
	if len(changed) > 0 {
		p.log.Info("dns records set", "rrsets", len(changed), "mode", "unconditional")
	}
	return changed, nil
}

func relative(sets []RRset, zone string) []RRset {
	out := make([]RRset, len(sets))
	for i, s := range sets {
		s.Name = RelativeName(AbsoluteName(s.Name, zone), zone)
		s.Type = strings.ToUpper(s.Type)
		out[i] = s
	}
	return out
}

// HTTPStatusError is an HTTP API answer with an error status.
type HTTPStatusError struct {
	Status int
	Err    error
}

func (e *HTTPStatusError) Error() string { return fmt.Sprintf("http %d: %v", e.Status, e.Err) }
func (e *HTTPStatusError) Unwrap() error { return e.Err }

// Is maps statuses onto the sentinels: 401/403 are ErrAuth.
func (e *HTTPStatusError) Is(target error) bool {
	return target == ErrAuth && (e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden)
}

// classifyHTTP recognises the status errors of the client libraries we know,
// so callers can tell refused credentials (terminal) from server trouble.
func classifyHTTP(err error) error {
	var pe pdnshttp.ErrUnexpectedStatus
	if errors.As(err, &pe) {
		if pe.StatusCode >= 500 {
			return &HTTPStatusError{Status: pe.StatusCode, Err: fmt.Errorf("%w: %s", errServerSide, pe.Message)}
		}
		return &HTTPStatusError{Status: pe.StatusCode, Err: errors.New(pe.Message)}
	}
	return err
}

// errServerSide marks a 5xx answer, which IsRetryable treats as retryable.
var errServerSide = errors.New("server error")
