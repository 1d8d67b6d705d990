package dnsprovider_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/dnsprovider/internal/tsig"
	"github.com/miekg/dns"
)

// startFake serves h on UDP and TCP at a free 127.0.0.1 port. The server
// signs replies that carry a TSIG with signKey (which may differ from the
// client's key, to forge a bad signature).
func startFake(t *testing.T, signKey tsig.Key, h dns.HandlerFunc) string {
	t.Helper()
	var pc net.PacketConn
	var l net.Listener
	for attempt := 0; l == nil; attempt++ {
		var err error
		if pc, err = net.ListenPacket("udp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		// The UDP port's TCP twin may be taken; pick another pair then.
		if l, err = net.Listen("tcp", pc.LocalAddr().String()); err != nil {
			pc.Close()
			if attempt > 20 {
				t.Fatal(err)
			}
		}
	}
	accept := func(dns.Header) dns.MsgAcceptAction { return dns.MsgAccept }
	prov := tsig.NewProvider(signKey)
	started := make(chan struct{}, 2)
	servers := []*dns.Server{
		{PacketConn: pc, Handler: h, MsgAcceptFunc: accept, TsigProvider: prov, NotifyStartedFunc: func() { started <- struct{}{} }},
		{Listener: l, Handler: h, MsgAcceptFunc: accept, TsigProvider: prov, NotifyStartedFunc: func() { started <- struct{}{} }},
	}
	done := make(chan struct{}, 2)
	for _, s := range servers {
		go func() { _ = s.ActivateAndServe(); done <- struct{}{} }()
	}
	<-started
	<-started
	t.Cleanup(func() {
		for _, s := range servers {
			_ = s.Shutdown()
		}
		<-done
		<-done
	})
	return pc.LocalAddr().String()
}

func goodKey(t *testing.T) tsig.Key {
	k, err := tsig.NewKey(testKey, "hmac-sha256", testSecret)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func badKey(t *testing.T) tsig.Key {
	k, err := tsig.NewKey(testKey, "hmac-sha256", wrongKey)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// reply builds a signed authoritative reply to r (signing happens in WriteMsg).
func reply(r *dns.Msg, rcode int) *dns.Msg {
	m := new(dns.Msg)
	m.SetRcode(r, rcode)
	m.Authoritative = true
	if t := r.IsTsig(); t != nil {
		m.SetTsig(t.Hdr.Name, t.Algorithm, 300, time.Now().Unix())
	}
	return m
}

func clientFor(t *testing.T, addr string) *dnsprovider.RFC2136 {
	t.Helper()
	p, err := dnsprovider.NewRFC2136WithKey(testZone, "", addr, goodKey(t), 500*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func rr(s string) dns.RR {
	r, err := dns.NewRR(s)
	if err != nil {
		panic(err)
	}
	return r
}

// TestBadQueryReplies: every malformed, mismatched or foreign reply to a
// read is an error of the right class, never records.
func TestBadQueryReplies(t *testing.T) {
	tests := []struct {
		name      string
		signKey   func(t *testing.T) tsig.Key
		handler   func(w dns.ResponseWriter, r *dns.Msg)
		wantIs    error // sentinel the error must match
		retryable bool
		terminal  bool
	}{
		{"wrong_question", goodKey, func(w dns.ResponseWriter, r *dns.Msg) {
			m := reply(r, dns.RcodeSuccess)
			m.Question[0].Name = "other.example.test."
			_ = w.WriteMsg(m)
		}, dnsprovider.ErrBadReply, true, false},
		{"not_a_response", goodKey, func(w dns.ResponseWriter, r *dns.Msg) {
			m := reply(r, dns.RcodeSuccess)
			m.Response = false
			_ = w.WriteMsg(m)
		}, dnsprovider.ErrBadReply, true, false},
		{"malformed", goodKey, func(w dns.ResponseWriter, r *dns.Msg) {
			b := []byte{byte(r.Id >> 8), byte(r.Id), 0x84, 0, 0, 1, 0, 5, 0, 0, 0, 0, 3, 'w', 'w'}
			_, _ = w.Write(b)
		}, dnsprovider.ErrBadReply, true, false},
		{"oversized_udp", goodKey, func(w dns.ResponseWriter, r *dns.Msg) {
			m := reply(r, dns.RcodeSuccess)
			for i := range 200 {
				m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: r.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.IPv4(10, 0, byte(i/256), byte(i))})
			}
			_ = w.WriteMsg(m) // no truncation: larger than the 1232 bytes we advertise
		}, dnsprovider.ErrBadReply, true, false},
		{"unsigned_reply", goodKey, func(w dns.ResponseWriter, r *dns.Msg) {
			m := new(dns.Msg)
			m.SetReply(r)
			m.Authoritative = true
			_ = w.WriteMsg(m)
		}, dnsprovider.ErrBadReply, true, false},
		{"tsig_does_not_verify", badKey, func(w dns.ResponseWriter, r *dns.Msg) {
			_ = w.WriteMsg(reply(r, dns.RcodeSuccess))
		}, dnsprovider.ErrBadReply, true, false},
		{"soa_outside_zone", goodKey, func(w dns.ResponseWriter, r *dns.Msg) {
			m := reply(r, dns.RcodeSuccess)
			m.Ns = append(m.Ns, rr("other.test. 60 IN SOA ns.other.test. h.other.test. 1 60 30 3600 5"))
			_ = w.WriteMsg(m)
		}, dnsprovider.ErrWrongZone, false, true},
		{"answer_outside_zone", goodKey, func(w dns.ResponseWriter, r *dns.Msg) {
			m := reply(r, dns.RcodeSuccess)
			m.Answer = append(m.Answer, rr("www.other.test. 60 IN A 192.0.2.1"))
			_ = w.WriteMsg(m)
		}, dnsprovider.ErrWrongZone, false, true},
		{"not_authoritative", goodKey, func(w dns.ResponseWriter, r *dns.Msg) {
			m := reply(r, dns.RcodeSuccess)
			m.Authoritative = false
			m.Answer = append(m.Answer, rr("www.example.test. 60 IN A 192.0.2.1"))
			_ = w.WriteMsg(m)
		}, dnsprovider.ErrWrongZone, false, true},
		{"refused", goodKey, func(w dns.ResponseWriter, r *dns.Msg) {
			_ = w.WriteMsg(reply(r, dns.RcodeRefused))
		}, dnsprovider.ErrRefused, false, true},
		{"notauth", goodKey, func(w dns.ResponseWriter, r *dns.Msg) {
			m := new(dns.Msg)
			m.SetRcode(r, dns.RcodeNotAuth)
			_ = w.WriteMsg(m)
		}, dnsprovider.ErrAuth, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := startFake(t, tt.signKey(t), tt.handler)
			p := clientFor(t, addr)
			got, err := p.GetRecords(context.Background(), []dnsprovider.RRsetID{{Name: "www", Type: "A"}})
			if err == nil {
				t.Fatalf("GetRecords: got %v, nil; want an error", got)
			}
			if !errors.Is(err, tt.wantIs) {
				t.Errorf("GetRecords: got %v, want errors.Is %v", err, tt.wantIs)
			}
			if dnsprovider.IsRetryable(err) != tt.retryable || dnsprovider.IsTerminal(err) != tt.terminal {
				t.Errorf("%v: got retryable=%v terminal=%v, want %v %v", err, dnsprovider.IsRetryable(err), dnsprovider.IsTerminal(err), tt.retryable, tt.terminal)
			}
			if strings.Contains(err.Error(), testSecret) {
				t.Errorf("error leaks the secret: %v", err)
			}
		})
	}
}

// TestTruncatedUDPRetriedOverTCP: a TC=1 UDP answer is re-asked over TCP.
func TestTruncatedUDPRetriedOverTCP(t *testing.T) {
	addr := startFake(t, goodKey(t), func(w dns.ResponseWriter, r *dns.Msg) {
		m := reply(r, dns.RcodeSuccess)
		if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
			m.Truncated = true
		} else {
			m.Answer = append(m.Answer, rr("www.example.test. 60 IN A 192.0.2.7"))
		}
		_ = w.WriteMsg(m)
	})
	got, err := clientFor(t, addr).GetRecords(context.Background(), []dnsprovider.RRsetID{{Name: "www", Type: "A"}})
	if err != nil || len(got[0].Values) != 1 || got[0].Values[0] != "192.0.2.7" {
		t.Fatalf("GetRecords: got %v, %v; want [192.0.2.7] over tcp", got, err)
	}
}

// TestBadUpdateReplies: no bad answer to an UPDATE is reported as success.
func TestBadUpdateReplies(t *testing.T) {
	tests := []struct {
		name      string
		signKey   func(t *testing.T) tsig.Key
		update    func(w dns.ResponseWriter, r *dns.Msg)
		wantIs    error
		retryable bool
		terminal  bool
	}{
		{"notzone", goodKey, func(w dns.ResponseWriter, r *dns.Msg) { _ = w.WriteMsg(reply(r, dns.RcodeNotZone)) }, dnsprovider.ErrWrongZone, false, true},
		{"servfail", goodKey, func(w dns.ResponseWriter, r *dns.Msg) { _ = w.WriteMsg(reply(r, dns.RcodeServerFailure)) }, nil, true, false},
		{"refused", goodKey, func(w dns.ResponseWriter, r *dns.Msg) { _ = w.WriteMsg(reply(r, dns.RcodeRefused)) }, dnsprovider.ErrRefused, false, true},
		{"notauth_badsig", goodKey, func(w dns.ResponseWriter, r *dns.Msg) {
			m := new(dns.Msg)
			m.SetRcode(r, dns.RcodeNotAuth)
			t := r.IsTsig()
			m.Extra = append(m.Extra, &dns.TSIG{Hdr: dns.RR_Header{Name: t.Hdr.Name, Rrtype: dns.TypeTSIG, Class: dns.ClassANY}, Algorithm: t.Algorithm, TimeSigned: uint64(time.Now().Unix()), Fudge: 300, OrigId: r.Id, Error: dns.RcodeBadSig})
			b, _ := m.Pack()
			_, _ = w.Write(b)
		}, dnsprovider.ErrAuth, false, true},
		{"unsigned_success", goodKey, func(w dns.ResponseWriter, r *dns.Msg) {
			m := new(dns.Msg)
			m.SetReply(r)
			_ = w.WriteMsg(m)
		}, dnsprovider.ErrBadReply, true, false},
		{"forged_signature_success", badKey, func(w dns.ResponseWriter, r *dns.Msg) { _ = w.WriteMsg(reply(r, dns.RcodeSuccess)) }, dnsprovider.ErrBadReply, true, false},
		{"wrong_id", goodKey, func(w dns.ResponseWriter, r *dns.Msg) {
			m := reply(r, dns.RcodeSuccess)
			m.Id = r.Id + 1
			m.IsTsig().OrigId = m.Id // miekg sends a signed message with the TSIG's original ID
			_ = w.WriteMsg(m)
		}, dnsprovider.ErrBadReply, true, false},
		{"wrong_zone_echoed", goodKey, func(w dns.ResponseWriter, r *dns.Msg) {
			m := reply(r, dns.RcodeSuccess)
			m.Question[0].Name = "other.test."
			_ = w.WriteMsg(m)
		}, dnsprovider.ErrBadReply, true, false},
		{"query_opcode_reply", goodKey, func(w dns.ResponseWriter, r *dns.Msg) {
			m := reply(r, dns.RcodeSuccess)
			m.Opcode = dns.OpcodeQuery
			_ = w.WriteMsg(m)
		}, dnsprovider.ErrBadReply, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := startFake(t, tt.signKey(t), func(w dns.ResponseWriter, r *dns.Msg) {
				if r.Opcode == dns.OpcodeUpdate {
					tt.update(w, r)
					return
				}
				_ = w.WriteMsg(reply(r, dns.RcodeSuccess)) // reads: empty RRsets
			})
			p := clientFor(t, addr)
			want := []dnsprovider.RRset{{Name: "www", Type: "A", TTL: time.Minute, Values: []string{"192.0.2.1"}}}
			err := p.Swap(context.Background(), []dnsprovider.RRset{{Name: "www", Type: "A"}}, want, 0, 1)
			if err == nil {
				t.Fatalf("Swap: got nil, want an error")
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("Swap: got %v, want errors.Is %v", err, tt.wantIs)
			}
			if errors.Is(err, dnsprovider.ErrConflict) {
				t.Errorf("Swap: got conflict %v, want a non-conflict error", err)
			}
			if dnsprovider.IsRetryable(err) != tt.retryable || dnsprovider.IsTerminal(err) != tt.terminal {
				t.Errorf("%v: got retryable=%v terminal=%v, want %v %v", err, dnsprovider.IsRetryable(err), dnsprovider.IsTerminal(err), tt.retryable, tt.terminal)
			}
			_, err = p.SetRecords(context.Background(), want)
			if err == nil {
				t.Errorf("SetRecords: got nil, want an error")
			}
		})
	}
}

