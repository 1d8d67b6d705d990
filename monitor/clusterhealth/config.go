package clusterhealth

import (
	"strings"
	"time"

	"github.com/drwatch/drwatch/internal/field"
)

// Config is the `cluster_health:` section of a node's config file. The
// clusters themselves are remediations.kubernetes.primary and .backup.
type Config struct {
	Interval       time.Duration `yaml:"interval" default:"1m" doc:"How often each watcher reads both sites' clusters for the Cluster health section (at least 10s)."`
	Timeout        time.Duration `yaml:"timeout" default:"20s, at most interval / 2" doc:"How long one site's read may take, every call included (below interval)."`
	LBPendingAfter time.Duration `yaml:"lb_pending_after" default:"10m" doc:"A LoadBalancer Service with no ingress address for longer than this counts as pending."`
	// TerminatingAfter is counted from the pod's deletion timestamp, the
	// end of its grace period.
	TerminatingAfter time.Duration `yaml:"terminating_after" default:"10m" doc:"A pod still Terminating this long past the end of its grace period counts as stuck."`
	// CCMLease is "namespace/name" of the cloud-controller-manager's
	// leader-election Lease: with a LoadBalancer Service pending, who
	// leads the controller that should give it an address, and since when.
	CCMLease    string        `yaml:"ccm_lease" default:"kube-system/cloud-controller-manager" doc:"The cloud-controller-manager's leader Lease, namespace/name, read when a LoadBalancer Service is pending."`
	EventWindow time.Duration `yaml:"event_window" default:"1h" doc:"Events last seen within this window count as recent (the default is Kubernetes' own event TTL)."`
}

// Defaults.
const (
	DefaultInterval         = time.Minute
	DefaultTimeout          = 20 * time.Second
	DefaultLBPendingAfter   = 10 * time.Minute
	DefaultEventWindow      = time.Hour
	DefaultTerminatingAfter = 10 * time.Minute
	DefaultCCMLease         = "kube-system/cloud-controller-manager"
	// MinInterval keeps three watchers from hammering two API servers.
	MinInterval = 10 * time.Second
)

// Defaulted returns c with every zero field set from its `default` tag
// (field.SetDefaults); timeout, derived from interval, is 20s, at most
// half the interval. In this section zero means unset, written in the
// file or not.
func (c Config) Defaulted() Config {
	field.SetDefaults(&c)
	if c.Timeout == 0 {
		c.Timeout = min(DefaultTimeout, c.Interval/2)
	}
	return c
}

// Validate returns every problem at once, each naming its field by its path
// inside the section ("timeout"). Call it on Defaulted's result.
func (c Config) Validate() field.Errors {
	var errs field.Errors
	if c.Interval < MinInterval {
		errs.Add("interval", "%s must be >= %s", c.Interval, MinInterval)
	}
	if c.Timeout <= 0 || c.Timeout >= c.Interval {
		errs.Add("timeout", "%s must be > 0 and below interval (%s)", c.Timeout, c.Interval)
	}
	if c.LBPendingAfter <= 0 {
		errs.Add("lb_pending_after", "%s must be > 0", c.LBPendingAfter)
	}
	if c.TerminatingAfter <= 0 {
		errs.Add("terminating_after", "%s must be > 0", c.TerminatingAfter)
	}
	if ns, name, ok := strings.Cut(c.CCMLease, "/"); !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		errs.Add("ccm_lease", "%q must be namespace/name", c.CCMLease)
	}
	if c.EventWindow <= 0 {
		errs.Add("event_window", "%s must be > 0", c.EventWindow)
	}
	return errs
}
