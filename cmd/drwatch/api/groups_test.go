package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
)

// groupsPolicy guards three platforms: the default group (www), lms and
// apps, each judged by its own probe.
func groupsPolicy() failover.Policy {
	sites := func(probe string) map[failover.Site]failover.SitePolicy {
		ref := []failover.ProbeRef{{Name: probe, Critical: true}}
		return map[failover.Site]failover.SitePolicy{failover.Primary: {Probes: ref}, failover.Backup: {Probes: slices.Clone(ref)}}
	}
	rec := func(name, p, b string) []failover.Record {
		return []failover.Record{{Name: name, Type: "A", TTL: 60, Primary: []string{p}, Backup: []string{b}}}
	}
	return failover.Policy{
		Nodes: []string{"a", "b", "c"}, Quorum: 2, Fall: 1, Rise: 1, Interval: time.Second, AutoFailover: true,
		Sites: sites("web"), Zone: "example.org.", Records: rec("www", "203.0.113.10", "198.51.100.10"),
		Groups: []failover.Group{
			{Name: "apps", AutoFailover: true, Sites: sites("web-apps"), Zone: "example.org.", Records: rec("apps", "203.0.113.2", "198.51.100.2")},
			{Name: "lms", AutoFailover: true, Sites: sites("web-lms"), Zone: "example.org.", Records: rec("lms", "203.0.113.1", "198.51.100.1")},
		},
	}
}

// groupsBackend serves the API over a real decision core holding
// groupsPolicy, every watcher seeing every site UP except apps' backup,
// which is DOWN at quorum. Writes step the core as the leader's would.
type groupsBackend struct {
	pageBackend
	m     *failover.Machine
	index uint64
}

func newGroupsBackend(t *testing.T) *groupsBackend {
	t.Helper()
	b := &groupsBackend{m: failover.New()}
	b.step(t, failover.SetPolicy{Policy: groupsPolicy(), Actor: "ops"})
	for _, node := range []string{"a", "b", "c"} {
		var rs []failover.ProbeResult
		for _, probe := range []string{"web", "web-apps", "web-lms"} {
			for _, site := range []failover.Site{failover.Primary, failover.Backup} {
				rs = append(rs, failover.ProbeResult{Site: site, Probe: probe, OK: site == failover.Primary || probe != "web-apps"})
			}
		}
		b.step(t, failover.Observe{Node: node, Results: rs})
	}
	return b
}

func (b *groupsBackend) step(t *testing.T, p failover.Payload) {
	t.Helper()
	if _, _, err := b.Submit(t.Context(), failover.Command{Payload: p}); err != nil {
		t.Fatalf("step %T: %v", p, err)
	}
}

func (b *groupsBackend) at() int64 {
	return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(b.index) * 10 * time.Millisecond).UnixNano()
}

func (b *groupsBackend) Status(context.Context) Status {
	return Status{ServedBy: "a", Leader: "a", State: b.m.View()}
}
func (b *groupsBackend) History() []failover.Entry          { return b.m.History() }
func (b *groupsBackend) Explain(gen uint64) (string, error) { return b.m.Explain(gen) }
func (b *groupsBackend) Groups() []string                   { return b.m.Groups() }
func (b *groupsBackend) Overview() []failover.GroupSummary  { return b.m.Overview() }
func (b *groupsBackend) GroupExplain(g string, gen uint64) (string, error) {
	return GroupExplainOn(b.m, g, gen)
}
func (b *groupsBackend) GroupStatus(ctx context.Context, g string) (Status, error) {
	return GroupStatusOn(b.m, b.Status(ctx), g)
}
func (b *groupsBackend) Submit(_ context.Context, c failover.Command) (failover.Result, uint64, error) {
	b.index++
	c.At = b.at()
	r, err := b.m.Step(b.index, c)
	return r, b.index, err
}
func (b *groupsBackend) DryRun(c failover.Command) (DryRun, error) {
	c.At = b.at()
	return DryRunOn(b.m, c, "a")
}

const (
	groupsTokens = "alice:0123456789abcdef0123\n"
	groupsAuth   = "Bearer 0123456789abcdef0123"
)

// postJSON posts body as alice and decodes a 200 reply into out.
func postJSON(t *testing.T, srv *httptest.Server, path, body string, out any) (int, ErrorBody) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", groupsAuth)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var eb ErrorBody
	if resp.StatusCode == http.StatusOK {
		err = json.NewDecoder(resp.Body).Decode(out)
	} else {
		err = json.NewDecoder(resp.Body).Decode(&eb)
	}
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	return resp.StatusCode, eb
}

