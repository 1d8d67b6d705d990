package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cluster"
	"github.com/drwatch/drwatch/failover"
)

// fxNow is the serving node's clock in every page fixture.
var fxNow = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func fxAt(ago time.Duration) int64 { return fxNow.Add(-ago).UnixNano() }

// fxXSS is planted in reasons and errors: it must come out escaped.
const fxXSS = `<script>alert("pwned")</script>`

// fxFailedOver is a cluster that failed over to the backup 10 minutes ago:
// the primary is DOWN at quorum (a and b), c still sees it UP; automatic
// flips are blocked until ack.
func fxFailedOver() Status {
	pol := &failover.Policy{
		Nodes: []string{"a", "b", "c"}, Quorum: 2, Fall: 3, Rise: 5, Interval: 2 * time.Second,
		AutoFailover: true, BlockWindow: time.Hour, Failback: failover.FailbackPolicy{Mode: failover.FailbackManual},
		Sites: map[failover.Site]failover.SitePolicy{
			failover.Primary: {Probes: []failover.ProbeRef{{Name: "lms", Critical: true}, {Name: "kube-api", Critical: true}, {Name: "ingress-lb"}}},
			failover.Backup:  {Probes: []failover.ProbeRef{{Name: "lms", Critical: true}, {Name: "kube-api", Critical: true}}},
		},
		Zone:    "example.org.",
		Records: []failover.Record{{Name: "lms", Type: "A", TTL: 60, Primary: []string{"203.0.113.10"}, Backup: []string{"198.51.100.10"}}},
	}
	hist := func(ok ...bool) []bool { return ok }
	okProbe := func(site failover.Site, name string, crit bool, ms int64) failover.ProbeView {
		return failover.ProbeView{Site: site, Probe: name, Critical: crit, State: failover.Up, OKs: 12, Fresh: true, LastAt: fxAt(2 * time.Second),
			Last:    failover.ProbeResult{Site: site, Probe: name, OK: true, LatencyMS: ms},
			History: hist(true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true)}
	}
	downProbe := func(name string, crit bool, class, phase, reason string) failover.ProbeView {
		return failover.ProbeView{Site: failover.Primary, Probe: name, Critical: crit, State: failover.Down, Fails: 7, Fresh: true, LastAt: fxAt(2 * time.Second),
			Last:    failover.ProbeResult{Site: failover.Primary, Probe: name, OK: false, Class: class, Phase: phase, Reason: reason, LatencyMS: 1500},
			History: hist(true, true, true, true, true, true, true, true, true, true, true, true, true, false, false, false, false, false, false, false)}
	}
	nodeDown := func(id string) failover.NodeView {
		return failover.NodeView{Node: id, Reported: true, LastAt: fxAt(2 * time.Second),
			Verdicts: map[failover.Site]failover.Verdict{failover.Primary: failover.Down, failover.Backup: failover.Up},
			Probes: []failover.ProbeView{
				downProbe("lms", true, "timeout", "connect", "dial tcp 203.0.113.10:443: i/o timeout "+fxXSS),
				downProbe("kube-api", true, "refused", "connect", "connection refused"),
				downProbe("ingress-lb", false, "lb_error", "", "provisioning_status ERROR"),
				okProbe(failover.Backup, "lms", true, 38),
				okProbe(failover.Backup, "kube-api", true, 12),
			}}
	}
	c := failover.NodeView{Node: "c", Reported: true, LastAt: fxAt(2 * time.Second),
		Verdicts: map[failover.Site]failover.Verdict{failover.Primary: failover.Up, failover.Backup: failover.Up},
		Probes: []failover.ProbeView{
			okProbe(failover.Primary, "lms", true, 42), okProbe(failover.Primary, "kube-api", true, 17), okProbe(failover.Primary, "ingress-lb", false, 230),
			okProbe(failover.Backup, "lms", true, 51), okProbe(failover.Backup, "kube-api", true, 19),
		}}
	evidence := []failover.NodeEvidence{
		{Node: "a", Votes: map[failover.Site]failover.Verdict{failover.Primary: failover.Down, failover.Backup: failover.Up}, LastReport: fxAt(10*time.Minute + 2*time.Second),
			Failing: []failover.ProbeFailure{{Site: failover.Primary, Probe: "lms", State: failover.Down, Fails: 3, Class: "timeout", Phase: "connect", Reason: "i/o timeout"}}},
		{Node: "b", Votes: map[failover.Site]failover.Verdict{failover.Primary: failover.Down, failover.Backup: failover.Up}, LastReport: fxAt(10*time.Minute + time.Second),
			Failing: []failover.ProbeFailure{{Site: failover.Primary, Probe: "lms", State: failover.Down, Fails: 3, Class: "refused", Reason: "connection refused"}}},
		{Node: "c", Votes: map[failover.Site]failover.Verdict{failover.Primary: failover.Up, failover.Backup: failover.Up}, LastReport: fxAt(10*time.Minute + time.Second)},
	}
	desired := []failover.RRset{{Name: "lms.example.org.", Type: "A", TTL: 60, Values: []string{"198.51.100.10"}}}
	v := failover.View{
		Index: 4711, Now: fxAt(time.Second), Active: failover.Backup, ActiveSince: fxAt(10 * time.Minute), Mode: "auto",
		Blocked: true, BlockedUntil: fxNow.Add(50 * time.Minute).UnixNano(),
		LastDecision: "gen 4200: auto_failover primary -> backup at 2026-11-21T11:50:00Z by drwatch: primary DOWN at quorum",
		Policy:       pol, PolicyHash: "0123456789abcdef0123456789abcdef",
		Sites: map[failover.Site]failover.Tally{
			failover.Primary: {Verdict: failover.Down, Down: []string{"a", "b"}, Up: []string{"c"}, Quorum: 2},
			failover.Backup:  {Verdict: failover.Up, Up: []string{"a", "b", "c"}, Quorum: 2},
		},
		Nodes:    []failover.NodeView{nodeDown("a"), nodeDown("b"), c},
		Warnings: []string{},
		Desired:  failover.Desired{Gen: 4200, Active: failover.Backup, Records: desired, Done: true, Fence: "gen=4200"},
		History: []failover.Entry{
			{Index: 3, Gen: 3, At: fxAt(48 * time.Hour), Kind: failover.KindPolicy, To: failover.Primary, Actor: "alice", Reason: "initial policy"},
			{Index: 900, At: fxAt(5 * time.Hour), Kind: failover.KindPause, Actor: "bob", Reason: "maintenance of the primary"},
			{Index: 950, At: fxAt(4 * time.Hour), Kind: failover.KindResume, Actor: "bob", Reason: "maintenance done"},
			{Index: 4200, Gen: 4200, At: fxAt(10 * time.Minute), Kind: failover.KindAutoFailover, From: failover.Primary, To: failover.Backup,
				Actor: failover.SystemActor, Reason: "primary DOWN at quorum (a, b) " + fxXSS, Evidence: evidence,
				Tallies: map[failover.Site]failover.Tally{
					failover.Primary: {Verdict: failover.Down, Down: []string{"a", "b"}, Up: []string{"c"}, Quorum: 2},
					failover.Backup:  {Verdict: failover.Up, Up: []string{"a", "b", "c"}, Quorum: 2},
				},
				Timings: failover.Timings{FirstFailureAt: fxAt(10*time.Minute + 3200*time.Millisecond),
					DetectedAt: fxAt(10*time.Minute + 1500*time.Millisecond), DecidedAt: fxAt(10 * time.Minute),
					WrittenAt: fxAt(10*time.Minute - 120*time.Millisecond), VerifiedAt: fxAt(10*time.Minute - 900*time.Millisecond),
					Servers: []failover.ServerVerification{{Server: "ns1.example.net:53", VerifiedAt: fxAt(10*time.Minute - 500*time.Millisecond)},
						{Server: "ns2.example.net:53", VerifiedAt: fxAt(10*time.Minute - 850*time.Millisecond)}}},
				Outcome: failover.OutcomeVerified},
			{Index: 4201, Gen: 4200, At: fxAt(10*time.Minute - 900*time.Millisecond), Kind: failover.KindAction, Outcome: failover.OutcomeVerified, Detail: "2 of 2 servers"},
		},
		Remediations: []failover.RemediationRecord{
			{Index: 4300, At: fxAt(8 * time.Minute), Remediation: failover.Remediation{Name: "octavia-stuck-lb", Gen: 4200,
				Target: "loadbalancer/5f0c", Verb: "failover", Result: failover.RemediationDryRun,
				Reason: "provisioning_status ERROR since 2026-11-21 11:40:00 UTC", Key: "octavia-stuck-lb/5f0c@2026-11-21T11:40:00Z"}},
			{Index: 4301, At: fxAt(7 * time.Minute), Remediation: failover.Remediation{Name: "dead-node-out-of-service", Gen: 4200,
				Target: "node/worker-3", Verb: "taint", Result: failover.RemediationFailed,
				Reason: "NotReady for 6m", Detail: "nodes \"worker-3\" is forbidden", Key: "dead-node-out-of-service/taint/node/worker-3"}},
		},
	}
	return Status{
		ServedBy: "b", ServedAt: fxNow, Leader: "a", StaleSeconds: 1, ClusterHealth: fxClusters(),
		Raft: RaftStatus{State: "Follower", Term: 7, CommitIndex: 4711, AppliedIndex: 4711, LastSnapshotIndex: 4096, LastContactSecs: 0.2,
			LeaderAddr: "127.0.0.1:7401", Members: []cluster.Member{
				{ID: "a", Addr: "127.0.0.1:7401", Suffrage: "voter", Leader: true},
				{ID: "b", Addr: "127.0.0.1:7402", Suffrage: "voter"},
				{ID: "c", Addr: "127.0.0.1:7403", Suffrage: "voter"},
			}},
		Warnings: []string{},
		State:    v,
		DNS: DNSCheck{At: fxNow.Add(-3 * time.Second), Gen: 4200, Match: true,
			Desired: []failover.RRset{{Name: "lms.example.org.", Type: "A", TTL: 60, Values: []string{"198.51.100.10"}}},
			Servers: []ServerCheck{
				{Server: "127.0.0.1:5301", NS: "ns1.example.net.", Matched: true, Got: []failover.RRset{{Name: "lms.example.org.", Type: "A", TTL: 60, Values: []string{"198.51.100.10"}}}},
				{Server: "127.0.0.1:5302", NS: "ns2.example.net.", Matched: true, Got: []failover.RRset{{Name: "lms.example.org.", Type: "A", TTL: 60, Values: []string{"198.51.100.10"}}}},
			}},
	}
}

