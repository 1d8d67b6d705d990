package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/api"
	"github.com/drwatch/drwatch/failover"
	"github.com/spf13/cobra"
)

// writeCmd is one of failover, failback, switchover, pause, resume, ack.
type writeCmd struct {
	flags   clientFlags
	name    string // failover, failback, ...
	path    string
	req     api.WriteRequest
	yes     bool
	wait    bool
	waitFor time.Duration
	output  string
	confirm confirmer
}

// requireReason refuses a write without a reason before it is sent.
func requireReason(reason string) error {
	if strings.TrimSpace(reason) == "" {
		return usageError{errors.New("--reason is required: it is recorded in the history")}
	}
	return nil
}

func newWriteCmd(name, short, long string) (*cobra.Command, *writeCmd) {
	w := &writeCmd{name: name, path: "/api/v1/" + name}
	c := &cobra.Command{
		Use:   name,
		Short: short,
		Long:  long,
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := requireReason(w.req.Reason); err != nil {
				return err
			}
			if w.req.AllGroups && w.req.Group != "" {
				return usageError{errors.New("--group and --all-groups at once: name one group, or move every group")}
			}
			if w.output != "" {
				if err := outputFormat(w.output).check(); err != nil {
					return err
				}
			}
			w.confirm = newConfirmer(c.InOrStdin(), c.ErrOrStderr())
			ctx, stop := signal.NotifyContext(c.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return w.Run(ctx, stdout(c))
		},
	}
	w.flags.register(c)
	c.Flags().StringVar(&w.req.Reason, "reason", "", "why (required; recorded in the history)")
	c.Flags().BoolVarP(&w.yes, "yes", "y", false, "do not ask for confirmation")
	c.Flags().StringVarP(&w.output, "output", "o", "", "print the reply as json or yaml")
	c.Flags().StringVar(&w.req.Group, "group", "", "the failover group the command is for (default: the default group; 'drwatch status' lists them)")
	return c, w
}

func (w *writeCmd) addMoveFlags(c *cobra.Command) {
	c.Flags().BoolVar(&w.req.Force, "force", false, "override the target-health rule (recorded as forced)")
	c.Flags().BoolVar(&w.req.DryRun, "dry-run", false, "print the exact record changes and the checks that would pass or fail; change nothing")
	c.Flags().BoolVar(&w.wait, "wait", false, "follow the flip until every authoritative server serves it")
	c.Flags().DurationVar(&w.waitFor, "wait-timeout", 3*time.Minute, "give up --wait after this long")
}

func newFailoverCmd() *cobra.Command {
	c, w := newWriteCmd("failover", "Move traffic to a site now (default: the backup)",
		`Move traffic to --to (default backup). Refused (exit 3) when the target is not
UP at quorum, unless --force, which is recorded as forced. Pause and the
block after an automatic flip do not stop a manual failover; an applied
failover, failback or switchover acknowledges the block, re-arming
automatic failover.

With --group the move is that failover group's alone. With --all-groups every
group moves by its own rules, as if asked one by one: the groups whose target
is UP at quorum move, the others stay and are named with the rule that kept
them (exit 3).`)
	c.Flags().StringVar(&w.req.To, "to", "backup", "primary or backup")
	c.Flags().BoolVar(&w.req.AllGroups, "all-groups", false, "move every failover group whose target its own rules allow; one confirmation lists each group's record changes, a group refused exits 3")
	w.addMoveFlags(c)
	return c
}

func newFailbackCmd() *cobra.Command {
	c, w := newWriteCmd("failback", "Move traffic back to the primary",
		`Move traffic back to the primary. Refused (exit 3) while the primary is not UP
at quorum, unless --force.`)
	w.addMoveFlags(c)
	return c
}

func newSwitchoverCmd() *cobra.Command {
	c, w := newWriteCmd("switchover", "Planned move between two healthy sites",
		`A planned move to --to: refused unless both sites are UP at quorum.`)
	c.Flags().StringVar(&w.req.To, "to", "", "primary or backup (required)")
	w.addMoveFlags(c)
	return c
}

func newPauseCmd() *cobra.Command {
	c, w := newWriteCmd("pause", "Stop automatic decisions (manual commands still work)", "")
	c.Flags().StringVar(&w.req.Until, "until", "", "resume automatically after this long, e.g. 2h (default: until 'drwatch resume')")
	return c
}

func newResumeCmd() *cobra.Command {
	c, _ := newWriteCmd("resume", "Resume automatic decisions", "")
	return c
}

func newAckCmd() *cobra.Command {
	c, _ := newWriteCmd("ack", "Acknowledge an automatic flip, lifting the block on further automatic flips",
		`Lift the block on automatic flips that an automatic flip set. A manual
failover, failback or switchover does the same when it is applied.`)
	return c
}

