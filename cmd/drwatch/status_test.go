package main

import (
	"strings"
	"testing"

	"github.com/drwatch/drwatch/cmd/drwatch/api"
	"github.com/drwatch/drwatch/failover"
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
