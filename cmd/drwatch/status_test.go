package main

import (
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/api"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/monitor/clusterhealth"
)

// TestStatusBeforeFirstReports: before any watcher has reported, the site
// rows say so instead of showing empty or NO_QUORUM verdicts.
func TestStatusBeforeFirstReports(t *testing.T) {
	for name, v := range map[string]failover.View{
		"no policy yet":  {},
		"no reports yet": {Nodes: []failover.NodeView{{Node: "a"}, {Node: "b"}}, Sites: map[failover.Site]failover.Tally{failover.Primary: {Verdict: failover.NoQuorum}, failover.Backup: {Verdict: failover.NoQuorum}}},
	} {
		var b strings.Builder
		printStatus(&b, api.Status{State: v})
		for _, site := range []string{"primary", "backup"} {
			if !strings.Contains(siteRow(b.String(), site), " waiting for the first reports ") {
				t.Errorf("%s: got\n%s\nwant the %s row to say it is waiting for the first reports", name, b.String(), site)
			}
		}
	}
	var b strings.Builder
	printStatus(&b, api.Status{State: failover.View{Nodes: []failover.NodeView{{Node: "a", Reported: true}},
		Sites: map[failover.Site]failover.Tally{failover.Primary: {Verdict: failover.Up}, failover.Backup: {Verdict: failover.Down}}}})
	if strings.Contains(b.String(), "waiting") || !strings.HasPrefix(strings.Join(strings.Fields(siteRow(b.String(), "primary")), " "), "primary UP ") {
		t.Errorf("after a report: got\n%s\nwant the verdicts", b.String())
	}
}

// siteRow is the line of the site table that starts with site.
func siteRow(out, site string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, site+" ") {
			return l
		}
	}
	return ""
}

// TestStatusShowsClusterHealth: the status command says what the status
// page's cluster health section says, one line per site, with what needs
// attention and what could not be read.
func TestStatusShowsClusterHealth(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	st := api.Status{ServedAt: now, ClusterHealth: []clusterhealth.Site{
		{Site: "primary", Configured: true, ReadBy: "a", At: now.Add(-5 * time.Second), Version: "v1.31.14",
			Nodes: &clusterhealth.Nodes{Total: 6, Unknown: 2}, EventsError: "forbidden", RoutesUnknown: "no router configured"},
		{Site: "backup"},
	}}
	var b strings.Builder
	printStatus(&b, st)
	for _, want := range []string{
		"cluster:     primary attention (read 5s ago by a): Unknown 2; events unreadable: forbidden",
		"             backup not configured",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("got\n%s\nwant a line %q", b.String(), want)
		}
	}
}
