package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/drwatch/drwatch/cmd/drwatch/api"
	"github.com/drwatch/drwatch/executor/remediate/kube"
	"github.com/drwatch/drwatch/failover"
)

// whatIfRun is `drwatch drill --what-if SCENARIO`: the decision core's
// answer, from any node's replica, to "what if every critical probe of the
// site failed now". It writes nothing: no command, no DNS record.
type whatIfRun struct {
	flags  *clientFlags
	output string // table, json or yaml
}

// runWhatIf asks any node and prints the answer: as text, with the
// remediations a failover would run when --config names a node's config
// file, or as -o json/yaml. An unknown scenario is a usage error naming
// the known ones. The drill command calls it for --what-if.
func runWhatIf(ctx context.Context, w, errw io.Writer, flags *clientFlags, output, scenario string) error {
	return whatIfRun{flags: flags, output: output}.Run(ctx, w, errw, scenario)
}

// Run asks and prints.
func (r whatIfRun) Run(ctx context.Context, w, errw io.Writer, scenario string) error {
	if !slices.Contains(failover.Scenarios(), scenario) {
		return usageError{fmt.Errorf("--what-if %q is not a scenario; known: %s", scenario, strings.Join(failover.Scenarios(), ", "))}
	}
	if err := outputFormat(r.output).check(); err != nil {
		return err
	}
	cl, err := r.flags.client(false)
	if err != nil {
		return err
	}
	ans, err := cl.whatIf(ctx, scenario)
	if err != nil {
		return cliErr(err)
	}
	if r.output != "table" {
		return structured(w, outputFormat(r.output), ans)
	}
	fmt.Fprintf(w, "served by %s (leader %s), data %.1fs old; nothing is written\n", logText(ans.ServedBy), logText(orDash(ans.Leader)), ans.StaleSeconds)
	for _, line := range strings.Split(strings.TrimRight(ans.Answer.Text(), "\n"), "\n") {
		fmt.Fprintln(w, logText(line))
	}
	return r.remediations(ctx, w, errw, ans.Answer)
}

// remediations prints the dry-run plan of the remediations for a failover
// to the site traffic would move to, when a config file names them; the
// decision core does not know them.
func (r whatIfRun) remediations(ctx context.Context, w, errw io.Writer, a failover.WhatIf) error {
	if a.To == "" {
		return nil
	}
	cfg := r.flags.config
	if cfg == "" {
		fmt.Fprintf(w, "remediations: %s (here: 'drwatch remediate plan --active %s --config FILE', or --config)\n", api.WhatIfRemediations, a.To)
		return nil
	}
	fmt.Fprintf(w, "remediations after the move (a dry-run plan with %s active; nothing is written):\n", a.To)
	p := &remediatePlanCmd{flags: *r.flags, active: string(a.To), newClient: kube.NewClient}
	if err := p.Run(ctx, w, errw, ""); err != nil {
		// The answer above stands; the plan is the part that failed.
		var u usageError
		if errors.As(err, &u) {
			return err
		}
		fmt.Fprintf(w, "remediations: could not be planned: %s\n", logText(err.Error()))
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// whatIf is GET /api/v1/what-if/{scenario} on any node.
func (c *client) whatIf(ctx context.Context, scenario string) (api.WhatIf, error) {
	var out api.WhatIf
	err := c.do(ctx, http.MethodGet, "/api/v1/what-if/"+url.PathEscape(scenario), nil, &out)
	return out, err
}