func TestGroupReadsNameTheirGroup(t *testing.T) {
	b := newGroupsBackend(t)
	srv := apiServer(t, b, groupsTokens)
	get := func(path string, out any) int {
		t.Helper()
		resp, body := pageGet(t, srv, path)
		if out != nil && resp.StatusCode == http.StatusOK {
			if err := json.Unmarshal(body, out); err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
		}
		return resp.StatusCode
	}

	var st Status
	if code := get("/api/v1/status?group=apps", &st); code != http.StatusOK || st.State.Group != "apps" ||
		st.State.Sites[failover.Backup].Verdict != failover.Down || st.State.Desired.Active != failover.Primary {
		t.Fatalf("status?group=apps: got %d, group %q, backup %s; want 200, apps, DOWN", code, st.State.Group, st.State.Sites[failover.Backup].Verdict)
	}
	// The look-alike: the default group, by name or by none, is the default view.
	for _, path := range []string{"/api/v1/status", "/api/v1/status?group=default"} {
		var d Status
		if code := get(path, &d); code != http.StatusOK || d.State.Group != "" || d.State.Sites[failover.Backup].Verdict != failover.Up || len(d.State.Groups) != 3 {
			t.Errorf("%s: got %d, group %q, backup %s, %d groups; want 200, the default group, backup UP, 3 groups",
				path, code, d.State.Group, d.State.Sites[failover.Backup].Verdict, len(d.State.Groups))
		}
	}

	var ov struct{ Groups []failover.GroupSummary }
	if code := get("/api/v1/groups", &ov); code != http.StatusOK || len(ov.Groups) != 3 {
		t.Fatalf("groups: got %d %+v, want 3 groups", code, ov.Groups)
	}
	var names []string
	for _, g := range ov.Groups {
		names = append(names, g.Name)
	}
	if want := []string{"default", "apps", "lms"}; !slices.Equal(names, want) {
		t.Errorf("groups: got %v, want %v (the policy's order)", names, want)
	}

	for _, path := range []string{"/api/v1/status?group=shop", "/api/v1/history?group=shop", "/api/v1/explain/1?group=shop"} {
		resp, body := pageGet(t, srv, path)
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), `no failover group \"shop\" (groups: default, apps, lms)`) {
			t.Errorf("%s: got %d %s, want 404 naming shop and the groups there are", path, resp.StatusCode, body)
		}
	}
}

func TestGroupWritesCarryTheirGroup(t *testing.T) {
	b := newGroupsBackend(t)
	srv := apiServer(t, b, groupsTokens)
	var wr WriteResponse
	if code, eb := postJSON(t, srv, "/api/v1/failover", `{"to":"backup","group":"lms","reason":"lms caddy"}`, &wr); code != http.StatusOK || wr.Result.Group != "lms" {
		t.Fatalf("failover group lms: got %d %+v %+v, want 200 naming lms", code, eb, wr.Result)
	}
	lms, _ := b.m.GroupDesired("lms")
	def, _ := b.m.GroupDesired("")
	if lms.Active != failover.Backup || def.Active != failover.Primary {
		t.Fatalf("after failover of lms: lms on %s, default on %s; want backup, primary", lms.Active, def.Active)
	}
	// The look-alike: the default group named is written as no group, as
	// before groups, so a cluster of any log format takes it.
	wr = WriteResponse{}
	if code, eb := postJSON(t, srv, "/api/v1/pause", `{"group":"default","reason":"db migration"}`, &wr); code != http.StatusOK || wr.Result.Group != "" {
		t.Fatalf("pause group default: got %d %+v %+v, want 200 and no group", code, eb, wr.Result)
	}
	if h := b.m.History(); h[len(h)-1].Kind != failover.KindPause || h[len(h)-1].Group != "" {
		t.Errorf("pause of the default group: last entry %+v, want a pause of no group", h[len(h)-1])
	}
	if v, _ := b.m.GroupView("lms"); v.Paused {
		t.Errorf("pause of the default group paused lms")
	}

	var hist struct{ History []failover.Entry }
	_, body := pageGet(t, srv, "/api/v1/history?group=default")
	if err := json.Unmarshal(body, &hist); err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(hist.History, func(e failover.Entry) bool { return e.Group != "" }) {
		t.Errorf("history?group=default: got %+v, want no entry of another group", hist.History)
	}
	hist.History = nil
	_, body = pageGet(t, srv, "/api/v1/history?group=lms")
	if err := json.Unmarshal(body, &hist); err != nil {
		t.Fatal(err)
	}
	// lms' own failover and the cluster's policy entry; never the default
	// group's pause, which carries no group either.
	if !slices.ContainsFunc(hist.History, func(e failover.Entry) bool { return e.Group == "lms" && e.Kind == failover.KindManualFailover }) ||
		!slices.ContainsFunc(hist.History, func(e failover.Entry) bool { return e.Group == "" && e.Kind == failover.KindPolicy }) ||
		slices.ContainsFunc(hist.History, func(e failover.Entry) bool { return e.Kind == failover.KindPause }) {
		t.Errorf("history?group=lms: got %+v, want lms' manual failover and the cluster's policy, not the default group's pause", hist.History)
	}
	var ex struct{ Explanation string }
	if resp, body := pageGet(t, srv, "/api/v1/explain/"+itoa(lms.Gen)+"?group=lms"); resp.StatusCode != http.StatusOK ||
		json.Unmarshal(body, &ex) != nil || !strings.Contains(ex.Explanation, "lms caddy") {
		t.Errorf("explain lms gen %d: got %d %s, want lms' failover", lms.Gen, resp.StatusCode, body)
	}

	for _, tc := range []struct{ path, body, want string }{
		{"/api/v1/failover", `{"group":"lms","all_groups":true,"reason":"x"}`, `all_groups: and group "lms" at once`},
		{"/api/v1/pause", `{"all_groups":true,"reason":"x"}`, "only a failover moves every group"},
		{"/api/v1/pause", `{"group":"shop","reason":"x"}`, `unknown failover group "shop" (groups: default, apps, lms)`},
	} {
		code, eb := postJSON(t, srv, tc.path, tc.body, &wr)
		if code != http.StatusBadRequest || !strings.Contains(eb.Error.Message, tc.want) {
			t.Errorf("%s %s: got %d %q, want 400 saying %s", tc.path, tc.body, code, eb.Error.Message, tc.want)
		}
	}
}

