package api

import (
	"bytes"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
)

var updatePageGolden = flag.Bool("update-page-golden", false, "rewrite testdata/page/*.html from the current page")

// TestPageWithoutGroupsRendersAsBefore renders every fixture of a cluster
// without failover groups, with a fixed nonce, and compares it byte for byte
// with the page the release before groups served: a cluster that never
// enables groups must see exactly the page it saw.
func TestPageWithoutGroupsRendersAsBefore(t *testing.T) {
	for name, st := range map[string]Status{
		"failed-over": fxFailedOver(), "pending": fxPending(), "no-leader": fxNoLeader(), "withheld": fxWithheld(),
	} {
		for _, partial := range []bool{false, true} {
			file := name + ".html"
			target := "/"
			if partial {
				file, target = name+".partial.html", "/?partial=1"
			}
			t.Run(file, func(t *testing.T) {
				rec := httptest.NewRecorder()
				renderPage(rec, httptest.NewRequest("GET", target, nil), pageOf(st, fxNow, "00000000000000000000000000000000", "", nil))
				got := rec.Body.Bytes()
				path := filepath.Join("testdata", "page", file)
				if *updatePageGolden {
					if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("golden: %v (run with -update-page-golden on the release before groups)", err)
				}
				if !bytes.Equal(got, want) {
					i := 0
					for i < min(len(got), len(want)) && got[i] == want[i] {
						i++
					}
					t.Errorf("page differs from %s at byte %d: got %.200q, want %.200q", path, i, got[i:], want[i:])
				}
			})
		}
	}
}

// groupCell returns the overview cell of group name in body, as text, and
// its class ("g-ok", "g-warn", "g-down"); "" when there is none.
func groupCellOf(body []byte, name string) (txt, class, href string) {
	m := regexp.MustCompile(`<li class="(g-[a-z]+)" id="group-` + regexp.QuoteMeta(name) + `"><a href="([^"]*)"[^>]*>(.*?)</a></li>`).FindSubmatch(body)
	if m == nil {
		return "", "", ""
	}
	return text(m[3]), string(m[1]), string(m[2])
}

