package api

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drwatch/drwatch/cmd/drwatch/api/apitest"
)

// TestPageInChromium loads the page in real headless Chromium, light and
// dark, desktop and phone width: the script must have run (it rewrites the
// live indicator and swaps in the partial), the CSP must not have blocked
// it, and the screenshots land in the artifacts dir for a human to judge.
// Chromium missing is a failure naming the Debian package.
func TestPageInChromium(t *testing.T) {
	if _, err := apitest.Chromium(); err != nil {
		t.Fatal(err)
	}
	srv := pageServer(t, fxFailedOver(), nil)
	dir := apitest.ArtifactDir(t)
	for _, tt := range []struct {
		name          string
		st            Status
		dark          bool
		width, height int
	}{
		{"light-desktop", fxFailedOver(), false, 1280, 2000},
		{"dark-desktop", fxFailedOver(), true, 1280, 2000},
		{"light-phone", fxPending(), false, 390, 2400},
		{"dark-noleader-phone", fxNoLeader(), true, 390, 2400},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u := srv.URL + "/"
			if tt.name != "light-desktop" && tt.name != "dark-desktop" {
				u = pageServer(t, tt.st, nil).URL + "/"
			}
			shot := filepath.Join(dir, tt.name+".png")
			dom := apitest.Browse(t, u, apitest.BrowseOptions{Screenshot: shot, Dark: tt.dark, Width: tt.width, Height: tt.height})
			if !strings.Contains(dom, "Traffic goes to the") {
				t.Errorf("DOM lacks the banner: %.300s", dom)
			}
			// The script replaces the no-JS text with "live · …" once it
			// runs, and again after each successful partial refresh.
			if !strings.Contains(dom, `<span id="live" class="">live · refreshed every 2 s</span>`) {
				i := strings.Index(dom, `id="live"`)
				t.Errorf("the refresh script did not run or its refresh failed; live indicator: %.200s", dom[max(0, i-10):])
			}
			if tt.st.Leader == "" && !strings.Contains(dom, "No leader") {
				t.Error("no-leader page: DOM lacks the warning")
			}
			b, err := os.ReadFile(shot)
			if err != nil {
				t.Fatalf("screenshot: %v", err)
			}
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("screenshot is not a PNG: %v", err)
			}
			if got := img.Bounds().Dx(); got != tt.width {
				t.Errorf("screenshot width: got %d, want %d", got, tt.width)
			}
			t.Logf("screenshot %s", shot)
		})
	}
}
