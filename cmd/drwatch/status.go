package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os/signal"
	"sort"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/api"
	"github.com/drwatch/drwatch/failover"
	"github.com/spf13/cobra"
)

// statusCmd is `drwatch status`.
type statusCmd struct {
	flags  clientFlags
	output string
	watch  time.Duration
	group  string
}

func newStatusCmd() *cobra.Command {
	s := &statusCmd{}
	c := &cobra.Command{
		Use:   "status [-o table|json|yaml] [-w INTERVAL] [--group NAME]",
		Short: "Where traffic goes, why, and what each watcher sees",
		Long: `Where traffic goes, why, and what each watcher sees. When the cluster guards
several failover groups, the table has one line per group (active site, each
site's verdict with its tally, mode, last decision); --group NAME shows one
group in full.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := outputFormat(s.output).check(); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(c.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return s.Run(ctx, stdout(c))
		},
	}
	s.flags.register(c)
	c.Flags().StringVarP(&s.output, "output", "o", "table", "table, json or yaml")
	c.Flags().DurationVarP(&s.watch, "watch", "w", 0, "refresh every INTERVAL until interrupted")
	c.Flags().StringVar(&s.group, "group", "", "show this failover group in full")
	return c
}

// Run prints the status once, or every s.watch until ctx ends.
func (s *statusCmd) Run(ctx context.Context, w io.Writer) error {
	cl, err := s.flags.client(false)
	if err != nil {
		return err
	}
	for {
		st, err := cl.groupStatus(ctx, s.group)
		if err != nil {
			if s.watch > 0 && ctx.Err() != nil {
				return nil
			}
			return cliErr(err)
		}
		if s.output == "table" {
			if s.watch > 0 {
				fmt.Fprint(w, "\033[H\033[2J")
			}
			if s.group == "" && len(st.State.Groups) > 0 {
				printGroups(w, st)
			} else {
				printStatus(w, st)
			}
		} else if err := structured(w, outputFormat(s.output), st); err != nil {
			return err
		}
		if s.watch <= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(s.watch):
		}
	}
}

// printGroups is the status of a cluster with several failover groups:
// what they share, then one line per group.
func printGroups(w io.Writer, st api.Status) {
	printWarnings(w, st)
	printLeader(w, st)
	printClusterHealth(w, st)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tACTIVE\tSITES\tMODE\tLAST DECISION")
	for _, g := range st.State.Groups {
		mode := g.Mode
		switch {
		case g.Blocked:
			mode += ", blocked"
		case g.Pending:
			mode += ", pending"
		}
		if g.WithheldRule != "" {
			mode += ", withheld (" + g.WithheldRule + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", logText(g.Name), g.Active, api.GroupTallies(g.Sites), logText(mode), cmp.Or(logText(g.LastDecision), "-"))
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "\n'drwatch status --group NAME' shows one group in full.")
}

func printWarnings(w io.Writer, st api.Status) {
	for _, warn := range st.Warnings {
		fmt.Fprintf(w, "WARNING: %s\n", logText(warn))
	}
}

func printLeader(w io.Writer, st api.Status) {
	fmt.Fprintf(w, "leader:      %s (term %d); served by %s, data %.1fs old\n", cmp.Or(st.Leader, "-"), st.Raft.Term, st.ServedBy, st.StaleSeconds)
}

func printClusterHealth(w io.Writer, st api.Status) {
	for i, s := range st.ClusterHealth {
		label := "cluster:    "
		if i > 0 {
			label = "            "
		}
		fmt.Fprintf(w, "%s %s\n", label, logText(api.ClusterText(s, st.ServedAt)))
	}
}

func printStatus(w io.Writer, st api.Status) {
	v := st.State
	now := st.ServedAt
	printWarnings(w, st)
	if v.Group != "" {
		fmt.Fprintf(w, "group:       %s\n", logText(v.Group))
	}
	fmt.Fprintf(w, "active site: %s (since %s, %s)\n", v.Active, unixTime(v.ActiveSince), ago(v.ActiveSince, now))
	mode := v.Mode
	if v.Paused {
		mode = "paused"
		if v.PausedUntil != 0 {
			mode += " until " + unixTime(v.PausedUntil)
		}
		if v.PauseReason != "" {
			mode += " (" + logText(v.PauseReason) + ", by " + logText(v.PausedBy) + ")"
		}
	}
	if v.Blocked {
		mode += "; automatic flips blocked until " + unixTime(v.BlockedUntil) + " or 'drwatch ack' (or a manual move)"
	}
	fmt.Fprintf(w, "mode:        %s\n", mode)
	fmt.Fprintf(w, "last:        %s\n", logText(v.LastDecision))
	printLeader(w, st)
	fmt.Fprintf(w, "desired:     gen %d, %s, verified=%v", v.Desired.Gen, v.Desired.Active, v.Desired.Done)
	if v.Group == "" {
		// The DNS check compares the default group's records.
		fmt.Fprintf(w, "; dns matches desired: %v", st.DNS.Match)
	}
	fmt.Fprintln(w)
	if v.Pending != nil {
		fmt.Fprintf(w, "pending:     %s\n", api.PendingText(v.Pending, v.Policy))
	}
	if v.WithheldReason != "" {
		fmt.Fprintf(w, "withheld:    %s\n", logText(v.WithheldReason))
	}
	if n := len(v.Remediations); n > 0 {
		r := v.Remediations[n-1]
		fmt.Fprintf(w, "repairs:     last %s %s %s (%s, %s); 'drwatch remediate records' lists %d\n",
			logText(r.Result), logText(r.Verb), logText(r.Target), logText(r.Name), ago(r.At, now), n)
	}
	printClusterHealth(w, st)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SITE\tVERDICT\tUP\tDOWN\tABSTAIN\tQUORUM")
	for _, site := range []failover.Site{failover.Primary, failover.Backup} {
		t := v.Sites[site]
		fmt.Fprintf(tw, "%s\t%s\t%d (%s)\t%d (%s)\t%s\t%d\n", site, v.SiteVerdict(site), len(t.Up), join(t.Up), len(t.Down), join(t.Down), join(t.Abstain), t.Quorum)
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WATCHER\tLAST REPORT\tPRIMARY\tBACKUP\tFAILING")
	nodes := append([]failover.NodeView(nil), v.Nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Node < nodes[j].Node })
	for _, nv := range nodes {
		var failing []string
		for _, p := range nv.Probes {
			if !p.Last.OK && p.LastAt != 0 {
				failing = append(failing, logText(fmt.Sprintf("%s/%s: %s", p.Site, p.Probe, cmp.Or(p.Last.Reason, p.Last.Class))))
			}
		}
		last := ago(nv.LastAt, now)
		if nv.Stale {
			last += " (stale)"
		}
		if nv.Abstain != "" {
			last += " abstains: " + logText(nv.Abstain)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", logText(nv.Node), last, nv.Verdicts[failover.Primary], nv.Verdicts[failover.Backup], join(failing))
	}
	_ = tw.Flush()
}
