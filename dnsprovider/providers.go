package dnsprovider

import (
	"fmt"
	"log/slog"
	"slices"

	"github.com/drwatch/drwatch/internal/field"
)

// providers is the table of DNS providers, one line each, in the order the
// documentation gives them: the name dns.provider takes and the provider's
// section of Config. Everything that differs by provider asks this table:
// Names, which sections are set, Validate, Credentials and New. A new
// provider is its own file (its section type, with its rules, the
// credentials it reads and its constructor), its field in Config, one line
// here and the regenerated reference.
var providers = []providerKind{
	{NameRFC2136, sectionAt(func(c *Config) **RFC2136Config { return &c.RFC2136 })},
	{NamePowerDNS, sectionAt(func(c *Config) **PowerDNSConfig { return &c.PowerDNS })},
	{NameCloudflare, sectionAt(func(c *Config) **CloudflareConfig { return &c.Cloudflare })},
	{NameRoute53, sectionAt(func(c *Config) **Route53Config { return &c.Route53 })},
	{NameDigitalOcean, sectionAt(func(c *Config) **DigitalOceanConfig { return &c.DigitalOcean })},
	{NameHetzner, sectionAt(func(c *Config) **HetznerConfig { return &c.Hetzner })},
	{NameDesec, sectionAt(func(c *Config) **DesecConfig { return &c.Desec })},
	{NameDesignate, sectionAt(func(c *Config) **DesignateConfig { return &c.Designate })},
}

// providerKind is one line of providers.
type providerKind struct {
	name    string
	section providerSection
}

// providerSettings is what a provider's section of Config (RFC2136Config,
// ...) answers for the table.
type providerSettings interface {
	// validate reports the section's problems, paths relative to it ("url";
	// "" for the section itself).
	validate() field.Errors
	// credentials lists the files and variables the provider reads its
	// secrets from, paths relative to the section.
	credentials() []Credential
	// build makes the provider; a secret is read through b.
	build(b build) (Provider, error)
}

// providerSection is a provider's handle on its field of Config.
type providerSection struct {
	get func(c *Config) providerSettings // a zero section when the field is nil
	set func(c *Config) bool
}

// sectionAt makes the section whose field at returns, typed once.
func sectionAt[T any, P interface {
	*T
	providerSettings
}](at func(*Config) **T) providerSection {
	return providerSection{
		get: func(c *Config) providerSettings {
			if p := *at(c); p != nil {
				return P(p)
			}
			return P(new(T))
		},
		set: func(c *Config) bool { return *at(c) != nil },
	}
}

// providerNamed is the line of providers for name.
func providerNamed(name string) (providerKind, bool) {
	i := slices.IndexFunc(providers, func(p providerKind) bool { return p.name == name })
	if i < 0 {
		return providerKind{}, false
	}
	return providers[i], true
}

// Names lists every provider name, in the order the documentation gives them.
func Names() []string {
	out := make([]string, len(providers))
	for i, p := range providers {
		out[i] = p.name
	}
	return out
}

// build is what New hands a provider's constructor: the zone, the fence
// record's name, the logger, and the reading of secrets with errors that
// name the key a secret comes from (api_token_file or api_token_env, at
// the section's path), never its value.
type build struct {
	path, provider, zone, fence string
	logger                      *slog.Logger
}

// secret reads a required secret; field is its key without _file or _env.
func (b build) secret(field string, s Secret) (string, error) {
	v, err := s.Value()
	if err != nil {
		suffix := "_file"
		if s.File == "" && s.Env != "" {
			suffix = "_env"
		}
		return "", fmt.Errorf("%s.%s.%s%s: %w", b.path, b.provider, field, suffix, err)
	}
	return v, nil
}

// optional reads a secret that may be left unset ("" then).
func (b build) optional(field string, s Secret) (string, error) {
	if !s.IsSet() {
		return "", nil
	}
	return b.secret(field, s)
}

// fileCredential is the credential file at path, when set.
func fileCredential(path, file string) []Credential {
	if file == "" {
		return nil
	}
	return []Credential{{Path: path, File: file}}
}