// TestPrereqRcodesAreConflicts: each prerequisite rcode yields a
// *ConflictError carrying the re-read state.
func TestPrereqRcodesAreConflicts(t *testing.T) {
	for _, rc := range []int{dns.RcodeNXRrset, dns.RcodeYXRrset, dns.RcodeNameError, dns.RcodeYXDomain} {
		t.Run(dns.RcodeToString[rc], func(t *testing.T) {
			addr := startFake(t, goodKey(t), func(w dns.ResponseWriter, r *dns.Msg) {
				if r.Opcode == dns.OpcodeUpdate {
					_ = w.WriteMsg(reply(r, rc))
					return
				}
				m := reply(r, dns.RcodeSuccess)
				switch r.Question[0].Qtype {
				case dns.TypeA:
					m.Answer = append(m.Answer, rr("www.example.test. 60 IN A 198.51.100.1"))
				case dns.TypeTXT:
					m.Answer = append(m.Answer, rr(`_drwatch.example.test. 60 IN TXT "gen=9"`))
				}
				_ = w.WriteMsg(m)
			})
			err := clientFor(t, addr).Swap(context.Background(),
				[]dnsprovider.RRset{{Name: "www", Type: "A", Values: []string{"192.0.2.1"}}},
				[]dnsprovider.RRset{{Name: "www", Type: "A", TTL: time.Minute, Values: []string{"192.0.2.2"}}}, 3, 4)
			var ce *dnsprovider.ConflictError
			if !errors.As(err, &ce) {
				t.Fatalf("Swap: got %v, want *ConflictError", err)
			}
			if ce.Rcode != dns.RcodeToString[rc] || ce.Fence != 9 || len(ce.Current) != 1 || ce.Current[0].Values[0] != "198.51.100.1" {
				t.Errorf("conflict: got rcode %s fence %d current %v, want %s, 9, [198.51.100.1]", ce.Rcode, ce.Fence, ce.Current, dns.RcodeToString[rc])
			}
		})
	}
}
