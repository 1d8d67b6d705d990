package dnsprovider

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/drwatch/drwatch/internal/dnsname"
	"github.com/drwatch/drwatch/internal/field"
)

// MaxVerifyTimeout bounds Verify.Timeout in a config file: beyond it a
// flip would wait minutes for a server that is not coming.
const MaxVerifyTimeout = 10 * time.Minute

// Validate reports every problem with the section at once, each with its
// field path relative to the section ("rfc2136.server", "verify.timeout").
// Call it on a decoded and defaulted section. It reads no file and no
// environment variable: Credentials names them, for a caller that checks
// they exist.
func (c Config) Validate() field.Errors {
	var errs field.Errors
	if required(&errs, "zone", c.Zone) {
		switch {
		case !strings.HasSuffix(c.Zone, "."):
			errs.Add("zone", "%q must be fully qualified, ending in '.'", c.Zone)
		case !dnsname.IsDomainName(c.Zone):
			errs.Add("zone", "%q is not a domain name", c.Zone)
		}
	}
	c.validateProvider(&errs)
	for i, s := range c.Verify.Servers {
		errs.HostPort(fmt.Sprintf("verify.servers[%d]", i), s)
	}
	switch t := c.Verify.Timeout; {
	case t <= 0:
		errs.Add("verify.timeout", "%s must be > 0", t)
	case t > MaxVerifyTimeout:
		errs.Add("verify.timeout", "%s must be ≤ %s", t, MaxVerifyTimeout)
	}
	if c.FenceName == "" || strings.HasSuffix(c.FenceName, ".") {
		errs.Add("fence", "%q must be a name relative to the zone", c.FenceName)
	}
	return errs
}

// sections reports which provider sections are set.
func (c Config) sections() map[string]bool {
	return map[string]bool{
		NameRFC2136: c.RFC2136 != nil, NamePowerDNS: c.PowerDNS != nil, NameCloudflare: c.Cloudflare != nil,
		NameRoute53: c.Route53 != nil, NameDigitalOcean: c.DigitalOcean != nil, NameHetzner: c.Hetzner != nil,
		NameDesec: c.Desec != nil, NameDesignate: c.Designate != nil,
	}
}

// validateProvider checks that exactly the selected provider's section is
// set and complete, its credentials named by a file or the environment.
func (c Config) validateProvider(errs *field.Errors) {
	set := c.sections()
	known := false
	for _, p := range Names() {
		if p == c.Provider {
			known = true
		}
		if p != c.Provider && set[p] {
			errs.Add(p, "section for provider %s, but dns.provider is %q", p, c.Provider)
		}
	}
	if !known {
		errs.Add("provider", "%q must be one of %s", c.Provider, strings.Join(Names(), ", "))
		return
	}
	base := c.Provider
	if !set[base] {
		errs.Add(base, "required for provider %s", base)
		return
	}
	at := func(f string) string { return base + "." + f }
	switch base {
	case NameRFC2136:
		r := c.RFC2136
		errs.HostPort(at("server"), r.Server)
		required(errs, at("key_name"), r.KeyName)
		requiredFile(errs, at("key_file"), r.KeyFile)
		if r.Algorithm != "hmac-sha256" && r.Algorithm != "hmac-sha512" {
			errs.Add(at("algorithm"), "%q must be hmac-sha256 or hmac-sha512", r.Algorithm)
		}
	case NamePowerDNS:
		p := c.PowerDNS
		if required(errs, at("url"), p.URL) {
			if u, err := url.Parse(p.URL); err != nil || u.Host == "" {
				errs.Add(at("url"), "%q is not a URL", p.URL)
			}
		}
		tokenSource(errs, base, p.APITokenFile, p.APITokenEnv)
	case NameCloudflare, NameDigitalOcean, NameHetzner, NameDesec:
		t := c.apiToken()
		tokenSource(errs, base, t.APITokenFile, t.APITokenEnv)
	case NameRoute53:
		r := c.Route53
		required(errs, at("region"), r.Region)
		requiredFile(errs, at("access_key_id_file"), r.AccessKeyIDFile)
		requiredFile(errs, at("secret_access_key_file"), r.SecretAccessKeyFile)
	case NameDesignate:
		g := c.Designate
		if required(errs, at("auth_url"), g.AuthURL) {
			if u, err := url.Parse(g.AuthURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				errs.Add(at("auth_url"), "%q is not an http(s) URL", g.AuthURL)
			}
		}
		required(errs, at("region"), g.Region)
		switch {
		case g.ApplicationCredentialID != "":
			requiredFile(errs, at("application_credential_secret_file"), g.ApplicationCredentialSecretFile)
		case g.Username != "":
			requiredFile(errs, at("password_file"), g.PasswordFile)
			required(errs, at("project_name"), g.ProjectName)
		default:
			errs.Add(base, "needs application_credential_id + application_credential_secret_file, or username + password_file")
		}
	}
}

