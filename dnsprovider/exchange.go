package dnsprovider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/drwatch/drwatch/dnsprovider/internal/tsig"
	"github.com/miekg/dns"
)

// exchanger sends one DNS message to one server and checks the reply
// before anyone looks at its contents.
type exchanger struct {
	server  string
	zone    string
	key     *tsig.Key // nil: unsigned
	timeout time.Duration
}

// tsigFudge is the allowed clock skew for signed messages (RFC 8945 §5.2.3 suggests 300 s).
const tsigFudge = 300

// udpSize is the EDNS0 buffer we advertise on queries (the DNS flag day 2020 value).
const udpSize = 1232

// exchange sends m over network ("udp" or "tcp") and returns a reply that is a
// response to m, from the zone's server, correctly signed when m was. m must
// not be signed yet: exchange adds the TSIG as the last change.
func (x *exchanger) exchange(ctx context.Context, m *dns.Msg, network string) (*dns.Msg, error) {
	op := "query"
	if m.Opcode == dns.OpcodeUpdate {
		op = "update"
	}
	c := &dns.Client{Net: network, Timeout: x.timeout, UDPSize: udpSize}
	// Name compression keeps a 1,000-RRset swap under the 64 KiB TCP limit.
	m.Compress = true
	if x.key != nil {
		c.TsigProvider = tsig.NewProvider(*x.key)
		// SetTsig must be the last change to the message (the MAC covers it all).
		m.SetTsig(x.key.Name, x.key.Algorithm, tsigFudge, time.Now().Unix())
	}
	r, err := x.send(ctx, c, m)
	if err != nil {
		return nil, x.classifyTransport(op, r, err)
	}
	if err := x.checkReply(op, m, r); err != nil {
		return nil, err
	}
	return r, nil
}

// send makes the exchange on a connection of its own that ends when ctx
// is cancelled: miekg/dns honours only a context's deadline, so a deposed
// leader's cancelled write, or a stopping node's, would otherwise wait
// out the exchange timeout on a server that does not answer. The outcome
// of a cancelled update is unknown, as after a timeout.
func (x *exchanger) send(ctx context.Context, c *dns.Client, m *dns.Msg) (*dns.Msg, error) {
	conn, err := c.DialContext(ctx, x.server)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	// Closing, not a deadline: the exchange sets its own deadlines after
	// this may have run, and a closed connection stays closed.
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	r, _, err := c.ExchangeWithConnContext(ctx, m, conn)
	if err != nil && errors.Is(ctx.Err(), context.Canceled) {
		return r, fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return r, err
}

// classifyTransport turns a miekg/dns exchange error into our errors.
func (x *exchanger) classifyTransport(op string, r *dns.Msg, err error) error {
	if isTSIGErr(err) {
		// The reply carried a TSIG that did not verify. A server that refused
		// our key answers NOTAUTH with an unsigned (empty-MAC) TSIG: that is an
		// auth failure. Anything else is a forged or broken reply.
		if r != nil && r.Rcode == dns.RcodeNotAuth {
			return fmt.Errorf("%s %s: %w", op, x.zone, x.authErr(r))
		}
		return fmt.Errorf("%s %s: %w: reply tsig does not verify (%v)", op, x.zone, ErrBadReply, err)
	}
	var de *dns.Error
	if errors.As(err, &de) {
		return fmt.Errorf("%s %s: %w: %v", op, x.zone, ErrBadReply, err)
	}
	return fmt.Errorf("%s %s via %s: %w", op, x.zone, x.server, err)
}

func isTSIGErr(err error) bool {
	return errors.Is(err, dns.ErrSig) || errors.Is(err, dns.ErrSecret) || errors.Is(err, dns.ErrTime) || errors.Is(err, dns.ErrKeyAlg) || errors.Is(err, dns.ErrNoSig) || errors.Is(err, dns.ErrAuth)
}

func (x *exchanger) authErr(r *dns.Msg) error {
	name := "unsigned request"
	if x.key != nil {
		name = x.key.String()
	}
	reason := rcodeName(r.Rcode)
	if t := r.IsTsig(); t != nil && t.Error != 0 {
		reason += "/" + rcodeName(int(t.Error))
	}
	return &AuthError{Key: name, Reason: reason}
}

// checkReply validates a reply against its request. It runs before any
// record in the reply is believed.
func (x *exchanger) checkReply(op string, m, r *dns.Msg) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%s %s: %w: %s", op, x.zone, ErrBadReply, fmt.Sprintf(format, a...))
	}
	if r == nil {
		return bad("no reply")
	}
	if r.Id != m.Id {
		return bad("id %d, want %d", r.Id, m.Id)
	}
	if !r.Response {
		return bad("not a response")
	}
	if r.Opcode != m.Opcode {
		return bad("opcode %s, want %s", dns.OpcodeToString[r.Opcode], dns.OpcodeToString[m.Opcode])
	}
	// A server may leave out the question in an error reply (FORMERR,
	// NOTIMP); otherwise it must echo ours.
	if len(r.Question) != 0 || r.Rcode == dns.RcodeSuccess || r.Rcode == dns.RcodeNameError {
		if len(r.Question) != 1 {
			return bad("%d questions, want 1", len(r.Question))
		}
		q, want := r.Question[0], m.Question[0]
		if !strings.EqualFold(dns.CanonicalName(q.Name), dns.CanonicalName(want.Name)) || q.Qtype != want.Qtype || q.Qclass != want.Qclass {
			return bad("question %s, want %s", strings.TrimPrefix(q.String(), ";"), strings.TrimPrefix(want.String(), ";"))
		}
	}
	t := r.IsTsig()
	if t != nil && t.Error != 0 {
		return fmt.Errorf("%s %s: %w", op, x.zone, x.authErr(r))
	}
	if r.Rcode == dns.RcodeNotAuth {
		if x.key != nil {
			return fmt.Errorf("%s %s: %w", op, x.zone, x.authErr(r))
		}
		return fmt.Errorf("%s %s: %w: server is not authoritative (NOTAUTH)", op, x.zone, ErrWrongZone)
	}
	// We signed, so a reply that is not signed is not proof of anything: only
	// error answers (which change nothing) may come unsigned.
	if x.key != nil && t == nil && (r.Rcode == dns.RcodeSuccess || r.Rcode == dns.RcodeNameError) {
		return bad("reply is not signed")
	}
	if t != nil && x.key != nil && dns.CanonicalName(t.Hdr.Name) != x.key.Name {
		return bad("reply signed with another key")
	}
	return nil
}

