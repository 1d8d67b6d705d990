package repair

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/internal/kubeapi"
)

// Client names a kind of client a repair is built with.
type Client string

// The clients the assembly builds, once per node.
const (
	// Kubernetes is a site's API server, from remediations.kubernetes.
	Kubernetes Client = "kubernetes"
	// OpenStack is a site's cloud: its own credentials in the repair's
	// section, or the cloud of remediations.openstack ([Env.Cloud]).
	OpenStack Client = "openstack"
)

// Repair is what a repair package declares about one repair. The value is
// data: declaring it builds and contacts nothing.
type Repair struct {
	// Name is the repair's name in records, metrics and
	// `drwatch remediate plan NAME` ("drain-trap").
	Name string
	// Section is the path of its section under remediations:
	// ("drain_trap", "openstack.neutron_route_gc").
	Section string
	// Needs lists the clients Build takes from its Env.
	Needs []Client
	// Settings points at the repair's mode and caps inside cfg, so that
	// the assembly can tell whether it is enabled and the plan command can
	// switch it on alone.
	Settings func(cfg *remediate.Config) *remediate.Settings
	// Build makes the repair from its section of cfg (defaulted and
	// validated) and the clients of env. It is called only when the
	// repair is enabled, must not contact anything, and returns an error
	// naming the config field when a client it needs is missing.
	Build func(env Env, cfg remediate.Config) (remediate.Entry, error)
}

// Env holds what repairs are built from. Every field may be nil or empty;
// a repair that needs a missing one says so in Build's error.
type Env struct {
	// Kube returns the site's Kubernetes client, or nil when
	// remediations.kubernetes has none for it.
	Kube func(site string) kubeapi.Interface
	// Cloud returns the cloud of remediations.openstack when it is for
	// site, else nil. It authenticates on first use. Its type belongs to
	// package openstack; a repair asserts the interface it needs (an
	// instance check, a node rebooter, a pool reader), so that the repairs
	// a cloud serves need not import it.
	Cloud func(site string) any
	// Decision is the decision backup-warmup acts on.
	Decision func() remediate.Decision
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Log receives the repairs' logs; nil discards them.
	Log *slog.Logger
	// DataDir is the node's data directory, for a repair that keeps a
	// record across restarts; empty keeps none.
	DataDir string
}

// KubeClient returns the site's Kubernetes client, or an error saying
// that who (the repair, or its field) needs it and which field gives it.
func (e Env) KubeClient(who, site string) (kubeapi.Interface, error) {
	if e.Kube != nil {
		if c := e.Kube(site); c != nil {
			return c, nil
		}
	}
	return nil, fmt.Errorf("%s needs the %s site's kubernetes client (%s.kubernetes.%s)", who, site, remediate.Section, site)
}

// CloudFor returns the cloud of remediations.openstack for site, or nil.
func (e Env) CloudFor(site string) any {
	if e.Cloud == nil {
		return nil
	}
	return e.Cloud(site)
}

// Assemble defaults and validates cfg, then builds, in list order, every
// repair of list that cfg enables (mode dry-run or on). Env is filled in
// where empty (a discarding logger, a decision with no generation). It
// returns every build error at once.
func Assemble(cfg remediate.Config, list []Repair, env Env) ([]remediate.Entry, error) {
	cfg = cfg.Defaulted()
	if err := cfg.Validate().Under(remediate.Section).Err(); err != nil {
		return nil, err
	}
	if env.Log == nil {
		env.Log = slog.New(slog.DiscardHandler)
	}
	if env.Decision == nil {
		env.Decision = func() remediate.Decision { return remediate.Decision{} }
	}
	var out []remediate.Entry
	var errs []error
	for _, r := range list {
		if !r.Settings(&cfg).Mode.Enabled() {
			continue
		}
		e, err := r.Build(env, cfg)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, e)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}
