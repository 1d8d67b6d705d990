package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/drwatch/drwatch/cmd/drwatch/config"
	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/all"
	"github.com/drwatch/drwatch/executor/remediate/kube"
	"github.com/drwatch/drwatch/executor/remediate/openstack"
	"github.com/drwatch/drwatch/executor/remediate/repair"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/internal/kubeapi"
	"github.com/drwatch/drwatch/internal/kubeconfig"
	"github.com/spf13/cobra"
)

func newRemediateCmd() *cobra.Command {
	c := asGroup(&cobra.Command{Use: "remediate", Short: "Show what the remediations would do, and what they did"})
	c.AddCommand(newRemediatePlanCmd(), newRemediateRecordsCmd())
	return c
}

// remediateRecordsCmd is `drwatch remediate records`.
type remediateRecordsCmd struct {
	flags  clientFlags
	output string
	group  string
}

func newRemediateRecordsCmd() *cobra.Command {
	r := &remediateRecordsCmd{}
	c := &cobra.Command{
		Use:   "records [--group NAME] [-o table|json|yaml]",
		Short: "The last 20 remediation records, newest first: applied, failed, capped and dry runs",
		Long: `Print the remediation records the leader's runners replicated, newest first,
as the status page's Repairs section shows them. Dry runs are here and not in
'drwatch history'. With failover groups each group's remediations have a
runner of their own: --group NAME prints that group's records only (default:
the top-level remediations section's), and without it every runner's are
printed with their group.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := outputFormat(r.output).check(); err != nil {
				return err
			}
			return r.Run(c.Context(), stdout(c))
		},
	}
	r.flags.register(c)
	c.Flags().StringVarP(&r.output, "output", "o", "table", "table, json or yaml")
	c.Flags().StringVar(&r.group, "group", "", "only the records of this failover group's remediations (default: the top-level section's)")
	return c
}

// Run prints the records.
func (r *remediateRecordsCmd) Run(ctx context.Context, w io.Writer) error {
	cl, err := r.flags.client(false)
	if err != nil {
		return err
	}
	// A group's status holds its runner's latest records; the default
	// group's holds every runner's, of which --group default keeps the
	// top-level runner's.
	st, err := cl.groupStatus(ctx, r.group)
	if err != nil {
		return cliErr(err)
	}
	want := r.group
	if want == failover.DefaultGroup {
		want = ""
	}
	recs := make([]failover.RemediationRecord, 0, len(st.State.Remediations))
	grouped := false
	for i := len(st.State.Remediations) - 1; i >= 0; i-- {
		rec := st.State.Remediations[i]
		if r.group != "" && rec.Group != want {
			continue
		}
		grouped = grouped || r.group == "" && rec.Group != ""
		recs = append(recs, rec)
	}
	if r.output != "table" {
		return structured(w, outputFormat(r.output), struct {
			Remediations []failover.RemediationRecord `json:"remediations"`
		}{recs})
	}
	if len(recs) == 0 {
		_, err := fmt.Fprintln(w, "no remediation records yet")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	group := func(string) string { return "" }
	if grouped {
		// Several runners' records: say whose each is.
		fmt.Fprint(tw, "GROUP\t")
		group = func(g string) string { return cmp.Or(logText(g), failover.DefaultGroup) + "\t" }
	}
	fmt.Fprintln(tw, "INDEX\tAT\tREMEDIATION\tVERB\tTARGET\tRESULT\tREASON\tDETAIL")
	for _, rec := range recs {
		result := logText(rec.Result)
		if rec.NeedsAdmin {
			// Parked: the runner will not retry it until its state changes.
			result += " (needs admin)"
		}
		fmt.Fprintf(tw, "%s%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", group(rec.Group), rec.Index, unixTime(rec.At), logText(rec.Name), logText(rec.Verb), logText(rec.Target), result,
			cmp.Or(logText(rec.Reason), "-"), cmp.Or(logText(rec.Detail), "-"))
	}
	return tw.Flush()
}

// remediatePlanCmd is `drwatch remediate plan [NAME]`.
type remediatePlanCmd struct {
	flags  clientFlags
	active string
	group  string
	// newClient builds a Kubernetes client (tests replace it).
	newClient func(kubeconfig.Cluster) (kubeapi.Interface, error)
}

func newRemediatePlanCmd() *cobra.Command {
	p := &remediatePlanCmd{newClient: kube.NewClient}
	c := &cobra.Command{
		Use:   "plan --config FILE [--group NAME] [NAME]",
		Short: "Print the actions the remediations would take now (read-only)",
		Long: `Run Plan of every enabled remediation (mode dry-run or on), or of the one
named whatever its mode, against the real clusters, and print the actions:
remediation, target, verb and reason. Nothing is written, and the caps, the
leader and the replicated history are not consulted: the leader may skip some
of these actions (cap reached, already applied for this decision).

The remediations come from the remediations: section of the node's config
file, or with --group NAME from that failover group's own section
(groups[].remediations), planned on the group's decision. backup-warmup acts
only while the backup is the active site: the current decision is asked from
the cluster (any node that answers), or given with --active.

Names: ` + strings.Join(all.Names(), ", ") + `.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError{fmt.Errorf("%s takes at most one remediation name, got %q", c.CommandPath(), args)}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			return p.Run(c.Context(), stdout(c), c.ErrOrStderr(), name)
		},
	}
	p.flags.register(c)
	c.Flags().StringVar(&p.active, "active", "", "assume this site is active (primary or backup) instead of asking the cluster")
	c.Flags().StringVar(&p.group, "group", "", "plan this failover group's own remediations (groups[].remediations) on its decision")
	return c
}

