package remediate

import (
	"time"

	"github.com/drwatch/drwatch/internal/field"
	"github.com/drwatch/drwatch/internal/kubeconfig"
	"github.com/drwatch/drwatch/internal/openstackauth"
)

// Config is the part of the `remediations:` section that belongs to no
// repair: the pass interval and each site's Kubernetes API. Each repair
// section is its repair package's own type; executor/remediate/all puts
// them together with this part, inline, into the whole section. Validate
// names fields relative to the section.
type Config struct {
	Interval time.Duration `yaml:"interval" default:"30s" doc:"Period between remediation passes on the leader."`
	// Kubernetes names the clusters of each site; the Kubernetes
	// remediators act on the one their site field names.
	Kubernetes KubeSites `yaml:"kubernetes" doc:"How to reach each site's Kubernetes API."`
}

// KubeSites is the remediations.kubernetes cluster list (kubeconfig.Sites:
// its keys, defaults, rules and client connection), under the name Config
// holds it by. The list lives in a leaf because the cluster health
// monitor reaches the same clusters, and a monitor never imports an
// executor.
type KubeSites = kubeconfig.Sites

// OpenStackAuth says how to reach one site's OpenStack: the credentials
// type the octavia probe shares (openstackauth.Credentials, its keys and
// rules), under the name the sections embed it by.
type OpenStackAuth = openstackauth.Credentials

// ValidateAuth reports the credentials' problems, by path relative to the
// section that holds them. Credentials are needed when the repair is
// enabled; a section that sets any of them, enabled or not, must set them
// completely.
func ValidateAuth(a OpenStackAuth, enabled bool) field.Errors {
	if a.IsZero() {
		var errs field.Errors
		if enabled {
			errs.Add("cloud", "cloud or auth_url must be set when enabled")
		}
		return errs
	}
	return a.Validate()
}

// DefaultInterval is remediations.interval's default.
const DefaultInterval = 30 * time.Second

// Defaulted returns c with every zero field set from its `default` tag
// (field.SetDefaults). In this section zero means unset, written in the
// file or not; a negative value is kept, for Validate to name: it is a
// mistake, not "unset".
func (c Config) Defaulted() Config {
	field.SetDefaults(&c)
	return c
}

// Section is the key of Config in a node's config file. An error about the
// configuration that a remediator's constructor returns names its field
// under it, as the config loader does with Validate's problems.
const Section = "remediations"

// Validate returns every problem of this part at once, each naming its
// field by its path inside the section ("interval").
func (c Config) Validate() field.Errors {
	var errs field.Errors
	NonNegative(&errs, "interval", c.Interval)
	errs.Append("kubernetes", c.Kubernetes.Validate())
	return errs
}

// ValidateSite names site at path+".site" unless it is empty (the
// default), primary or backup.
func ValidateSite(errs *field.Errors, path, site string) {
	if site != "" && site != "primary" && site != "backup" {
		errs.Add(field.Join(path, "site"), "%q must be primary or backup", site)
	}
}

// NonNegative names a negative count or duration at path; zero means the
// default.
func NonNegative[T int | time.Duration](errs *field.Errors, path string, v T) {
	if v < 0 {
		errs.Add(path, "%v must be >= 0 (0 or unset: the default)", v)
	}
}