// TestPageOverviewShowsEveryGroupAtAGlance: with groups, "/" starts with
// one cell per group, in the policy's order, saying where its traffic goes
// and what holds or threatens it, each linking to the group's own page;
// the detail below is the default group's.
func TestPageOverviewShowsEveryGroupAtAGlance(t *testing.T) {
	_, body := pageGet(t, groupPageServer(t, 50), "/")
	if n := strings.Count(string(body), `<li class="g-`); n != 50 {
		t.Fatalf("overview: got %d cells, want one per group (50)", n)
	}
	if i, j := strings.Index(string(body), `id="groups"`), strings.Index(string(body), `aria-label="active site"`); i < 0 || i > j {
		t.Errorf("the overview must come first, before the detail: at %d, detail at %d", i, j)
	}
	want := "50 groups · 3 on the backup · 1 pending · 3 blocked · 2 paused · 1 withheld"
	if got := regexp.MustCompile(`id="groups-summary">([^<]*)`).FindSubmatch(body); got == nil || string(got[1]) != want {
		t.Errorf("summary: got %q, want %q", got, want)
	}
	for _, tc := range []struct{ group, class, text string }{
		{"default", "g-ok", "default on the primary primary UP · backup UP"},
		{"platform-01", "g-ok", "platform-01 on the primary primary UP · backup UP"},
		{"platform-02", "g-warn", "platform-02 on the backup blocked primary DOWN · backup UP"},
		{fxLongGroup, "g-warn", fxLongGroup + " on the backup blocked primary DOWN · backup UP"},
		{"platform-04", "g-down", "platform-04 on the primary failover in 1 s primary UP · backup UP"},
		{"platform-05", "g-warn", "platform-05 on the primary paused primary UP · backup UP"},
		{"platform-06", "g-down", "platform-06 on the primary primary DOWN paused withheld: paused primary DOWN · backup UP"},
	} {
		txt, class, href := groupCellOf(body, tc.group)
		if txt != tc.text || class != tc.class || href != "groups/"+tc.group {
			t.Errorf("cell %s: got %q (%s, href %q), want %q (%s, href %q)", tc.group, txt, class, href, tc.text, tc.class, "groups/"+tc.group)
		}
	}
	if n := strings.Count(string(body), `aria-current="page"`); n != 1 || !strings.Contains(string(body), `<a href="groups/default" aria-current="page">`) {
		t.Errorf("want exactly the default group's cell marked as the one shown, got %d marks", n)
	}
	for _, want := range []string{"<title>drwatch · default: primary · 3 of 50 on the backup</title>", "<h2>Group default: active site</h2>", `<a href="api/v1/status">`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// TestPageOfOneGroup: /groups/NAME shows the same overview with that
// group marked, then that group's detail (its own decision, its own
// warnings, none of the default group's), with links that still reach
// the endpoints at the root; its partial refreshes the same.
func TestPageOfOneGroup(t *testing.T) {
	srv := groupPageServer(t, 50)
	resp, body := pageGet(t, srv, "/groups/platform-06")
	if resp.StatusCode != 200 {
		t.Fatalf("GET /groups/platform-06: status %d: %s", resp.StatusCode, body)
	}
	page := text(body)
	for _, want := range []string{"Group platform-06: active site", "Traffic goes to the primary site", "paused", "Automatic flip withheld (paused)"} {
		if !strings.Contains(page, want) {
			t.Errorf("platform-06's page lacks %q", want)
		}
	}
	for _, want := range []string{`<a href="../groups/platform-06" aria-current="page">`, `<a href="../api/v1/status">`, `<a href="../groups/default">`,
		"<title>⚠ Warning · drwatch · platform-06: primary · 3 of 50 on the backup</title>"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("platform-06's page lacks %q", want)
		}
	}
	if n := strings.Count(string(body), `<li class="g-`); n != 50 {
		t.Errorf("a group's page shows %d cells in its overview, want 50", n)
	}
	// The look-alike: the default group's page does not carry platform-06's withheld flip.
	_, root := pageGet(t, srv, "/")
	if strings.Contains(text(root), "Automatic flip withheld") || strings.Contains(string(root), `role="alert"`) {
		t.Error("the default group's detail shows another group's withheld flip")
	}
	_, moved := pageGet(t, srv, "/groups/"+fxLongGroup)
	if d := regexp.MustCompile(`id="last-decision">([^<]*)`).FindSubmatch(moved); d == nil || !strings.Contains(string(d[1]), "auto_failover primary -&gt; backup") {
		t.Errorf("%s's page: last decision %q, want its auto failover", fxLongGroup, d)
	}

	resp, part := pageGet(t, srv, "/groups/platform-06?partial=1")
	if resp.StatusCode != 200 {
		t.Fatalf("partial: status %d", resp.StatusCode)
	}
	m := regexp.MustCompile(`(?s)<main id="main" data-refresh-ms="\d+">(.*)</main>`).FindSubmatch(body)
	if m == nil || strings.TrimSpace(string(m[1])) != strings.TrimSpace(string(part)) {
		t.Error("a group's partial differs from its page's main container")
	}
}

// TestPageOfAGroupTheClusterLacks: an unknown group, and any group of a
// cluster without groups, is 404 pointing at "/", never another group's page.
func TestPageOfAGroupTheClusterLacks(t *testing.T) {
	for _, tc := range []struct {
		name string
		srv  func(t *testing.T) string
		path string
	}{
		{"unknown group", func(t *testing.T) string { return groupPageServer(t, 3).URL }, "/groups/studio"},
		{"no groups", func(t *testing.T) string {
			st, m := fxGroups(t, 1)
			return pageServerOf(t, &pageBackend{st: st, m: m}, nil).URL
		}, "/groups/default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := pageGetURL(t, http.DefaultClient, tc.srv(t)+tc.path)
			if resp.StatusCode != 404 || !strings.Contains(string(body), "overview of every group is at /") {
				t.Errorf("GET %s: %d %q, want 404 pointing at /", tc.path, resp.StatusCode, body)
			}
		})
	}
	// The look-alike: the default group of a cluster with groups has its page.
	if resp, _ := pageGetURL(t, http.DefaultClient, groupPageServer(t, 3).URL+"/groups/default"); resp.StatusCode != 200 {
		t.Errorf("GET /groups/default with groups: %d, want 200", resp.StatusCode)
	}
}

// TestPendingChip: an overview cell's countdown names the move and its
// seconds, or the rule that would withhold it; without a countdown it
// only says pending.
func TestPendingChip(t *testing.T) {
	for _, tc := range []struct {
		p    *failover.Pending
		want chip
	}{
		{nil, chip{"pending", "warn"}},
		{&failover.Pending{Site: failover.Primary, Leaning: []string{"a"}}, chip{"pending", "warn"}},
		{&failover.Pending{Site: failover.Primary, Rounds: 2, In: 3500 * time.Millisecond, Then: &failover.PendingThen{Action: failover.KindAutoFailover}},
			chip{"failover in 4 s", "down"}},
		{&failover.Pending{Site: failover.Backup, Rounds: 1, In: time.Second, Then: &failover.PendingThen{Action: failover.KindAutoFailback}},
			chip{"failback in 1 s", "down"}},
		{&failover.Pending{Site: failover.Primary, Rounds: 1, In: time.Second, Then: &failover.PendingThen{Action: failover.KindAutoFailover, Rule: failover.RuleTargetUnhealthy}},
			chip{"primary DOWN in 1 s, failover withheld: " + failover.RuleTargetUnhealthy, "warn"}},
	} {
		if got := pendingChip(tc.p); got != tc.want {
			t.Errorf("pendingChip(%+v) = %+v, want %+v", tc.p, got, tc.want)
		}
	}
}