// fxPending is a healthy cluster on the primary where a and b have started
// to fail the primary's lms probe: an automatic failover is 2 rounds away.
func fxPending() Status {
	st := fxFailedOver()
	v := &st.State
	v.Active, v.ActiveSince, v.Blocked, v.BlockedUntil = failover.Primary, fxAt(48*time.Hour), false, 0
	v.Sites = map[failover.Site]failover.Tally{
		failover.Primary: {Verdict: failover.Up, Up: []string{"c"}, Unknown: []string{"a", "b"}, Quorum: 2},
		failover.Backup:  {Verdict: failover.Up, Up: []string{"a", "b", "c"}, Quorum: 2},
	}
	v.Pending = &failover.Pending{Site: failover.Primary, Leaning: []string{"a", "b"}, Up: []string{"c"}, Undecided: []string{}, Quorum: 2,
		Rounds: 2, In: 4 * time.Second, Then: &failover.PendingThen{Action: failover.KindAutoFailover}}
	v.History = v.History[:3]
	v.LastDecision = "gen 3: policy -> primary at 2026-11-19T12:00:00Z by alice: initial policy"
	v.Desired = failover.Desired{Gen: 3, Active: failover.Primary, Done: true, Fence: "gen=3",
		Records: []failover.RRset{{Name: "lms.example.org.", Type: "A", TTL: 60, Values: []string{"203.0.113.10"}}}}
	st.DNS.Gen = 3
	for _, rs := range [][]failover.RRset{st.DNS.Desired, st.DNS.Servers[0].Got, st.DNS.Servers[1].Got} {
		rs[0].Values = []string{"203.0.113.10"}
	}
	return st
}

