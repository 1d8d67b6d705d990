package dnsprovider

import (
	"errors"
	"fmt"
	"github.com/drwatch/drwatch/internal/regularfile"
	"log/slog"
	"os"
	"strings"

	"github.com/libdns/cloudflare"
	"github.com/libdns/desec"
	"github.com/libdns/digitalocean"
	"github.com/libdns/hetzner/v2"
	"github.com/libdns/powerdns"
	"github.com/libdns/route53"
)

// Secret names where a credential lives: a file or an environment variable.
// There is deliberately no inline value (secrets never sit in config files
// or flags).
type Secret struct {
	File string `yaml:"file" json:"file"` // read and trimmed of surrounding whitespace
	Env  string `yaml:"env" json:"env"`   // name of an environment variable
}

// IsSet reports whether a source is configured.
func (s Secret) IsSet() bool { return s.File != "" || s.Env != "" }

// Value returns the secret. Errors name the file or variable, never the value.
func (s Secret) Value() (string, error) {
	switch {
	case s.File != "" && s.Env != "":
		return "", fmt.Errorf("%w: secret has both file and env", ErrConfig)
	case s.File != "":
		b, err := regularfile.Read("secret file", s.File)
		if err != nil {
			return "", fmt.Errorf("%w: %w", ErrConfig, err)
		}
		v := strings.TrimSpace(string(b))
		if v == "" {
			return "", fmt.Errorf("%w: secret file is empty", ErrConfig)
		}
		return v, nil
	case s.Env != "":
		v, ok := os.LookupEnv(s.Env)
		if !ok || strings.TrimSpace(v) == "" {
			return "", fmt.Errorf("%w: environment variable %s is not set", ErrConfig, s.Env)
		}
		return strings.TrimSpace(v), nil
	}
	return "", fmt.Errorf("%w: secret has neither file nor env", ErrConfig)
}

// Provider names accepted in Config.Provider.
const (
	NameRFC2136      = "rfc2136"
	NamePowerDNS     = "powerdns"
	NameCloudflare   = "cloudflare"
	NameRoute53      = "route53"
	NameDigitalOcean = "digitalocean"
	NameHetzner      = "hetzner"
	NameDesec        = "desec"
	NameDesignate    = "designate"
)

// Names lists every provider name, in the order the documentation gives them.
func Names() []string {
	return []string{NameRFC2136, NamePowerDNS, NameCloudflare, NameRoute53, NameDigitalOcean, NameHetzner, NameDesec, NameDesignate}
}

// Config selects and configures one provider for one zone: the `dns:`
// section of a node's config file (which adds the records to flip). Only
// the section named by Provider is read. The yaml, doc and default tags are
// what the config loader decodes, defaults and documents; fields tagged
// yaml:"-" are set by code only.
type Config struct {
	Provider string `yaml:"provider" default:"rfc2136" doc:"rfc2136, powerdns, cloudflare, route53, digitalocean, hetzner, desec, designate."`
	Zone     string `yaml:"zone" doc:"The zone, fully qualified (example.org.)."`
	// FenceName is the fence TXT record, relative to the zone (default
	// "_drwatch"). Used by compare-and-swap providers.
	FenceName string `yaml:"fence" default:"_drwatch" doc:"Name of the TXT record that carries the fencing generation, relative to the zone."`

	// Verify configures authoritative verification (NewVerifierFromConfig).
	Verify VerifyConfig `yaml:"verify" doc:"Checking the flip at every authoritative server."`

	RFC2136      *RFC2136Config      `yaml:"rfc2136" doc:"provider rfc2136: dynamic update with TSIG (compare-and-swap)."`
	PowerDNS     *PowerDNSConfig     `yaml:"powerdns" doc:"provider powerdns: the HTTP API (no compare-and-swap)."`
	Cloudflare   *CloudflareConfig   `yaml:"cloudflare" doc:"provider cloudflare (no compare-and-swap)."`
	DigitalOcean *DigitalOceanConfig `yaml:"digitalocean" doc:"provider digitalocean (no compare-and-swap)."`
	Hetzner      *HetznerConfig      `yaml:"hetzner" doc:"provider hetzner (no compare-and-swap)."`
	Desec        *DesecConfig        `yaml:"desec" doc:"provider desec (no compare-and-swap)."`
	Route53      *Route53Config      `yaml:"route53" doc:"provider route53 (no compare-and-swap)."`
	Designate    *DesignateConfig    `yaml:"designate" doc:"provider designate: OpenStack DNS in a region other than the primary. No compare-and-swap, so a flip is not fenced: Designate does not refuse a deposed leader's write (it ignores If-Match). RRsets are written one by one, not atomically. Each update is refused if the recordset's version moved since drwatch read it, and a create another writer beat is a conflict, but a writer can still slip in between. Designate accepts a write before its name servers serve it; a zone in ERROR is reported (retried) until Designate recovers it, a zone being deleted is an error. Set dns.verify to check what is served."`
}

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

