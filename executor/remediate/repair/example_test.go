package repair_test

import (
	"context"
	"fmt"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/repair"
	"github.com/drwatch/drwatch/internal/field"
	"github.com/drwatch/drwatch/internal/kubeapi"
)

// staleLeases is the remediator of a made-up repair: it plans to delete
// the leases nobody renewed. A real one reads them from env.Kube(site) in
// Plan and deletes one in Apply; both are idempotent.
type staleLeases struct {
	kube  kubeapi.Interface
	stale []string
}

func (staleLeases) Name() string { return "stale-leases" }

func (s staleLeases) Plan(context.Context) ([]remediate.Action, error) {
	var acts []remediate.Action
	for _, l := range s.stale {
		acts = append(acts, remediate.Action{Target: "lease/" + l, Verb: "delete", Reason: "not renewed for 1h", Key: "delete/" + l})
	}
	return acts, nil
}

func (staleLeases) Apply(context.Context, remediate.Action) error { return nil }

// staleLeasesConfig is the made-up repair's section, remediations.stale_leases:
// its tags carry the docs and defaults, Validate its rules.
type staleLeasesConfig struct {
	remediate.Settings `yaml:",inline"`
	Site               string `yaml:"site" default:"primary" doc:"Which site's cluster to watch: primary or backup."`
}

func (c staleLeasesConfig) Validate() field.Errors {
	errs := c.Settings.Validate()
	remediate.ValidateSite(&errs, "", c.Site)
	return errs
}

// config is the remediations config the example assembles from: what
// executor/remediate/all's Config is for the real repairs.
type config struct {
	remediate.Config `yaml:",inline"`
	StaleLeases      staleLeasesConfig `yaml:"stale_leases"`
}

// A repair package declares its section type and each of its repairs
// once, as a repair.Repair value bound to that type (repair.For), and
// executor/remediate/all holds the section and lists the repair, one line
// each. The assembly builds it only when its mode is dry-run or on, from
// the clients it needs; the runner, drill readiness and
// `drwatch remediate plan` then plan it like any other.
func Example() {
	staleLeasesRepair := repair.For("stale-leases", "stale_leases", []repair.Client{repair.Kubernetes},
		func(c *staleLeasesConfig) *remediate.Settings { return &c.Settings },
		func(env repair.Env, _ remediate.Config, c staleLeasesConfig) (remediate.Entry, error) {
			kc, err := env.KubeClient("remediations: stale-leases", c.Site)
			if err != nil {
				return remediate.Entry{}, err
			}
			return remediate.Entry{Remediator: staleLeases{kube: kc, stale: []string{"kube-system/old-ccm"}}, Settings: c.Settings}, nil
		})
	list := []repair.Repair{staleLeasesRepair}
	cfg := config{StaleLeases: staleLeasesConfig{Settings: remediate.Settings{Mode: remediate.ModeDryRun}}}

	// Without the client it needs, the build names the field that gives it.
	c := cfg
	_, err := repair.Assemble(&c, list, repair.Env{})
	fmt.Println(err)

	primary := new(kubeapi.Client) // never called by this repair
	env := repair.Env{Kube: func(site string) kubeapi.Interface {
		if site == "primary" {
			return primary
		}
		return nil
	}}
	c = cfg
	entries, err := repair.Assemble(&c, list, env)
	if err != nil {
		fmt.Println(err)
		return
	}
	planned, _ := remediate.PlanAll(context.Background(), entries)
	for _, p := range planned {
		fmt.Println(p.Remediation, p.Verb, p.Target+":", p.Reason)
	}

	// Off, it is not built at all.
	c = cfg
	c.StaleLeases.Mode = remediate.ModeOff
	entries, _ = repair.Assemble(&c, list, env)
	fmt.Println(len(entries), "built")
	// Output:
	// remediations: stale-leases needs the primary site's kubernetes client (remediations.kubernetes.primary)
	// stale-leases delete lease/kube-system/old-ccm: not renewed for 1h
	// 0 built
}
