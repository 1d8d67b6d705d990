package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/api"
	"github.com/drwatch/drwatch/failover"
)

// platforms is a decision core guarding three platforms, the default
// group (www), apps and lms, each judged by its own probe, with every site
// UP at quorum but apps' backup, which every watcher sees DOWN. The CLI
// reaches it through the real API server; commits records each command.
type platforms struct {
	api.WatcherBackend // unused parts; every method the CLI reaches is below
	m                  *failover.Machine
	index              uint64
	commits            []failover.Command
}

func newPlatforms(t *testing.T) (*platforms, string) {
	t.Helper()
	sites := func(probe string) map[failover.Site]failover.SitePolicy {
		ref := []failover.ProbeRef{{Name: probe, Critical: true}}
		return map[failover.Site]failover.SitePolicy{failover.Primary: {Probes: ref}, failover.Backup: {Probes: slices.Clone(ref)}}
	}
	rec := func(name, p, b string) []failover.Record {
		return []failover.Record{{Name: name, Type: "A", TTL: 60, Primary: []string{p}, Backup: []string{b}}}
	}
	p := &platforms{m: failover.New()}
	p.commit(t, failover.SetPolicy{Actor: "ops", Policy: failover.Policy{
		Nodes: []string{"a", "b", "c"}, Quorum: 2, Fall: 1, Rise: 1, Interval: time.Second, AutoFailover: true,
		Sites: sites("web"), Zone: "example.org.", Records: rec("www", "203.0.113.10", "198.51.100.10"),
		Groups: []failover.Group{
			{Name: "apps", AutoFailover: true, Sites: sites("web-apps"), Zone: "example.org.", Records: rec("apps", "203.0.113.2", "198.51.100.2")},
			{Name: "lms", AutoFailover: true, Sites: sites("web-lms"), Zone: "example.org.", Records: rec("lms", "203.0.113.1", "198.51.100.1")},
		},
	}})
	for _, node := range []string{"a", "b", "c"} {
		var rs []failover.ProbeResult
		for _, probe := range []string{"web", "web-apps", "web-lms"} {
			rs = append(rs, failover.ProbeResult{Site: failover.Primary, Probe: probe, OK: true},
				failover.ProbeResult{Site: failover.Backup, Probe: probe, OK: probe != "web-apps"})
		}
		p.commit(t, failover.Observe{Node: node, Results: rs})
	}
	p.commits = nil
	tokens, err := api.ParseTokens([]byte("alice:0123456789abcdef0123\n"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.NewServer(p, api.Options{Tokens: tokens}))
	t.Cleanup(srv.Close)
	t.Setenv("DRWATCH_TOKEN", "0123456789abcdef0123")
	return p, srv.URL
}

func (p *platforms) commit(t *testing.T, pl failover.Payload) {
	t.Helper()
	if _, _, err := p.Submit(t.Context(), failover.Command{Payload: pl}); err != nil {
		t.Fatalf("%T: %v", pl, err)
	}
}

func (p *platforms) at() int64 {
	return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(p.index) * 10 * time.Millisecond).UnixNano()
}

func (p *platforms) Metrics() http.Handler { return http.NotFoundHandler() }
func (p *platforms) Status(context.Context) api.Status {
	return api.Status{ServedBy: "a", Leader: "a", ServedAt: time.Unix(0, p.at()), State: p.m.View()}
}
func (p *platforms) History() []failover.Entry          { return p.m.History() }
func (p *platforms) Explain(gen uint64) (string, error) { return p.m.Explain(gen) }
func (p *platforms) Groups() []string                   { return p.m.Groups() }
func (p *platforms) Overview() []failover.GroupSummary  { return p.m.Overview() }
func (p *platforms) GroupExplain(g string, gen uint64) (string, error) {
	return api.GroupExplainOn(p.m, g, gen)
}
func (p *platforms) GroupStatus(ctx context.Context, g string) (api.Status, error) {
	return api.GroupStatusOn(p.m, p.Status(ctx), g)
}
func (p *platforms) Submit(_ context.Context, c failover.Command) (failover.Result, uint64, error) {
	p.index++
	c.At = p.at()
	p.commits = append(p.commits, c)
	r, err := p.m.Step(p.index, c)
	return r, p.index, err
}
func (p *platforms) DryRun(c failover.Command) (api.DryRun, error) {
	c.At = p.at()
	return api.DryRunOn(p.m, c, "a")
}

