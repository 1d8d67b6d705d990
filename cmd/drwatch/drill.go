package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/api"
	"github.com/drwatch/drwatch/failover"
	"github.com/spf13/cobra"
)

// drillCmd is `drwatch drill`: start a drill and wait for its result.
type drillCmd struct {
	flags   clientFlags
	req     api.WriteRequest
	timeout time.Duration
	output  string
	whatIf  string // --what-if SCENARIO: ask, write nothing
}

func newDrillCmd() *cobra.Command {
	d := &drillCmd{}
	c := &cobra.Command{
		Use:   "drill --reason TEXT | --what-if SCENARIO",
		Short: "Rehearse the failover on the canary record and measure the RTO; --what-if writes nothing",
		Long: `Rehearse the failover on the canary record (drill.record), never a production
record: the leader writes it to the backup values with the same compare-and-swap
as a real flip, verifies it at every authoritative server, writes it back and
verifies again, then runs the readiness checks. Prints every step with its time,
the readiness checks and the measured RTO.

Exit 0 when the drill passed, 1 when it failed (a rule that would withhold a
real failover, a failed step, or a failed readiness check), 3 when it was
refused: while an outage is pending or active, while a decision's DNS write is
not verified, while automatic decisions are paused, or while another drill runs.

With --what-if, ask the decision core, on a copy of a node's replica, what
would happen if every critical probe of a site failed now: whether traffic
would move and which records, which rules would withhold the move (backup not
UP at quorum, paused, blocked, automatic failover off), the expected time to
the flip, and, with --config, the remediations a failover would run. Nothing
is written: no command is proposed, no DNS record changes. Scenarios: ` + strings.Join(failover.Scenarios(), ", ") + `
(primary-down: the primary's critical probes fail; active-down: the active site's).`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if d.whatIf != "" {
				return runWhatIf(c.Context(), stdout(c), c.ErrOrStderr(), &d.flags, cmp.Or(d.output, "table"), d.whatIf)
			}
			if err := requireReason(d.req.Reason); err != nil {
				return err
			}
			if d.output != "" {
				if err := outputFormat(d.output).check(); err != nil {
					return err
				}
			}
			ctx, stop := signal.NotifyContext(c.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return d.Run(ctx, stdout(c))
		},
	}
	d.flags.register(c)
	c.Flags().StringVar(&d.req.Reason, "reason", "", "why (required; recorded in the history)")
	c.Flags().BoolVar(&d.req.DryRun, "dry-run", false, "print the rules the drill would face now; start nothing")
	c.Flags().DurationVar(&d.timeout, "timeout", 5*time.Minute, "give up waiting for the result after this long (the drill goes on)")
	c.Flags().StringVarP(&d.output, "output", "o", "", "print the result as json or yaml (with --what-if also table)")
	c.Flags().StringVar(&d.whatIf, "what-if", "", "ask what would happen, writing nothing: "+strings.Join(failover.Scenarios(), " or "))
	c.AddCommand(newDrillHistoryCmd())
	return c
}

// Run starts the drill and follows it to its end.
func (d *drillCmd) Run(ctx context.Context, out io.Writer) error {
	cl, err := d.flags.client(true)
	if err != nil {
		return err
	}
	if d.req.DryRun {
		return dryRun(ctx, cl, out, "drill", "/api/v1/drill", d.req, d.output)
	}
	var resp api.WriteResponse
	if err := cl.do(ctx, http.MethodPost, "/api/v1/drill", d.req, &resp); err != nil {
		return cliErr(err)
	}
	if d.output == "" {
		fmt.Fprintf(out, "%s (actor %s)\n", logText(resp.Result.Message), resp.Actor)
	}
	r, err := d.follow(ctx, cl, out, resp.Index)
	if err != nil {
		return err
	}
	if d.output != "" {
		if err := structured(out, outputFormat(d.output), r); err != nil {
			return err
		}
	} else {
		printDrill(out, r)
	}
	if r.Outcome != failover.DrillPassed {
		return silentError{exitFailed}
	}
	return nil
}

