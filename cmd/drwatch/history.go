package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/drwatch/drwatch/failover"
	"github.com/spf13/cobra"
)

// historyCmd is `drwatch history`.
type historyCmd struct {
	flags  clientFlags
	output string
	group  string
}

func newHistoryCmd() *cobra.Command {
	h := &historyCmd{}
	c := &cobra.Command{
		Use:   "history [-o table|json|yaml]",
		Short: "The replicated history: decisions, withheld flips, pauses, acks and DNS outcomes",
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
	c.Flags().StringVar(&h.group, "group", "", "only this failover group's entries and the cluster's (policy, membership, repairs, drills)")
	return c
}

// Run prints the history.
func (h *historyCmd) Run(ctx context.Context, w io.Writer) error {
	cl, err := h.flags.client(false)
	if err != nil {
		return err
	}
	var out struct {
		History []failover.Entry `json:"history"`
	}
	if err := cl.do(ctx, http.MethodGet, withGroup("/api/v1/history", h.group), nil, &out); err != nil {
		return cliErr(err)
	}
	if h.output != "table" {
		return structured(w, outputFormat(h.output), out)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	groups := slices.ContainsFunc(out.History, func(e failover.Entry) bool { return e.Group != "" })
	if groups {
		fmt.Fprint(tw, "GROUP\t")
	}
	fmt.Fprintln(tw, "INDEX\tGEN\tAT\tKIND\tMOVE\tACTOR\tOUTCOME\tREASON")
	for _, e := range readingOrder(out.History) {
		move := "-"
		if e.From != "" || e.To != "" {
			move = string(e.From) + "->" + string(e.To)
		}
		kind := e.Kind
		if e.Forced {
			kind += " (forced)"
		}
		if groups {
			// An entry of no group is the default group's or the cluster's.
			fmt.Fprintf(tw, "%s\t", cmp.Or(logText(e.Group), "-"))
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Index, e.Gen, unixTime(e.At), logText(kind), logText(move),
			cmp.Or(logText(e.Actor), "-"), cmp.Or(logText(e.Outcome), "-"), cmp.Or(logText(e.Reason), "-"))
	}
	return tw.Flush()
}

// readingOrder is the history, oldest first, as people read it: a manual
// move comes before the ack of the block that it caused. The log records
// that ack first, at the same index, so that an index's last entry is its
// decision; an ack command that lets an automatic flip through stays
// before it, as its cause.
func readingOrder(h []failover.Entry) []failover.Entry {
	out := slices.Clone(h)
	for i := 0; i+1 < len(out); i++ {
		a, d := out[i], out[i+1]
		if a.Kind == failover.KindAck && a.Index == d.Index && d.Gen == d.Index &&
			(d.Kind == failover.KindManualFailover || d.Kind == failover.KindManualFailback || d.Kind == failover.KindSwitchover) {
			out[i], out[i+1] = d, a
			i++
		}
	}
	return out
}

// explainCmd is `drwatch explain [GEN]`.
type explainCmd struct {
	flags clientFlags
	group string
}

func newExplainCmd() *cobra.Command {
	e := &explainCmd{}
	c := &cobra.Command{
		Use:   "explain [GEN]",
		Short: "The evidence behind a decision, in words (default: the latest)",
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError{errors.New("explain takes at most one generation number")}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			var gen uint64 // 0: the latest decision
			if len(args) == 1 {
				var err error
				gen, err = strconv.ParseUint(args[0], 10, 64)
				if err != nil || gen == 0 {
					return usageError{fmt.Errorf("generation %q is not a positive integer", args[0])}
				}
			}
			return e.Run(c.Context(), stdout(c), gen)
		},
	}
	e.flags.register(c)
	c.Flags().StringVar(&e.group, "group", "", "a decision of this failover group (default: the default group); GEN is the group's")
	return c
}

// Run prints the explanation of gen, or of the latest decision when gen is 0.
func (e *explainCmd) Run(ctx context.Context, w io.Writer, gen uint64) error {
	cl, err := e.flags.client(false)
	if err != nil {
		return err
	}
	if gen == 0 {
		st, err := cl.groupStatus(ctx, e.group)
		if err != nil {
			return cliErr(err)
		}
		if gen = st.State.Desired.Gen; gen == 0 && e.group != "" {
			return fmt.Errorf("no decision yet in group %s: drwatch has not changed its records", e.group)
		} else if gen == 0 {
			return errors.New("no decision yet: drwatch has not changed the records")
		}
	}
	var out struct {
		Explanation string `json:"explanation"`
	}
	if err := cl.do(ctx, http.MethodGet, withGroup("/api/v1/explain/"+strconv.FormatUint(gen, 10), e.group), nil, &out); err != nil {
		return cliErr(err)
	}
	// The explanation is lines of text quoting reasons from the log.
	for _, line := range strings.Split(out.Explanation, "\n") {
		if _, err := fmt.Fprintln(w, logText(line)); err != nil {
			return err
		}
	}
	return nil
}
