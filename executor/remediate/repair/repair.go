package repair

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/internal/field"
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
// data: declaring it builds and contacts nothing. Declare one with [For],
// which binds it to the type of its section.
type Repair struct {
	// Name is the repair's name in records, metrics and
	// `drwatch remediate plan NAME` ("drain-trap").
	Name string
	// Section is the path of its settings under remediations:
	// ("drain_trap", "openstack.neutron_route_gc"); its first element is
	// the key of the [Section] that holds them.
	Section string
	// Needs lists the clients Build takes from its Env.
	Needs []Client
	// Settings points at the repair's mode and caps inside section (a
	// pointer to its section's type), so that the assembly can tell
	// whether it is enabled and the plan command can switch it on alone.
	Settings func(section any) *remediate.Settings
	// Build makes the repair from its section (a pointer to it, defaulted
	// and validated), the part of remediations: that belongs to no repair
	// (the Kubernetes APIs) and the clients of env. It is called only when
	// the repair is enabled, must not contact anything, and returns an
	// error naming the config field when a client it needs is missing.
	Build func(env Env, common remediate.Config, section any) (remediate.Entry, error)
	// DisruptsSite, set by [Disrupting] for a repair whose actions disrupt
	// nodes (Action.Disrupts: reboots, taints, force-deletes), is the site
	// of remediations.kubernetes whose cluster it disrupts, as its section
	// (a pointer to it, defaulted) names it: the site Build gives its
	// Entry.Cluster. nil for a repair that disrupts no node. The config
	// reads it without building anything, to refuse two runners (two node
	// disruption budgets) disrupting one cluster.
	DisruptsSite func(section any) string
}

// Disrupting declares that r, declared with [For] on sections of type S,
// disrupts the nodes of the Kubernetes cluster of the site that site reads
// from its section.
func Disrupting[S any](r Repair, site func(*S) string) Repair {
	r.DisruptsSite = func(s any) string { return site(s.(*S)) }
	return r
}

// For declares the repair name whose settings sit at path section under
// remediations:, in a section of type S: settings points at its mode and
// caps in S, build makes it from S.
func For[S any](name, section string, needs []Client, settings func(*S) *remediate.Settings,
	build func(env Env, common remediate.Config, s S) (remediate.Entry, error)) Repair {
	return Repair{Name: name, Section: section, Needs: needs,
		Settings: func(s any) *remediate.Settings { return settings(s.(*S)) },
		Build: func(env Env, common remediate.Config, s any) (remediate.Entry, error) {
			return build(env, common, *s.(*S))
		}}
}

// Section is a repair package's section of the remediations config: a
// struct whose yaml, doc and default tags the config loader and the
// configuration reference read, and which executor/remediate/all holds
// under its key. A section configures one repair or several
// (remediations.openstack holds three); each of them is declared with
// [For] on the section's type.
type Section interface {
	// Validate returns every problem of the section, each naming its
	// field by its path inside the section ("site").
	Validate() field.Errors
}

// Deriver is implemented by (a pointer to) a section with defaults that
// depend on other fields, which no `default` tag can hold: DeriveDefaults
// sets them once the tags' defaults are in.
type Deriver interface {
	DeriveDefaults()
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

// ErrNoSection is the build error of a repair whose section the config
// does not hold: a list and a config that do not match.
var ErrNoSection = errors.New("no section in the config")

// Assemble defaults and validates the config *cfg (a struct that embeds
// remediate.Config and holds the sections of list's repairs, as
// executor/remediate/all's Config does), then builds, in list order, every
// repair of list that its section enables (mode dry-run or on). Env is
// filled in where empty (a discarding logger, a decision with no
// generation). It returns every build error at once.
func Assemble(cfg any, list []Repair, env Env) ([]remediate.Entry, error) {
	Defaults(cfg)
	if err := Validate(cfg).Under(remediate.Section).Err(); err != nil {
		return nil, err
	}
	common, _ := sectionsOf(cfg)
	if env.Log == nil {
		env.Log = slog.New(slog.DiscardHandler)
	}
	if env.Decision == nil {
		env.Decision = func() remediate.Decision { return remediate.Decision{} }
	}
	var out []remediate.Entry
	var errs []error
	for _, r := range list {
		s := SectionOf(cfg, r)
		if s == nil {
			errs = append(errs, fmt.Errorf("%s: %w: %s.%s", r.Name, ErrNoSection, remediate.Section, r.Section))
			continue
		}
		if !r.Settings(s).Mode.Enabled() {
			continue
		}
		e, err := r.Build(env, *common, s)
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
