package dnsprovider

import (
	"errors"
	"strings"
	"testing"

	"github.com/drwatch/drwatch/dnsprovider/internal/tsig"
	"github.com/miekg/dns"
)

// FuzzReply feeds arbitrary bytes as the reply to "www.example.test. A" and
// checks that the reply checks either reject it with one of our error
// classes or return only records of the asked name and type.
func FuzzReply(f *testing.F) {
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m := new(dns.Msg)
		m.SetQuestion("www.example.test.", dns.TypeA)
		r := new(dns.Msg)
		if err := r.Unpack(b); err != nil {
			return
		}
		x := &exchanger{server: "127.0.0.1:1", zone: "example.test."}
		r.Id = m.Id // get past the ID check so the rest is exercised
		if err := x.checkReply("query", m, r); err != nil {
			if !errors.Is(err, ErrBadReply) && !errors.Is(err, ErrWrongZone) && !errors.Is(err, ErrAuth) {
				t.Fatalf("checkReply: got unclassified error %v", err)
			}
			return
		}
		rrs, err := x.answer(r, "www.example.test.", dns.TypeA)
		if err != nil {
			var rc *RcodeError
			if !errors.Is(err, ErrBadReply) && !errors.Is(err, ErrWrongZone) && !errors.As(err, &rc) {
				t.Fatalf("answer: got unclassified error %v", err)
			}
			return
		}
		for _, rr := range rrs {
			h := rr.Header()
			if dns.CanonicalName(h.Name) != "www.example.test." || h.Rrtype != dns.TypeA {
				t.Fatalf("answer: got record %s, want only www.example.test. A", rr)
			}
		}
		_ = rrsetFrom(RRsetID{Name: "www", Type: "A"}, rrs)
	})
}

// FuzzParseTSIGKey checks the key-file parser never panics, never echoes the
// file's secret in an error, and returns a usable key on success.
func FuzzParseTSIGKey(f *testing.F) {
	f.Add([]byte(`key "k" { algorithm hmac-sha256; secret "c2VjcmV0"; };`), "", "")
	f.Fuzz(func(t *testing.T, data []byte, name, alg string) {
		k, err := tsig.Parse(data, name, alg)
		if err != nil {
			for _, field := range strings.Fields(string(data)) {
				field = strings.Trim(field, `";{}`)
				if len(field) >= 16 && strings.Contains(err.Error(), field) {
					t.Fatalf("error %q echoes file content %q", err, field)
				}
			}
			return
		}
		if k.Name == "" || (k.Algorithm != tsig.HMACSHA256 && k.Algorithm != tsig.HMACSHA512) || k.Secret() == "" {
			t.Fatalf("parsed key unusable: %v", k)
		}
		// String shows the name and the algorithm's fixed name, nothing else;
		// a short secret can spell part of "hmac-sha256" by chance, so the
		// algorithm is taken out before looking for the secret. The name is
		// not: NewKey refuses a name that holds the secret.
		shown := strings.Replace(k.String(), strings.TrimSuffix(k.Algorithm, "."), "", 1)
		if strings.Contains(strings.ToLower(shown), strings.ToLower(k.Secret())) {
			t.Fatalf("String() shows the secret")
		}
	})
}

// FuzzParseFence checks fence parsing round-trips.
func FuzzParseFence(f *testing.F) {
	f.Add("gen=42")
	f.Fuzz(func(t *testing.T, s string) {
		g, err := ParseFence(s)
		if err != nil {
			return
		}
		if g2, err := ParseFence(FenceText(g)); err != nil || g2 != g {
			t.Fatalf("round trip %q: got %d, %v; want %d", s, g2, err, g)
		}
	})
}