// follow polls the drills until drill id has ended.
func (d *drillCmd) follow(ctx context.Context, cl *client, out io.Writer, id uint64) (api.DrillReport, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	lastStep := ""
	for {
		var h api.DrillHistory
		err := cl.do(ctx, http.MethodGet, "/api/v1/drills", nil, &h)
		switch {
		case err != nil && ctx.Err() != nil:
			return api.DrillReport{}, fmt.Errorf("drill %d did not end within %s; it goes on: see 'drwatch drill history'", id, d.timeout)
		case err != nil:
			// A node may be restarting; another answers on the next poll.
		default:
			for i := len(h.Drills) - 1; i >= 0; i-- {
				if h.Drills[i].ID == id {
					return h.Drills[i], nil
				}
			}
			if r := h.Running; r != nil && r.ID == id && len(r.Steps) > 0 && d.output == "" {
				if s := r.Steps[len(r.Steps)-1].Step; s != lastStep {
					fmt.Fprintf(out, "  %s\n", s)
					lastStep = s
				}
			}
		}
		select {
		case <-ctx.Done():
			return api.DrillReport{}, fmt.Errorf("drill %d did not end within %s; it goes on: see 'drwatch drill history'", id, d.timeout)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// printDrill prints a drill's outcome, steps with their times, readiness
// checks and measured RTO.
func printDrill(w io.Writer, r api.DrillReport) {
	fmt.Fprintf(w, "drill %d %s", r.ID, outcomeWord(r.Outcome))
	if r.Rule != "" {
		fmt.Fprintf(w, " (%s)", logText(r.Rule))
	}
	fmt.Fprintf(w, " on %s %s ttl=%ds\n", r.Canary.Name, r.Canary.Type, r.Canary.TTL)
	if r.Detail != "" {
		fmt.Fprintf(w, "  %s\n", logText(r.Detail))
	}
	if len(r.Checks) > 0 {
		fmt.Fprintln(w, "failover rules (as a real failover faces them now):")
		for _, c := range r.Checks {
			fmt.Fprintf(w, "  [%s] %-16s %s\n", passFail(c.OK), c.Rule, logText(c.Detail))
		}
	}
	if len(r.Steps) > 0 {
		fmt.Fprintln(w, "steps:")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		prev := r.StartedAt
		if r.RequestedAt != 0 && r.RequestedAt <= r.StartedAt {
			fmt.Fprintf(tw, "  requested\t%s\t\n", unixTime(r.RequestedAt))
			fmt.Fprintf(tw, "  committed\t%s\t+%s\n", unixTime(r.StartedAt), time.Duration(r.StartedAt-r.RequestedAt).Round(time.Millisecond))
		} else {
			fmt.Fprintf(tw, "  committed\t%s\t\n", unixTime(r.StartedAt))
		}
		for _, s := range r.Steps {
			fmt.Fprintf(tw, "  %s\t%s\t+%s\t%s\n", s.Step, unixTime(s.At), time.Duration(s.At-prev).Round(time.Millisecond), logText(s.Detail))
			prev = s.At
		}
		_ = tw.Flush()
	}
	if len(r.Readiness) > 0 {
		fmt.Fprintln(w, "readiness:")
		for _, c := range r.Readiness {
			fmt.Fprintf(w, "  [%s] %-16s %s\n", passFail(c.Pass), logText(c.Name), logText(c.Reason))
		}
	}
	if r.RTO != nil {
		fmt.Fprintf(w, "measured: commit %s, write %s, propagation %s\n", secs(r.RTO.CommitSeconds), secs(r.RTO.WriteSeconds), secs(r.RTO.PropagationSeconds))
		fmt.Fprintln(w, r.RTO.Summary)
	}
}

func secs(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond).String()
}

func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

func outcomeWord(o string) string {
	switch o {
	case failover.DrillPassed:
		return "PASSED"
	case failover.DrillFailed:
		return "FAILED"
	case failover.DrillRolledBack:
		return "ROLLED BACK"
	}
	return o
}

// drillHistoryCmd is `drwatch drill history`.
type drillHistoryCmd struct {
	flags  clientFlags
	output string
}

func newDrillHistoryCmd() *cobra.Command {
	h := &drillHistoryCmd{}
	c := &cobra.Command{
		Use:   "history [-o table|json|yaml]",
		Short: "Past drills: outcome, rule, measured RTO",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := outputFormat(h.output).check(); err != nil {
				return err
			}
			return h.Run(c.Context(), stdout(c))
		},
	}
	h.flags.register(c)
	c.Flags().StringVarP(&h.output, "output", "o", "table", "table, json or yaml")
	return c
}

// Run prints the drills, oldest first, and the running one last.
func (h *drillHistoryCmd) Run(ctx context.Context, w io.Writer) error {
	cl, err := h.flags.client(false)
	if err != nil {
		return err
	}
	var out api.DrillHistory
	if err := cl.do(ctx, http.MethodGet, "/api/v1/drills", nil, &out); err != nil {
		return cliErr(err)
	}
	if h.output != "table" {
		return structured(w, outputFormat(h.output), out)
	}
	rows := out.Drills
	if out.Running != nil {
		rows = append(rows, *out.Running)
	}
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "no drill yet: run 'drwatch drill --reason \"first rehearsal\"'")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTARTED\tOUTCOME\tRULE\tRTO\tACTOR\tREASON")
	for _, r := range rows {
		rto := "-"
		if r.RTO != nil {
			rto = fmt.Sprintf("≈ %.0f s", r.RTO.RTOSeconds)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, unixTime(r.StartedAt), r.Outcome, cmp.Or(logText(r.Rule), "-"), rto,
			cmp.Or(logText(r.Actor), "-"), logText(r.Reason))
	}
	return tw.Flush()
}
