package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/signal"
	"strconv"
	"syscall"
	"text/tabwriter"

	"github.com/drwatch/drwatch/cluster"
	"github.com/drwatch/drwatch/cmd/drwatch/api"
	"github.com/spf13/cobra"
)

func newMembersCmd() *cobra.Command {
	var flags clientFlags
	c := asGroup(&cobra.Command{Use: "members", Short: "List, add or remove the Raft voters"})
	flags.register(c)
	var output string
	list := &cobra.Command{
		Use:   "list",
		Short: "List the voters and the leader",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := outputFormat(output).check(); err != nil {
				return err
			}
			return membersList(c.Context(), stdout(c), &flags, outputFormat(output))
		},
	}
	list.Flags().StringVarP(&output, "output", "o", "table", "table, json or yaml")
	var confirm, yes bool
	var reason string
	remove := &cobra.Command{
		Use:   "remove ID",
		Short: "Remove a voter (removing the leader or going below three voters needs --confirm)",
		Args:  oneArg("remove takes one node ID"),
		RunE: func(c *cobra.Command, args []string) error {
			if err := requireReason(reason); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(c.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			cl, err := flags.client(true)
			if err != nil {
				return err
			}
			if !yes {
				if err := newConfirmer(c.InOrStdin(), c.ErrOrStderr()).confirm(fmt.Sprintf("About to remove watcher %s from the cluster.\n", args[0]), "remove "+args[0]); err != nil {
					return err
				}
			}
			req := api.WriteRequest{ID: args[0], Confirm: confirm, Reason: reason}
			if err := cl.do(ctx, http.MethodPost, "/api/v1/members/remove", req, nil); err != nil {
				return cliErr(err)
			}
			fmt.Fprintf(stdout(c), "removed %s\n", args[0])
			return nil
		},
	}
	var raftAddr, addReason string
	add := &cobra.Command{
		Use:   "add ID --raft-addr HOST:PORT",
		Short: "Add a voter (a new or replaced watcher; start it with the same peers first)",
		Args:  oneArg("add takes one node ID and --raft-addr HOST:PORT"),
		RunE: func(c *cobra.Command, args []string) error {
			if raftAddr == "" {
				return usageError{errors.New("add takes one node ID and --raft-addr HOST:PORT")}
			}
			if err := requireReason(addReason); err != nil {
				return err
			}
			cl, err := flags.client(true)
			if err != nil {
				return err
			}
			req := api.WriteRequest{ID: args[0], RaftAddr: raftAddr, Reason: addReason}
			if err := cl.do(c.Context(), http.MethodPost, "/api/v1/members/add", req, nil); err != nil {
				return cliErr(err)
			}
			fmt.Fprintf(stdout(c), "added %s at %s\n", args[0], raftAddr)
			return nil
		},
	}
	add.Flags().StringVar(&raftAddr, "raft-addr", "", "host:port the other watchers dial (required)")
	add.Flags().StringVar(&addReason, "reason", "", "why (required; recorded in the history with your actor)")
	remove.Flags().BoolVar(&confirm, "confirm", false, "confirm removing the leader or going below three voters")
	remove.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	remove.Flags().StringVar(&reason, "reason", "", "why (required; recorded in the history with your actor)")
	c.AddCommand(list, add, remove)
	return c
}

func membersList(ctx context.Context, w io.Writer, flags *clientFlags, format outputFormat) error {
	cl, err := flags.client(false)
	if err != nil {
		return err
	}
	var out struct {
		Members []cluster.Member `json:"members"`
	}
	if err := cl.do(ctx, http.MethodGet, "/api/v1/members", nil, &out); err != nil {
		return cliErr(err)
	}
	if format != "table" {
		return structured(w, format, out)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tRAFT ADDRESS\tSUFFRAGE\tLEADER\tFORMAT\tRELEASE")
	for _, m := range out.Members {
		format, release := strconv.Itoa(m.Format), cmp.Or(m.Release, "-")
		switch {
		case m.Format == cluster.UnknownFormat:
			format, release = "?", "not reachable"
		case m.Format == cluster.LegacyFormat && m.Release == "":
			release = "before log formats"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\t%s\n", m.ID, m.Addr, m.Suffrage, m.Leader, format, release)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if desc, newest, differ := cluster.DescribeReleases(out.Members); differ {
		fmt.Fprintf(w, "warning: the servers run different releases (an upgrade under way?): %s; the leader writes what format %d adds only once every server reads it\n", desc, newest)
	}
	return nil
}
