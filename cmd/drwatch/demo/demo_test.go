package demo

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/poll"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The scripted story end to end: three real watchers on loopback flip the
// embedded DNS server to the backup after the primary goes down.
func TestOutageScenario(t *testing.T) {
	var out syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d := startDemo(t, ctx, Options{Dir: t.TempDir(), Out: &out, LogLevel: slog.LevelDebug, Interval: 2 * time.Second})
	if got, err := d.Resolve("lms.demo.test"); err != nil || len(got) != 1 || got[0] != PrimaryIP {
		t.Fatalf("before: lms.demo.test -> %v %v, want %s", got, err, PrimaryIP)
	}
	// Before the outage every probe, critical or not, works: a config error
	// in a non-critical probe would otherwise hide behind the verdicts.
	poll.Until(t, 60*time.Second, func() bool {
		v := d.View()
		if len(v.Nodes) != 3 {
			return false
		}
		for _, nv := range v.Nodes {
			for _, p := range nv.Probes {
				if !p.Last.OK {
					return false
				}
			}
		}
		return true
	}, "every probe of every watcher succeeds")
	if err := d.Outage(ctx); err != nil {
		t.Fatalf("outage scenario: %v\nnarration:\n%s", err, out.String())
	}
	if got, _ := d.Resolve("studio.demo.test"); len(got) != 1 || got[0] != BackupIP {
		t.Errorf("studio.demo.test -> %v, want %s (records move together)", got, BackupIP)
	}
	for _, step := range []string{"healthy:", "OUTAGE", "quorum verdict: ", "decision gen", "verified at the authoritative server"} {
		if !strings.Contains(out.String(), step) {
			t.Errorf("narration lacks %q:\n%s", step, out.String())
		}
	}
	// Every replica holds the same decision.
	want := d.View().Desired
	for _, n := range d.Nodes {
		poll.Until(t, 10*time.Second, func() bool { return n.Machine().Desired().Gen == want.Gen }, "node %s applies gen %d", n.ID(), want.Gen)
		if got := n.Machine().Desired(); got.Active != want.Active {
			t.Errorf("node %s desired %s, want %s", n.ID(), got.Active, want.Active)
		}
	}
	// Only the LMS's Caddy died: the wiki, a group of its own on the same
	// sites, keeps its records and made no decision on any replica.
	if got, err := d.Resolve("wiki.demo.test"); err != nil || len(got) != 1 || got[0] != WikiPrimaryIP {
		t.Errorf("wiki.demo.test -> %v %v, want its primary %s (another platform's outage)", got, err, WikiPrimaryIP)
	}
	for _, n := range d.Nodes {
		if v, ok := n.Machine().GroupView(WikiGroup); !ok || v.Active != failover.Primary || v.Desired.Active == failover.Backup || hasDecision(v, WikiGroup) {
			t.Errorf("node %s: group %s active %s, desired %+v, history %+v; want it untouched on the primary", n.ID(), WikiGroup, v.Active, v.Desired, v.History)
		}
	}
	if !strings.Contains(out.String(), "unchanged: the wiki (group wiki) stays on the primary") {
		t.Errorf("narration does not say the wiki stayed:\n%s", out.String())
	}
	// The status page starts with the overview of both platforms, and
	// says which one is on the backup.
	poll.Until(t, 30*time.Second, func() bool {
		// The LMS's automatic flip also blocks it: "· 1 blocked" may follow.
		return strings.Contains(getPage(t, d, "/"), `id="groups-summary">2 groups · 1 on the backup`)
	}, "the status page's overview counts 2 groups, 1 on the backup")
	page := getPage(t, d, "/")
	for _, want := range []string{`id="group-default"`, `id="group-wiki"`, "Group default: active site"} {
		if !strings.Contains(page, want) {
			t.Errorf("status page lacks %q", want)
		}
	}
	if wiki := getPage(t, d, "/groups/wiki"); !strings.Contains(wiki, "Group wiki: active site") {
		t.Errorf("the wiki's page lacks its detail:\n%s", wiki)
	}
}

// getPage fetches path from the first watcher's API, trusting the demo CA.
func getPage(t *testing.T, d *Demo, path string) string {
	t.Helper()
	pem, err := os.ReadFile(d.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	defer c.CloseIdleConnections()
	resp, err := c.Get(d.APIURLs[0] + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v", path, resp.Status, err)
	}
	return string(b)
}

// The region story: the primary region's Kubernetes API, a critical probe
// both platforms name, dies while both Caddies still answer; each platform
// fails over with a decision of its own, and the authoritative server
// answers the backup for every record of both.
func TestRegionScenarioMovesBothPlatforms(t *testing.T) {
	var out syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d := startDemo(t, ctx, Options{Dir: t.TempDir(), Out: &out, LogLevel: slog.LevelDebug, Interval: 2 * time.Second})
	if err := d.Run(ctx, "region"); err != nil {
		t.Fatalf("region scenario: %v\nnarration:\n%s", err, out.String())
	}
	for name, want := range map[string]string{"lms.demo.test": BackupIP, "studio.demo.test": BackupIP, "wiki.demo.test": WikiBackupIP} {
		if got, err := d.Resolve(name); err != nil || len(got) != 1 || got[0] != want {
			t.Errorf("%s -> %v %v, want the backup %s", name, got, err, want)
		}
	}
	// Each group decided for itself (an automatic failover entry in its
	// own name), and every replica applies both decisions as verified.
	for _, group := range []string{LMSGroup, WikiGroup} {
		for _, n := range d.Nodes {
			poll.Until(t, 10*time.Second, func() bool {
				v, ok := n.Machine().GroupView(group)
				return ok && v.Desired.Active == failover.Backup && v.Desired.Done && hasDecision(v, group)
			}, "node %s applies group %s's verified failover, with its own history entry", n.ID(), group)
		}
	}
	for _, step := range []string{"REGION OUTAGE", "decision gen", "(LMS, group default)", "(wiki, group wiki)", "done: the LMS is on the backup", "done: the wiki is on the backup"} {
		if !strings.Contains(out.String(), step) {
			t.Errorf("narration lacks %q:\n%s", step, out.String())
		}
	}
}

// An unknown scenario is refused by name, before anything waits.
func TestUnknownScenarioIsRefused(t *testing.T) {
	if err := (&Demo{}).Run(context.Background(), "meteor"); !errors.Is(err, ErrUnknownScenario) {
		t.Errorf("Run(meteor): got %v, want ErrUnknownScenario", err)
	}
}

// hasDecision reports whether v's history holds an automatic failover of
// group. A named group's view also lists the default group's entries
// (Group ""), so the entry's group is what tells them apart.
func hasDecision(v failover.View, group string) bool {
	if group == failover.DefaultGroup {
		group = ""
	}
	for _, e := range v.History {
		if e.Kind == failover.KindAutoFailover && e.Group == group {
			return true
		}
	}
	return false
}

// startDemo starts a demo for one test: closed at the end, and the
// watchers' log tail printed if the test failed.
func startDemo(t *testing.T, ctx context.Context, o Options) *Demo {
	t.Helper()
	d, err := Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("watchers' log (tail):\n%s", d.LogTail(60))
		}
		d.Close()
	})
	return d
}
