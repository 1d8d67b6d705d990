package dnstest

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/drwatch/drwatch/dnsprovider/internal/tsig"
	"github.com/miekg/dns"
)

// Key is a TSIG key the server accepts for UPDATE.
type Key struct {
	Name      string // key name, e.g. "drwatch."
	Algorithm string // "hmac-sha256" or "hmac-sha512"
	Secret    string // base64
}

// Server is a running embedded authoritative server for one zone.
// Its methods are safe for concurrent use.
type Server struct {
	zone string
	udp  *dns.Server
	tcp  *dns.Server
	addr string

	mu      sync.Mutex
	records map[rrKey][]dns.RR // owner+type -> RRset (class IN)
	updates int                // UPDATE messages that changed the zone
	signed  int                // TSIG-signed queries answered

	wg sync.WaitGroup
}

type rrKey struct {
	name string
	t    uint16
}

// Start serves zone on addr ("127.0.0.1:0" picks a free port; UDP and TCP
// share the port) with the given update keys. The zone starts with a SOA, an
// NS "ns1.<zone>" and "ns1.<zone> A <addr's IP>", so NS-based verification
// finds this server. Close stops it.
func Start(addr, zone string, keys ...Key) (*Server, error) {
	zone = dns.CanonicalName(zone)
	var tkeys []tsig.Key
	for _, k := range keys {
		tk, err := tsig.NewKey(k.Name, k.Algorithm, k.Secret)
		if err != nil {
			return nil, fmt.Errorf("dnstest key %s: %w", k.Name, err)
		}
		tkeys = append(tkeys, tk)
	}
	s := &Server{zone: zone, records: map[rrKey][]dns.RR{}}
	pc, l, err := listenBoth(addr)
	if err != nil {
		return nil, fmt.Errorf("dnstest listen: %w", err)
	}
	s.addr = pc.LocalAddr().String()
	host, _, _ := net.SplitHostPort(s.addr)
	s.seedDefaults(host)

	prov := tsig.NewProvider(tkeys...)
	mux := dns.HandlerFunc(s.serve)
	accept := func(dh dns.Header) dns.MsgAcceptAction {
		// The default accept func answers UPDATE with NOTIMP; we serve it.
		if dh.Bits&(1<<15) != 0 {
			return dns.MsgIgnore
		}
		op := int(dh.Bits>>11) & 0xF
		if op != dns.OpcodeQuery && op != dns.OpcodeUpdate {
			return dns.MsgRejectNotImplemented
		}
		if dh.Qdcount != 1 {
			return dns.MsgReject
		}
		return dns.MsgAccept
	}
	started := make(chan error, 2)
	s.udp = &dns.Server{PacketConn: pc, Handler: mux, TsigProvider: prov, MsgAcceptFunc: accept, NotifyStartedFunc: func() { started <- nil }}
	s.tcp = &dns.Server{Listener: l, Handler: mux, TsigProvider: prov, MsgAcceptFunc: accept, NotifyStartedFunc: func() { started <- nil }}
	for _, srv := range []*dns.Server{s.udp, s.tcp} {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := srv.ActivateAndServe(); err != nil {
				select {
				case started <- err:
				default:
				}
			}
		}()
	}
	for range 2 {
		if err := <-started; err != nil {
			s.Close()
			return nil, fmt.Errorf("dnstest serve: %w", err)
		}
	}
	return s, nil
}

// listenBoth binds UDP and TCP on the same port.
func listenBoth(addr string) (net.PacketConn, net.Listener, error) {
	var lastErr error
	for range 20 {
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return nil, nil, err
		}
		l, err := net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			return pc, l, nil
		}
		pc.Close()
		lastErr = err
		if _, port, _ := net.SplitHostPort(addr); port != "0" {
			break
		}
	}
	return nil, nil, lastErr
}

