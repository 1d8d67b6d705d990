package dnstest

import (
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"
)

const (
	zone   = "example.test."
	key    = "k."
	secret = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTEyMzQ=" // test-only
)

func start(t *testing.T) *Server {
	t.Helper()
	s, err := Start("127.0.0.1:0", zone, Key{Name: key, Algorithm: "hmac-sha256", Secret: secret})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Seed("www 60 IN A 192.0.2.1", "www 60 IN A 192.0.2.2", "txt 60 IN TXT \"gen=1\""); err != nil {
		t.Fatalf("Seed: %v", err)
	}
	return s
}

func rrs(ss ...string) []dns.RR {
	var out []dns.RR
	for _, s := range ss {
		r, err := dns.NewRR(s)
		if err != nil {
			panic(err)
		}
		out = append(out, r)
	}
	return out
}

func send(t *testing.T, s *Server, m *dns.Msg, alg, sec string) *dns.Msg {
	t.Helper()
	c := &dns.Client{Net: "tcp", Timeout: 5 * time.Second}
	if sec != "" {
		c.TsigSecret = map[string]string{key: sec}
		m.SetTsig(key, alg, 300, time.Now().Unix())
	}
	r, _, err := c.Exchange(m, s.Addr())
	if err != nil && r == nil {
		t.Fatalf("exchange: %v", err)
	}
	return r
}

// TestUpdateSemantics checks prerequisite and update handling against
// RFC 2136 (and what BIND answers).
func TestUpdateSemantics(t *testing.T) {
	tests := []struct {
		name        string
		build       func(m *dns.Msg)
		alg, secret string
		wantRcode   int
		wantChanged bool
	}{
		{"used_exact_set", func(m *dns.Msg) {
			m.Used(rrs("www.example.test. 0 IN A 192.0.2.2", "www.example.test. 0 IN A 192.0.2.1"))
			m.Insert(rrs("new.example.test. 60 IN A 192.0.2.9"))
		}, dns.HmacSHA256, secret, dns.RcodeSuccess, true},
		{"used_subset_is_nxrrset", func(m *dns.Msg) {
			m.Used(rrs("www.example.test. 0 IN A 192.0.2.1"))
			m.Insert(rrs("new.example.test. 60 IN A 192.0.2.9"))
		}, dns.HmacSHA256, secret, dns.RcodeNXRrset, false},
		{"used_other_value", func(m *dns.Msg) {
			m.Used(rrs(`txt.example.test. 0 IN TXT "gen=2"`))
		}, dns.HmacSHA256, secret, dns.RcodeNXRrset, false},
		{"rrset_used", func(m *dns.Msg) { m.RRsetUsed(rrs("www.example.test. 0 IN A 0.0.0.0")) }, dns.HmacSHA256, secret, dns.RcodeSuccess, false},
		{"rrset_used_missing", func(m *dns.Msg) { m.RRsetUsed(rrs("nope.example.test. 0 IN A 0.0.0.0")) }, dns.HmacSHA256, secret, dns.RcodeNXRrset, false},
		{"rrset_not_used_present", func(m *dns.Msg) { m.RRsetNotUsed(rrs("www.example.test. 0 IN A 0.0.0.0")) }, dns.HmacSHA256, secret, dns.RcodeYXRrset, false},
		{"name_used_missing", func(m *dns.Msg) { m.NameUsed(rrs("nope.example.test. 0 IN A 0.0.0.0")) }, dns.HmacSHA256, secret, dns.RcodeNameError, false},
		{"name_not_used_present", func(m *dns.Msg) { m.NameNotUsed(rrs("www.example.test. 0 IN A 0.0.0.0")) }, dns.HmacSHA256, secret, dns.RcodeYXDomain, false},
		{"prereq_outside_zone", func(m *dns.Msg) { m.RRsetUsed(rrs("www.other.test. 0 IN A 0.0.0.0")) }, dns.HmacSHA256, secret, dns.RcodeNotZone, false},
		{"update_outside_zone", func(m *dns.Msg) { m.Insert(rrs("www.other.test. 60 IN A 192.0.2.1")) }, dns.HmacSHA256, secret, dns.RcodeNotZone, false},
		{"unsigned_refused", func(m *dns.Msg) { m.Insert(rrs("new.example.test. 60 IN A 192.0.2.9")) }, "", "", dns.RcodeRefused, false},
		{"wrong_secret_notauth", func(m *dns.Msg) { m.Insert(rrs("new.example.test. 60 IN A 192.0.2.9")) }, dns.HmacSHA256, "d3Jvbmctd3Jvbmctd3Jvbmc=", dns.RcodeNotAuth, false},
		{"wrong_algorithm_notauth", func(m *dns.Msg) { m.Insert(rrs("new.example.test. 60 IN A 192.0.2.9")) }, dns.HmacSHA512, secret, dns.RcodeNotAuth, false},
		{"same_records_no_change", func(m *dns.Msg) {
			m.RemoveRRset(rrs("www.example.test. 0 IN A 0.0.0.0"))
			m.Insert(rrs("www.example.test. 60 IN A 192.0.2.1", "www.example.test. 60 IN A 192.0.2.2"))
		}, dns.HmacSHA256, secret, dns.RcodeSuccess, false},
		{"apex_soa_ns_not_deletable", func(m *dns.Msg) {
			m.RemoveName(rrs("example.test. 0 IN A 0.0.0.0"))
		}, dns.HmacSHA256, secret, dns.RcodeSuccess, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t)
			before := s.Records()
			m := new(dns.Msg)
			m.SetUpdate(zone)
			tt.build(m)
			r := send(t, s, m, tt.alg, tt.secret)
			if r.Rcode != tt.wantRcode {
				t.Fatalf("rcode: got %s, want %s", dns.RcodeToString[r.Rcode], dns.RcodeToString[tt.wantRcode])
			}
			after := s.Records()
			if !tt.wantChanged && fmt.Sprint(before) != fmt.Sprint(after) {
				t.Errorf("zone changed: got %v, want %v", after, before)
			}
		})
	}
}