// fxNoLeader is what a partitioned node serves: no leader, old data, and
// (deliberately) no Warnings, to prove the page warns on its own.
func fxNoLeader() Status {
	st := fxFailedOver()
	st.Leader = ""
	st.Raft.State, st.Raft.LeaderAddr, st.Raft.LastContactSecs = "Candidate", "", 45
	st.StaleSeconds = 45
	st.Warnings = nil
	return st
}

// pageBackend serves one fixed Status; everything else is unused by the page.
type pageBackend struct {
	st   Status
	hist []failover.Entry
	// m, when set, answers GroupView for the page of each failover group.
	m *failover.Machine
}

// GroupView implements GroupReader from m; no group without one.
func (b *pageBackend) GroupView(name string) (failover.View, bool) {
	if b.m == nil {
		return failover.View{}, false
	}
	return b.m.GroupView(name)
}

func (b *pageBackend) Status(context.Context) Status  { return b.st }
func (b *pageBackend) History() []failover.Entry      { return b.hist }
func (b *pageBackend) Explain(uint64) (string, error) { return "", errors.New("no such gen") }
func (b *pageBackend) Members(context.Context) ([]cluster.Member, error) {
	return b.st.Raft.Members, nil
}
func (b *pageBackend) RemoveMember(context.Context, string, bool, string, string) error {
	return errors.New("read-only")
}
func (b *pageBackend) Alive() error { return nil }
func (b *pageBackend) AddMember(context.Context, string, string, string, string) error {
	return errors.New("read-only")
}
func (b *pageBackend) Submit(context.Context, failover.Command) (failover.Result, uint64, error) {
	return failover.Result{}, 0, errors.New("read-only")
}
func (b *pageBackend) DryRun(failover.Command) (DryRun, error) {
	return DryRun{}, errors.New("read-only")
}
func (b *pageBackend) Ready() error { return nil }
func (b *pageBackend) Drills() DrillHistory {
	return DrillHistory{Drills: []DrillReport{}}
}
func (b *pageBackend) DrillCanary() (failover.DrillCanary, error) {
	return failover.DrillCanary{}, errors.New("read-only")
}
func (b *pageBackend) Metrics() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("# HELP drwatch_paused x\n# TYPE drwatch_paused gauge\ndrwatch_paused 0\n"))
	})
}

