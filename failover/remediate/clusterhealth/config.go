package clusterhealth

import (
	"strings"
	"time"

	"github.com/drwatch/drwatch/internal/field"
)

// Config is the `cluster_health:` section of a node's config file. The
// clusters themselves are remediations.kubernetes.primary and .backup.
type Config struct {
	Interval       time.Duration `yaml:"interval" doc:"How often each watcher reads both sites' clusters for the Cluster health section (default 1m, at least 10s)."`
	Timeout        time.Duration `yaml:"timeout" doc:"How long one site's read may take, every call included (default 20s; below interval)."`
	LBPendingAfter time.Duration `yaml:"lb_pending_after" doc:"A LoadBalancer Service with no ingress address for longer than this counts as pending (default 10m)."`
	// TerminatingAfter is counted from the pod's deletion timestamp, the
	// end of its grace period.
	TerminatingAfter time.Duration `yaml:"terminating_after" doc:"A pod still Terminating this long past the end of its grace period counts as stuck (default 10m)."`
	// CCMLease is "namespace/name" of the cloud-controller-manager's
	// leader-election Lease: with a LoadBalancer Service pending, who
	// leads the controller that should give it an address, and since when.
	CCMLease    string        `yaml:"ccm_lease" doc:"The cloud-controller-manager's leader Lease, namespace/name, read when a LoadBalancer Service is pending (default kube-system/cloud-controller-manager)."`
	EventWindow time.Duration `yaml:"event_window" doc:"Events last seen within this window count as recent (default 1h, Kubernetes' own event TTL)."`
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

// WithDefaults returns c with every zero field defaulted.
func (c Config) WithDefaults() Config {
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.Timeout == 0 {
		c.Timeout = min(DefaultTimeout, c.Interval/2)
	}
	if c.LBPendingAfter == 0 {
		c.LBPendingAfter = DefaultLBPendingAfter
	}
	if c.EventWindow == 0 {
		c.EventWindow = DefaultEventWindow
	}
	if c.CCMLease == "" {
		c.CCMLease = DefaultCCMLease
	}
	if c.TerminatingAfter == 0 {
		c.TerminatingAfter = DefaultTerminatingAfter
	}
	return c
}

// Validate returns every problem at once, each naming its field by its path
// inside the section ("timeout"). Call it on WithDefaults' result.
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
