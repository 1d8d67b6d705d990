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
}

func newStatusCmd() *cobra.Command {
	s := &statusCmd{}
	c := &cobra.Command{
		Use:   "status [-o table|json|yaml] [-w INTERVAL]",
		Short: "Where traffic goes, why, and what each watcher sees",
		Args:  noArgs,
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
	return c
}

// Run prints the status once, or every s.watch until ctx ends.
func (s *statusCmd) Run(ctx context.Context, w io.Writer) error {
	cl, err := s.flags.client(false)
	if err != nil {
		return err
	}
	for {
		st, err := cl.status(ctx)
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
			printStatus(w, st)
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

func printStatus(w io.Writer, st api.Status) {
	v := st.State
	now := st.ServedAt
	for _, warn := range st.Warnings {
		fmt.Fprintf(w, "WARNING: %s\n", logText(warn))
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
	fmt.Fprintf(w, "leader:      %s (term %d); served by %s, data %.1fs old\n", cmp.Or(st.Leader, "-"), st.Raft.Term, st.ServedBy, st.StaleSeconds)
	fmt.Fprintf(w, "desired:     gen %d, %s, verified=%v; dns matches desired: %v\n", v.Desired.Gen, v.Desired.Active, v.Desired.Done, st.DNS.Match)
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
	for i, s := range st.ClusterHealth {
		label := "cluster:    "
		if i > 0 {
			label = "            "
		}
		fmt.Fprintf(w, "%s %s\n", label, logText(api.ClusterText(s, now)))
	}
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
