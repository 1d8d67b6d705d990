package dnsprovider_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/miekg/dns"
)

func TestNewSelectsProvider(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("tok-SECRET-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "tsig.key")
	if err := os.WriteFile(keyFile, []byte(`key "drwatch." { algorithm hmac-sha512; secret "`+testSecret+`"; };`), 0o600); err != nil {
		t.Fatal(err)
	}
	fileToken := dnsprovider.APIToken{APITokenFile: tok}
	tests := []struct {
		name    string
		cfg     dnsprovider.Config
		wantCAS bool
	}{
		{"rfc2136", dnsprovider.Config{Provider: "rfc2136", Sections: dnsprovider.Sections{RFC2136: &dnsprovider.RFC2136Config{Server: "127.0.0.1:53", KeyFile: keyFile}}}, true},
		{"powerdns", dnsprovider.Config{Provider: "powerdns", Sections: dnsprovider.Sections{PowerDNS: &dnsprovider.PowerDNSConfig{URL: "http://127.0.0.1:8081", APITokenFile: tok}}}, false},
		{"cloudflare", dnsprovider.Config{Provider: "cloudflare", Sections: dnsprovider.Sections{Cloudflare: &dnsprovider.CloudflareConfig{APIToken: fileToken}}}, false},
		{"route53", dnsprovider.Config{Provider: "route53", Sections: dnsprovider.Sections{Route53: &dnsprovider.Route53Config{Region: "eu-central-1", AccessKeyIDFile: tok, SecretAccessKeyFile: tok}}}, false},
		{"digitalocean", dnsprovider.Config{Provider: "digitalocean", Sections: dnsprovider.Sections{DigitalOcean: &dnsprovider.DigitalOceanConfig{APIToken: fileToken}}}, false},
		{"hetzner", dnsprovider.Config{Provider: "hetzner", Sections: dnsprovider.Sections{Hetzner: &dnsprovider.HetznerConfig{APIToken: fileToken}}}, false},
		{"desec", dnsprovider.Config{Provider: "desec", Sections: dnsprovider.Sections{Desec: &dnsprovider.DesecConfig{APIToken: fileToken}}}, false},
		{"designate", dnsprovider.Config{Provider: "designate", Sections: dnsprovider.Sections{Designate: &dnsprovider.DesignateConfig{AuthURL: "http://127.0.0.1:5000/v3", Region: "RegionTwo", Username: "u", PasswordFile: tok}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Zone = "example.test"
			p, err := dnsprovider.New(tt.cfg, nil)
			if err != nil {
				t.Fatalf("New: got %v, want nil", err)
			}
			if p.Zone() != "example.test." {
				t.Errorf("Zone: got %q, want example.test.", p.Zone())
			}
			if _, ok := p.(dnsprovider.CompareAndSwapper); ok != tt.wantCAS {
				t.Errorf("CompareAndSwapper: got %v, want %v", ok, tt.wantCAS)
			}
		})
	}
}

func TestNewConfigErrors(t *testing.T) {
	dir := t.TempDir()
	leaky := filepath.Join(dir, "leaky.key")
	if err := os.WriteFile(leaky, []byte("key \"k\" { algorithm hmac-md5; secret \"TOPSECRETTOPSECRET\"; };"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  dnsprovider.Config
	}{
		{"no_provider", dnsprovider.Config{Zone: "z."}},
		{"unknown_provider", dnsprovider.Config{Provider: "bogus", Zone: "z."}},
		{"no_zone", dnsprovider.Config{Provider: "rfc2136"}},
		{"rfc2136_no_key", dnsprovider.Config{Provider: "rfc2136", Zone: "z.", Sections: dnsprovider.Sections{RFC2136: &dnsprovider.RFC2136Config{Server: "127.0.0.1:53"}}}},
		{"rfc2136_bad_key_file", dnsprovider.Config{Provider: "rfc2136", Zone: "z.", Sections: dnsprovider.Sections{RFC2136: &dnsprovider.RFC2136Config{Server: "127.0.0.1:53", KeyFile: leaky}}}},
		{"secret_env_missing", dnsprovider.Config{Provider: "cloudflare", Zone: "z.", Sections: dnsprovider.Sections{Cloudflare: &dnsprovider.CloudflareConfig{APIToken: dnsprovider.APIToken{APITokenEnv: "DRWATCH_TEST_UNSET_VAR"}}}}},
		{"secret_unset", dnsprovider.Config{Provider: "hetzner", Zone: "z."}},
		{"designate_incomplete", dnsprovider.Config{Provider: "designate", Zone: "z."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := dnsprovider.New(tt.cfg, nil)
			if !errors.Is(err, dnsprovider.ErrConfig) || !dnsprovider.IsTerminal(err) {
				t.Fatalf("New: got %v, want ErrConfig (terminal)", err)
			}
			if strings.Contains(err.Error(), "TOPSECRET") {
				t.Errorf("error leaks the secret: %v", err)
			}
		})
	}
}

func TestTSIGKeyNeverPrintsSecret(t *testing.T) {
	k, err := dnsprovider.NewTSIGKey("drwatch.", "hmac-sha256", testSecret)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{k.String(), fmtAll(k)} {
		if strings.Contains(s, testSecret) || strings.Contains(s, "secret-secret") {
			t.Errorf("formatted key %q shows the secret", s)
		}
	}
}

func fmtAll(k dnsprovider.TSIGKey) string {
	return strings.Join([]string{sprintf("%v", k), sprintf("%+v", k), sprintf("%#v", k), sprintf("%s", k)}, "|")
}

func TestParseTSIGKey(t *testing.T) {
	tests := []struct {
		name, data, keyName, alg string
		wantName, wantAlg        string
		wantErr                  bool
	}{
		{"tsig_keygen", "key \"ddns-key\" {\n\talgorithm hmac-sha256;\n\tsecret \"" + testSecret + "\";\n};\n", "", "", "ddns-key.", dns.HmacSHA256, false},
		{"sha512_quoted_alg", `key "k2." { algorithm "hmac-sha512"; secret "` + testSecret + `"; };`, "k2", "hmac-sha512", "k2.", dns.HmacSHA512, false},
		{"bare_secret", testSecret + "\n", "drwatch", "", "drwatch.", dns.HmacSHA256, false},
		{"name_dot_optional", `key "drwatch" { algorithm hmac-sha256; secret "` + testSecret + `"; };`, "drwatch.", "", "drwatch.", dns.HmacSHA256, false},
		{"bare_secret_sha512", testSecret, "drwatch.", "HMAC-SHA512", "drwatch.", dns.HmacSHA512, false},
		{"bare_needs_name", testSecret, "", "", "", "", true},
		{"name_mismatch", `key "a" { algorithm hmac-sha256; secret "` + testSecret + `"; };`, "b", "", "", "", true},
		{"alg_mismatch", `key "a" { algorithm hmac-sha256; secret "` + testSecret + `"; };`, "", "hmac-sha512", "", "", true},
		{"md5_unsupported", `key "a" { algorithm hmac-md5; secret "` + testSecret + `"; };`, "", "", "", "", true},
		{"not_base64", "not base64 !!", "a", "", "", "", true},
		{"empty", "", "a", "", "", "", true},
		{"secret_pasted_as_name", testSecret, testSecret, "", "", "", true},
		{"clause_named_by_its_secret", `key "` + testSecret + `" { algorithm hmac-sha256; secret "` + testSecret + `"; };`, "", "", "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := dnsprovider.ParseTSIGKey([]byte(tt.data), tt.keyName, tt.alg)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseTSIGKey: got err %v, want error=%v", err, tt.wantErr)
			}
			if err != nil {
				if strings.Contains(err.Error(), testSecret) {
					t.Errorf("error leaks secret: %v", err)
				}
				return
			}
			if k.Name != tt.wantName || k.Algorithm != tt.wantAlg || k.Secret() != testSecret {
				t.Errorf("key: got %s %s, want %s %s", k.Name, k.Algorithm, tt.wantName, tt.wantAlg)
			}
		})
	}
}

