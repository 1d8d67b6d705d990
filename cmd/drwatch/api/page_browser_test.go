package api

import (
	"bytes"
	"encoding/json"
	"html"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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

// layoutProbe is appended to the page under test, with the response's own
// CSP nonce, so it runs under the page's real policy. Once the page has
// refreshed itself it measures: the document's scroll width against the
// viewport, and every rendered element that sticks out of the viewport
// (elements inside a box that scrolls or clips on its own, such as the
// vantage matrix's, are that box's business). Then, to prove the check
// can fail, it plants an element wider than the viewport and measures
// again. The results land in the <html> element's data-layout attribute.
const layoutProbe = `
setTimeout(function(){
  var vw=window.innerWidth;
  function clipped(el){
    for(var p=el.parentElement;p&&p!==document.body;p=p.parentElement){
      if(getComputedStyle(p).overflowX!=="visible"){return true;}
    }
    return false;
  }
  function measure(){
    var bad=[];
    document.querySelectorAll("body *").forEach(function(el){
      var r=el.getBoundingClientRect();
      if(r.width===0&&r.height===0){return;}
      if((r.left< -0.5||r.right>vw+0.5)&&!clipped(el)){
        bad.push(el.tagName.toLowerCase()+(el.id?"#"+el.id:"")+" "+Math.round(r.left)+".."+Math.round(r.right));
      }
    });
    return {scrollWidth:document.documentElement.scrollWidth,bad:bad.slice(0,10),nbad:bad.length};
  }
  var page=measure();
  var wide=document.createElement("div");
  wide.id="planted";
  wide.textContent="x";
  wide.style.width=(vw+200)+"px";
  document.body.appendChild(wide);
  var planted=measure();
  wide.remove();
  document.documentElement.setAttribute("data-layout",JSON.stringify({innerWidth:vw,page:page,planted:planted,
    cells:document.querySelectorAll("#groups li").length}));
},3000);
`

// layoutResult is what layoutProbe reports.
type layoutResult struct {
	InnerWidth int `json:"innerWidth"`
	Page       struct {
		ScrollWidth int      `json:"scrollWidth"`
		Bad         []string `json:"bad"`
		NBad        int      `json:"nbad"`
	} `json:"page"`
	Planted struct {
		ScrollWidth int      `json:"scrollWidth"`
		Bad         []string `json:"bad"`
	} `json:"planted"`
	Cells int `json:"cells"`
}

// withLayoutProbe serves next's pages with layoutProbe appended, under the
// nonce of each page's own Content-Security-Policy.
func withLayoutProbe(t *testing.T, next http.Handler) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		body := rec.Body.String()
		if csp := rec.Header().Get("Content-Security-Policy"); r.URL.Query().Get("partial") == "" && rec.Code == http.StatusOK {
			nonce := regexp.MustCompile(`script-src 'nonce-([0-9a-f]+)'`).FindStringSubmatch(csp)
			if nonce == nil {
				t.Errorf("page %s: no script nonce in its CSP %q", r.URL, csp)
			} else {
				body = strings.Replace(body, "</body>", `<script nonce="`+nonce[1]+`">`+layoutProbe+"</script>\n</body>", 1)
			}
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestPageWithFiftyGroupsFitsInChromium loads the overview of 50 failover
// groups (one named with the longest name a group may have) and one
// group's page in real Chromium, at a laptop's and a phone's width: every
// cell must be there after the page refreshed itself, the document must
// not scroll sideways and no element may stick out of the viewport. The
// check must catch an element planted wider than the viewport, or it
// proves nothing. Screenshots land in the artifacts dir.
func TestPageWithFiftyGroupsFitsInChromium(t *testing.T) {
	if _, err := apitest.Chromium(); err != nil {
		t.Fatal(err)
	}
	st, m := fxGroups(t, 50)
	b := &pageBackend{st: st, hist: st.State.History, m: m}
	s := NewServer(b, Options{Now: func() time.Time { return fxNow }})
	RegisterStatusPage(s, b)
	srv := withLayoutProbe(t, s)
	dir := apitest.ArtifactDir(t)
	// A phone's viewport is 390 CSS px: a 500 px window (the narrowest
	// headless Chromium makes) zoomed by 500/390.
	const phoneZoom = 500.0 / 390
	for _, tt := range []struct {
		name          string
		path          string
		dark          bool
		width, height int
		zoom          float64
		viewport      int
	}{
		{"laptop-overview", "/", false, 1366, 1800, 0, 1366},
		{"laptop-group", "/groups/" + fxLongGroup, true, 1366, 1800, 0, 1366},
		{"phone-overview", "/", false, 500, 5400, phoneZoom, 390},
		{"phone-group", "/groups/platform-06", true, 500, 5400, phoneZoom, 390},
	} {
		t.Run(tt.name, func(t *testing.T) {
			shot := filepath.Join(dir, tt.name+".png")
			dom := apitest.Browse(t, srv.URL+tt.path, apitest.BrowseOptions{Screenshot: shot, Dark: tt.dark, Width: tt.width, Height: tt.height,
				Zoom: tt.zoom, Settle: 4 * time.Second})
			if !strings.Contains(dom, `<span id="live" class="">live · refreshed every 2 s</span>`) {
				t.Error("the refresh script did not run or its refresh failed")
			}
			raw := regexp.MustCompile(`data-layout="([^"]*)"`).FindStringSubmatch(dom)
			if raw == nil {
				t.Fatalf("the layout probe did not report: %.300s", dom)
			}
			var got layoutResult
			if err := json.Unmarshal([]byte(html.UnescapeString(raw[1])), &got); err != nil {
				t.Fatalf("layout report %q: %v", raw[1], err)
			}
			t.Logf("layout: %+v", got)
			if got.InnerWidth != tt.viewport {
				t.Errorf("viewport %d CSS px wide, want %d", got.InnerWidth, tt.viewport)
			}
			if got.Cells != 50 {
				t.Errorf("overview has %d cells after the refresh, want 50", got.Cells)
			}
			if got.Page.ScrollWidth > got.InnerWidth || got.Page.NBad > 0 {
				t.Errorf("the page overflows a %d px viewport: scroll width %d, %d elements stick out: %v",
					got.InnerWidth, got.Page.ScrollWidth, got.Page.NBad, got.Page.Bad)
			}
			if got.Planted.ScrollWidth <= got.InnerWidth || !slices.ContainsFunc(got.Planted.Bad, func(s string) bool { return strings.HasPrefix(s, "div#planted ") }) {
				t.Errorf("the check missed an element planted %d px wider than the viewport: %+v", 200, got.Planted)
			}
			f, err := os.Open(shot)
			if err != nil {
				t.Fatalf("screenshot: %v", err)
			}
			defer f.Close()
			img, err := png.Decode(f)
			if err != nil {
				t.Fatalf("screenshot is not a PNG: %v", err)
			}
			if img.Bounds().Dx() != tt.width {
				t.Errorf("screenshot width %d, want %d", img.Bounds().Dx(), tt.width)
			}
			t.Logf("screenshot %s", shot)
		})
	}
}