// Run performs the write: dry run, or confirm, submit and optionally wait.
func (w *writeCmd) Run(ctx context.Context, out io.Writer) error {
	cl, err := w.flags.client(true)
	if err != nil {
		return err
	}
	if w.req.DryRun {
		return dryRun(ctx, cl, out, w.name, w.path, w.req, w.output)
	}
	if !w.yes {
		summary, err := w.summary(ctx, cl)
		if err != nil {
			return err
		}
		if err := w.confirm.confirm(summary, w.phrase()); err != nil {
			return err
		}
	}
	var resp api.WriteResponse
	if err := cl.do(ctx, http.MethodPost, w.path, w.req, &resp); err != nil {
		return cliErr(err)
	}
	if w.output != "" {
		if err := structured(out, outputFormat(w.output), resp); err != nil {
			return err
		}
	} else {
		printWriteResult(out, resp)
	}
	if w.wait {
		for _, r := range moved(resp.Result) {
			if err := w.follow(ctx, cl, out, r.Gen, r.Group); err != nil {
				return err
			}
		}
	}
	return refusedGroups(resp.Result)
}

// summary is what the confirmation shows: the status of the group the
// command is for, or, for a move of every group, each group's record
// changes from a dry run.
func (w *writeCmd) summary(ctx context.Context, cl *client) (string, error) {
	var b strings.Builder
	if w.req.AllGroups {
		req := w.req
		req.DryRun = true
		var dr api.DryRun
		if err := cl.do(ctx, http.MethodPost, w.path, req, &dr); err != nil {
			return "", cliErr(err)
		}
		if dr.Error != nil {
			// No group would move: the write would be refused as a whole.
			return "", refusedError{&apiError{Status: http.StatusConflict, ErrorDetail: *dr.Error}}
		}
		fmt.Fprintf(&b, "About to %s every group to %s", w.name, w.req.To)
		if w.req.Force {
			b.WriteString(" (forced)")
		}
		fmt.Fprintf(&b, ": %s\n", w.req.Reason)
		printGroupChanges(&b, dr.Groups)
		return b.String(), nil
	}
	st, err := cl.groupStatus(ctx, w.req.Group)
	if err != nil {
		return "", cliErr(err)
	}
	printStatus(&b, st)
	fmt.Fprintf(&b, "\nAbout to %s", w.name)
	if w.req.Group != "" {
		fmt.Fprintf(&b, " group %s", w.req.Group)
	}
	if w.req.To != "" {
		fmt.Fprintf(&b, " to %s", w.req.To)
	}
	if w.req.Force {
		b.WriteString(" (forced)")
	}
	fmt.Fprintf(&b, ": %s\n", w.req.Reason)
	return b.String(), nil
}

// printGroupChanges lists, group by group, what a move of every group
// would do: the record changes of each group that moves, and the rule that
// keeps each refused one where it is.
func printGroupChanges(out io.Writer, groups []api.GroupDryRun) {
	for _, g := range groups {
		switch {
		case g.Refused != "":
			fmt.Fprintf(out, "  group %s: stays, REFUSED by %s\n", g.Group, logText(g.Refused))
		case !g.Changes:
			fmt.Fprintf(out, "  group %s: no record changes (already there)\n", g.Group)
		default:
			fmt.Fprintf(out, "  group %s: record changes (one atomic, fenced update):\n", g.Group)
			printRecordChanges(out, "    ", g.From, g.To)
		}
	}
}

// printWriteResult prints what a committed write did, group by group for
// a move of every group.
func printWriteResult(out io.Writer, resp api.WriteResponse) {
	res := resp.Result
	msg := res.Message
	if msg == "" {
		msg = string(res.Type) + " committed"
	}
	fmt.Fprintf(out, "%s (index %d, actor %s)\n", msg, resp.Index, resp.Actor)
	if res.Gen != 0 {
		group := ""
		if res.Group != "" {
			group = "group " + res.Group + " "
		}
		fmt.Fprintf(out, "%sdecision gen %d: %s -> %s\n", group, res.Gen, res.From, res.To)
	}
	for _, g := range res.Groups {
		switch {
		case g.Refused != "":
			fmt.Fprintf(out, "  group %s: REFUSED by %s; stays on %s\n", g.Group, logText(g.Refused), g.Active)
		case g.Gen != 0:
			fmt.Fprintf(out, "  group %s: decision gen %d: %s -> %s\n", g.Group, g.Gen, g.From, g.To)
		default:
			fmt.Fprintf(out, "  group %s: %s, on %s\n", g.Group, cmp.Or(g.Noop, g.Message, "unchanged"), g.Active)
		}
	}
}

// moved lists the decisions a write made, each with its group.
func moved(res failover.Result) []failover.Result {
	var out []failover.Result
	if res.Gen != 0 {
		out = append(out, res)
	}
	for _, g := range res.Groups {
		if g.Gen != 0 {
			out = append(out, g)
		}
	}
	return out
}

