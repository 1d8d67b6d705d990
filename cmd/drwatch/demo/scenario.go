package demo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/api"
	"github.com/drwatch/drwatch/failover"
)

// waitFor polls cond on the default group's view until it holds or ctx ends.
func (d *Demo) waitFor(ctx context.Context, what string, cond func(failover.View) bool) (failover.View, error) {
	return waitView(ctx, what, d.View, cond)
}

// waitForGroup is waitFor on failover group name's view.
func (d *Demo) waitForGroup(ctx context.Context, name, what string, cond func(failover.View) bool) (failover.View, error) {
	return waitView(ctx, what, func() failover.View { return d.viewOf(name) }, cond)
}

// waitView polls cond on view until it holds or ctx ends.
func waitView(ctx context.Context, what string, view func() failover.View, cond func(failover.View) bool) (failover.View, error) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		v := view()
		if cond(v) {
			return v, nil
		}
		select {
		case <-ctx.Done():
			return v, fmt.Errorf("timed out waiting until %s", what)
		case <-t.C:
		}
	}
}

// platform is one of the demo's two platforms: its failover group and
// the records it flips.
type platform struct {
	group string // its failover group
	label string // as the narration names it
	names []string
	// The addresses its records hold on each site.
	primary, backup string
}

// platforms are the demo's, in the config's order.
var platforms = []platform{
	{group: LMSGroup, label: "LMS", names: []string{"lms.demo.test", "studio.demo.test"}, primary: PrimaryIP, backup: BackupIP},
	{group: WikiGroup, label: "wiki", names: []string{"wiki.demo.test"}, primary: WikiPrimaryIP, backup: WikiBackupIP},
}

// Scenarios are the scripted stories `drwatch demo --scenario` runs, by
// name, in the order the help lists them.
var Scenarios = []string{"outage", "region"}

// ErrUnknownScenario is returned by Run for a name not in Scenarios.
var ErrUnknownScenario = errors.New("unknown scenario")

// Run runs the scenario name (one of Scenarios).
func (d *Demo) Run(ctx context.Context, name string) error {
	switch name {
	case "outage":
		return d.Outage(ctx)
	case "region":
		return d.Region(ctx)
	}
	return fmt.Errorf("scenario %q: %w", name, ErrUnknownScenario)
}

// Outage runs the story without a human: two healthy platforms → the
// LMS's Caddy on the primary dies alone → quorum verdict → the LMS's DNS
// flip → verified at the authoritative server, while the wiki stays on the
// primary. It returns nil only when the authoritative server answers the
// backup addresses for the LMS's records and the primary one for the
// wiki's, and the wiki's group made no decision.
//
// At the default interval it takes seconds and is cut off at 55 s; the
// budget grows with a slower interval.
func (d *Demo) Outage(ctx context.Context) error {
	return d.story(ctx, platforms[:1], platforms[1:], "OUTAGE: the LMS's Caddy on the primary site stops answering (connection refused); the wiki and the region's Kubernetes API still answer",
		func() error { return d.Sites["primary"].SetEndpointUp(EndpointLMS, false) })
}

// Region runs the region-level story: the primary region's Kubernetes API,
// a critical probe both platforms name, stops answering while both Caddies
// still do, and both platforms fail over, each with its own decision and
// fence. It returns nil only when the authoritative server answers the
// backup addresses for every record of both.
//
// Its budget is Outage's.
func (d *Demo) Region(ctx context.Context) error {
	return d.story(ctx, platforms, nil, "REGION OUTAGE: the primary region's Kubernetes API stops answering (connection refused); both platforms' Caddies still answer",
		func() error { return d.Sites["primary"].SetEndpointUp(EndpointKube, false) })
}