// loadRemediations reads the remediations section of a node's config file
// with the loader every command uses (config.Load): the same shape checks
// and the same refusal of a secret pasted into a file field. Only the
// section's own rules are checked and the files are not, so a plan can be
// made from any copy of the file, even a partial one, on a machine where
// the node's other files are absent. group names a failover group whose
// own section (groups[].remediations) is read instead; "" and
// DefaultGroup read the top-level one.
func loadRemediations(path, group string) (all.Config, error) {
	if path == "" {
		path = os.Getenv("DRWATCH_CONFIG")
	}
	if path == "" {
		return all.Config{}, usageError{errors.New("--config is required: the remediations and their clusters come from a node's config file")}
	}
	sections := []string{remediate.Section}
	if group != "" && group != failover.DefaultGroup {
		sections = []string{"groups[" + group + "]." + remediate.Section}
	}
	cfg, err := config.Load(path, config.Options{SkipFileChecks: true, Sections: sections})
	if err != nil {
		return all.Config{}, err
	}
	if group == "" || group == failover.DefaultGroup {
		return cfg.Remediations, nil
	}
	names := []string{failover.DefaultGroup}
	for _, g := range cfg.Groups {
		if g.Name == group {
			return g.Remediations, nil
		}
		names = append(names, g.Name)
	}
	return all.Config{}, usageError{fmt.Errorf("unknown failover group %q in %s; groups: %s", group, path, strings.Join(names, ", "))}
}

// enable turns the named remediation on in dry-run, whatever its mode, and
// every other one off.
func enable(cfg all.Config, name string) (all.Config, error) {
	cfg, ok := all.Only(cfg, name)
	if !ok {
		return cfg, usageError{fmt.Errorf("unknown remediation %q; known: %s", name, strings.Join(all.Names(), ", "))}
	}
	return cfg, nil
}

// Run plans and prints.
func (p *remediatePlanCmd) Run(ctx context.Context, w, errw io.Writer, name string) error {
	cfg, err := loadRemediations(p.flags.config, p.group)
	if err != nil {
		return err
	}
	if name != "" {
		if cfg, err = enable(cfg, name); err != nil {
			return err
		}
	}
	decision, source, err := p.decision(ctx)
	if err != nil {
		return err
	}
	entries, err := all.Build(cfg, all.Options{NewKubeClient: p.newClient,
		Env: repair.Env{Decision: func() remediate.Decision { return decision }}})
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		fmt.Fprintln(w, "no remediation is enabled (every mode is off); name one to plan it anyway")
		return nil
	}
	mode := map[string]remediate.Mode{}
	for _, e := range entries {
		mode[e.Remediator.Name()] = e.Settings.Mode
	}
	planned, planErr := remediate.PlanAll(ctx, entries)
	fmt.Fprintf(w, "decision: %s\n", source)
	if dn := cfg.DeadNodeOutOfService; dn.Mode.Enabled() && openstack.NewCloud(cfg.OpenStack).For(cmp.Or(dn.Site, "primary")) == nil {
		fmt.Fprintln(w, "note: dead-node-out-of-service has no cloud instance check (remediations.openstack is not set for its site), so it plans no taints")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "REMEDIATION\tMODE\tTARGET\tVERB\tREASON")
	for _, a := range planned {
		m, reason := planColumns(a, mode[a.Remediation])
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", a.Remediation, m, a.Target, a.Verb, reason)
	}
	tw.Flush()
	names := make([]string, 0, len(mode))
	for n := range mode {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(w, "%d actions planned by %s\n", len(planned), strings.Join(names, ", "))
	if planErr != nil {
		return fmt.Errorf("plan: %w", planErr)
	}
	return nil
}

// planColumns is a planned action's MODE and REASON columns: a
// report-only action shows "report-only", whatever the mode, and why; one
// the disruption brake holds shows "held", and the brake's reason.
func planColumns(a remediate.Planned, mode remediate.Mode) (string, string) {
	switch {
	case a.ReportOnly != "":
		return "report-only", a.Reason + "; not applied: " + a.ReportOnly
	case a.Held != "":
		return "held", a.Reason + "; not applied: " + a.Held
	}
	return string(mode), a.Reason
}

// decision is the current decision: from --active, else from any node.
func (p *remediatePlanCmd) decision(ctx context.Context) (remediate.Decision, string, error) {
	switch p.active {
	case "primary", "backup":
		return remediate.Decision{Gen: 1, Active: failover.Site(p.active)}, "assumed (--active " + p.active + ")", nil
	case "":
	default:
		return remediate.Decision{}, "", usageError{fmt.Errorf("--active must be primary or backup, got %q", p.active)}
	}
	cl, err := p.flags.client(false)
	if err == nil {
		if st, err := cl.groupStatus(ctx, p.group); err == nil {
			d := st.State.Desired
			of := ""
			if p.group != "" {
				of = "group " + p.group + ": "
			}
			return remediate.NewDecision(d, st.State.History),
				fmt.Sprintf("%sgen %d, %s active (served by %s)", of, d.Gen, d.Active, st.ServedBy), nil
		}
	}
	return remediate.Decision{}, "unknown (no node answered; pass --active to plan backup-warmup)", nil
}
