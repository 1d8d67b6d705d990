package dnsprovider

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/drwatch/drwatch/internal/field"
	"github.com/libdns/cloudflare"
	"github.com/libdns/desec"
	"github.com/libdns/digitalocean"
	"github.com/libdns/hetzner/v2"
	"github.com/libdns/powerdns"
	"github.com/libdns/route53"
)

// The hosted providers below are libdns clients wrapped by Libdns: each is
// its section of Config, its rules, the credentials it reads and its
// constructor, and one line of the providers table.

// APIToken is a hosted provider's API token, read from a file or an
// environment variable.
type APIToken struct {
	APITokenFile string `yaml:"api_token_file" doc:"File holding the API token."`
	APITokenEnv  string `yaml:"api_token_env" doc:"Environment variable holding the API token."`
}

// Secret is where the token is read from.
func (t APIToken) Secret() Secret { return Secret{File: t.APITokenFile, Env: t.APITokenEnv} }

// PowerDNSConfig configures the PowerDNS HTTP API (libdns/powerdns).
type PowerDNSConfig struct {
	URL          string `yaml:"url" doc:"Base URL of the HTTP API (http://host:8081)."`
	ServerID     string `yaml:"server_id" default:"localhost" doc:"Server ID in the API's paths."`
	APITokenFile string `yaml:"api_token_file" doc:"File holding the API key."`
	APITokenEnv  string `yaml:"api_token_env" doc:"Environment variable holding the API key."`
}

// APIKey is where the API key is read from.
func (c PowerDNSConfig) APIKey() Secret { return Secret{File: c.APITokenFile, Env: c.APITokenEnv} }

// CloudflareConfig configures Cloudflare (libdns/cloudflare); the token
// needs Zone.DNS:Edit.
type CloudflareConfig struct {
	APIToken  `yaml:",inline"`
	ZoneToken Secret `yaml:"-"` // optional Zone:Read
}

// Route53Config configures AWS Route 53 (libdns/route53). Without keys the
// AWS SDK's default chain (environment, shared config, instance role) is used.
type Route53Config struct {
	Region              string `yaml:"region" doc:"AWS region."`
	HostedZoneID        string `yaml:"hosted_zone_id" doc:"Hosted zone ID, without the /hostedzone/ prefix (optional: found from the zone name, which needs route53:ListHostedZonesByName)."`
	AccessKeyIDFile     string `yaml:"access_key_id_file" doc:"File holding the access key ID."`
	SecretAccessKeyFile string `yaml:"secret_access_key_file" doc:"File holding the secret access key."`
	Profile             string `yaml:"-"`
	SessionToken        Secret `yaml:"-"`
}

// DigitalOceanConfig configures DigitalOcean (libdns/digitalocean).
type DigitalOceanConfig struct {
	APIToken `yaml:",inline"`
}

// HetznerConfig configures Hetzner Cloud DNS (libdns/hetzner/v2).
type HetznerConfig struct {
	APIToken `yaml:",inline"`
}

// DesecConfig configures deSEC (libdns/desec).
type DesecConfig struct {
	APIToken `yaml:",inline"`
}

// validate: a token from a file or the environment, not both.
func (t APIToken) validate() field.Errors {
	var errs field.Errors
	switch {
	case t.APITokenFile != "" && t.APITokenEnv != "":
		errs.Add("api_token_file", "set api_token_file or api_token_env, not both")
	case t.APITokenFile == "" && t.APITokenEnv == "":
		errs.Add("", "needs api_token_file or api_token_env")
	}
	return errs
}

// credentials is where the token is read from; a token named both ways is
// left out: validate refuses it.
func (t APIToken) credentials() []Credential {
	switch {
	case t.APITokenFile != "" && t.APITokenEnv != "":
		return nil
	case t.APITokenEnv != "":
		return []Credential{{Path: "api_token_env", Env: t.APITokenEnv}}
	}
	return fileCredential("api_token_file", t.APITokenFile)
}

func (c *PowerDNSConfig) token() APIToken {
	return APIToken{APITokenFile: c.APITokenFile, APITokenEnv: c.APITokenEnv}
}

func (c *PowerDNSConfig) validate() field.Errors {
	var errs field.Errors
	if required(&errs, "url", c.URL) {
		if u, err := url.Parse(c.URL); err != nil || u.Host == "" {
			errs.Add("url", "%q is not a URL", c.URL)
		}
	}
	return append(errs, c.token().validate()...)
}

func (c *PowerDNSConfig) credentials() []Credential { return c.token().credentials() }

func (c *PowerDNSConfig) build(b build) (Provider, error) {
	if c.URL == "" {
		return nil, fmt.Errorf("%w: dns.powerdns.url is empty", ErrConfig)
	}
	key, err := b.secret("api_token", c.APIKey())
	if err != nil {
		return nil, err
	}
	return NewLibdns(NamePowerDNS, b.zone, &powerdns.Provider{ServerURL: c.URL, ServerID: c.ServerID, APIToken: key}, b.logger), nil
}

func (c *CloudflareConfig) build(b build) (Provider, error) {
	tok, err := b.secret("api_token", c.Secret())
	if err != nil {
		return nil, err
	}
	zt, err := b.optional("zone_token", c.ZoneToken)
	if err != nil {
		return nil, err
	}
	return NewLibdns(NameCloudflare, b.zone, &cloudflare.Provider{APIToken: tok, ZoneToken: zt}, b.logger), nil
}

func (c *Route53Config) validate() field.Errors {
	var errs field.Errors
	required(&errs, "region", c.Region)
	requiredFile(&errs, "access_key_id_file", c.AccessKeyIDFile)
	requiredFile(&errs, "secret_access_key_file", c.SecretAccessKeyFile)
	return errs
}

func (c *Route53Config) credentials() []Credential {
	return append(fileCredential("access_key_id_file", c.AccessKeyIDFile), fileCredential("secret_access_key_file", c.SecretAccessKeyFile)...)
}

func (c *Route53Config) build(b build) (Provider, error) {
	var errs []error
	ak, err := b.optional("access_key_id", Secret{File: c.AccessKeyIDFile})
	errs = append(errs, err)
	sk, err := b.optional("secret_access_key", Secret{File: c.SecretAccessKeyFile})
	errs = append(errs, err)
	st, err := b.optional("session_token", c.SessionToken)
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return NewLibdns(NameRoute53, b.zone, &route53.Provider{Region: c.Region, HostedZoneID: c.HostedZoneID, Profile: c.Profile, AccessKeyId: ak, SecretAccessKey: sk, SessionToken: st}, b.logger), nil
}

func (c *DigitalOceanConfig) build(b build) (Provider, error) {
	tok, err := b.secret("api_token", c.Secret())
	if err != nil {
		return nil, err
	}
	return NewLibdns(NameDigitalOcean, b.zone, &digitalocean.Provider{APIToken: tok}, b.logger), nil
}

func (c *HetznerConfig) build(b build) (Provider, error) {
	tok, err := b.secret("api_token", c.Secret())
	if err != nil {
		return nil, err
	}
	return NewLibdns(NameHetzner, b.zone, hetzner.New(tok), b.logger), nil
}

func (c *DesecConfig) build(b build) (Provider, error) {
	tok, err := b.secret("api_token", c.Secret())
	if err != nil {
		return nil, err
	}
	return NewLibdns(NameDesec, b.zone, &desec.Provider{Token: tok}, b.logger), nil
}
