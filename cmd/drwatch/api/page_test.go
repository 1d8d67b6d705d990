package api

import (
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
)

// text strips tags and unescapes, so tests read what a person reads.
func text(b []byte) string {
	s := regexp.MustCompile(`(?s)<style.*?</style>|<script.*?</script>`).ReplaceAllString(string(b), " ")
	s = regexp.MustCompile(`<[^>]*>`).ReplaceAllString(s, " ")
	s = html.UnescapeString(s)
	return strings.Join(strings.Fields(s), " ")
}

func TestPageBanner(t *testing.T) {
	srv := pageServer(t, fxFailedOver(), nil)
	resp, body := pageGet(t, srv, "/")
	if resp.StatusCode != 200 {
		t.Fatalf("GET /: got status %d, want 200", resp.StatusCode)
	}
	got := text(body)
	for _, want := range []string{
		"Traffic goes to the backup site",
		"10m 0s ago · 2026-11-21 11:50:00 UTC",
		"mode blocked until 2026-11-21 12:50:00 UTC an automatic flip happened: further automatic flips wait 50m 0s or until someone runs drwatch ack",
		"last decision gen 4200: auto_failover primary -> backup at 2026-11-21T11:50:00Z by drwatch: primary DOWN at quorum",
		"decision generation 4200 · fence gen=4200",
		"served by b at 2026-11-21 12:00:00 UTC",
		"leader a",
		"2 of 3 watchers see primary DOWN, quorum 2; 1 sees it UP",
		"3 of 3 watchers see backup UP, quorum 2",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("page text: missing %q\ngot: %s", want, got)
		}
	}
	if strings.Contains(got, "⚠") {
		t.Errorf("healthy fixture: got a warning block, want none\n%s", got)
	}
}

