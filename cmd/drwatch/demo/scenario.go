package demo

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/api"
	"github.com/drwatch/drwatch/failover"
)

// waitFor polls cond until it holds or ctx ends.
func (d *Demo) waitFor(ctx context.Context, what string, cond func(failover.View) bool) (failover.View, error) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		v := d.View()
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

// Outage runs the story without a human: healthy → primary outage → quorum
// verdict → DNS flip → verified at the authoritative server. It returns nil
// only when the authoritative server answers the backup address.
//
// At the default interval it takes seconds and is cut off at 55 s; the
// budget grows with a slower interval.
func (d *Demo) Outage(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 55*d.interval)
	defer cancel()
	d.say("three watchers, two simulated sites and an authoritative DNS server are up (dir %s)", d.Dir)
	if _, err := d.waitFor(ctx, "a leader is elected", func(failover.View) bool { return d.Leader() != nil }); err != nil {
		return err
	}
	d.say("raft leader elected: watcher %s", d.Leader().ID())
	v, err := d.waitFor(ctx, "every watcher sees both sites UP", func(v failover.View) bool {
		return v.Policy != nil && len(v.Sites[failover.Primary].Up) == len(d.Nodes) && len(v.Sites[failover.Backup].Up) == len(d.Nodes)
	})
	if err != nil {
		return err
	}
	d.say("healthy: %d of %d watchers see primary UP and backup UP; DNS lms.demo.test -> %s", len(v.Sites[failover.Primary].Up), len(d.Nodes), d.answer("lms.demo.test"))
	genBefore := v.Desired.Gen

	if err := d.Sites["primary"].SetUp(false); err != nil {
		return err
	}
	d.say("OUTAGE: the primary site stops answering (heartbeat, Kubernetes API and Octavia: connection refused)")
	if v, err = d.waitFor(ctx, "a vote is pending", func(v failover.View) bool {
		return v.Pending != nil || v.Sites[failover.Primary].Verdict == failover.Down
	}); err != nil {
		return err
	}
	if v.Pending != nil {
		d.say("pending: %s", api.PendingText(v.Pending, v.Policy))
	}
	if v, err = d.waitFor(ctx, "the quorum votes primary DOWN", func(v failover.View) bool { return v.Sites[failover.Primary].Verdict == failover.Down }); err != nil {
		return err
	}
	t := v.Sites[failover.Primary]
	d.say("quorum verdict: %d of %d watchers see primary DOWN (%s), quorum %d", len(t.Down), len(d.Nodes), strings.Join(t.Down, ","), t.Quorum)
	if v, err = d.waitFor(ctx, "the leader decides to fail over", func(v failover.View) bool {
		return v.Desired.Gen > genBefore && v.Desired.Active == failover.Backup
	}); err != nil {
		return err
	}
	d.say("decision gen %d: fail over to backup (%s)", v.Desired.Gen, v.LastDecision)
	gen := v.Desired.Gen
	if v, err = d.waitFor(ctx, "the flip is verified", func(v failover.View) bool { return v.Desired.Gen == gen && v.Desired.Done }); err != nil {
		return err
	}
	d.say("DNS written with a fenced compare-and-swap and verified at the authoritative server")
	got := d.answer("lms.demo.test")
	if got != BackupIP {
		return fmt.Errorf("the authoritative server answers lms.demo.test -> %s, want the backup %s", got, BackupIP)
	}
	d.say("done: lms.demo.test -> %s (backup); history holds the evidence: drwatch explain %d", got, gen)
	return nil
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
// changes until ctx ends.
func (d *Demo) Interactive(ctx context.Context) error {
	if _, err := d.waitFor(ctx, "a leader is elected", func(failover.View) bool { return d.Leader() != nil }); err != nil {
		return err
	}
	cli := fmt.Sprintf("drwatch --endpoint %s --ca-file %s", d.APIURLs[0], d.CAFile)
	cli = strings.Replace(cli, "drwatch ", "drwatch status ", 1)
	fmt.Fprintf(d.out, `
drwatch demo is running. Three watchers, two simulated sites, one authoritative DNS server.

  status page     %s/   (and %s/, %s/; the certificate is from the demo CA %s)
  status (CLI)    %s
  cause an outage curl -X POST %s/sites/primary/down      (and .../up to bring it back)
  fail over       drwatch failover --to backup --reason drill --endpoint %s --ca-file %s --token-file %s
  ask DNS         dig +tcp @%s -p %s lms.demo.test A
  logs            %s

Ctrl-C stops everything.
`, d.APIURLs[0], d.APIURLs[1], d.APIURLs[2], d.CAFile, cli, d.ControlURL, d.APIURLs[1], d.CAFile, d.TokenFile,
		host(d.DNS.Addr()), port(d.DNS.Addr()), d.path("demo.log"))
	last := ""
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		line := statusLine(d.View(), d.answer("lms.demo.test"))
		if line != last {
			d.say("%s", line)
			last = line
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// statusLine is the interactive demo's one-line status.
func statusLine(v failover.View, answer string) string {
	return fmt.Sprintf("active %s, gen %d verified=%v; primary %s, backup %s; lms.demo.test -> %s",
		v.Active, v.Desired.Gen, v.Desired.Done, v.SiteVerdict(failover.Primary), v.SiteVerdict(failover.Backup), answer)
}

func host(addr string) string { h, _, _ := strings.Cut(addr, ":"); return h }
func port(addr string) string { _, p, _ := strings.Cut(addr, ":"); return p }