// refusedGroups fails with exit 3 when a move of every group left groups
// behind, naming each with the rule that kept it.
func refusedGroups(res failover.Result) error {
	var refused []string
	for _, g := range res.Groups {
		if g.Refused != "" {
			refused = append(refused, "group "+g.Group+": refused by rule "+logText(g.Refused))
		}
	}
	if len(refused) == 0 {
		return nil
	}
	return refusedError{fmt.Errorf("%d of %d groups did not move:\n  %s", len(refused), len(res.Groups), strings.Join(refused, "\n  "))}
}

func (w *writeCmd) phrase() string {
	p := w.name
	switch {
	case w.req.AllGroups:
		p += " every group"
	case w.req.Group != "":
		p += " " + w.req.Group
	}
	if w.req.To != "" {
		p += " to " + w.req.To
	}
	return p
}

// follow polls the status until decision gen is verified at every
// authoritative server, a newer decision supersedes it, or time runs out.
func (w *writeCmd) follow(ctx context.Context, cl *client, out io.Writer, gen uint64, group string) error {
	ctx, cancel := context.WithTimeout(ctx, w.waitFor)
	defer cancel()
	start := time.Now()
	lastMsg := ""
	for {
		st, err := cl.groupStatus(ctx, group)
		switch {
		case err != nil && ctx.Err() != nil:
			return fmt.Errorf("gen %d not verified within %s", gen, w.waitFor)
		case err != nil:
			// A node may be restarting; another answers on the next poll.
		case st.State.Desired.Gen > gen:
			return fmt.Errorf("gen %d was superseded by gen %d before it was verified", gen, st.State.Desired.Gen)
		case st.State.Desired.Gen == gen && st.State.Desired.Done:
			fmt.Fprintf(out, "verified at every authoritative server after %s\n", time.Since(start).Round(time.Millisecond))
			for _, s := range st.DNS.Servers {
				fmt.Fprintf(out, "  %s matched=%v\n", s.Server, s.Matched)
			}
			return nil
		default:
			msg := "waiting for the leader to write DNS"
			if st.Reconcile != nil && st.Reconcile.Error != "" {
				msg = "leader retrying: " + st.Reconcile.Error
			}
			if msg != lastMsg {
				fmt.Fprintf(out, "%s: %s\n", time.Since(start).Round(time.Millisecond), msg)
				lastMsg = msg
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("gen %d not verified within %s", gen, w.waitFor)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// dryRun posts req to path as a dry run and prints what the write named
// name would do: refused (exit 3) as the write would be.
func dryRun(ctx context.Context, cl *client, out io.Writer, name, path string, req api.WriteRequest, output string) error {
	var dr api.DryRun
	if err := cl.do(ctx, http.MethodPost, path, req, &dr); err != nil {
		return cliErr(err)
	}
	if output != "" {
		return structured(out, outputFormat(output), dr)
	}
	printDryRun(out, name, dr)
	refused := dr.Error != nil && dr.Error.Code == api.CodeRefused
	for _, g := range dr.Groups {
		// A group left behind exits 3, as the write would.
		refused = refused || g.Refused != ""
	}
	if refused {
		return silentError{exitRefused}
	}
	return nil
}

func printDryRun(out io.Writer, name string, dr api.DryRun) {
	fmt.Fprintf(out, "dry run of %s: nothing was changed\n\n", name)
	fmt.Fprintln(out, "checks (the rules this command faces):")
	for _, c := range dr.Checks {
		mark := "PASS"
		if !c.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(out, "  [%s] %-16s %s", mark, c.Rule, c.Detail)
		if c.Overridden {
			fmt.Fprint(out, " (overridden by --force, recorded as forced)")
		}
		fmt.Fprintln(out)
	}
	fmt.Fprintln(out)
	if dr.Error != nil {
		fmt.Fprintf(out, "would be REFUSED: %s", dr.Error.Message)
		if dr.Error.Rule != "" {
			fmt.Fprintf(out, " (rule %s)", dr.Error.Rule)
		}
		if dr.Error.Override != "" {
			fmt.Fprintf(out, "\n  to override: %s", dr.Error.Override)
		}
		fmt.Fprintln(out)
		return
	}
	if !dr.Changes {
		fmt.Fprintf(out, "no record would change; run now, the command would answer: %s\n", dr.Result.Message)
		return
	}
	fmt.Fprintln(out, "would decide (the gen is the log index it commits at):", dr.Result.Message)
	if len(dr.Groups) > 0 {
		fmt.Fprintln(out, "in each group:")
		printGroupChanges(out, dr.Groups)
		return
	}
	fmt.Fprintln(out, "record changes (one atomic, fenced update):")
	printRecordChanges(out, "  ", dr.From, dr.To)
}

func printRecordChanges(out io.Writer, indent string, from, to []failover.RRset) {
	for i, t := range to {
		f := "(absent)"
		if i < len(from) && len(from[i].Values) > 0 {
			f = strings.Join(from[i].Values, " ")
		}
		fmt.Fprintf(out, "%s%s %s ttl=%ds: %s -> %s\n", indent, t.Name, t.Type, t.TTL, f, strings.Join(t.Values, " "))
	}
}