func TestTallyText(t *testing.T) {
	for _, tt := range []struct {
		name string
		site failover.Site
		t    failover.Tally
		n    int
		want string
	}{
		{"down at quorum", failover.Primary, failover.Tally{Verdict: failover.Down, Down: []string{"a", "b"}, Abstain: []string{"c"}, Quorum: 2}, 3,
			"2 of 3 watchers see primary DOWN, quorum 2"},
		{"down with dissent", failover.Primary, failover.Tally{Verdict: failover.Down, Down: []string{"a", "b"}, Up: []string{"c"}, Quorum: 2}, 3,
			"2 of 3 watchers see primary DOWN, quorum 2; 1 sees it UP"},
		{"one up against two", failover.Backup, failover.Tally{Verdict: failover.Up, Up: []string{"a", "b"}, Down: []string{"c"}, Quorum: 2}, 3,
			"2 of 3 watchers see backup UP, quorum 2; 1 sees it DOWN"},
		{"quorum of one", failover.Primary, failover.Tally{Verdict: failover.Down, Down: []string{"a"}, Up: []string{"b", "c"}, Quorum: 1}, 3,
			"1 of 3 watchers sees primary DOWN, quorum 1; 2 see it UP"},
		{"up", failover.Backup, failover.Tally{Verdict: failover.Up, Up: []string{"a", "b", "c"}, Quorum: 2}, 3,
			"3 of 3 watchers see backup UP, quorum 2"},
		{"no quorum", failover.Primary, failover.Tally{Verdict: failover.NoQuorum, Up: []string{"a"}, Abstain: []string{"b", "c"}, Quorum: 2}, 3,
			"no quorum on primary: 1 UP, 2 abstaining of 3 watchers, quorum 2"},
		{"nothing yet", failover.Primary, failover.Tally{}, 3, "no quorum on primary: no votes of 3 watchers, quorum 0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := TallyText(tt.site, tt.t, tt.n); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPageTallyExact(t *testing.T) {
	st := fxFailedOver()
	st.State.Sites[failover.Primary] = failover.Tally{Verdict: failover.Down, Down: []string{"a", "b"}, Unknown: []string{"c"}, Quorum: 2}
	_, body := pageGet(t, pageServer(t, st, nil), "/")
	if want := "2 of 3 watchers see primary DOWN, quorum 2"; !strings.Contains(text(body), want+" DOWN a, b") {
		t.Errorf("page: missing %q followed by the DOWN voters\n%s", want, text(body))
	}
}

func TestPendingText(t *testing.T) {
	pol := fxFailedOver().State.Policy
	for _, tt := range []struct {
		name string
		p    failover.Pending
		want string
	}{
		{"one of three failing", failover.Pending{Site: failover.Primary, Leaning: []string{"c"}, Up: []string{"a", "b"}, Undecided: []string{}, Quorum: 2},
			"1 of 3 watchers (c) sees primary failing; a flip needs 2; a and b see it UP"},
		{"one failing, one stale", failover.Pending{Site: failover.Primary, Leaning: []string{"a"}, Up: []string{"b"}, Undecided: []string{"c"}, Quorum: 2},
			"1 of 3 watchers (a) sees primary failing; a flip needs 2; b sees it UP; no UP or DOWN vote from c"},
		{"two of five failing, quorum 3", failover.Pending{Site: failover.Primary, Leaning: []string{"a", "b"}, Up: []string{"c", "d", "e"}, Quorum: 3},
			"2 of 5 watchers (a, b) see primary failing; a flip needs 3; c, d and e see it UP"},
		{"backup failing alone", failover.Pending{Site: failover.Backup, Leaning: []string{"b"}, Up: []string{"a", "c"}, Quorum: 2},
			"1 of 3 watchers (b) sees backup failing; a DOWN verdict needs 2; a and c see it UP"},
		{"countdown", failover.Pending{Site: failover.Primary, Leaning: []string{"a", "b"}, Up: []string{"c"}, Quorum: 2, Rounds: 2, In: 4 * time.Second,
			Then: &failover.PendingThen{Action: failover.KindAutoFailover}},
			"automatic failover to backup in about 4 s if this persists (2 more failing rounds): a, b see primary failing"},
		{"one round", failover.Pending{Site: failover.Primary, Leaning: []string{"a", "c"}, Up: []string{"b"}, Quorum: 2, Rounds: 1, In: 2 * time.Second,
			Then: &failover.PendingThen{Action: failover.KindAutoFailover}},
			"automatic failover to backup in about 2 s if this persists (1 more failing round): a, c see primary failing"},
		{"withheld", failover.Pending{Site: failover.Primary, Leaning: []string{"a", "b"}, Up: []string{"c"}, Quorum: 2, Rounds: 1, In: 2 * time.Second,
			Then: &failover.PendingThen{Action: failover.KindAutoFailover, Rule: failover.RuleTargetUnhealthy}},
			"primary would be DOWN at quorum in about 2 s if this persists (1 more failing round), but the automatic failover would be withheld: target_unhealthy (the other site is not UP at quorum)"},
		{"paused", failover.Pending{Site: failover.Primary, Leaning: []string{"a", "b"}, Up: []string{"c"}, Quorum: 2, Rounds: 3, In: 6 * time.Second,
			Then: &failover.PendingThen{Action: failover.KindAutoFailover, Rule: failover.RulePaused}},
			"primary would be DOWN at quorum in about 6 s if this persists (3 more failing rounds), but the automatic failover would be withheld: paused (automatic decisions are paused)"},
		{"failback withheld", failover.Pending{Site: failover.Backup, Leaning: []string{"a", "b"}, Up: []string{"c"}, Quorum: 2, Rounds: 2, In: 4 * time.Second,
			Then: &failover.PendingThen{Action: failover.KindAutoFailback, Rule: failover.RuleFailbackManual}},
			"backup would be DOWN at quorum in about 4 s if this persists (2 more failing rounds), but the automatic failback would be withheld: failback_manual (failback to the primary is manual under this policy)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := PendingText(&tt.p, pol); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	_, body := pageGet(t, pageServer(t, fxPending(), nil), "/")
	if want := "automatic failover to backup in about 4 s if this persists"; !strings.Contains(text(body), want) {
		t.Errorf("page with Pending: missing %q\n%s", want, text(body))
	}
	if !strings.Contains(string(body), `id="pending"`) {
		t.Errorf("page with Pending: no #pending block")
	}
}

// With fewer failing watchers than the quorum the page says so plainly and
// shows no countdown (DESIGN §4 invariant 7).
func TestPageNoCountdownBelowQuorum(t *testing.T) {
	st := fxPending()
	st.State.Pending = &failover.Pending{Site: failover.Primary, Leaning: []string{"c"}, Up: []string{"a", "b"}, Undecided: []string{}, Quorum: 2}
	_, body := pageGet(t, pageServer(t, st, nil), "/")
	if want := "1 of 3 watchers (c) sees primary failing; a flip needs 2; a and b see it UP"; !strings.Contains(text(body), want) {
		t.Errorf("page: missing %q\n%s", want, text(body))
	}
	for _, countdown := range []string{"automatic failover to backup in", "would be DOWN at quorum in", "more failing round"} {
		if strings.Contains(text(body), countdown) {
			t.Errorf("page: got countdown %q with one failing watcher of quorum 2", countdown)
		}
	}
	if !strings.Contains(string(body), `class="note warn" id="pending"`) {
		t.Errorf("page: the pending block is not a plain warning")
	}
}

func TestPageWithheld(t *testing.T) {
	st := fxFailedOver()
	st.State.WithheldRule, st.State.WithheldReason, st.State.WithheldSince = failover.RuleTargetUnhealthy, "backup is not UP at quorum", fxAt(30*time.Second)
	_, body := pageGet(t, pageServer(t, st, nil), "/")
	if want := "Automatic flip withheld (target_unhealthy): backup is not UP at quorum, since 30s ago"; !strings.Contains(text(body), want) {
		t.Errorf("missing %q\n%s", want, text(body))
	}
}

func TestPageMatrix(t *testing.T) {
	st := fxFailedOver()
	st.State.Nodes[2].Stale = true
	st.State.Nodes[2].Abstain = "stale"
	for i := range st.State.Nodes[2].Probes {
		st.State.Nodes[2].Probes[i].Fresh = false
	}
	_, body := pageGet(t, pageServer(t, st, nil), "/")
	page := string(body)
	got := text(body)
	for _, want := range []string{
		"primary / lms critical", "primary / ingress-lb", "backup / kube-api critical",
		"DOWN 1500 ms 7 fails timeout · connect: dial tcp 203.0.113.10:443: i/o timeout",
		"DOWN 1500 ms 7 fails refused · connect: connection refused",
		"DOWN 1500 ms 7 fails lb_error · provisioning_status ERROR",
		"UP 38 ms 12 oks",
		"c abstains: stale votes primary UP, backup UP reported 2s ago",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("matrix: missing %q\n%s", want, got)
		}
	}
	rows := regexp.MustCompile(`(?s)<tr class="[^"]*" id="node-([a-z]+)">(.*?)</tr>`).FindAllStringSubmatch(page, -1)
	if len(rows) != 3 {
		t.Fatalf("matrix rows: got %d, want 3", len(rows))
	}
	for _, r := range rows {
		cells := strings.Count(r[2], `<td class="c`)
		if cells != 5 {
			t.Errorf("row %s: got %d probe cells, want 5", r[1], cells)
		}
		if n := strings.Count(r[2], `<i class="ok"></i>`) + strings.Count(r[2], `<i class="fail"></i>`); n != 100 {
			t.Errorf("row %s: got %d history blocks, want 5×20", r[1], n)
		}
		stale := strings.Count(r[2], `class="c stale"`)
		if want := map[string]int{"a": 0, "b": 0, "c": 5}[r[1]]; stale != want {
			t.Errorf("row %s: got %d stale cells, want %d", r[1], stale, want)
		}
	}
	if !strings.Contains(rows[2][0], `<tr class="abstain" id="node-c">`) {
		t.Errorf("row c: not marked as abstaining: %.200s", rows[2][0])
	}
}

func TestPageWarnings(t *testing.T) {
	stale := fxFailedOver()
	stale.StaleSeconds = 30
	noQuorum := fxFailedOver()
	for i := range noQuorum.State.Nodes[:2] {
		noQuorum.State.Nodes[i].Stale = true
	}
	withWarnings := fxNoLeader()
	withWarnings.Warnings = []string{"this node (b) has no leader: backend says so"}
	for _, tt := range []struct {
		name  string
		st    Status
		alarm string // "" = no warning block
		want  string
	}{
		{"healthy", fxFailedOver(), "", ""},
		{"no leader, empty warnings", fxNoLeader(), "⚠ No leader", "node b knows no Raft leader"},
		{"no leader, empty warnings, also stale", fxNoLeader(), "⚠ No leader", "stale data: the last state applied on b is 45s old (limit 6s, 3 × the 2s interval)"},
		{"stale only", stale, "⚠ Stale data", "the last state applied on b is 30s old"},
		{"no fresh quorum", noQuorum, "⚠ No quorum of watchers", "only 1 of 3 watchers has fresh data (quorum 2)"},
		{"backend warnings are shown", withWarnings, "⚠ No leader", "backend says so"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, body := pageGet(t, pageServer(t, tt.st, nil), "/")
			got := text(body)
			has := strings.Contains(string(body), `role="alert"`)
			if tt.alarm == "" {
				if has {
					t.Fatalf("got a warning block, want none: %s", got)
				}
				return
			}
			if !has {
				t.Fatalf("got no warning block, want %q", tt.alarm)
			}
			if !strings.Contains(got, tt.alarm) || !strings.Contains(got, tt.want) {
				t.Errorf("warning block: want %q and %q in\n%s", tt.alarm, tt.want, got)
			}
			if distrust := strings.Contains(got, "whose view may be out of date"); !distrust {
				t.Errorf("distrust line under the banner: got %v, want true", distrust)
			}
			if !strings.Contains(string(body), "<title>⚠ "+strings.TrimPrefix(tt.alarm, "⚠ ")) {
				t.Errorf("title does not carry the alarm %q", tt.alarm)
			}
		})
	}
}

func TestPageHistoryNewestFirst(t *testing.T) {
	_, body := pageGet(t, pageServer(t, fxFailedOver(), nil), "/")
	ids := regexp.MustCompile(`class="inc[^"]*" id="h(\d+)"`).FindAllStringSubmatch(string(body), -1)
	var got []string
	for _, m := range ids {
		got = append(got, m[1])
	}
	if want := "4201 4200 950 900 3"; strings.Join(got, " ") != want {
		t.Errorf("history order: got %v, want %s", got, want)
	}
	tx := text(body)
	for _, want := range []string{
		"gen 4200 · Automatic failover primary → backup",
		"10m 0s ago · 2026-11-21 11:50:00 UTC · by drwatch",
		// the chain from the first failed probe, each step with the gap from the one before
		"first failure 2026-11-21 11:49:56 UTC detected 2026-11-21 11:49:58 UTC +1.7s decided 2026-11-21 11:50:00 UTC +1.5s " +
			"DNS written 2026-11-21 11:50:00 UTC +120ms served by ns1.example.net:53 2026-11-21 11:50:00 UTC +380ms after the write " +
			"served by ns2.example.net:53 2026-11-21 11:50:00 UTC +730ms after the write verified 2026-11-21 11:50:00 UTC +780ms",
		"a DOWN UP primary/lms DOWN, 3 failures: timeout · connect: i/o timeout",
		"5h 0m ago · Paused by bob: maintenance of the primary",
		"DNS outcome: verified",
	} {
		if !strings.Contains(tx, want) {
			t.Errorf("history: missing %q\n%s", want, tx)
		}
	}
	if !regexp.MustCompile(`<details class="inc" id="h4200" open>`).Match(body) {
		t.Errorf("the newest decision is not expanded")
	}
}

// TestPageShowsTheAckOfAManualMove: a manual failback that acknowledged
// the block shows its ack entry (as the decision core records it) beside
// the decision.
func TestPageShowsTheAckOfAManualMove(t *testing.T) {
	st := fxFailedOver()
	at := fxAt(9 * time.Minute)
	st.State.History = append(st.State.History,
		failover.Entry{Index: 5000, At: at, Kind: failover.KindAck, Actor: "alice",
			Reason: "block acknowledged by manual_failback, gen 5000", Detail: "block until 2026-11-21T12:50:00Z lifted"},
		failover.Entry{Index: 5000, Gen: 5000, At: at, Kind: failover.KindManualFailback, From: failover.Backup, To: failover.Primary,
			Actor: "alice", Reason: "primary fixed", Timings: failover.Timings{DecidedAt: at}})
	_, body := pageGet(t, pageServer(t, st, nil), "/")
	tx := text(body)
	for _, want := range []string{
		"gen 5000 · Manual failback backup → primary",
		"Acknowledged by alice: block acknowledged by manual_failback, gen 5000",
		"block until 2026-11-21T12:50:00Z lifted",
	} {
		if !strings.Contains(tx, want) {
			t.Errorf("history: missing %q\n%s", want, tx)
		}
	}
}

// TestPageRepairs: the Repairs section lists the remediation records
// newest first, a dry run included (it is never in the history), with the
// failure's detail; with no records it says so.
func TestPageRepairs(t *testing.T) {
	_, body := pageGet(t, pageServer(t, fxFailedOver(), nil), "/")
	rows := regexp.MustCompile(`(?s)<tr class="repair">(.*?)</tr>`).FindAllSubmatch(body, -1)
	if len(rows) != 2 {
		t.Fatalf("got %d repair rows, want 2", len(rows))
	}
	first, second := text(rows[0][1]), text(rows[1][1])
	for _, want := range []string{"7m 0s ago", "dead-node-out-of-service", "taint node/worker-3", "failed", "NotReady for 6m", `nodes "worker-3" is forbidden`} {
		if !strings.Contains(first, want) {
			t.Errorf("newest repair row %q lacks %q", first, want)
		}
	}
	for _, want := range []string{"8m 0s ago", "octavia-stuck-lb", "failover loadbalancer/5f0c", "dry run: not applied", "provisioning_status ERROR"} {
		if !strings.Contains(second, want) {
			t.Errorf("older repair row %q lacks %q", second, want)
		}
	}
	if !strings.Contains(string(rows[0][1]), `class="pill down"`) {
		t.Errorf("a failed repair is not marked down: %s", rows[0][1])
	}

	// A failure that needs an admin says it will not be retried.
	st := fxFailedOver()
	st.State.Remediations[len(st.State.Remediations)-1].NeedsAdmin = true
	_, body = pageGet(t, pageServer(t, st, nil), "/")
	rows = regexp.MustCompile(`(?s)<tr class="repair">(.*?)</tr>`).FindAllSubmatch(body, -1)
	if len(rows) != 2 || !strings.Contains(text(rows[0][1]), "failed: needs an admin, not retried") {
		t.Errorf("needs admin: got rows %q, want the newest to say it needs an admin", rows)
	}

	st = fxFailedOver()
	st.State.Remediations = []failover.RemediationRecord{}
	_, body = pageGet(t, pageServer(t, st, nil), "/")
	if !strings.Contains(text(body), "No repair has planned anything yet.") {
		t.Errorf("no records: the Repairs section does not say so")
	}
}

func TestPagePartial(t *testing.T) {
	srv := pageServer(t, fxFailedOver(), nil)
	_, full := pageGet(t, srv, "/")
	resp, part := pageGet(t, srv, "/?partial=1")
	if resp.StatusCode != 200 {
		t.Fatalf("partial: got status %d, want 200", resp.StatusCode)
	}
	p := strings.TrimSpace(string(part))
	for _, bad := range []string{"<html", "<head", "<body", "<script", "<style", "<main", "</main>", "<noscript"} {
		if strings.Contains(p, bad) {
			t.Errorf("partial contains %q: want only the main container's content", bad)
		}
	}
	if !strings.HasPrefix(p, `<span hidden id="title" data-title="drwatch · active: backup"></span>`) {
		t.Errorf("partial starts with %.80q, want the title carrier", p)
	}
	m := regexp.MustCompile(`(?s)<main id="main" data-refresh-ms="(\d+)">(.*)</main>`).FindSubmatch(full)
	if m == nil {
		t.Fatal("full page: no <main id=main data-refresh-ms>")
	}
	if string(m[1]) != "2000" {
		t.Errorf("refresh interval: got %s ms, want 2000 (policy interval)", m[1])
	}
	if strings.TrimSpace(string(m[2])) != p {
		t.Errorf("partial differs from the full page's main container")
	}
}

func TestPageOfflineAndCSP(t *testing.T) {
	srv := pageServer(t, fxFailedOver(), nil)
	resp, body := pageGet(t, srv, "/")
	page := string(body)
	if !strings.Contains(page, `<noscript><meta http-equiv="refresh" content="5"></noscript>`) {
		t.Error("no <noscript> meta refresh fallback")
	}
	csp := resp.Header.Get("Content-Security-Policy")
	m := regexp.MustCompile(`script-src 'nonce-([0-9a-f]{32})'; style-src 'nonce-([0-9a-f]{32})'`).FindStringSubmatch(csp)
	if m == nil || m[1] != m[2] {
		t.Fatalf("CSP: got %q, want script-src and style-src with one nonce", csp)
	}
	for _, want := range []string{"default-src 'none'", "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q: missing %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("CSP %q allows unsafe-inline or unsafe-eval", csp)
	}
	nonce := m[1]
	if c := strings.Count(page, `nonce="`+nonce+`"`); c != 2 {
		t.Errorf("nonce used %d times in the page, want 2 (one style, one script)", c)
	}
	if c := strings.Count(page, "<script"); c != 1 {
		t.Errorf("got %d <script> elements, want 1", c)
	}
	resp2, _ := pageGet(t, srv, "/")
	if strings.Contains(resp2.Header.Get("Content-Security-Policy"), nonce) {
		t.Error("two responses share a nonce")
	}
	for _, tt := range []struct{ what, re string }{
		{"inline event handler", `(?i)<[^>]+\son[a-z]+\s*=`},
		{"style attribute", `(?i)<[^>]+\sstyle\s*=`},
		{"external resource", `(?i)(src|href)\s*=\s*"(https?:)?//`},
		{"web font or import", `(?i)@import|@font-face|url\(`},
		{"javascript: URL", `(?i)javascript:`},
	} {
		if loc := regexp.MustCompile(tt.re).FindStringIndex(page); loc != nil {
			t.Errorf("page has an %s: %q", tt.what, page[loc[0]:min(loc[1]+40, len(page))])
		}
	}
	for h, want := range map[string]string{"Cache-Control": "no-store", "Content-Type": "text/html; charset=utf-8", "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff"} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("header %s: got %q, want %q", h, got, want)
		}
	}
	if !strings.Contains(page, `<meta name="viewport" content="width=device-width,initial-scale=1">`) ||
		!strings.Contains(page, "prefers-color-scheme:dark") {
		t.Error("page is not set up for phones (viewport) and dark mode (prefers-color-scheme)")
	}
}

