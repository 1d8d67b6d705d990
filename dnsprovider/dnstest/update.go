package dnstest

import (
	"slices"
	"strings"

	"github.com/miekg/dns"
)

// update applies an RFC 2136 UPDATE: zone check (§3.1), prerequisites
// (§3.2), prescan and apply (§3.4), all-or-nothing, serial bump on change.
func (s *Server) update(w dns.ResponseWriter, req *dns.Msg) *dns.Msg {
	resp := new(dns.Msg)
	resp.SetReply(req)
	fail := func(rc int) *dns.Msg { resp.Rcode = rc; return resp }

	zq := req.Question[0]
	if zq.Qtype != dns.TypeSOA || zq.Qclass != dns.ClassINET {
		return fail(dns.RcodeFormatError)
	}
	if dns.CanonicalName(zq.Name) != s.zone {
		return fail(dns.RcodeNotAuth) // §3.1.1: not authoritative for that zone
	}
	if req.IsTsig() == nil {
		return fail(dns.RcodeRefused) // BIND's answer to an unsigned update under update-policy
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if rc := s.checkPrereqs(req.Answer); rc != dns.RcodeSuccess {
		return fail(rc)
	}
	if rc := s.prescan(req.Ns); rc != dns.RcodeSuccess {
		return fail(rc)
	}
	z := cloneZone(s.records)
	for _, rr := range req.Ns {
		s.apply(z, rr)
	}
	// Like BIND, an update whose net effect is nil (delete then re-add the
	// same records) leaves the serial alone.
	if digest(z) != digest(s.records) {
		soa := z[rrKey{s.zone, dns.TypeSOA}][0].(*dns.SOA)
		soa.Serial++
		s.records = z
		s.updates++
	}
	return resp
}

func (s *Server) checkPrereqs(prs []dns.RR) int {
	temp := map[rrKey][]dns.RR{}
	for _, rr := range prs {
		h := rr.Header()
		name := dns.CanonicalName(h.Name)
		if h.Ttl != 0 {
			return dns.RcodeFormatError
		}
		if !dns.IsSubDomain(s.zone, name) {
			return dns.RcodeNotZone
		}
		switch h.Class {
		case dns.ClassANY:
			if h.Rdlength != 0 {
				return dns.RcodeFormatError
			}
			if h.Rrtype == dns.TypeANY {
				if !s.nameInUse(s.records, name) {
					return dns.RcodeNameError
				}
			} else if len(s.records[rrKey{name, h.Rrtype}]) == 0 {
				return dns.RcodeNXRrset
			}
		case dns.ClassNONE:
			if h.Rdlength != 0 {
				return dns.RcodeFormatError
			}
			if h.Rrtype == dns.TypeANY {
				if s.nameInUse(s.records, name) {
					return dns.RcodeYXDomain
				}
			} else if len(s.records[rrKey{name, h.Rrtype}]) != 0 {
				return dns.RcodeYXRrset
			}
		case dns.ClassINET:
			addRR(temp, rr)
		default:
			return dns.RcodeFormatError
		}
	}
	// §3.2.3: value-dependent — the zone's RRset must equal the given set exactly.
	for k, want := range temp {
		have := s.records[k]
		if len(have) != len(want) {
			return dns.RcodeNXRrset
		}
		for _, w := range want {
			if !containsRR(have, w) {
				return dns.RcodeNXRrset
			}
		}
	}
	return dns.RcodeSuccess
}

func (s *Server) prescan(ups []dns.RR) int {
	for _, rr := range ups {
		h := rr.Header()
		if !dns.IsSubDomain(s.zone, dns.CanonicalName(h.Name)) {
			return dns.RcodeNotZone
		}
		switch h.Class {
		case dns.ClassINET:
			switch h.Rrtype {
			case dns.TypeANY, dns.TypeAXFR, dns.TypeIXFR, dns.TypeMAILA, dns.TypeMAILB, dns.TypeTSIG, dns.TypeOPT:
				return dns.RcodeFormatError
			}
		case dns.ClassANY:
			if h.Ttl != 0 || h.Rdlength != 0 {
				return dns.RcodeFormatError
			}
		case dns.ClassNONE:
			if h.Ttl != 0 {
				return dns.RcodeFormatError
			}
		default:
			return dns.RcodeFormatError
		}
	}
	return dns.RcodeSuccess
}

// apply performs one update RR on z and reports whether z changed.
func (s *Server) apply(z map[rrKey][]dns.RR, rr dns.RR) bool {
	h := rr.Header()
	name := dns.CanonicalName(h.Name)
	apex := name == s.zone
	switch h.Class {
	case dns.ClassINET:
		if h.Rrtype == dns.TypeSOA {
			return false // serials are ours to manage
		}
		return addRR(z, rr)
	case dns.ClassANY:
		changed := false
		for k := range z {
			if k.name != name || (h.Rrtype != dns.TypeANY && k.t != h.Rrtype) {
				continue
			}
			if apex && (k.t == dns.TypeSOA || k.t == dns.TypeNS) {
				continue // §3.4.2.3: never delete the apex SOA or NS this way
			}
			delete(z, k)
			changed = true
		}
		return changed
	case dns.ClassNONE:
		k := rrKey{name, h.Rrtype}
		if apex && (k.t == dns.TypeSOA || (k.t == dns.TypeNS && len(z[k]) <= 1)) {
			return false
		}
		for i, have := range z[k] {
			if sameRdata(have, rr) {
				z[k] = append(z[k][:i:i], z[k][i+1:]...)
				if len(z[k]) == 0 {
					delete(z, k)
				}
				return true
			}
		}
	}
	return false
}

func (s *Server) nameInUse(z map[rrKey][]dns.RR, name string) bool {
	for k, v := range z {
		if k.name == name && len(v) > 0 {
			return true
		}
	}
	return false
}

// sameRdata compares two records' owner, type and data, ignoring class and TTL.
func sameRdata(a, b dns.RR) bool {
	a, b = dns.Copy(a), dns.Copy(b)
	a.Header().Class, b.Header().Class = dns.ClassINET, dns.ClassINET
	a.Header().Name, b.Header().Name = dns.CanonicalName(a.Header().Name), dns.CanonicalName(b.Header().Name)
	return dns.IsDuplicate(a, b)
}

func containsRR(set []dns.RR, rr dns.RR) bool {
	for _, have := range set {
		if sameRdata(have, rr) {
			return true
		}
	}
	return false
}

func digest(z map[rrKey][]dns.RR) string {
	var lines []string
	for _, rrs := range z {
		for _, rr := range rrs {
			lines = append(lines, rr.String())
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func cloneZone(z map[rrKey][]dns.RR) map[rrKey][]dns.RR {
	out := make(map[rrKey][]dns.RR, len(z))
	for k, rrs := range z {
		c := make([]dns.RR, len(rrs))
		for i, rr := range rrs {
			c[i] = dns.Copy(rr)
		}
		out[k] = c
	}
	return out
}