// Each write's --group reaches the command the core steps.
func TestGroupFlagReachesTheCommand(t *testing.T) {
	p, url := newPlatforms(t)
	const r = "lms caddy"
	for _, tc := range []struct {
		args []string
		want failover.Payload
	}{
		{[]string{"pause"}, failover.Pause{Group: "lms", Reason: r, Actor: "alice"}},
		{[]string{"resume"}, failover.Resume{Group: "lms", Reason: r, Actor: "alice"}},
		{[]string{"ack"}, failover.Ack{Group: "lms", Reason: r, Actor: "alice"}},
		{[]string{"failover", "--to", "backup"}, failover.Failover{Group: "lms", To: failover.Backup, Reason: r, Actor: "alice"}},
		{[]string{"switchover", "--to", "primary"}, failover.Failover{Group: "lms", To: failover.Primary, Planned: true, Reason: r, Actor: "alice"}},
		{[]string{"failback"}, failover.Failback{Group: "lms", Reason: r, Actor: "alice"}},
	} {
		args := append(tc.args, "--group", "lms", "--reason", r, "--yes", "--endpoint", url)
		if _, stderr, code := run(t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		got := p.commits[len(p.commits)-1].Payload
		if got != tc.want {
			t.Errorf("%v: the core stepped %#v, want %#v", args, got, tc.want)
		}
	}
	// The look-alike: without --group the command names no group.
	if _, stderr, code := run(t, "pause", "--reason", "db", "--yes", "--endpoint", url); code != 0 {
		t.Fatalf("pause: exit %d: %s", code, stderr)
	}
	if g := p.commits[len(p.commits)-1].Payload.(failover.Pause).Group; g != "" {
		t.Errorf("pause without --group: group %q, want none", g)
	}
	if _, stderr, code := run(t, "failover", "--group", "lms", "--all-groups", "--reason", "x", "--yes", "--endpoint", url); code != 2 ||
		!strings.Contains(stderr, "--group and --all-groups") {
		t.Errorf("--group with --all-groups: got exit %d %q, want the usage error (2)", code, stderr)
	}
}

// A move of every group asks once, listing each group's record changes
// and the group its rules refuse; the result names that group and its
// rule and exits 3, while the others moved.
func TestAllGroupsFailoverConfirmsOnceAndNamesTheRefusedGroup(t *testing.T) {
	p, url := newPlatforms(t)
	var prompt, out strings.Builder
	w := &writeCmd{name: "failover", path: "/api/v1/failover", flags: clientFlags{endpoints: []string{url}, timeout: 20 * time.Second},
		req:     api.WriteRequest{To: "backup", AllGroups: true, Reason: "region down"},
		confirm: confirmer{in: strings.NewReader("failover every group to backup\n"), out: &prompt, isTerm: func() bool { return true }}}
	err := w.Run(t.Context(), &out)
	for _, want := range []string{
		"group default: record changes", "www.example.org. A ttl=60s: 203.0.113.10 -> 198.51.100.10",
		"group lms: record changes", "lms.example.org. A ttl=60s: 203.0.113.1 -> 198.51.100.1",
		"group apps: stays, REFUSED by target_unhealthy: backup is not UP at quorum",
		`Type "failover every group to backup"`,
	} {
		if !strings.Contains(prompt.String(), want) {
			t.Errorf("confirmation: got\n%s\nwant it to show %q", prompt.String(), want)
		}
	}
	if len(p.commits) != 1 || !p.commits[0].Payload.(failover.Failover).AllGroups {
		t.Fatalf("commits: got %+v, want one failover of every group", p.commits)
	}
	if exitCode(err) != exitRefused || !strings.Contains(err.Error(), "group apps: refused by rule target_unhealthy: backup is not UP at quorum") {
		t.Errorf("partial result: got exit %d, %v; want exit 3 naming apps and its rule", exitCode(err), err)
	}
	for _, want := range []string{"2 of 3 groups moved", "group default: decision gen", "group lms: decision gen", "group apps: REFUSED by target_unhealthy"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report: got\n%s\nwant %q", out.String(), want)
		}
	}
	if d, _ := p.m.GroupDesired("lms"); d.Active != failover.Backup {
		t.Errorf("lms on %s after the move, want backup", d.Active)
	}

	// The look-alike: when every group moves, the exit is 0.
	if _, stderr, code := run(t, "failover", "--all-groups", "--to", "primary", "--reason", "back", "--yes", "--endpoint", url); code != 0 {
		t.Errorf("every group moved: got exit %d %s, want 0", code, stderr)
	}

	// When no group can move, nothing is asked and nothing is written.
	for _, node := range []string{"a", "b", "c"} {
		var rs []failover.ProbeResult
		for _, probe := range []string{"web", "web-apps", "web-lms"} {
			rs = append(rs, failover.ProbeResult{Site: failover.Primary, Probe: probe, OK: true}, failover.ProbeResult{Site: failover.Backup, Probe: probe})
		}
		p.commit(t, failover.Observe{Node: node, Results: rs})
	}
	n := len(p.commits)
	prompt.Reset()
	w.confirm.in = strings.NewReader("")
	err = w.Run(t.Context(), &out)
	if exitCode(err) != exitRefused || !strings.Contains(err.Error(), "refused by rule target_unhealthy") || prompt.Len() != 0 || len(p.commits) != n {
		t.Errorf("no group can move: got exit %d %v, prompt %q, %d commits; want exit 3 by target_unhealthy, no prompt, none", exitCode(err), err, prompt.String(), len(p.commits)-n)
	}
}

