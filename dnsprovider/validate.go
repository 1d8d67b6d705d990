package dnsprovider

import (
	"fmt"
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

// validateProvider checks that exactly the selected provider's section is
// set and complete, its credentials named by a file or the environment.
func (c Config) validateProvider(errs *field.Errors) {
	kind, known := providerNamed(c.Provider)
	for _, p := range providers {
		if p.name != c.Provider && p.section.set(&c) {
			errs.Add(p.name, "section for provider %s, but dns.provider is %q", p.name, c.Provider)
		}
	}
	if !known {
		errs.Add("provider", "%q must be one of %s", c.Provider, strings.Join(Names(), ", "))
		return
	}
	if !kind.section.set(&c) {
		errs.Add(kind.name, "required for provider %s", kind.name)
		return
	}
	errs.Append(kind.name, kind.section.get(&c).validate())
}

// Set names the providers whose sections are set, in the table's order.
func (s Sections) Set() []string {
	c := Config{Sections: s}
	var out []string
	for _, p := range providers {
		if p.section.set(&c) {
			out = append(out, p.name)
		}
	}
	return out
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
	kind, ok := providerNamed(c.Provider)
	if !ok || !kind.section.set(&c) {
		return nil
	}
	var out []Credential
	for _, cr := range kind.section.get(&c).credentials() {
		cr.Path = c.Provider + "." + cr.Path
		out = append(out, cr)
	}
	return out
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
