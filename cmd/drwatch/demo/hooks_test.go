package demo

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/poll"
)

// takePrimaryDown waits until the backup is UP at quorum, then fails the
// primary, so the cluster decides an automatic failover.
func takePrimaryDown(t *testing.T, d *Demo) {
	t.Helper()
	poll.Until(t, 90*time.Second, func() bool {
		v := d.View()
		return d.Leader() != nil && v.Sites[failover.Backup].Verdict == failover.Up
	}, "the backup is UP at quorum")
	if err := d.Sites["primary"].SetUp(false); err != nil {
		t.Fatal(err)
	}
}

// A failing pre-failover hook holds back an automatic flip on a live
// cluster, and says so in the history; once the hook passes, the flip lands.
func TestPreFailoverHookHoldsBackAutomaticFlip(t *testing.T) {
	dir := t.TempDir()
	flag := filepath.Join(dir, "backup-db-promoted")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d := startDemo(t, ctx, Options{Dir: dir, Interval: 2 * time.Second,
		PreFailoverHook: []string{"/bin/sh", "-c", "test -e " + flag + " || { echo backup database not promoted; exit 1; }"}})
	takePrimaryDown(t, d)
	var gen uint64
	poll.Until(t, 90*time.Second, func() bool {
		for _, e := range d.View().History {
			if e.Kind == failover.KindAction && e.Outcome == failover.OutcomeFailed && strings.Contains(e.Detail, "backup database not promoted") {
				gen = e.Gen
				return true
			}
		}
		return false
	}, "the history says the hook held the automatic flip back")
	if got, _ := d.Resolve("lms.demo.test"); len(got) != 1 || got[0] != PrimaryIP {
		t.Fatalf("a held-back flip was written: lms -> %v", got)
	}
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 90*time.Second, func() bool { v := d.View(); return v.Desired.Gen == gen && v.Desired.Done }, "the flip lands once the hook passes")
	if got, _ := d.Resolve("lms.demo.test"); len(got) != 1 || got[0] != BackupIP {
		t.Errorf("after the hook passed: lms -> %v, want %s", got, BackupIP)
	}
}

// A pre-failover hook that hangs holds an automatic flip back only for its
// timeout (5s in the demo): with the default on_timeout the flip lands, and
// the history says the hook timed out and the flip went ahead.
func TestHungPreFailoverHookLetsAutomaticFlipProceed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d := startDemo(t, ctx, Options{Dir: t.TempDir(), Interval: 2 * time.Second,
		PreFailoverHook: []string{"/bin/sh", "-c", "exec sleep 300"}})
	takePrimaryDown(t, d)
	poll.Until(t, 90*time.Second, func() bool {
		v := d.View()
		return v.Desired.Active == failover.Backup && v.Desired.Done
	}, "the automatic flip lands past the hung hook")
	var written string
	for _, e := range d.View().History {
		if e.Kind == failover.KindAction && e.Outcome == failover.OutcomeWritten &&
			strings.Contains(e.Detail, "hook demo-check: timed out after 5s; on_timeout: proceed, so the flip goes ahead") {
			written = e.Detail
		}
	}
	if written == "" {
		t.Errorf("no action record says the hook timed out and the flip went ahead: %+v", d.View().History)
	}
	if got, _ := d.Resolve("lms.demo.test"); len(got) != 1 || got[0] != BackupIP {
		t.Errorf("after the hung hook: lms -> %v, want %s", got, BackupIP)
	}
}
