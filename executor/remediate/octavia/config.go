package octavia

import (
	"fmt"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/internal/field"
)

// OctaviaStuckLBConfig configures octavia-stuck-lb.
type OctaviaStuckLBConfig struct {
	remediate.Settings      `yaml:",inline"`
	remediate.OpenStackAuth `yaml:",inline"`
	// ProjectID is the only project whose load balancers are watched: admin
	// credentials list and may fail over every project's.
	ProjectID       string        `yaml:"project_id" doc:"ID of the project whose load balancers are watched; empty means the credentials' own project. Load balancers of any other project are never listed, counted or failed over, even with admin credentials."`
	LoadBalancers   []string      `yaml:"load_balancers" doc:"Load balancers of the project to watch, by ID or unique name; empty watches every load balancer of the project."`
	PendingTimeout  time.Duration `yaml:"pending_timeout" default:"10m" doc:"How long a load balancer may stay PENDING_* (since its updated_at) before it is failed over."`
	FailoverTimeout time.Duration `yaml:"failover_timeout" default:"5m" doc:"How long one failover is followed until the load balancer is ACTIVE before it counts as failed."`
}

// Defaults of octavia_stuck_lb.
const (
	DefaultPendingTimeout  = 10 * time.Minute
	DefaultFailoverTimeout = 5 * time.Minute
)

// Validate implements repair.Section.
func (c OctaviaStuckLBConfig) Validate() field.Errors {
	var errs field.Errors
	errs = append(errs, c.Settings.Validate()...)
	errs = append(errs, remediate.ValidateAuth(c.OpenStackAuth, c.Mode.Enabled())...)
	seen := map[string]bool{}
	for i, lb := range c.LoadBalancers {
		p := fmt.Sprintf("load_balancers[%d]", i)
		switch {
		case lb == "":
			errs.Add(p, "must not be empty")
		case seen[lb]:
			errs.Add(p, "%q is listed twice", lb)
		}
		seen[lb] = true
	}
	remediate.NonNegative(&errs, "pending_timeout", c.PendingTimeout)
	remediate.NonNegative(&errs, "failover_timeout", c.FailoverTimeout)
	return errs
}
