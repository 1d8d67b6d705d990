package demo

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/api"
	"github.com/drwatch/drwatch/cmd/drwatch/api/apitest"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/poll"
)

// The status page as a person sees it, in real headless Chromium, on a live
// three-watcher cluster: the banner, the vantage matrix and the tally; then
// an outage, the pending countdown, the flip and the new history entry.
func TestStatusPageThroughAnOutage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	d := startDemo(t, ctx, Options{Dir: t.TempDir(), Interval: 2 * time.Second, Fall: 6})
	poll.Until(t, 90*time.Second, func() bool {
		v := d.View()
		return d.Leader() != nil && len(v.Sites[failover.Primary].Up) == 3 && len(v.Sites[failover.Backup].Up) == 3
	}, "all three watchers see both sites UP")

	url := d.APIURLs[0] + "/"
	art := apitest.ArtifactDir(t)
	browse := func(shot string) string {
		o := apitest.BrowseOptions{IgnoreCertErrors: true, Settle: 500 * time.Millisecond, Width: 1280, Height: 2200}
		if shot != "" {
			o.Screenshot = filepath.Join(art, shot)
		}
		return apitest.Browse(t, url, o)
	}

	dom := browse("healthy.png")
	v := d.View()
	for _, want := range []string{
		api.TallyText(failover.Primary, v.Sites[failover.Primary], 3),
		api.TallyText(failover.Backup, v.Sites[failover.Backup], 3),
		"lms", "studio", "kube-api", "ingress-lb", // the matrix's probes
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("healthy page lacks %q", want)
		}
	}
	if !strings.Contains(dom, "primary") || strings.Count(dom, "watcher") < 1 {
		t.Errorf("healthy page lacks the banner or the watchers")
	}

	if err := d.Sites["primary"].SetUp(false); err != nil {
		t.Fatal(err)
	}
	sawCountdown := false
	poll.Until(t, 2*time.Minute, func() bool {
		dom = browse("")
		if strings.Contains(dom, "automatic failover to backup in") {
			sawCountdown = true
			browse("pending.png")
		}
		return sawCountdown || d.View().Active == failover.Backup
	}, "the page shows the pending countdown")
	if !sawCountdown {
		t.Fatalf("the flip happened before the page ever showed the countdown (fall 6 × 2 s should leave it on screen)")
	}
	poll.Until(t, 2*time.Minute, func() bool { v := d.View(); return v.Active == failover.Backup && v.Desired.Done }, "the flip is verified")
	poll.Until(t, time.Minute, func() bool {
		dom = browse("")
		return strings.Contains(dom, "Automatic failover") && strings.Contains(dom, api.TallyText(failover.Primary, d.View().Sites[failover.Primary], 3))
	}, "the page shows the flip and the history entry")
	browse("after.png")
	t.Logf("screenshots in %s", art)
}
