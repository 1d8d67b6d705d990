package demo

import (
	"bytes"
	"context"
	"github.com/drwatch/drwatch/test/poll"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
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