func (s *Server) seedDefaults(host string) {
	soa := &dns.SOA{Hdr: dns.RR_Header{Name: s.zone, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: 5},
		Ns: "ns1." + s.zone, Mbox: "hostmaster." + s.zone, Serial: 1, Refresh: 60, Retry: 30, Expire: 3600, Minttl: 5}
	ns := &dns.NS{Hdr: dns.RR_Header{Name: s.zone, Rrtype: dns.TypeNS, Class: dns.ClassINET, Ttl: 5}, Ns: "ns1." + s.zone}
	s.records[rrKey{s.zone, dns.TypeSOA}] = []dns.RR{soa}
	s.records[rrKey{s.zone, dns.TypeNS}] = []dns.RR{ns}
	if ip := net.ParseIP(host); ip != nil {
		var a dns.RR
		if ip4 := ip.To4(); ip4 != nil {
			a = &dns.A{Hdr: dns.RR_Header{Name: "ns1." + s.zone, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 5}, A: ip4}
		} else {
			a = &dns.AAAA{Hdr: dns.RR_Header{Name: "ns1." + s.zone, Rrtype: dns.TypeAAAA, Class: dns.ClassINET, Ttl: 5}, AAAA: ip}
		}
		s.records[rrKey{"ns1." + s.zone, a.Header().Rrtype}] = []dns.RR{a}
	}
}

// Addr returns the "host:port" the server listens on (UDP and TCP).
func (s *Server) Addr() string { return s.addr }

// Zone returns the served zone's FQDN.
func (s *Server) Zone() string { return s.zone }

// Close stops both listeners and waits for the serving goroutines.
func (s *Server) Close() error {
	var errs []error
	for _, srv := range []*dns.Server{s.udp, s.tcp} {
		if srv != nil {
			if err := srv.Shutdown(); err != nil && !strings.Contains(err.Error(), "not started") {
				errs = append(errs, err)
			}
		}
	}
	s.wg.Wait()
	return errors.Join(errs...)
}

// Seed adds records given in zone-file syntax ("www 60 IN A 192.0.2.1";
// names are relative to the zone unless they end in a dot). It does not bump
// the serial: it is the zone's initial content.
func (s *Server) Seed(lines ...string) error {
	var rrs []dns.RR
	for _, line := range lines {
		zp := dns.NewZoneParser(strings.NewReader(line+"\n"), s.zone, "")
		zp.SetDefaultTTL(60)
		for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
			if !dns.IsSubDomain(s.zone, rr.Header().Name) {
				return fmt.Errorf("dnstest seed: %s is outside %s", rr.Header().Name, s.zone)
			}
			rrs = append(rrs, rr)
		}
		if err := zp.Err(); err != nil {
			return fmt.Errorf("dnstest seed: %w", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rr := range rrs {
		addRR(s.records, rr)
	}
	return nil
}

// Records returns a copy of the zone's records, sorted by name and type.
func (s *Server) Records() []dns.RR {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []dns.RR
	for _, rrs := range s.records {
		for _, rr := range rrs {
			out = append(out, dns.Copy(rr))
		}
	}
	slices.SortFunc(out, func(a, b dns.RR) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// Serial returns the SOA serial.
func (s *Server) Serial() uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.records[rrKey{s.zone, dns.TypeSOA}][0].(*dns.SOA).Serial
}

// Updates returns how many UPDATE messages changed the zone.
func (s *Server) Updates() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.updates
}

// SignedQueries returns how many TSIG-signed queries (not updates) it
// answered: a provider's reads of records and fence, which sign, and not
// a verifier's, which do not.
func (s *Server) SignedQueries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.signed
}

func (s *Server) serve(w dns.ResponseWriter, req *dns.Msg) {
	if t := req.IsTsig(); t != nil && w.TsigStatus() != nil {
		s.writeTSIGError(w, req, t, w.TsigStatus())
		return
	}
	var resp *dns.Msg
	switch req.Opcode {
	case dns.OpcodeQuery:
		if req.IsTsig() != nil {
			s.mu.Lock()
			s.signed++
			s.mu.Unlock()
		}
		resp = s.query(req)
	case dns.OpcodeUpdate:
		resp = s.update(w, req)
	default:
		resp = new(dns.Msg)
		resp.SetRcode(req, dns.RcodeNotImplemented)
	}
	if resp == nil {
		return
	}
	// Sign the answer when the request was validly signed (RFC 8945 §5.3).
	if t := req.IsTsig(); t != nil && w.TsigStatus() == nil && resp.IsTsig() == nil {
		resp.SetTsig(t.Hdr.Name, t.Algorithm, 300, time.Now().Unix())
	}
	if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
		size := uint16(dns.MinMsgSize)
		if o := req.IsEdns0(); o != nil {
			size = max(o.UDPSize(), dns.MinMsgSize)
		}
		resp.Truncate(int(size))
	}
	_ = w.WriteMsg(resp)
}