// Status without --group is one line per group; with it, that group's
// detail; a cluster without groups prints as before (status_test.go).
func TestStatusPrintsOneLinePerGroup(t *testing.T) {
	p, url := newPlatforms(t)
	p.commit(t, failover.Pause{Group: "lms", Actor: "bob", Reason: "upgrade"})
	stdout, stderr, code := run(t, "status", "--endpoint", url)
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, stderr)
	}
	lines := map[string]string{}
	for _, l := range strings.Split(stdout, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			lines[f[0]] = strings.Join(f, " ")
		}
	}
	for group, want := range map[string]string{
		"default": "default primary primary UP 3/3, backup UP 3/3 auto",
		"apps":    "apps primary primary UP 3/3, backup DOWN 3/3 auto",
		"lms":     "lms primary primary UP 3/3, backup UP 3/3 paused",
	} {
		if !strings.HasPrefix(lines[group], want) {
			t.Errorf("status: got line %q, want it to start %q; all:\n%s", lines[group], want, stdout)
		}
	}
	if !strings.Contains(lines["leader:"], "leader: a") || strings.Contains(stdout, "WATCHER") {
		t.Errorf("status: got\n%s\nwant the header and no per-group detail", stdout)
	}

	stdout, stderr, code = run(t, "status", "--group", "apps", "--endpoint", url)
	if code != 0 || !strings.Contains(stdout, "group:       apps") || !strings.HasPrefix(strings.Join(strings.Fields(siteRow(stdout, "backup")), " "), "backup DOWN ") {
		t.Errorf("status --group apps: exit %d %s\n%s\nwant apps' detail with its backup DOWN", code, stderr, stdout)
	}
	if _, stderr, code := run(t, "status", "--group", "shop", "--endpoint", url); code == 0 || !strings.Contains(stderr, `no failover group "shop" (groups: default, apps, lms)`) {
		t.Errorf("status --group shop: got exit %d %q, want an error naming the groups there are", code, stderr)
	}
}

// history and explain read one group's entries and decisions.
func TestHistoryAndExplainReadOneGroup(t *testing.T) {
	p, url := newPlatforms(t)
	p.commit(t, failover.Failover{Group: "lms", To: failover.Backup, Actor: "alice", Reason: "lms caddy died"})
	p.commit(t, failover.Pause{Actor: "bob", Reason: "default maintenance"})
	stdout, _, code := run(t, "history", "--group", "lms", "--endpoint", url)
	if code != 0 || !strings.Contains(stdout, "lms caddy died") || strings.Contains(stdout, "default maintenance") {
		t.Errorf("history --group lms: exit %d\n%s\nwant lms' failover, and not the default group's pause", code, stdout)
	}
	stdout, _, code = run(t, "history", "--group", "default", "--endpoint", url)
	if code != 0 || !strings.Contains(stdout, "default maintenance") || strings.Contains(stdout, "lms caddy died") {
		t.Errorf("history --group default: exit %d\n%s\nwant the default group's pause and no lms entry", code, stdout)
	}
	stdout, _, code = run(t, "history", "--group", "apps", "--endpoint", url)
	if code != 0 || strings.Contains(stdout, "lms caddy died") {
		t.Errorf("history --group apps: exit %d\n%s\nwant no lms entry", code, stdout)
	}
	stdout, _, code = run(t, "explain", "--group", "lms", "--endpoint", url)
	if code != 0 || !strings.Contains(stdout, "lms caddy died") {
		t.Errorf("explain --group lms: exit %d\n%s\nwant lms' latest decision", code, stdout)
	}
	// The look-alikes: the default group and apps have made no decision.
	if _, stderr, code := run(t, "explain", "--endpoint", url); code == 0 || !strings.Contains(stderr, "no decision yet:") {
		t.Errorf("explain: exit %d %q, want no decision yet for the default group", code, stderr)
	}
	if _, stderr, code := run(t, "explain", "--group", "apps", "--endpoint", url); code == 0 || !strings.Contains(stderr, "no decision yet in group apps") {
		t.Errorf("explain --group apps: exit %d %q, want no decision yet in group apps", code, stderr)
	}
}
