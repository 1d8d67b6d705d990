package dnsprovider_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
)

// valid is a complete rfc2136 section, as the config loader hands it over
// after defaults.
func valid() dnsprovider.Config {
	return dnsprovider.Config{Provider: "rfc2136", Zone: "example.org.", FenceName: "_drwatch",
		Verify:   dnsprovider.VerifyConfig{Timeout: 30 * time.Second},
		Sections: dnsprovider.Sections{RFC2136: &dnsprovider.RFC2136Config{Server: "ns1.example.net:53", KeyName: "drwatch.", KeyFile: "/etc/drwatch/tsig.key", Algorithm: "hmac-sha256"}}}
}

// Validate names each problem by its path relative to the section, with
// the messages the config file has always shown.
func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*dnsprovider.Config)
		want []string
	}{
		{"valid", func(*dnsprovider.Config) {}, nil},
		{"zone", func(c *dnsprovider.Config) { c.Zone = "example.org" }, []string{`zone: "example.org" must be fully qualified, ending in '.'`}},
		{"zone syntax", func(c *dnsprovider.Config) { c.Zone = "a..b." }, []string{`zone: "a..b." is not a domain name`}},
		{"zone missing", func(c *dnsprovider.Config) { c.Zone = "" }, []string{"zone: required"}},
		{"fence", func(c *dnsprovider.Config) { c.FenceName = "x." }, []string{`fence: "x." must be a name relative to the zone`}},
		{"verify", func(c *dnsprovider.Config) {
			c.Verify = dnsprovider.VerifyConfig{Servers: []string{"a", "b:0"}, Timeout: 11 * time.Minute}
		}, []string{`verify.servers[0]: "a" is not host:port`, `verify.servers[1]: port "0" is not 1-65535`, "verify.timeout: 11m0s must be ≤ 10m0s"}},
		{"verify timeout", func(c *dnsprovider.Config) { c.Verify.Timeout = 0 }, []string{"verify.timeout: 0s must be > 0"}},
		{"unknown provider", func(c *dnsprovider.Config) { c.Provider = "bogus" }, []string{
			`rfc2136: section for provider rfc2136, but dns.provider is "bogus"`,
			`provider: "bogus" must be one of rfc2136, powerdns, cloudflare, route53, digitalocean, hetzner, desec, designate`}},
		{"section missing", func(c *dnsprovider.Config) { c.RFC2136 = nil }, []string{"rfc2136: required for provider rfc2136"}},
		{"rfc2136", func(c *dnsprovider.Config) {
			c.RFC2136 = &dnsprovider.RFC2136Config{Server: ":53", Algorithm: "hmac-md5"}
		}, []string{`rfc2136.server: ":53" has no host; bind an explicit address`, "rfc2136.key_name: required", "rfc2136.key_file: required",
			`rfc2136.algorithm: "hmac-md5" must be hmac-sha256 or hmac-sha512`}},
		{"powerdns", func(c *dnsprovider.Config) {
			c.Provider = "powerdns"
			c.PowerDNS = &dnsprovider.PowerDNSConfig{URL: "::bad", APITokenFile: "f", APITokenEnv: "E"}
		}, []string{`rfc2136: section for provider rfc2136, but dns.provider is "powerdns"`, `powerdns.url: "::bad" is not a URL`,
			"powerdns.api_token_file: set api_token_file or api_token_env, not both"}},
		{"token", func(c *dnsprovider.Config) {
			c.Provider, c.RFC2136, c.Hetzner = "hetzner", nil, &dnsprovider.HetznerConfig{}
		}, []string{"hetzner: needs api_token_file or api_token_env"}},
		{"route53", func(c *dnsprovider.Config) {
			c.Provider, c.RFC2136, c.Route53 = "route53", nil, &dnsprovider.Route53Config{}
		}, []string{"route53.region: required", "route53.access_key_id_file: required", "route53.secret_access_key_file: required"}},
		{"designate", func(c *dnsprovider.Config) {
			c.Provider, c.RFC2136, c.Designate = "designate", nil, &dnsprovider.DesignateConfig{AuthURL: "ftp://k", Username: "u"}
		}, []string{`designate.auth_url: "ftp://k" is not an http(s) URL`, "designate.region: required", "designate.password_file: required", "designate.project_name: required"}},
		{"designate credentials", func(c *dnsprovider.Config) {
			c.Provider, c.RFC2136, c.Designate = "designate", nil, &dnsprovider.DesignateConfig{AuthURL: "https://k/v3", Region: "r"}
		}, []string{"designate: needs application_credential_id + application_credential_secret_file, or username + password_file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.edit(&c)
			var got []string
			for _, e := range c.Validate() {
				got = append(got, e.Error())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// Credentials names exactly what New will read the selected provider's
// credentials from, so the loader can check each exists beforehand.
func TestConfigCredentials(t *testing.T) {
	tests := []struct {
		name string
		cfg  dnsprovider.Config
		want []dnsprovider.Credential
	}{
		{"rfc2136", valid(), []dnsprovider.Credential{{Path: "rfc2136.key_file", File: "/etc/drwatch/tsig.key"}}},
		{"token file", dnsprovider.Config{Provider: "cloudflare", Sections: dnsprovider.Sections{Cloudflare: &dnsprovider.CloudflareConfig{APIToken: dnsprovider.APIToken{APITokenFile: "/t"}}}},
			[]dnsprovider.Credential{{Path: "cloudflare.api_token_file", File: "/t"}}},
		{"token env", dnsprovider.Config{Provider: "powerdns", Sections: dnsprovider.Sections{PowerDNS: &dnsprovider.PowerDNSConfig{APITokenEnv: "PDNS"}}},
			[]dnsprovider.Credential{{Path: "powerdns.api_token_env", Env: "PDNS"}}},
		{"token both ways", dnsprovider.Config{Provider: "desec", Sections: dnsprovider.Sections{Desec: &dnsprovider.DesecConfig{APIToken: dnsprovider.APIToken{APITokenFile: "/t", APITokenEnv: "T"}}}}, nil},
		{"designate application credential", dnsprovider.Config{Provider: "designate", Sections: dnsprovider.Sections{Designate: &dnsprovider.DesignateConfig{
			ApplicationCredentialID: "id", ApplicationCredentialSecretFile: "/s", Username: "u", PasswordFile: "/p"}}},
			[]dnsprovider.Credential{{Path: "designate.application_credential_secret_file", File: "/s"}}},
		{"unselected section", dnsprovider.Config{Provider: "hetzner", Sections: dnsprovider.Sections{RFC2136: valid().RFC2136}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.cfg.Credentials(); !slices.Equal(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// Without servers or a resolver, verification finds the NS set through the
// RFC 2136 primary; other providers have no server to ask.
func TestVerifierFromConfigAsksTheRFC2136Primary(t *testing.T) {
	c := valid()
	if _, err := dnsprovider.NewVerifierFromConfig(c, nil); err != nil {
		t.Errorf("rfc2136 without verify servers: got %v, want the primary as resolver", err)
	}
	c.Provider, c.RFC2136, c.Hetzner = "hetzner", nil, &dnsprovider.HetznerConfig{}
	if _, err := dnsprovider.NewVerifierFromConfig(c, nil); err == nil {
		t.Error("hetzner without verify servers: got a verifier, want an error (no server to ask)")
	}
}

// New's errors name the config key a missing credential comes from.
func TestNewNamesTheCredentialKey(t *testing.T) {
	for _, tt := range []struct {
		cfg  dnsprovider.Config
		want string
	}{
		{dnsprovider.Config{Provider: "powerdns", Zone: "z.", Sections: dnsprovider.Sections{PowerDNS: &dnsprovider.PowerDNSConfig{URL: "http://h:8081", APITokenEnv: "DRWATCH_TEST_UNSET_VAR"}}}, "dns.powerdns.api_token_env: "},
		{dnsprovider.Config{Provider: "desec", Zone: "z.", Sections: dnsprovider.Sections{Desec: &dnsprovider.DesecConfig{APIToken: dnsprovider.APIToken{APITokenFile: "/nonexistent/token"}}}}, "dns.desec.api_token_file: "},
		{dnsprovider.Config{Provider: "route53", Zone: "z.", Sections: dnsprovider.Sections{Route53: &dnsprovider.Route53Config{AccessKeyIDFile: "/nonexistent/key"}}}, "dns.route53.access_key_id_file: "},
		// A failover group's own provider section, at the group's path.
		{dnsprovider.Config{Path: "groups[wiki].dns", Provider: "desec", Zone: "z.", Sections: dnsprovider.Sections{Desec: &dnsprovider.DesecConfig{APIToken: dnsprovider.APIToken{APITokenFile: "/nonexistent/token"}}}}, "groups[wiki].dns.desec.api_token_file: "},
	} {
		_, err := dnsprovider.New(tt.cfg, nil)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want an error starting %q", tt.cfg.Provider, err, tt.want)
		}
	}
}