func TestSerialMovesOnlyOnChange(t *testing.T) {
	s := start(t)
	upd := func(f func(m *dns.Msg)) {
		m := new(dns.Msg)
		m.SetUpdate(zone)
		f(m)
		if r := send(t, s, m, dns.HmacSHA256, secret); r.Rcode != dns.RcodeSuccess {
			t.Fatalf("update: got %s, want NOERROR", dns.RcodeToString[r.Rcode])
		}
	}
	s0 := s.Serial()
	upd(func(m *dns.Msg) { m.Insert(rrs("www.example.test. 60 IN A 192.0.2.1")) }) // already there
	if got := s.Serial(); got != s0 {
		t.Errorf("serial after no-op: got %d, want %d", got, s0)
	}
	upd(func(m *dns.Msg) { m.Insert(rrs("www.example.test. 60 IN A 192.0.2.3")) })
	if got := s.Serial(); got != s0+1 {
		t.Errorf("serial after change: got %d, want %d", got, s0+1)
	}
}

func TestQueries(t *testing.T) {
	s := start(t)
	var big []string
	for i := range 120 {
		big = append(big, fmt.Sprintf("big 60 IN A 10.0.%d.%d", i/250, i%250))
	}
	if err := s.Seed(big...); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		qname     string
		qtype     uint16
		net       string
		wantRcode int
		wantN     int
		wantTC    bool
	}{
		{"answer", "www.example.test.", dns.TypeA, "udp", dns.RcodeSuccess, 2, false},
		{"nodata", "www.example.test.", dns.TypeAAAA, "udp", dns.RcodeSuccess, 0, false},
		{"nxdomain", "nope.example.test.", dns.TypeA, "udp", dns.RcodeNameError, 0, false},
		{"other_zone_refused", "www.other.test.", dns.TypeA, "udp", dns.RcodeRefused, 0, false},
		{"big_udp_truncated", "big.example.test.", dns.TypeA, "udp", dns.RcodeSuccess, -1, true},
		{"big_tcp_whole", "big.example.test.", dns.TypeA, "tcp", dns.RcodeSuccess, 120, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := new(dns.Msg)
			m.SetQuestion(tt.qname, tt.qtype)
			c := &dns.Client{Net: tt.net, Timeout: 5 * time.Second}
			r, _, err := c.Exchange(m, s.Addr())
			if err != nil {
				t.Fatalf("exchange: %v", err)
			}
			if r.Rcode != tt.wantRcode || r.Truncated != tt.wantTC || (tt.wantN >= 0 && len(r.Answer) != tt.wantN) {
				t.Fatalf("got rcode %s tc=%v answers=%d, want %s tc=%v answers=%d", dns.RcodeToString[r.Rcode], r.Truncated, len(r.Answer), dns.RcodeToString[tt.wantRcode], tt.wantTC, tt.wantN)
			}
		})
	}
}