func TestPageEscapes(t *testing.T) {
	_, body := pageGet(t, pageServer(t, fxFailedOver(), nil), "/")
	if strings.Contains(string(body), fxXSS) {
		t.Fatal("a reason containing <script> was rendered unescaped")
	}
	if !strings.Contains(text(body), fxXSS) {
		t.Error("the planted reason is not shown at all (want it escaped, readable)")
	}
}

func TestPageWithheldEntry(t *testing.T) {
	_, body := pageGet(t, pageServer(t, fxWithheld(), nil), "/")
	tx := text(body)
	for _, want := range []string{
		"mode paused until 2026-11-21 13:30:00 UTC in 1h 30m; by bob: database migration on the backup",
		"Automatic flip withheld (paused): automatic decisions are paused by bob until 13:30 UTC, since 45s ago",
		"Automatic flip withheld primary → backup 45s ago · 2026-11-21 11:59:15 UTC · by drwatch primary DOWN at quorum, but automatic decisions are paused rule: paused",
		"⚠ Warning automatic flip withheld (paused)",
	} {
		if !strings.Contains(tx, want) {
			t.Errorf("missing %q\n%s", want, tx)
		}
	}
	if strings.Contains(tx, "whose view may be out of date") {
		t.Error("a withheld flip is not a reason to distrust this node's view")
	}
	if !regexp.MustCompile(`<details class="inc" id="h990" open>`).Match(body) {
		t.Error("the withheld entry is not shown expanded as the newest incident")
	}
}