// pageServer is a Server with the status page over st, on fxNow's clock.
func pageServer(t testing.TB, st Status, tokens *Tokens) *httptest.Server {
	t.Helper()
	return pageServerOf(t, &pageBackend{st: st, hist: st.State.History}, tokens)
}

// groupPageServer is pageServer over the cluster of fxGroups(n).
func groupPageServer(t testing.TB, n int) *httptest.Server {
	t.Helper()
	st, m := fxGroups(t, n)
	return pageServerOf(t, &pageBackend{st: st, hist: st.State.History, m: m}, nil)
}

func pageServerOf(t testing.TB, b *pageBackend, tokens *Tokens) *httptest.Server {
	t.Helper()
	s := NewServer(b, Options{Tokens: tokens, Now: func() time.Time { return fxNow }})
	RegisterStatusPage(s, b)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv
}

// pageGet fetches path and returns the response and its body.
func pageGet(t testing.TB, srv *httptest.Server, path string) (*http.Response, []byte) {
	t.Helper()
	return pageGetURL(t, srv.Client(), srv.URL+path)
}

// pageGetURL is pageGet for a whole URL.
func pageGetURL(t testing.TB, c *http.Client, url string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	buf, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", url, err)
	}
	return resp, buf
}

// fxWithheld is a primary that is DOWN at quorum while automatic decisions
// are paused: the flip is withheld, and the history records it.
func fxWithheld() Status {
	st := fxPending()
	v := &st.State
	v.Pending = nil
	v.Mode, v.Paused, v.PausedBy, v.PauseReason = "paused", true, "bob", "database migration on the backup"
	v.PausedUntil = fxNow.Add(90 * time.Minute).UnixNano()
	v.Sites[failover.Primary] = failover.Tally{Verdict: failover.Down, Down: []string{"a", "b"}, Up: []string{"c"}, Quorum: 2}
	v.WithheldRule, v.WithheldReason, v.WithheldSince = failover.RulePaused, "automatic decisions are paused by bob until 13:30 UTC", fxAt(45*time.Second)
	v.History = append(v.History,
		failover.Entry{Index: 960, At: fxAt(30 * time.Minute), Kind: failover.KindPause, Actor: "bob", Reason: "database migration on the backup"},
		failover.Entry{Index: 990, At: fxAt(45 * time.Second), Kind: failover.KindWithheld, From: failover.Primary, To: failover.Backup,
			Rule: failover.RulePaused, Actor: failover.SystemActor, Reason: "primary DOWN at quorum, but automatic decisions are paused",
			Tallies: map[failover.Site]failover.Tally{failover.Primary: v.Sites[failover.Primary], failover.Backup: v.Sites[failover.Backup]}})
	st.Warnings = []string{"automatic flip withheld (paused): automatic decisions are paused by bob until 13:30 UTC"}
	return st
}

// fxLongGroup is the longest group name a policy allows (63 characters,
// no hyphen-free break): the overview must wrap it, not overflow.
const fxLongGroup = "tutor-openedx-production-eu-west-region-three-lms-and-studio-01"