// New builds the provider cfg selects. The RFC 2136 provider also implements
// CompareAndSwapper; check with a type assertion. logger may be nil.
func New(cfg Config, logger *slog.Logger) (Provider, error) {
	if cfg.Zone == "" {
		return nil, fmt.Errorf("%w: dns.zone is empty", ErrConfig)
	}
	// Errors name the key the secret comes from (api_token_file or
	// api_token_env), never its value.
	secret := func(field string, s Secret) (string, error) {
		v, err := s.Value()
		if err != nil {
			suffix := "_file"
			if s.File == "" && s.Env != "" {
				suffix = "_env"
			}
			return "", fmt.Errorf("dns.%s.%s%s: %w", cfg.Provider, field, suffix, err)
		}
		return v, nil
	}
	optional := func(field string, s Secret) (string, error) {
		if !s.IsSet() {
			return "", nil
		}
		return secret(field, s)
	}
	switch cfg.Provider {
	case NameRFC2136:
		return NewRFC2136(cfg.Zone, cfg.FenceName, orZero(cfg.RFC2136), logger)
	case NameDesignate:
		return NewDesignate(cfg.Zone, orZero(cfg.Designate), logger)
	case NamePowerDNS:
		c := orZero(cfg.PowerDNS)
		if c.URL == "" {
			return nil, fmt.Errorf("%w: dns.powerdns.url is empty", ErrConfig)
		}
		key, err := secret("api_token", c.APIKey())
		if err != nil {
			return nil, err
		}
		return NewLibdns(NamePowerDNS, cfg.Zone, &powerdns.Provider{ServerURL: c.URL, ServerID: c.ServerID, APIToken: key}, logger), nil
	case NameCloudflare:
		c := orZero(cfg.Cloudflare)
		tok, err := secret("api_token", c.Secret())
		if err != nil {
			return nil, err
		}
		zt, err := optional("zone_token", c.ZoneToken)
		if err != nil {
			return nil, err
		}
		return NewLibdns(NameCloudflare, cfg.Zone, &cloudflare.Provider{APIToken: tok, ZoneToken: zt}, logger), nil
	case NameRoute53:
		c := orZero(cfg.Route53)
		var errs []error
		ak, err := optional("access_key_id", Secret{File: c.AccessKeyIDFile})
		errs = append(errs, err)
		sk, err := optional("secret_access_key", Secret{File: c.SecretAccessKeyFile})
		errs = append(errs, err)
		st, err := optional("session_token", c.SessionToken)
		errs = append(errs, err)
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		return NewLibdns(NameRoute53, cfg.Zone, &route53.Provider{Region: c.Region, HostedZoneID: c.HostedZoneID, Profile: c.Profile, AccessKeyId: ak, SecretAccessKey: sk, SessionToken: st}, logger), nil
	case NameDigitalOcean:
		tok, err := secret("api_token", orZero(cfg.DigitalOcean).Secret())
		if err != nil {
			return nil, err
		}
		return NewLibdns(NameDigitalOcean, cfg.Zone, &digitalocean.Provider{APIToken: tok}, logger), nil
	case NameHetzner:
		tok, err := secret("api_token", orZero(cfg.Hetzner).Secret())
		if err != nil {
			return nil, err
		}
		return NewLibdns(NameHetzner, cfg.Zone, hetzner.New(tok), logger), nil
	case NameDesec:
		tok, err := secret("api_token", orZero(cfg.Desec).Secret())
		if err != nil {
			return nil, err
		}
		return NewLibdns(NameDesec, cfg.Zone, &desec.Provider{Token: tok}, logger), nil
	case "":
		return nil, fmt.Errorf("%w: dns.provider is empty", ErrConfig)
	default:
		return nil, fmt.Errorf("%w: dns.provider %q unknown (want %s)", ErrConfig, cfg.Provider, strings.Join(Names(), ", "))
	}
}

// orZero is *p, or the zero value for an absent section.
func orZero[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// NewVerifierFromConfig builds the verifier for cfg. With no servers and no
// resolver configured, an RFC 2136 provider's server is the resolver.
func NewVerifierFromConfig(cfg Config, logger *slog.Logger) (*Verifier, error) {
	v := cfg.Verify
	if len(v.Servers) == 0 && v.Resolver == "" && cfg.Provider == NameRFC2136 && cfg.RFC2136 != nil {
		// Find the NS set through the primary we update.
		v.Resolver = cfg.RFC2136.Server
	}
	return NewVerifier(cfg.Zone, v, logger)
}
