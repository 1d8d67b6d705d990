package demo

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/poll"
)

// Three real watchers answer "what if the primary failed now" from their
// own replicas: traffic would move to the backup's records within the
// policy's detection window, with the node's probe timeout, and asking
// writes nothing (no command, no DNS change).
func TestWhatIfOnRealWatchers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d := startDemo(t, ctx, Options{Dir: t.TempDir(), Out: io.Discard, LogLevel: slog.LevelInfo, Interval: 2 * time.Second})
	// Each node answers from its own replica: wait until each has seen
	// every watcher report both sites UP.
	for _, n := range d.Nodes {
		poll.Until(t, 60*time.Second, func() bool {
			v := n.Machine().View()
			return len(v.Sites[failover.Primary].Up) == 3 && len(v.Sites[failover.Backup].Up) == 3
		}, "node %s sees both sites UP on every watcher", n.ID())
	}
	before := d.View().Desired
	for _, n := range d.Nodes {
		ans, err := n.WhatIf(ctx, failover.ScenarioPrimaryDown)
		if err != nil {
			t.Fatalf("node %s: %v", n.ID(), err)
		}
		a := ans.Answer
		if ans.ServedBy != n.ID() || a.Outcome != failover.WhatIfMoves || a.To != failover.Backup || a.Kind != failover.KindAutoFailover {
			t.Errorf("node %s: got %s by %s to %q (%s), want an automatic failover to the backup", n.ID(), a.Outcome, ans.ServedBy, a.To, a.Text())
		}
		if a.ProbeTimeout != 1400*time.Millisecond || a.FlipMax != 6*time.Second+1400*time.Millisecond {
			t.Errorf("node %s: got probe timeout %s, flip within %s; want 1.4s (70%% of the interval) and 7.4s", n.ID(), a.ProbeTimeout, a.FlipMax)
		}
		for _, r := range a.Records {
			if len(r.To) != 1 || r.To[0] != BackupIP {
				t.Errorf("node %s: record %s would be %v, want [%s]", n.ID(), r.Name, r.To, BackupIP)
			}
		}
	}
	if after := d.View().Desired; after.Gen != before.Gen || after.Active != before.Active {
		t.Errorf("asking changed the decision: gen %d %s, then gen %d %s", before.Gen, before.Active, after.Gen, after.Active)
	}
	for _, e := range d.Leader().History() {
		if e.Actor == "what-if" {
			t.Errorf("the history holds a what-if entry: %+v", e)
		}
	}
	if got, err := d.Resolve("lms.demo.test"); err != nil || len(got) != 1 || got[0] != PrimaryIP {
		t.Errorf("lms.demo.test -> %v %v, want %s still", got, err, PrimaryIP)
	}
}
