package dnsprovider

import (
	"errors"
	"fmt"
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
		b, err := os.ReadFile(s.File)
		if err != nil {
			return "", fmt.Errorf("%w: read secret file: %w", ErrConfig, err)
		}
		v := strings.TrimSpace(string(b))
		if v == "" {
			return "", fmt.Errorf("%w: secret file %s is empty", ErrConfig, s.File)
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

// Config selects and configures one provider for one zone. Only the section
// named by Provider is read.
type Config struct {
	Provider string `yaml:"provider" json:"provider"`
	Zone     string `yaml:"zone" json:"zone"`
	// FenceName is the fence TXT record, relative to the zone (default
	// "_drwatch"). Used by compare-and-swap providers.
	FenceName string `yaml:"fence_name" json:"fence_name"`

	RFC2136      RFC2136Config      `yaml:"rfc2136" json:"rfc2136"`
	PowerDNS     PowerDNSConfig     `yaml:"powerdns" json:"powerdns"`
	Cloudflare   CloudflareConfig   `yaml:"cloudflare" json:"cloudflare"`
	Route53      Route53Config      `yaml:"route53" json:"route53"`
	DigitalOcean DigitalOceanConfig `yaml:"digitalocean" json:"digitalocean"`
	Hetzner      HetznerConfig      `yaml:"hetzner" json:"hetzner"`
	Desec        DesecConfig        `yaml:"desec" json:"desec"`
	Designate    DesignateConfig    `yaml:"designate" json:"designate"`

	// Verify configures authoritative verification (NewVerifier).
	Verify VerifyConfig `yaml:"verify" json:"verify"`
}

// PowerDNSConfig configures the PowerDNS HTTP API (libdns/powerdns).
type PowerDNSConfig struct {
	ServerURL string `yaml:"server_url" json:"server_url"` // http://host:8081
	ServerID  string `yaml:"server_id" json:"server_id"`   // default "localhost"
	APIKey    Secret `yaml:"api_key" json:"api_key"`
}

// CloudflareConfig configures Cloudflare (libdns/cloudflare).
type CloudflareConfig struct {
	APIToken  Secret `yaml:"api_token" json:"api_token"`   // Zone.DNS:Edit
	ZoneToken Secret `yaml:"zone_token" json:"zone_token"` // optional Zone:Read
}

// Route53Config configures AWS Route 53 (libdns/route53). Without keys the
// AWS SDK's default chain (environment, shared config, instance role) is used.
type Route53Config struct {
	Region          string `yaml:"region" json:"region"`
	Profile         string `yaml:"profile" json:"profile"`
	AccessKeyID     Secret `yaml:"access_key_id" json:"access_key_id"`
	SecretAccessKey Secret `yaml:"secret_access_key" json:"secret_access_key"`
	SessionToken    Secret `yaml:"session_token" json:"session_token"`
}

// DigitalOceanConfig configures DigitalOcean (libdns/digitalocean).
type DigitalOceanConfig struct {
	APIToken Secret `yaml:"api_token" json:"api_token"`
}

// HetznerConfig configures Hetzner Cloud DNS (libdns/hetzner/v2).
type HetznerConfig struct {
	APIToken Secret `yaml:"api_token" json:"api_token"`
}

// DesecConfig configures deSEC (libdns/desec).
type DesecConfig struct {
	Token Secret `yaml:"token" json:"token"`
}

// New builds the provider cfg selects. The RFC 2136 provider also implements
// CompareAndSwapper; check with a type assertion. logger may be nil.
func New(cfg Config, logger *slog.Logger) (Provider, error) {
	if cfg.Zone == "" {
		return nil, fmt.Errorf("%w: dns.zone is empty", ErrConfig)
	}
	secret := func(field string, s Secret) (string, error) {
		v, err := s.Value()
		if err != nil {
			return "", fmt.Errorf("dns.%s.%s: %w", cfg.Provider, field, err)
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
		return NewRFC2136(cfg.Zone, cfg.FenceName, cfg.RFC2136, logger)
	case NameDesignate:
		return NewDesignate(cfg.Zone, cfg.Designate, logger)
	case NamePowerDNS:
		if cfg.PowerDNS.ServerURL == "" {
			return nil, fmt.Errorf("%w: dns.powerdns.server_url is empty", ErrConfig)
		}
		key, err := secret("api_key", cfg.PowerDNS.APIKey)
		if err != nil {
			return nil, err
		}
		return NewLibdns(NamePowerDNS, cfg.Zone, &powerdns.Provider{ServerURL: cfg.PowerDNS.ServerURL, ServerID: cfg.PowerDNS.ServerID, APIToken: key}, logger), nil
	case NameCloudflare:
		tok, err := secret("api_token", cfg.Cloudflare.APIToken)
		if err != nil {
			return nil, err
		}
		zt, err := optional("zone_token", cfg.Cloudflare.ZoneToken)
		if err != nil {
			return nil, err
		}
		return NewLibdns(NameCloudflare, cfg.Zone, &cloudflare.Provider{APIToken: tok, ZoneToken: zt}, logger), nil
	case NameRoute53:
		c := cfg.Route53
		var errs []error
		ak, err := optional("access_key_id", c.AccessKeyID)
		errs = append(errs, err)
		sk, err := optional("secret_access_key", c.SecretAccessKey)
		errs = append(errs, err)
		st, err := optional("session_token", c.SessionToken)
		errs = append(errs, err)
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		return NewLibdns(NameRoute53, cfg.Zone, &route53.Provider{Region: c.Region, Profile: c.Profile, AccessKeyId: ak, SecretAccessKey: sk, SessionToken: st}, logger), nil
	case NameDigitalOcean:
		tok, err := secret("api_token", cfg.DigitalOcean.APIToken)
		if err != nil {
			return nil, err
		}
		return NewLibdns(NameDigitalOcean, cfg.Zone, &digitalocean.Provider{APIToken: tok}, logger), nil
	case NameHetzner:
		tok, err := secret("api_token", cfg.Hetzner.APIToken)
		if err != nil {
			return nil, err
		}
		return NewLibdns(NameHetzner, cfg.Zone, hetzner.New(tok), logger), nil
	case NameDesec:
		tok, err := secret("token", cfg.Desec.Token)
		if err != nil {
			return nil, err
		}
		return NewLibdns(NameDesec, cfg.Zone, &desec.Provider{Token: tok}, logger), nil
	case "":
		return nil, fmt.Errorf("%w: dns.provider is empty", ErrConfig)
	default:
		return nil, fmt.Errorf("%w: dns.provider %q unknown (want %s)", ErrConfig, cfg.Provider,
			strings.Join([]string{NameRFC2136, NamePowerDNS, NameCloudflare, NameRoute53, NameDigitalOcean, NameHetzner, NameDesec, NameDesignate}, ", "))
	}
}

// NewVerifierFromConfig builds the verifier for cfg. With no servers and no
// resolver configured, an RFC 2136 provider's server is the resolver.
func NewVerifierFromConfig(cfg Config, logger *slog.Logger) (*Verifier, error) {
	v := cfg.Verify
	if len(v.Servers) == 0 && v.Resolver == "" && cfg.Provider == NameRFC2136 {
		v.Resolver = cfg.RFC2136.Server
	}
	return NewVerifier(cfg.Zone, v, logger)
}