// apiToken is the token of the selected provider reached by a token alone.
func (c Config) apiToken() APIToken {
	switch c.Provider {
	case NameCloudflare:
		return orZero(c.Cloudflare).APIToken
	case NameDigitalOcean:
		return orZero(c.DigitalOcean).APIToken
	case NameHetzner:
		return orZero(c.Hetzner).APIToken
	case NameDesec:
		return orZero(c.Desec).APIToken
	}
	return APIToken{}
}

// Credential is one place the selected provider reads a credential from:
// a file or an environment variable, named by the field at Path (relative
// to the section).
type Credential struct {
	Path string
	File string
	Env  string
}

// Credentials lists the files and environment variables New will read the
// selected provider's credentials from, for a caller that checks they exist
// first. A token named both ways is left out: Validate refuses it.
func (c Config) Credentials() []Credential {
	var out []Credential
	file := func(path, f string) {
		if f != "" {
			out = append(out, Credential{Path: c.Provider + "." + path, File: f})
		}
	}
	token := func(t APIToken) {
		switch {
		case t.APITokenFile != "" && t.APITokenEnv != "":
		case t.APITokenEnv != "":
			out = append(out, Credential{Path: c.Provider + ".api_token_env", Env: t.APITokenEnv})
		default:
			file("api_token_file", t.APITokenFile)
		}
	}
	if !c.sections()[c.Provider] {
		return nil
	}
	switch c.Provider {
	case NameRFC2136:
		file("key_file", c.RFC2136.KeyFile)
	case NamePowerDNS:
		token(APIToken{APITokenFile: c.PowerDNS.APITokenFile, APITokenEnv: c.PowerDNS.APITokenEnv})
	case NameCloudflare, NameDigitalOcean, NameHetzner, NameDesec:
		token(c.apiToken())
	case NameRoute53:
		file("access_key_id_file", c.Route53.AccessKeyIDFile)
		file("secret_access_key_file", c.Route53.SecretAccessKeyFile)
	case NameDesignate:
		switch g := c.Designate; {
		case g.ApplicationCredentialID != "":
			file("application_credential_secret_file", g.ApplicationCredentialSecretFile)
		case g.Username != "":
			file("password_file", g.PasswordFile)
		}
	}
	return out
}

func tokenSource(errs *field.Errors, base, file, env string) {
	switch {
	case file != "" && env != "":
		errs.Add(base+".api_token_file", "set api_token_file or api_token_env, not both")
	case file == "" && env == "":
		errs.Add(base, "needs api_token_file or api_token_env")
	}
}

func required(errs *field.Errors, path, val string) bool {
	if strings.TrimSpace(val) == "" {
		errs.Add(path, "required")
		return false
	}
	return true
}

// requiredFile reports an unset path to a file; whether the file exists is
// the caller's to check (Credentials).
func requiredFile(errs *field.Errors, path, val string) {
	if val == "" {
		errs.Add(path, "required")
	}
}