func TestPageNoPolicy(t *testing.T) {
	st := Status{ServedBy: "a", ServedAt: fxNow, Leader: "a", State: failover.View{Mode: "manual-only", Active: failover.Primary,
		Warnings: []string{"no policy set: drwatch makes no decisions until one is"}}}
	resp, body := pageGet(t, pageServer(t, st, nil), "/")
	if resp.StatusCode != 200 {
		t.Fatalf("got %d, want 200", resp.StatusCode)
	}
	for _, want := range []string{"No watchers are configured yet", "no policy set", "No history yet", "Traffic goes to the primary site"} {
		if !strings.Contains(text(body), want) {
			t.Errorf("missing %q\n%s", want, text(body))
		}
	}
}

func TestFailureText(t *testing.T) {
	for _, tt := range []struct{ class, phase, reason, want string }{
		{"refused", "connect", "connect: connection refused", "refused · connect: connection refused"},
		{"refused", "connect", "connection refused", "refused · connect: connection refused"},
		{"refused", "connect", "connect 127.0.0.1:443: connection refused", "refused · connect 127.0.0.1:443: connection refused"},
		{"tls", "tls", "x509: certificate has expired", "tls · tls: x509: certificate has expired"},
		{"status", "", "got 503, want [200]", "status · got 503, want [200]"},
		{"", "", "", "failed"},
	} {
		if got := failureText(tt.class, tt.phase, tt.reason); got != tt.want {
			t.Errorf("failureText(%q, %q, %q): got %q, want %q", tt.class, tt.phase, tt.reason, got, tt.want)
		}
	}
}