// query asks for one RRset. It uses UDP and retries over TCP when the reply is
// truncated. The answer must be authoritative and inside the zone.
func (x *exchanger) query(ctx context.Context, fqdn string, qtype uint16) ([]dns.RR, error) {
	var r *dns.Msg
	for _, network := range []string{"udp", "tcp"} {
		m := new(dns.Msg)
		m.SetQuestion(dns.CanonicalName(fqdn), qtype)
		m.RecursionDesired = false
		m.SetEdns0(udpSize, false)
		var err error
		r, err = x.exchange(ctx, m, network)
		if err != nil {
			return nil, err
		}
		if !r.Truncated {
			break
		}
		if network == "tcp" {
			return nil, fmt.Errorf("query %s %s: %w: truncated over tcp", fqdn, dns.TypeToString[qtype], ErrBadReply)
		}
	}
	return x.answer(r, fqdn, qtype)
}

// answer extracts the RRset from a checked reply.
func (x *exchanger) answer(r *dns.Msg, fqdn string, qtype uint16) ([]dns.RR, error) {
	what := fmt.Sprintf("query %s %s", fqdn, dns.TypeToString[qtype])
	switch r.Rcode {
	case dns.RcodeSuccess, dns.RcodeNameError:
	default:
		return nil, fmt.Errorf("%s: %w", what, &RcodeError{Op: "query", Rcode: r.Rcode})
	}
	if !r.Authoritative {
		return nil, fmt.Errorf("%s: %w: answer is not authoritative", what, ErrWrongZone)
	}
	var out []dns.RR
	for _, rr := range r.Answer {
		h := rr.Header()
		if !inZone(h.Name, x.zone) {
			return nil, fmt.Errorf("%s: %w: answer for %s is outside %s", what, ErrWrongZone, h.Name, x.zone)
		}
		if h.Rrtype == qtype && h.Class == dns.ClassINET && dns.CanonicalName(h.Name) == dns.CanonicalName(fqdn) {
			out = append(out, rr)
		}
	}
	for _, rr := range r.Ns {
		if soa, ok := rr.(*dns.SOA); ok && dns.CanonicalName(soa.Hdr.Name) != dns.CanonicalName(x.zone) {
			return nil, fmt.Errorf("%s: %w: SOA %s in reply, want %s", what, ErrWrongZone, soa.Hdr.Name, x.zone)
		}
	}
	if r.Rcode == dns.RcodeNameError && len(out) > 0 {
		return nil, fmt.Errorf("%s: %w: NXDOMAIN with answers", what, ErrBadReply)
	}
	return out, nil
}

// rrsetFrom builds an RRset from the records of one (name, type).
func rrsetFrom(id RRsetID, rrs []dns.RR) RRset {
	s := RRset{Name: id.Name, Type: id.Type}
	for i, rr := range rrs {
		if i == 0 {
			s.TTL = time.Duration(rr.Header().Ttl) * time.Second
		}
		s.Values = append(s.Values, rrValue(rr))
	}
	return s
}