func (s *Server) query(req *dns.Msg) *dns.Msg {
	resp := new(dns.Msg)
	resp.SetReply(req)
	if o := req.IsEdns0(); o != nil {
		resp.SetEdns0(o.UDPSize(), false)
	}
	q := req.Question[0]
	name := dns.CanonicalName(q.Name)
	if !dns.IsSubDomain(s.zone, name) || q.Qclass != dns.ClassINET {
		resp.Rcode = dns.RcodeRefused
		return resp
	}
	resp.Authoritative = true
	s.mu.Lock()
	defer s.mu.Unlock()
	exists := false
	for k := range s.records {
		if k.name == name {
			exists = true
			break
		}
	}
	for _, rr := range s.records[rrKey{name, q.Qtype}] {
		resp.Answer = append(resp.Answer, dns.Copy(rr))
	}
	if len(resp.Answer) == 0 {
		if !exists && !s.hasDescendant(name) {
			resp.Rcode = dns.RcodeNameError
		}
		resp.Ns = append(resp.Ns, dns.Copy(s.records[rrKey{s.zone, dns.TypeSOA}][0]))
	}
	return resp
}

// writeTSIGError answers a request whose signature failed: NOTAUTH with an
// unsigned TSIG carrying BADKEY, BADSIG or BADTIME (RFC 8945 §5.2), as BIND does.
func (s *Server) writeTSIGError(w dns.ResponseWriter, req *dns.Msg, t *dns.TSIG, err error) {
	resp := new(dns.Msg)
	resp.SetRcode(req, dns.RcodeNotAuth)
	code := uint16(dns.RcodeBadSig)
	switch {
	case errors.Is(err, dns.ErrSecret), errors.Is(err, dns.ErrKeyAlg):
		code = dns.RcodeBadKey
	case errors.Is(err, dns.ErrTime):
		code = dns.RcodeBadTime
	}
	resp.Extra = append(resp.Extra, &dns.TSIG{
		Hdr:       dns.RR_Header{Name: t.Hdr.Name, Rrtype: dns.TypeTSIG, Class: dns.ClassANY},
		Algorithm: t.Algorithm, TimeSigned: uint64(time.Now().Unix()), Fudge: 300,
		OrigId: req.Id, Error: code,
	})
	// Packed, not WriteMsg: WriteMsg would try to sign with a key that failed.
	if b, err := resp.Pack(); err == nil {
		_, _ = w.Write(b)
	}
}

// hasDescendant reports an empty non-terminal (NODATA, not NXDOMAIN).
func (s *Server) hasDescendant(name string) bool {
	for k := range s.records {
		if k.name != name && dns.IsSubDomain(name, k.name) {
			return true
		}
	}
	return false
}

func addRR(z map[rrKey][]dns.RR, rr dns.RR) bool {
	rr = dns.Copy(rr)
	h := rr.Header()
	h.Name = dns.CanonicalName(h.Name)
	h.Class = dns.ClassINET
	k := rrKey{h.Name, h.Rrtype}
	for _, have := range z[k] {
		if dns.IsDuplicate(have, rr) {
			return false
		}
	}
	// All records of an RRset share one TTL: the newest wins (as in BIND).
	for _, have := range z[k] {
		have.Header().Ttl = h.Ttl
	}
	z[k] = append(z[k], rr)
	return true
}
