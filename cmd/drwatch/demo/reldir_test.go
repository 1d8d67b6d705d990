package demo

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/drwatch/drwatch/test/poll"
)

// A demo in a relative directory still starts: its nodes' configs name
// their files by absolute path, as a file field requires.
func TestDemoInARelativeDirectoryStarts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t.Chdir(t.TempDir())
	d := startDemo(t, ctx, Options{Dir: "demo", Out: io.Discard, LogLevel: slog.LevelInfo, Interval: 2 * time.Second})
	if !filepath.IsAbs(d.Dir) {
		t.Errorf("got Dir %q, want it made absolute", d.Dir)
	}
	poll.Until(t, 60*time.Second, func() bool { return d.View().Policy != nil }, "a leader's view")
}