func TestRetry(t *testing.T) {
	servfail := &dnsprovider.RcodeError{Op: "update", Rcode: dns.RcodeServerFailure}
	tests := []struct {
		name      string
		errs      []error
		wantCalls int
		wantErr   error
	}{
		{"success_first", []error{nil}, 1, nil},
		{"retry_servfail_then_ok", []error{servfail, servfail, nil}, 3, nil},
		{"gives_up", []error{servfail, servfail, servfail, servfail}, 3, servfail},
		{"conflict_not_retried", []error{&dnsprovider.ConflictError{Rcode: "NXRRSET"}, nil}, 1, dnsprovider.ErrConflict},
		{"terminal_not_retried", []error{&dnsprovider.AuthError{Key: "k", Reason: "NOTAUTH"}, nil}, 1, dnsprovider.ErrAuth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				calls := 0
				err := dnsprovider.Retry(context.Background(), dnsprovider.Backoff{Base: time.Second, Max: 4 * time.Second, Attempts: 3}, func(context.Context) error {
					calls++
					return tt.errs[calls-1]
				})
				if calls != tt.wantCalls {
					t.Errorf("calls: got %d, want %d", calls, tt.wantCalls)
				}
				if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
					t.Errorf("err: got %v, want %v", err, tt.wantErr)
				}
			})
		})
	}
}

func TestRetryStopsOnContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		err := dnsprovider.Retry(ctx, dnsprovider.Backoff{Base: time.Hour, Attempts: 10}, func(context.Context) error {
			calls++
			cancel()
			return &dnsprovider.RcodeError{Op: "update", Rcode: dns.RcodeServerFailure}
		})
		if !errors.Is(err, context.Canceled) || calls != 1 {
			t.Fatalf("got %v after %d calls, want context.Canceled after 1", err, calls)
		}
	})
}

func TestFence(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"gen=42", 42, true}, {"gen=0", 0, true}, {"gen=18446744073709551615", 1<<64 - 1, true},
		{"gen=18446744073709551616", 0, false}, {"gen=", 0, false}, {"gen=x", 0, false}, {"42", 0, false},
	}
	for _, tt := range tests {
		got, err := dnsprovider.ParseFence(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseFence(%q): got %d, %v; want %d, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
	if dnsprovider.FenceText(42) != "gen=42" {
		t.Errorf("FenceText(42): got %q, want gen=42", dnsprovider.FenceText(42))
	}
}