// A failover of every group moves those its rules allow and names the
// one they refuse; its dry run shows each group's record changes first.
func TestAllGroupsFailoverReportsEachGroup(t *testing.T) {
	b := newGroupsBackend(t)
	srv := apiServer(t, b, groupsTokens)
	var dr DryRun
	if code, eb := postJSON(t, srv, "/api/v1/failover", `{"to":"backup","all_groups":true,"dry_run":true,"reason":"region"}`, &dr); code != http.StatusOK {
		t.Fatalf("dry run: got %d %+v", code, eb)
	}
	want := map[string]string{"default": "198.51.100.10", "lms": "198.51.100.1"}
	if len(dr.Groups) != 3 {
		t.Fatalf("dry run groups: got %+v, want 3", dr.Groups)
	}
	for _, g := range dr.Groups {
		switch {
		case g.Group == "apps":
			if g.Changes || !strings.HasPrefix(g.Refused, failover.RuleTargetUnhealthy+": ") || g.From[0].Values[0] != "203.0.113.2" {
				t.Errorf("dry run of apps: got %+v, want it refused by %s and left on 203.0.113.2", g, failover.RuleTargetUnhealthy)
			}
		case !g.Changes || g.Refused != "" || len(g.To) != 1 || g.To[0].Values[0] != want[g.Group]:
			t.Errorf("dry run of %s: got %+v, want it moved to %s", g.Group, g, want[g.Group])
		}
	}
	if d, _ := b.m.GroupDesired("lms"); d.Active != failover.Primary {
		t.Fatalf("the dry run moved lms")
	}

	var wr WriteResponse
	if code, eb := postJSON(t, srv, "/api/v1/failover", `{"to":"backup","all_groups":true,"reason":"region"}`, &wr); code != http.StatusOK {
		t.Fatalf("failover all groups: got %d %+v", code, eb)
	}
	for _, g := range wr.Result.Groups {
		if moved := g.Gen != 0; moved == (g.Group == "apps") {
			t.Errorf("group %s: got %+v, want every group but apps moved", g.Group, g)
		}
	}
	// summary.json lists each group and where it is.
	sum := BuildSummary(b.Status(t.Context()))
	got := map[string]SummaryGroup{}
	for _, g := range sum.Groups {
		got[g.Name] = g
	}
	if len(sum.Groups) != 3 || got["lms"].Active != failover.Backup || got["apps"].Active != failover.Primary ||
		got["apps"].Status != ComponentPartial || !strings.Contains(got["apps"].Description, "backup DOWN 3/3") {
		t.Errorf("summary groups: got %+v, want lms on backup, apps on primary with its backup DOWN 3/3 (partial_outage)", sum.Groups)
	}
}

// A summary of a cluster without groups lists none: its JSON is as before.
func TestSummaryWithoutGroupsHasNoGroupsField(t *testing.T) {
	b, _ := json.Marshal(BuildSummary(fxFailedOver()))
	if strings.Contains(string(b), `"groups"`) {
		t.Errorf("summary of a cluster without groups: got %s, want no groups field", b)
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
