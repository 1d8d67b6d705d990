package api

import (
	"bytes"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
		{"light-withheld", fxWithheld(), false, 1280, 1400},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u := srv.URL + "/"
			if tt.name != "light-desktop" && tt.name != "dark-desktop" {
				u = pageServer(t, tt.st, nil).URL + "/"
			}
			shot := filepath.Join(dir, tt.name+".png")
			dom := apitest.Browse(t, u, apitest.BrowseOptions{Screenshot: shot, Dark: tt.dark, Width: tt.width, Height: tt.height})
			if strings.Contains(dom, `class="lost"`) {
				t.Error("a page whose refreshes succeed is flagged as not updating")
			}
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

// TestPageSaysWhenItStopsUpdating serves the page once and then fails every
// refresh, as a node that died would: the page must not keep looking live.
func TestPageSaysWhenItStopsUpdating(t *testing.T) {
	if _, err := apitest.Chromium(); err != nil {
		t.Fatal(err)
	}
	b := &pageBackend{st: fxFailedOver()}
	s := NewServer(b, Options{Now: func() time.Time { return fxNow }})
	RegisterStatusPage(s, b)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("partial") != "" {
			http.Error(w, "node is gone", http.StatusServiceUnavailable)
			return
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	shot := filepath.Join(apitest.ArtifactDir(t), "not-updating.png")
	dom := apitest.Browse(t, srv.URL+"/", apitest.BrowseOptions{Screenshot: shot, Width: 1000, Height: 500})
	if !strings.Contains(dom, `<span id="live" class="lost">NOT UPDATING: this node has not answered for`) ||
		!strings.Contains(dom, "HTTP 503") {
		i := strings.Index(dom, `id="live"`)
		t.Errorf("after failed refreshes the live indicator does not say NOT UPDATING: %.240s", dom[max(0, i-10):])
	}
	if !strings.Contains(dom, `<main id="main" data-refresh-ms="2000" class="lost">`) {
		t.Error("the stale content is not greyed out (main.lost)")
	}
	if !strings.Contains(dom, "Traffic goes to the") {
		t.Error("the last good content was dropped: want it kept, flagged as not updating")
	}
	t.Logf("screenshot %s", shot)
}

// TestPageRefreshSwapsContent loads a healthy page whose refreshes then
// report no leader: after the refresh the DOM (and the tab title) must
// carry the alarm, which proves the script swaps the partial in.
func TestPageRefreshSwapsContent(t *testing.T) {
	if _, err := apitest.Chromium(); err != nil {
		t.Fatal(err)
	}
	full, partial := &pageBackend{st: fxFailedOver()}, &pageBackend{st: fxNoLeader()}
	sFull := NewServer(full, Options{Now: func() time.Time { return fxNow }})
	RegisterStatusPage(sFull, full)
	sPart := NewServer(partial, Options{Now: func() time.Time { return fxNow }})
	RegisterStatusPage(sPart, partial)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("partial") != "" {
			sPart.ServeHTTP(w, r)
			return
		}
		sFull.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	dom := apitest.Browse(t, srv.URL+"/", apitest.BrowseOptions{Width: 1000, Height: 600})
	for _, want := range []string{"<title>⚠ No leader · drwatch · active: backup</title>", `role="alert"`, "knows no Raft leader"} {
		if !strings.Contains(dom, want) {
			t.Errorf("after a refresh to a no-leader state, the DOM lacks %q", want)
		}
	}
}
