package repair_test

import (
	"context"
	"fmt"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/repair"
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

// A repair package declares each of its repairs once, as a repair.Repair
// value, and executor/remediate/all lists it on one line. The assembly
// builds it only when its mode is dry-run or on, from the clients it
// needs; the runner, drill readiness and `drwatch remediate plan` then
// plan it like any other. Here its settings live in a variable; a real
// repair's Settings points into its section of the remediations config,
// whose `default` tags the configuration reference shows.
func Example() {
	settings := remediate.Settings{Mode: remediate.ModeDryRun}
	staleLeasesRepair := repair.Repair{
		Name:     "stale-leases",
		Section:  "stale_leases",
		Needs:    []repair.Client{repair.Kubernetes},
		Settings: func(*remediate.Config) *remediate.Settings { return &settings },
		Build: func(env repair.Env, _ remediate.Config) (remediate.Entry, error) {
			kc, err := env.KubeClient("remediations: stale-leases", "primary")
			if err != nil {
				return remediate.Entry{}, err
			}
			return remediate.Entry{Remediator: staleLeases{kube: kc, stale: []string{"kube-system/old-ccm"}}, Settings: settings}, nil
		},
	}
	list := []repair.Repair{staleLeasesRepair}

	// Without the client it needs, the build names the field that gives it.
	_, err := repair.Assemble(remediate.Config{}, list, repair.Env{})
	fmt.Println(err)

	primary := new(kubeapi.Client) // never called by this repair
	env := repair.Env{Kube: func(site string) kubeapi.Interface {
		if site == "primary" {
			return primary
		}
		return nil
	}}
	entries, err := repair.Assemble(remediate.Config{}, list, env)
	if err != nil {
		fmt.Println(err)
		return
	}
	planned, _ := remediate.PlanAll(context.Background(), entries)
	for _, p := range planned {
		fmt.Println(p.Remediation, p.Verb, p.Target+":", p.Reason)
	}

	// Off, it is not built at all.
	settings.Mode = remediate.ModeOff
	entries, _ = repair.Assemble(remediate.Config{}, list, env)
	fmt.Println(len(entries), "built")
	// Output:
	// remediations: stale-leases needs the primary site's kubernetes client (remediations.kubernetes.primary)
	// stale-leases delete lease/kube-system/old-ccm: not renewed for 1h
	// 0 built
}
