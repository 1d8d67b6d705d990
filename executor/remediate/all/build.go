package all

import (
	"fmt"
	"slices"
	"strings"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/kube"
	"github.com/drwatch/drwatch/executor/remediate/openstack"
	"github.com/drwatch/drwatch/executor/remediate/repair"
	"github.com/drwatch/drwatch/internal/kubeapi"
	"github.com/drwatch/drwatch/internal/kubeconfig"
)

// Options are what the clients cannot be built from: the node's clock,
// log, data directory and decision. NewKubeClient replaces kube.NewClient
// (tests).
type Options struct {
	Env           repair.Env
	NewKubeClient func(kubeconfig.Cluster) (kubeapi.Interface, error)
}

// Build builds the clients cfg names once (a Kubernetes client per site of
// remediations.kubernetes, the cloud of remediations.openstack), then
// every repair cfg enables, in the order of Repairs, each from its own
// section of cfg (defaulted and validated). Nothing is contacted:
// clients connect on first use.
func Build(cfg Config, o Options) ([]remediate.Entry, error) {
	env := o.Env
	newClient := o.NewKubeClient
	if newClient == nil {
		newClient = kube.NewClient
	}
	clients := map[string]kubeapi.Interface{}
	for _, s := range []struct {
		site string
		kc   kubeconfig.Cluster
	}{{"primary", cfg.Kubernetes.Primary}, {"backup", cfg.Kubernetes.Backup}} {
		if s.kc.Kubeconfig == "" {
			continue
		}
		c, err := newClient(s.kc)
		if err != nil {
			return nil, fmt.Errorf("%s.kubernetes.%s: %w", remediate.Section, s.site, err)
		}
		clients[s.site] = c
	}
	env.Kube = func(site string) kubeapi.Interface { return clients[site] }
	env.Cloud = openstack.NewCloud(cfg.OpenStack).For
	return repair.Assemble(&cfg, Repairs, env)
}

// Names are the names of every repair, sorted.
func Names() []string {
	var out []string
	for _, r := range Repairs {
		out = append(out, r.Name)
	}
	slices.Sort(out)
	return out
}

// Only returns cfg with the named repair in dry-run, whatever its mode,
// and every other one off; ok is false for an unknown name.
func Only(cfg Config, name string) (Config, bool) {
	if !slices.ContainsFunc(Repairs, func(r repair.Repair) bool { return r.Name == name }) {
		return cfg, false
	}
	for _, r := range Repairs {
		s := r.Settings(repair.SectionOf(&cfg, r))
		if r.Name == name {
			s.Mode = remediate.ModeDryRun
		} else {
			s.Mode = remediate.ModeOff
		}
	}
	return cfg, true
}

// Clients names what a repair is built with, for the reference and help
// text ("kubernetes, openstack").
func Clients(r repair.Repair) string {
	var s []string
	for _, c := range r.Needs {
		s = append(s, string(c))
	}
	return strings.Join(s, ", ")
}

// Disruption is a repair that a config enables whose actions disrupt the
// nodes of a Kubernetes cluster (repair.Repair.DisruptsSite): all the
// repairs of one runner on one cluster share its node disruption budget.
type Disruption struct {
	// Repair is its name; Section the path of its settings under
	// remediations: ("orphaned_pods").
	Repair, Section string
	// Site is the site of remediations.kubernetes whose cluster it
	// disrupts; Cluster is that site's entry there (no kubeconfig_file: the
	// repair cannot be built).
	Site    string
	Cluster kubeconfig.Cluster
}

// Disruptions lists, in the order of Repairs, the repairs cfg enables
// (mode dry-run or on: a dry run takes from the budget too) that disrupt
// nodes. cfg is defaulted first; nothing is built or contacted.
func Disruptions(cfg Config) []Disruption {
	cfg = cfg.Defaulted()
	var out []Disruption
	for _, r := range Repairs {
		s := repair.SectionOf(&cfg, r)
		if r.DisruptsSite == nil || s == nil || !r.Settings(s).Mode.Enabled() {
			continue
		}
		site := r.DisruptsSite(s)
		out = append(out, Disruption{Repair: r.Name, Section: r.Section, Site: site, Cluster: cfg.Kubernetes.Site(site)})
	}
	return out
}