func TestRoundDur(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{120 * time.Millisecond, "120ms"}, {42 * time.Second, "42s"}, {4*time.Minute + 10*time.Second, "4m 10s"},
		{3*time.Hour + 5*time.Minute, "3h 5m"}, {50*time.Hour + 30*time.Minute, "2d 2h"},
	} {
		if got := roundDur(tt.d); got != tt.want {
			t.Errorf("roundDur(%v): got %q, want %q", tt.d, got, tt.want)
		}
	}
}

// A membership change shows in the page's history with its actor, reason
// and the node it changed.
func TestPageShowsMembershipChanges(t *testing.T) {
	st := fxFailedOver()
	at := fxAt(9 * time.Minute)
	st.State.History = append(st.State.History,
		failover.Entry{Index: 5001, At: at, Kind: failover.KindMemberAdd, Actor: "alice", Reason: "new site", Detail: "d at 10.4.0.5:7400"},
		failover.Entry{Index: 5002, At: at, Kind: failover.KindMemberRemove, Actor: "bob", Reason: "site retired", Detail: "c"})
	_, body := pageGet(t, pageServer(t, st, nil), "/")
	tx := text(body)
	for _, want := range []string{"Watcher added by alice: new site", "d at 10.4.0.5:7400", "Watcher removed by bob: site retired"} {
		if !strings.Contains(tx, want) {
			t.Errorf("history: missing %q\n%s", want, tx)
		}
	}
}

// A reason from an entry older than the text rule may hold a right-to-left
// override or a line separator; the page shows them as escapes, so the
// text reads in the order it was written, on one line.
func TestPageEscapesFormatCharactersFromOldEntries(t *testing.T) {
	st := fxFailedOver()
	i := len(st.State.History) - 1
	st.State.History[i].Reason = "deploy \u202edetrever\u2028forged row"
	st.State.History[i].Actor = "eve\u2067x\u2069"
	_, body := pageGet(t, pageServer(t, st, nil), "/")
	if strings.ContainsFunc(string(body), failover.IsFormat) {
		t.Errorf("the page holds a raw format character")
	}
	tx := text(body)
	for _, want := range []string{`deploy \u202edetrever\u2028forged row`, `eve\u2067x\u2069`} {
		if !strings.Contains(tx, want) {
			t.Errorf("page: missing %q\n%s", want, tx)
		}
	}
	// Right-to-left text with no override is shown as it is.
	st.State.History[i].Reason = "שלום — می\u200cخواهم"
	_, body = pageGet(t, pageServer(t, st, nil), "/")
	if !strings.Contains(text(body), "שלום — می\u200cخواهم") {
		t.Errorf("page: right-to-left text without an override was changed")
	}
}