// fxGroupsMachine is a real decision core run through a policy of n
// failover groups (the default one and n-1 more, the last fxLongGroup, each with its own web
// probe and record, all sharing the region's kube probe) and probe rounds
// that leave, besides healthy groups on the primary:
//   - platform-02, platform-03 and fxLongGroup failed over (on the backup, blocked);
//   - platform-04 pending (a and b fail its primary for one round: a countdown);
//   - platform-05 paused, healthy;
//   - platform-06 paused while its primary is DOWN (a withheld flip).
//
// The last command is applied a second before fxNow.
func fxGroupsMachine(t testing.TB, n int) *failover.Machine {
	t.Helper()
	probes := func(names ...string) map[failover.Site]failover.SitePolicy {
		var rs []failover.ProbeRef
		for _, name := range names {
			rs = append(rs, failover.ProbeRef{Name: name, Critical: true})
		}
		return map[failover.Site]failover.SitePolicy{failover.Primary: {Probes: rs}, failover.Backup: {Probes: slices.Clone(rs)}}
	}
	record := func(name string, i int) []failover.Record {
		return []failover.Record{{Name: name, Type: "A", TTL: 60,
			Primary: []string{fmt.Sprintf("203.0.113.%d", i)}, Backup: []string{fmt.Sprintf("198.51.100.%d", i)}}}
	}
	pol := failover.Policy{
		Nodes: []string{"a", "b", "c"}, Quorum: 2, Fall: 3, Rise: 2, Interval: 2 * time.Second,
		AutoFailover: true, BlockWindow: time.Hour, Failback: failover.FailbackPolicy{Mode: failover.FailbackManual},
		Sites: probes("web-default", "kube"), Zone: "example.org.", Records: record("www", 200),
	}
	names := []string{failover.DefaultGroup}
	for i := 1; i < n; i++ {
		name := fmt.Sprintf("platform-%02d", i)
		if i == n-1 {
			name = fxLongGroup
		}
		names = append(names, name)
		pol.Groups = append(pol.Groups, failover.Group{Name: name, AutoFailover: true, BlockWindow: time.Hour,
			Failback: failover.FailbackPolicy{Mode: failover.FailbackManual},
			Sites:    probes("web-"+name, "kube"), Zone: "example.org.", Records: record(name, i)})
	}
	m := failover.New()
	var index uint64
	step := func(at time.Time, p failover.Payload) {
		t.Helper()
		index++
		if _, err := m.Step(index, failover.Command{At: at.UnixNano(), Payload: p}); err != nil {
			t.Fatalf("step %d %T: %v", index, p, err)
		}
	}
	// round reports every probe of every group from each watcher, the
	// primary's web probe of the groups in down failing on a and b.
	round := func(at time.Time, down ...string) {
		for _, node := range []string{"a", "b", "c"} {
			o := failover.Observe{Node: node, PolicyHash: m.View().PolicyHash}
			for _, site := range []failover.Site{failover.Primary, failover.Backup} {
				o.Results = append(o.Results, failover.ProbeResult{Site: site, Probe: "kube", OK: true, LatencyMS: 9, CompletedAt: at.UnixNano()})
				for _, g := range names {
					r := failover.ProbeResult{Site: site, Probe: "web-" + g, OK: true, LatencyMS: 30, CompletedAt: at.UnixNano()}
					if site == failover.Primary && node != "c" && slices.Contains(down, g) {
						r = failover.ProbeResult{Site: site, Probe: r.Probe, Class: "refused", Phase: "connect", Reason: "connection refused", LatencyMS: 2, CompletedAt: at.UnixNano()}
					}
					o.Results = append(o.Results, r)
				}
			}
			step(at, o)
		}
	}
	start := fxNow.Add(-10 * time.Minute)
	step(start, failover.SetPolicy{Policy: pol, Actor: "alice"})
	for i := range 3 {
		round(start.Add(time.Duration(2+2*i) * time.Second))
	}
	has := func(gs ...string) []string {
		return slices.DeleteFunc(gs, func(g string) bool { return !slices.Contains(names, g) })
	}
	for _, g := range has("platform-05", "platform-06") {
		step(start.Add(time.Minute), failover.Pause{Group: g, Actor: "bob", Reason: "upgrade of " + g})
	}
	failing := has("platform-02", "platform-03", fxLongGroup, "platform-06")
	for i := range 3 {
		round(start.Add(time.Minute+time.Duration(2+2*i)*time.Second), failing...)
	}
	for i := range 3 {
		at := fxNow.Add(-time.Duration(5-2*i) * time.Second)
		if i == 2 {
			round(at, append(failing, has("platform-04")...)...)
		} else {
			round(at, failing...)
		}
	}
	return m
}

// fxGroups is what node b serves for a cluster of fxGroupsMachine.
func fxGroups(t testing.TB, n int) (Status, *failover.Machine) {
	t.Helper()
	m := fxGroupsMachine(t, n)
	return fxGroupsStatus(m), m
}

// fxGroupsStatus is what node b serves for a cluster of replica m.
func fxGroupsStatus(m *failover.Machine) Status {
	st := fxFailedOver()
	st.State, st.ClusterHealth, st.StaleSeconds = m.View(), nil, 1
	st.Warnings = slices.Clone(st.State.Warnings)
	st.DNS = DNSCheck{}
	return st
}
