package dnsprovider

import (
	"cmp"
	"fmt"
	"github.com/drwatch/drwatch/internal/regularfile"
	"log/slog"
	"os"
	"strings"
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

	// Path is where the section sits in the config file, for errors that
	// name a field ("dns" when empty; a failover group's own provider is
	// at "groups[NAME].dns"). Set by code only.
	Path string `yaml:"-"`

	// Verify configures authoritative verification (NewVerifierFromConfig).
	Verify VerifyConfig `yaml:"verify" doc:"Checking the flip at every authoritative server."`

	// Sections are the providers' sections; only Provider's is read.
	Sections `yaml:",inline"`
}

// Sections holds one section per provider, of which only the one a
// Config's Provider names is read: a type of its own so that a failover
// group's dns section can name a provider of its own with the very same
// sections, rules and documentation.
type Sections struct {
	RFC2136      *RFC2136Config      `yaml:"rfc2136" doc:"provider rfc2136: dynamic update with TSIG (compare-and-swap)."`
	PowerDNS     *PowerDNSConfig     `yaml:"powerdns" doc:"provider powerdns: the HTTP API (no compare-and-swap)."`
	Cloudflare   *CloudflareConfig   `yaml:"cloudflare" doc:"provider cloudflare (no compare-and-swap)."`
	DigitalOcean *DigitalOceanConfig `yaml:"digitalocean" doc:"provider digitalocean (no compare-and-swap)."`
	Hetzner      *HetznerConfig      `yaml:"hetzner" doc:"provider hetzner (no compare-and-swap)."`
	Desec        *DesecConfig        `yaml:"desec" doc:"provider desec (no compare-and-swap)."`
	Route53      *Route53Config      `yaml:"route53" doc:"provider route53 (no compare-and-swap)."`
	Designate    *DesignateConfig    `yaml:"designate" doc:"provider designate: OpenStack DNS in a region other than the primary. No compare-and-swap, so a flip is not fenced: Designate does not refuse a deposed leader's write (it ignores If-Match). RRsets are written one by one, not atomically. Each update is refused if the recordset's version moved since drwatch read it, and a create another writer beat is a conflict, but a writer can still slip in between. Designate accepts a write before its name servers serve it; a zone in ERROR is reported (retried) until Designate recovers it, a zone being deleted is an error. Set dns.verify to check what is served."`
}

// New builds the provider cfg selects. The RFC 2136 provider also implements
// CompareAndSwapper; check with a type assertion. logger may be nil.
func New(cfg Config, logger *slog.Logger) (Provider, error) {
	path := cmp.Or(cfg.Path, "dns")
	if cfg.Zone == "" {
		return nil, fmt.Errorf("%w: %s.zone is empty", ErrConfig, path)
	}
	kind, ok := providerNamed(cfg.Provider)
	switch {
	case cfg.Provider == "":
		return nil, fmt.Errorf("%w: %s.provider is empty", ErrConfig, path)
	case !ok:
		return nil, fmt.Errorf("%w: %s.provider %q unknown (want %s)", ErrConfig, path, cfg.Provider, strings.Join(Names(), ", "))
	}
	return kind.section.get(&cfg).build(build{path: path, provider: cfg.Provider, zone: cfg.Zone, fence: cfg.FenceName, logger: logger})
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