// story is a scripted outage: once every platform is healthy it calls
// kill, then waits until each platform of moves is verified on the backup
// and checks that each of stays made no decision and still answers its
// primary addresses.
func (d *Demo) story(ctx context.Context, moves, stays []platform, outage string, kill func() error) error {
	ctx, cancel := context.WithTimeout(ctx, 55*d.interval)
	defer cancel()
	d.say("three watchers, two simulated sites, two platforms (failover groups %s) and an authoritative DNS server are up (dir %s)", groupList(platforms), d.Dir)
	if _, err := d.waitFor(ctx, "a leader is elected", func(failover.View) bool { return d.Leader() != nil }); err != nil {
		return err
	}
	d.say("raft leader elected: watcher %s", d.Leader().ID())
	gens := map[string]uint64{}
	for _, p := range platforms {
		v, err := d.waitForGroup(ctx, p.group, "every watcher sees both sites of the "+p.label+" UP", func(v failover.View) bool {
			return v.Policy != nil && len(v.Sites[failover.Primary].Up) == len(d.Nodes) && len(v.Sites[failover.Backup].Up) == len(d.Nodes)
		})
		if err != nil {
			return err
		}
		d.say("healthy: %s (group %s): %d of %d watchers see primary UP and backup UP; DNS %s", p.label, p.group, len(v.Sites[failover.Primary].Up), len(d.Nodes), d.answers(p))
		gens[p.group] = v.Desired.Gen
	}

	if err := kill(); err != nil {
		return err
	}
	d.say("%s", outage)
	for _, p := range moves {
		if err := d.failsOver(ctx, p, gens[p.group]); err != nil {
			return err
		}
	}
	for _, p := range moves {
		for _, name := range p.names {
			if got := d.answer(name); got != p.backup {
				return fmt.Errorf("the authoritative server answers %s -> %s, want the %s's backup %s", name, got, p.label, p.backup)
			}
		}
	}
	for _, p := range stays {
		v, _ := d.groupView(p.group)
		if v.Desired.Gen != gens[p.group] || v.Active != failover.Primary {
			return fmt.Errorf("the %s (group %s) moved too: gen %d (was %d), active %s; an outage of another platform must leave it alone", p.label, p.group, v.Desired.Gen, gens[p.group], v.Active)
		}
		for _, name := range p.names {
			if got := d.answer(name); got != p.primary {
				return fmt.Errorf("the authoritative server answers %s -> %s, want the %s's primary %s: only the failed platform's records may flip", name, got, p.label, p.primary)
			}
		}
		d.say("unchanged: the %s (group %s) stays on the primary, primary %s at quorum, no new decision; DNS %s", p.label, p.group, v.SiteVerdict(failover.Primary), d.answers(p))
	}
	for _, p := range moves {
		d.say("done: the %s is on the backup (%s); history holds the evidence: drwatch explain %s%d", p.label, d.answers(p), groupFlag(p.group), d.viewOf(p.group).Desired.Gen)
	}
	return nil
}

// failsOver narrates platform p's failover once its primary fails: the
// pending vote, the quorum verdict, the decision (after gen before) and
// its verification at the authoritative server.
func (d *Demo) failsOver(ctx context.Context, p platform, before uint64) error {
	v, err := d.waitForGroup(ctx, p.group, "a vote is pending for the "+p.label, func(v failover.View) bool {
		return v.Pending != nil || v.Sites[failover.Primary].Verdict == failover.Down
	})
	if err != nil {
		return err
	}
	if v.Pending != nil {
		d.say("pending (%s): %s", p.label, api.PendingText(v.Pending, v.Policy))
	}
	if v, err = d.waitForGroup(ctx, p.group, "the quorum votes the "+p.label+"'s primary DOWN", func(v failover.View) bool { return v.Sites[failover.Primary].Verdict == failover.Down }); err != nil {
		return err
	}
	t := v.Sites[failover.Primary]
	d.say("quorum verdict: %d of %d watchers see the %s's primary DOWN (%s), quorum %d", len(t.Down), len(d.Nodes), p.label, strings.Join(t.Down, ","), t.Quorum)
	if v, err = d.waitForGroup(ctx, p.group, "the leader decides to fail the "+p.label+" over", func(v failover.View) bool {
		return v.Desired.Gen > before && v.Desired.Active == failover.Backup
	}); err != nil {
		return err
	}
	d.say("decision gen %d (%s, group %s): fail over to backup (%s)", v.Desired.Gen, p.label, p.group, v.LastDecision)
	gen := v.Desired.Gen
	if _, err = d.waitForGroup(ctx, p.group, "the "+p.label+"'s flip is verified", func(v failover.View) bool { return v.Desired.Gen == gen && v.Desired.Done }); err != nil {
		return err
	}
	d.say("%s: DNS written with a fenced compare-and-swap and verified at the authoritative server", p.label)
	return nil
}

