package probes

import (
	"net"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/drwatch/drwatch/internal/field"
)

// IsCritical reports whether the probe decides its site's verdict: Critical,
// or unset.
func (s Spec) IsCritical() bool { return s.Critical == nil || *s.Critical }

// UnmarshalYAML decodes one probe of the configuration file. The decoder
// fills every inline type-specific struct from the one flat mapping; only
// the one Type names is kept, so a decoded Spec has the shape the probers
// take, and defaults apply only to the fields of its own type.
func (s *Spec) UnmarshalYAML(unmarshal func(any) error) error {
	type plain Spec // the same fields and tags, without this method
	if err := unmarshal((*plain)(s)); err != nil {
		return err
	}
	for _, t := range probeTypes {
		if t.name != s.Type {
			t.section.clear(s)
		}
	}
	return nil
}

// maxCertMinValidity bounds cert_min_validity: a year (the decision core's
// longest window), beyond which the value is a unit mistake.
const maxCertMinValidity = 366 * 24 * time.Hour

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// Validate reports every problem of a probe as the configuration file gives
// it, after defaults, with paths relative to the probe ("url", "timeout"; ""
// for the probe as a whole). It adds to the type's own rules what the file
// demands besides: a name fit for a metric label, a positive timeout (the
// file's default is policy.timeout), and for kubernetes an explicit https
// server and credentials. It is pure: whether files exist is the caller's
// check.
func (s *Spec) Validate() field.Errors {
	var es field.Errors
	if required(&es, "name", s.Name) && !nameRE.MatchString(s.Name) {
		es.Add("name", "%q must be lower-case letters, digits and '-' (it is a metric label)", s.Name)
	}
	t, ok := typeNamed(s.Type)
	if !ok {
		es.Add("type", "%q must be %s", s.Type, typeNames())
		return es
	}
	if s.Timeout <= 0 {
		es.Add("timeout", "%s must be > 0", s.Timeout)
	}
	es = append(es, t.section.orZero(s).configured()...)
	return es
}

// ValidateProbes reports the problems of one site's configured probes, with
// paths relative to the list: "" for the list, "[name].field" for a probe,
// items labelled as the configuration walker labels them (field.Labels).
func ValidateProbes(specs []Spec) field.Errors {
	var es field.Errors
	if len(specs) == 0 {
		es.Add("", "required: at least one probe")
		return es
	}
	names := map[string]bool{}
	critical := false
	labels := field.Labels{}
	for i := range specs {
		s := &specs[i]
		at := "[" + labels.Next(s.Name, i) + "]"
		if s.Name != "" && names[s.Name] {
			es.Add(at+".name", "duplicate probe name %q", s.Name)
		}
		names[s.Name] = true
		critical = critical || s.IsCritical()
		es.Append(at, s.Validate())
	}
	if !critical {
		es.Add("", "no critical probe: the site could never be judged")
	}
	return es
}

// ConfiguredSite is the scheduler's input for one site's probes as the
// configuration file gives them. The file's vip_port has a default that
// means something only with check_vip; without it the port is dropped, as
// the prober refuses a port it would not use.
func ConfiguredSite(site string, specs []Spec) SiteSpec {
	out := SiteSpec{Site: site, Probes: slices.Clone(specs)}
	for i, s := range out.Probes {
		if o := s.Octavia; o != nil && !o.CheckVIP && o.VIPPort != 0 {
			o2 := *o
			o2.VIPPort = 0
			out.Probes[i].Octavia = &o2
		}
	}
	return out
}

func orZero[T any](p *T) *T {
	if p == nil {
		return new(T)
	}
	return p
}

// required reports whether val is set, adding "required" at path when not.
func required(es *field.Errors, path, val string) bool {
	if strings.TrimSpace(val) == "" {
		es.Add(path, "required")
		return false
	}
	return true
}

// checkHostPort checks a required host:port (field.Errors.HostPort), or
// also a bare host when portOptional.
func checkHostPort(es *field.Errors, path, val string, portOptional bool) {
	if _, _, err := net.SplitHostPort(val); err != nil && portOptional {
		if h := strings.Trim(val, "[]"); strings.TrimSpace(h) != "" && !(strings.Contains(h, ":") && net.ParseIP(h) == nil) {
			return
		}
	}
	es.HostPort(path, val)
}

// checkCertMinValidity checks cert_min_validity's bounds.
func checkCertMinValidity(es *field.Errors, d time.Duration) {
	if d > maxCertMinValidity {
		es.Add("cert_min_validity", "%s must be ≤ %s", d, maxCertMinValidity)
	}
	if d < 0 {
		es.Add("cert_min_validity", "%s must be ≥ 0", d)
	}
}

// optionalFile is the file at field, when path is set.
func optionalFile(name, path string) []field.File {
	if path == "" {
		return nil
	}
	return []field.File{{Field: name, Path: path}}
}
