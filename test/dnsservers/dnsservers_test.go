package dnsservers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/dnsprovider/providertest"
	"github.com/miekg/dns"
)

// Servers are started once for the package; a start error fails every test
// that needs that server (naming the missing Debian package).
var (
	bind, knot, pdns          *Server
	bindErr, knotErr, pdnsErr error
)

func TestMain(m *testing.M) {
	tmp, err := os.MkdirTemp("", "drwatch-dnsservers-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mk := func(name string) string {
		d, err := os.MkdirTemp(tmp, name)
		if err != nil {
			panic(err)
		}
		return d
	}
	bind, bindErr = StartBIND(mk("bind"))
	knot, knotErr = StartKnot(mk("knot"))
	pdns, pdnsErr = StartPowerDNS(mk("pdns"))
	code := m.Run()
	for _, s := range []*Server{bind, knot, pdns} {
		s.Close()
	}
	os.RemoveAll(tmp)
	os.Exit(code)
}

func started(t testing.TB, s *Server, err error) *Server {
	t.Helper()
	if err != nil {
		t.Fatalf("%v", err)
	}
	return s
}

func rfc2136Factory(s *Server, keyName, alg string) func(t *testing.T) providertest.Target {
	return func(t *testing.T) providertest.Target {
		return providertest.Target{
			Name: s.Name,
			Zone: Zone,
			DNS:  s.Addr,
			New: func(t *testing.T, fence string, wrong bool) dnsprovider.Provider {
				secret := s.Secret
				if wrong {
					secret = "d3Jvbmctd3Jvbmctd3Jvbmctd3Jvbmctd3JvbmctMTI="
				}
				key, err := dnsprovider.NewTSIGKey(keyName, alg, secret)
				if err != nil {
					t.Fatalf("key: %v", err)
				}
				p, err := dnsprovider.NewRFC2136WithKey(Zone, fence, s.Addr, key, 5*time.Second, nil)
				if err != nil {
					t.Fatalf("NewRFC2136WithKey: %v", err)
				}
				return p
			},
			Verify: dnsprovider.VerifyConfig{Resolver: s.Addr, Port: s.Port()},
		}
	}
}

func TestConformanceBIND9(t *testing.T) {
	s := started(t, bind, bindErr)
	providertest.Run(t, rfc2136Factory(s, KeySHA256, "hmac-sha256"))
}

func TestConformanceBIND9SHA512(t *testing.T) {
	s := started(t, bind, bindErr)
	providertest.Run(t, rfc2136Factory(s, KeySHA512, "hmac-sha512"))
}

func TestConformanceKnot(t *testing.T) {
	s := started(t, knot, knotErr)
	providertest.Run(t, rfc2136Factory(s, KeySHA256, "hmac-sha256"))
}

func TestConformancePowerDNS(t *testing.T) {
	s := started(t, pdns, pdnsErr)
	providertest.Run(t, func(t *testing.T) providertest.Target {
		return providertest.Target{
			Name: "powerdns",
			Zone: Zone,
			DNS:  s.Addr,
			New: func(t *testing.T, fence string, wrong bool) dnsprovider.Provider {
				key := s.APIKey
				if wrong {
					key = "wrong-api-key"
				}
				t.Setenv("DRWATCH_TEST_PDNS_KEY", key)
				p, err := dnsprovider.New(dnsprovider.Config{
					Provider: dnsprovider.NamePowerDNS, Zone: Zone, FenceName: fence,
					Sections: dnsprovider.Sections{PowerDNS: &dnsprovider.PowerDNSConfig{URL: s.APIURL, APITokenEnv: "DRWATCH_TEST_PDNS_KEY"}},
				}, nil)
				if err != nil {
					t.Fatalf("New powerdns: %v", err)
				}
				return p
			},
			Verify: dnsprovider.VerifyConfig{Resolver: s.Addr, Port: s.Port()},
		}
	})
}