// groupView is the leader's (or, with no leader, the first node's) view of
// failover group name.
func (d *Demo) groupView(name string) (failover.View, bool) {
	if l := d.Leader(); l != nil {
		return l.Machine().GroupView(name)
	}
	if r := d.Running(); len(r) > 0 {
		return r[0].Machine().GroupView(name)
	}
	return failover.View{}, false
}

// viewOf is groupView without the flag: an unknown group's view is empty.
func (d *Demo) viewOf(name string) failover.View {
	v, _ := d.groupView(name)
	return v
}

// answers is what the authoritative server answers for p's records.
func (d *Demo) answers(p platform) string {
	var out []string
	for _, name := range p.names {
		out = append(out, name+" -> "+d.answer(name))
	}
	return strings.Join(out, ", ")
}

func groupList(ps []platform) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.group)
	}
	return strings.Join(out, " and ")
}

// groupFlag is the --group flag that names group, "" for the default one.
func groupFlag(group string) string {
	if group == failover.DefaultGroup {
		return ""
	}
	return "--group " + group + " "
}

func (d *Demo) answer(name string) string {
	ips, err := d.Resolve(name)
	if err != nil {
		return "error: " + err.Error()
	}
	slices.Sort(ips)
	return strings.Join(ips, ",")
}

// Interactive prints how to watch and drive the demo, then narrates state
// changes of each platform until ctx ends.
func (d *Demo) Interactive(ctx context.Context) error {
	if _, err := d.waitFor(ctx, "a leader is elected", func(failover.View) bool { return d.Leader() != nil }); err != nil {
		return err
	}
	cli := fmt.Sprintf("drwatch --endpoint %s --ca-file %s", d.APIURLs[0], d.CAFile)
	cli = strings.Replace(cli, "drwatch ", "drwatch status ", 1)
	fmt.Fprintf(d.out, `
drwatch demo is running. Three watchers, two simulated sites, one authoritative DNS server,
two platforms: the LMS (lms, studio; group default) and the wiki (group wiki).

  status page     %s/   (and %s/, %s/; the certificate is from the demo CA %s)
  status (CLI)    %s   (one line per group; --group wiki for one in full)
  one platform    curl -X POST %s/sites/primary/lms/down   (only the LMS moves; .../wiki/down only the wiki)
  the region      curl -X POST %s/sites/primary/kube/down  (the Kubernetes API both name: both move)
  whole site      curl -X POST %s/sites/primary/down       (and .../up to bring any of these back)
  fail over       drwatch failover --to backup --reason drill [--group wiki | --all-groups] --endpoint %s --ca-file %s --token-file %s
  ask DNS         dig +tcp @%s -p %s lms.demo.test A   (and wiki.demo.test)
  logs            %s

Ctrl-C stops everything.
`, d.APIURLs[0], d.APIURLs[1], d.APIURLs[2], d.CAFile, cli, d.ControlURL, d.ControlURL, d.ControlURL, d.APIURLs[1], d.CAFile, d.TokenFile,
		host(d.DNS.Addr()), port(d.DNS.Addr()), d.path("demo.log"))
	last := map[string]string{}
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		for _, p := range platforms {
			v, ok := d.groupView(p.group)
			if !ok {
				continue // no policy with its group replicated yet
			}
			line := p.label + ": " + statusLine(v, d.answers(p))
			if line != last[p.group] {
				d.say("%s", line)
				last[p.group] = line
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// statusLine is the interactive demo's one-line status of one platform;
// answers is what DNS answers for its records.
func statusLine(v failover.View, answers string) string {
	return fmt.Sprintf("active %s, gen %d verified=%v; primary %s, backup %s; %s",
		v.Active, v.Desired.Gen, v.Desired.Done, v.SiteVerdict(failover.Primary), v.SiteVerdict(failover.Backup), answers)
}

func host(addr string) string { h, _, _ := strings.Cut(addr, ":"); return h }
func port(addr string) string { _, p, _ := strings.Cut(addr, ":"); return p }