// TestPageWithoutADefaultGroupShowsTheFirst: a policy of groups only has
// no default group; "/" details the first group and marks it, and the
// default group has no page.
func TestPageWithoutADefaultGroupShowsTheFirst(t *testing.T) {
	m := fxGroupsMachine(t, 3)
	pol, _ := m.Policy()
	p := *pol
	p.Records, p.Sites = nil, nil
	if _, err := m.Step(m.View().Index+1, failover.Command{At: fxNow.Add(-time.Second).UnixNano(), Payload: failover.SetPolicy{Policy: p, Actor: "alice"}}); err != nil {
		t.Fatalf("set a policy without a default group: %v", err)
	}
	st := fxFailedOver()
	st.State, st.ClusterHealth, st.DNS, st.Warnings = m.View(), nil, DNSCheck{}, nil
	srv := pageServerOf(t, &pageBackend{st: st, m: m}, nil)
	_, body := pageGet(t, srv, "/")
	if n := strings.Count(string(body), `<li class="g-`); n != 2 {
		t.Errorf("overview: %d cells, want the 2 groups", n)
	}
	for _, want := range []string{`<a href="groups/platform-01" aria-current="page">`, "<h2>Group platform-01: active site</h2>"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/ lacks %q", want)
		}
	}
	if resp, _ := pageGet(t, srv, "/groups/default"); resp.StatusCode != 404 {
		t.Errorf("GET /groups/default without a default group: %d, want 404", resp.StatusCode)
	}
}

// repairRowsOf returns the Repairs table's rows of body as text, but for
// their time, and whether it has a group column.
func repairRowsOf(body []byte) (rows []string, groupColumn bool) {
	sec := regexp.MustCompile(`(?s)<section aria-label="repairs" id="repairs">.*?</section>`).Find(body)
	for _, m := range regexp.MustCompile(`(?s)<tr class="repair">(.*?)</tr>`).FindAllSubmatch(sec, -1) {
		var cells []string
		for _, c := range regexp.MustCompile(`(?s)<td[^>]*>(.*?)</td>`).FindAllSubmatch(m[1], -1) {
			cells = append(cells, text(c[1]))
		}
		rows = append(rows, strings.TrimSpace(strings.Join(cells[1:], " | ")))
	}
	return rows, strings.Contains(string(sec), "<th>group</th>")
}

// TestPageRepairsNameTheirGroup: with groups, the default group's page,
// which holds every runner's repairs, names each one's group in a column
// of its own (default for the top-level runner's); a group's page holds
// its own runner's repairs only, without the column. (Without groups the
// table is as before: TestPageWithoutGroupsRendersAsBefore.)
func TestPageRepairsNameTheirGroup(t *testing.T) {
	m := fxGroupsMachine(t, 3)
	at := fxNow.UnixNano()
	for _, r := range []failover.Remediation{
		{Name: "orphaned-pods", Target: "pod/lms/web-0", Verb: "delete", Result: failover.RemediationApplied, Key: "top", Actor: "a", Reason: "node gone"},
		{Name: "orphaned-pods", Group: "platform-01", Target: "pod/p1/web-0", Verb: "delete", Result: failover.RemediationDryRun, Key: "p1", Actor: "a", Reason: "node gone"},
	} {
		if _, err := m.Step(m.View().Index+1, failover.Command{At: at, Payload: r}); err != nil {
			t.Fatalf("record %+v: %v", r, err)
		}
	}
	srv := pageServerOf(t, &pageBackend{st: fxGroupsStatus(m), m: m}, nil)
	for _, tc := range []struct {
		path   string
		column bool
		rows   []string
	}{
		{"/", true, []string{
			"platform-01 | orphaned-pods | delete pod/p1/web-0 | dry run: not applied | node gone",
			"default | orphaned-pods | delete pod/lms/web-0 | applied | node gone"}},
		{"/groups/default", true, []string{
			"platform-01 | orphaned-pods | delete pod/p1/web-0 | dry run: not applied | node gone",
			"default | orphaned-pods | delete pod/lms/web-0 | applied | node gone"}},
		{"/groups/platform-01", false, []string{"orphaned-pods | delete pod/p1/web-0 | dry run: not applied | node gone"}},
	} {
		resp, body := pageGet(t, srv, tc.path)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d", tc.path, resp.StatusCode)
		}
		rows, column := repairRowsOf(body)
		if column != tc.column || !slices.Equal(rows, tc.rows) {
			t.Errorf("GET %s: repairs %q (group column %v), want %q (group column %v)", tc.path, rows, column, tc.rows, tc.column)
		}
	}
}