// TestConfigRFC2136KeyFile builds the provider the way drwatch does, from a
// Config with a BIND key file, and writes through it.
func TestConfigRFC2136KeyFile(t *testing.T) {
	s := started(t, bind, bindErr)
	tests := []struct {
		name, file, keyName string
	}{
		{"bind_key_clause", fmt.Sprintf("key \"drwatch-key\" {\n\talgorithm hmac-sha256;\n\tsecret \"%s\";\n};\n", s.Secret), ""},
		{"bare_secret", s.Secret + "\n", KeySHA256},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := t.TempDir() + "/tsig.key"
			if err := os.WriteFile(f, []byte(tt.file), 0o600); err != nil {
				t.Fatal(err)
			}
			p, err := dnsprovider.New(dnsprovider.Config{Provider: dnsprovider.NameRFC2136, Zone: Zone,
				Sections: dnsprovider.Sections{RFC2136: &dnsprovider.RFC2136Config{Server: s.Addr, KeyName: tt.keyName, KeyFile: f}}}, nil)
			if err != nil {
				t.Fatalf("New: got %v, want nil", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			want := dnsprovider.RRset{Name: "cfg-" + strings.ReplaceAll(tt.name, "_", "-"), Type: "A", TTL: time.Minute, Values: []string{"192.0.2.9"}}
			if _, err := p.SetRecords(ctx, []dnsprovider.RRset{want}); err != nil {
				t.Fatalf("SetRecords: got %v, want nil", err)
			}
			got, err := p.GetRecords(ctx, []dnsprovider.RRsetID{want.ID()})
			if err != nil || len(got[0].Values) != 1 || got[0].Values[0] != "192.0.2.9" {
				t.Fatalf("read back: got %v, %v; want [192.0.2.9]", got, err)
			}
		})
	}
}

// TestUnsignedUpdateRefusedByBIND checks our classification of BIND's answer
// to an unsigned update: REFUSED, terminal.
func TestUnsignedUpdateRefusedByBIND(t *testing.T) {
	s := started(t, bind, bindErr)
	m := new(dns.Msg)
	m.SetUpdate(Zone)
	rr, _ := dns.NewRR("unsigned.example.test. 60 IN A 192.0.2.1")
	m.Insert([]dns.RR{rr})
	c := &dns.Client{Net: "tcp", Timeout: 5 * time.Second}
	r, _, err := c.Exchange(m, s.Addr)
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	if r.Rcode != dns.RcodeRefused {
		t.Fatalf("unsigned update: got %s, want REFUSED", dns.RcodeToString[r.Rcode])
	}
	err = &dnsprovider.RcodeError{Op: "update", Rcode: r.Rcode}
	if !errors.Is(err, dnsprovider.ErrRefused) || !dnsprovider.IsTerminal(err) {
		t.Fatalf("classification: got terminal=%v, want ErrRefused terminal", dnsprovider.IsTerminal(err))
	}
}

// TestTXTOnlyKeyWritesTXTButNotA checks BIND's grant for KeyTXTOnly: the
// attacker's key of the break-glass tests may write a TXT record, and an A
// record written with it is refused.
func TestTXTOnlyKeyWritesTXTButNotA(t *testing.T) {
	s := started(t, bind, bindErr)
	key, err := dnsprovider.NewTSIGKey(KeyTXTOnly, "hmac-sha256", s.Secret)
	if err != nil {
		t.Fatal(err)
	}
	p, err := dnsprovider.NewRFC2136WithKey(Zone, "", s.Addr, key, 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := p.SetRecords(ctx, []dnsprovider.RRset{{Name: "_acme-challenge", Type: "TXT", TTL: time.Minute, Values: []string{"token"}}}); err != nil {
		t.Fatalf("TXT write with the TXT-only key: %v", err)
	}
	_, err = p.SetRecords(ctx, []dnsprovider.RRset{{Name: "app", Type: "A", TTL: time.Minute, Values: []string{"198.51.100.9"}}})
	if !errors.Is(err, dnsprovider.ErrRefused) {
		t.Fatalf("A write with the TXT-only key: got %v, want ErrRefused", err)
	}
	sets, err := p.GetRecords(ctx, []dnsprovider.RRsetID{{Name: "app", Type: "A"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 1 || !slices.Equal(sets[0].Values, []string{"127.0.0.2"}) {
		t.Errorf("app A after the refused write: got %v, want [127.0.0.2]", sets)
	}
}
