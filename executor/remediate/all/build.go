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
