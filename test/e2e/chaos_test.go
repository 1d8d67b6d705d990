package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/faultproxy"
)

// The chaos scenarios. Scenario 1 is TestAutoFailoverWhenPrimaryCaddyDies,
// 4 is TestLeaderKilledBetweenWriteAndResult and 10 is TestPausedOutageThenResume
// (failover_e2e_test.go).

// Scenario 2: the primary is blackholed (every probe times out).
// Invariant: BIND answers the backup within (fall+1)×interval+1s plus one
// probe timeout of the fault; the flip carries quorum evidence.
func TestChaos02PrimaryBlackholed(t *testing.T) {
	w := Start(t, Options{})
	start := time.Now()
	w.Sites[failover.Primary].SetMode(faultproxy.Blackhole)
	Eventually(t, 60*time.Second, func() bool { return w.Answer() == BackupIP }, "BIND answers the backup address")
	took := time.Since(start)
	bound := time.Duration(w.Opts.Fall+1)*w.Opts.Interval + time.Second + w.Opts.Timeout
	t.Logf("flip visible at BIND %s after the blackhole (bound %s)", took.Round(time.Millisecond), bound)
	if took > bound {
		t.Errorf("flip took %s, want at most (fall+1)×interval+1s+timeout = %s", took, bound)
	}
	h := waitVerified(t, w)
	if err := CheckQuorumEvidence(h, w.Opts.Quorum); err != nil {
		t.Error(err)
	}
	if ds := Decisions(h); len(ds) != 1 || ds[0].Kind != failover.KindAutoFailover {
		t.Errorf("decisions: got\n%s want one auto_failover", Summary(ds))
	}
}

// Scenario 3: one watcher's path to the primary is cut; it alone votes
// DOWN. Invariant: no flip, ever (checked over 10 rounds after its vote);
// the status (drwatch status -o json) shows the disagreement, and no status
// counts down to a flip: the JSON, `drwatch status` and the page say that 1
// of 3 watchers fails and a flip needs 2 (invariant 7).
func TestChaos03SingleWatcherCut(t *testing.T) {
	w := Start(t, Options{})
	serial0 := mustSerial(t, w)
	lonely := w.Nodes[0]
	w.Sites[failover.Primary].Proxies[lonely.ID].SetMode(faultproxy.Blackhole)
	Eventually(t, 60*time.Second, func() bool {
		st, ok := w.LeaderView()
		return ok && slices.Equal(st.State.Sites[failover.Primary].Down, []string{lonely.ID})
	}, "watcher %s alone votes the primary DOWN", lonely.ID)

	// While the window runs, no node's status may count down with fewer
	// failing watchers than the quorum (invariant 7); each poll asks the
	// next node in turn.
	window := 10 * w.Opts.Interval
	var polls int
	var falseCountdown string
	if Within(window, func() bool {
		n := w.Nodes[polls%len(w.Nodes)]
		polls++
		if st, err := w.Status(n); err == nil && falseCountdown == "" {
			if p := st.State.Pending; p != nil && (p.Countdown() || p.Rounds != 0) && len(p.Leaning) < w.Opts.Quorum {
				falseCountdown = fmt.Sprintf("on %s: %+v", n.ID, *p)
			}
		}
		return w.Answer() != PrimaryIP
	}) {
		t.Fatalf("a single watcher's view flipped DNS: BIND answers %s", w.Answer())
	}
	if falseCountdown != "" {
		t.Errorf("status counted down with fewer failing watchers than the quorum %d: pending %s", w.Opts.Quorum, falseCountdown)
	}
	t.Run("status says 1 of 3 watchers fail and a flip needs 2, with no countdown", func(t *testing.T) {
		statusShowsNoCountdown(t, w, lonely)
	})
	for _, n := range w.Running() {
		st, err := w.StatusCLI(n)
		if err != nil {
			t.Fatal(err)
		}
		tally := st.State.Sites[failover.Primary]
		if tally.Verdict != failover.Up || !slices.Equal(tally.Down, []string{lonely.ID}) || len(tally.Up) != 2 {
			t.Errorf("status on %s: primary tally %+v, want UP with DOWN=[%s] and two UP", n.ID, tally, lonely.ID)
		}
		for _, nv := range st.State.Nodes {
			want := failover.Up
			if nv.Node == lonely.ID {
				want = failover.Down
			}
			if nv.Verdicts[failover.Primary] != want {
				t.Errorf("status on %s: watcher %s votes %s on the primary, want %s", n.ID, nv.Node, nv.Verdicts[failover.Primary], want)
			}
		}
		if st.State.Desired.Gen != 0 || st.State.Active != failover.Primary {
			t.Errorf("status on %s: desired gen %d active %s, want 0 and primary", n.ID, st.State.Desired.Gen, st.State.Active)
		}
	}
	if h := w.SameHistory(30 * time.Second); len(Decisions(h)) != 0 {
		t.Errorf("decisions without quorum:\n%s", Summary(h))
	}
	if s := mustSerial(t, w); s != serial0 {
		t.Errorf("BIND serial moved from %d to %d", serial0, s)
	}
}

// statusShowsNoCountdown checks that the status JSON, `drwatch status` and
// the status page of the leader say that only lonely fails the primary and
// that a flip needs the quorum, with no countdown. A probe of another
// watcher may fail once on a busy machine (it then leans too), so this
// polls until the calm state shows on all three.
func statusShowsNoCountdown(t *testing.T, w *World, lonely *Node) {
	var healthy []string
	for _, n := range others(w, lonely) {
		healthy = append(healthy, n.ID)
	}
	want := fmt.Sprintf("1 of 3 watchers (%s) sees primary failing; a flip needs %d; %s and %s see it UP",
		lonely.ID, w.Opts.Quorum, healthy[0], healthy[1])
	var why string
	if !Within(10*w.Opts.Interval, func() bool {
		ld := w.Leader()
		if ld == nil {
			why = "no leader"
			return false
		}
		st, err := w.Status(ld)
		if err != nil {
			why = err.Error()
			return false
		}
		p := st.State.Pending
		if p == nil || !slices.Equal(p.Leaning, []string{lonely.ID}) {
			why = fmt.Sprintf("status JSON on %s: pending %+v, want leaning [%s]", ld.ID, p, lonely.ID)
			return false
		}
		if p.Countdown() || p.Rounds != 0 || p.In != 0 {
			why = fmt.Sprintf("status JSON on %s: pending %+v counts down, want no countdown", ld.ID, *p)
			return false
		}
		if !slices.Equal(p.Up, healthy) || p.Quorum != w.Opts.Quorum {
			why = fmt.Sprintf("status JSON on %s: pending %+v, want up %v and quorum %d", ld.ID, *p, healthy, w.Opts.Quorum)
			return false
		}
		out, stderr, code := w.CLI(ld, "status")
		if code != 0 || !strings.Contains(out, want) {
			why = fmt.Sprintf("drwatch status on %s (exit %d) lacks %q:\n%s%s", ld.ID, code, want, out, stderr)
			return false
		}
		code, page, err := w.get(ld, "/")
		if err != nil || code != 200 || !strings.Contains(page, want) {
			why = fmt.Sprintf("page of %s (HTTP %d, %v) lacks %q", ld.ID, code, err, want)
			return false
		}
		if strings.Contains(page, "automatic failover to backup in") {
			why = fmt.Sprintf("page of %s counts down to a failover", ld.ID)
			return false
		}
		return true
	}) {
		t.Errorf("the status never said only %s fails: %s", lonely.ID, why)
	}
}

// Scenario 6: BIND is down when the flip is decided. Invariants: the
// leader keeps retrying, never more than policy.interval apart, so the
// flip lands at the first retry after BIND answers again; it is written
// once and verified once.
// retryIn reads the delay a "will retry" log line schedules.
var retryIn = regexp.MustCompile(`retry_in=(\S+)`)

func TestChaos06BINDDownWhenFlipDue(t *testing.T) {
	w := Start(t, Options{})
	serial0 := mustSerial(t, w)
	w.StopBIND()
	if err := w.Sites[failover.Primary].Caddy.Stop(); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 60*time.Second, func() bool {
		st, ok := w.LeaderView()
		return ok && st.State.Desired.Gen != 0 && st.Reconcile != nil && st.Reconcile.Error != ""
	}, "the flip is decided and the leader's DNS write fails")
	// Let it fail for a few more rounds so the retry back-off grows.
	leader := w.Leader()
	Eventually(t, 30*time.Second, func() bool {
		return len(LogLines(leader, "reconcile")) >= 4 || len(LogLines(leader, "dns")) >= 4
	}, "the leader logs its retries")
	w.RestartBIND()
	back := time.Now()
	Eventually(t, 30*time.Second, func() bool { return w.Answer() == BackupIP }, "the flip lands at BIND")
	t.Logf("flip landed %s after BIND answered again", time.Since(back).Round(time.Millisecond))
	// A returning DNS server gets the flip at the next retry, and the node
	// caps the reconciler's retry back-off at policy.interval, so a retry
	// is never further away. That is read from the retries the leader
	// scheduled, not from a wall clock a loaded machine stretches.
	retries := 0
	for _, line := range LogLines(leader, "dns reconcile will retry") {
		m := retryIn.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("retry line without retry_in: %s", line)
		}
		d, err := time.ParseDuration(m[1])
		if err != nil {
			t.Fatalf("retry line %q: %v", line, err)
		}
		retries++
		if d > w.Opts.Interval {
			t.Errorf("the leader scheduled a retry in %s, want at most policy.interval %s: %s", d, w.Opts.Interval, line)
		}
	}
	if retries == 0 {
		t.Errorf("the leader logged no scheduled retry while BIND was down")
	}
	h := waitVerified(t, w)
	d := Decisions(h)
	if len(d) != 1 {
		t.Fatalf("decisions: got\n%s want one", Summary(h))
	}
	if n := len(Actions(h, d[0].Gen, failover.OutcomeVerified)); n != 1 {
		t.Errorf("verified results: got %d, want 1", n)
	}
	if s := mustSerial(t, w); s != serial0+1 {
		t.Errorf("BIND serial: got %d, want %d", s, serial0+1)
	}
}

// Scenario 7: all three watchers are restarted after a failover.
// Invariants: every one exits 0 on SIGTERM; after the restart the active
// site is still the backup (never silently reset), the history is the same
// on every node and kept every entry, and no DNS write happens on restart.
func TestChaos07RestartAllAfterFailover(t *testing.T) {
	w := Start(t, Options{})
	if out, stderr, code := w.CLI(w.Follower(), "failover", "--to", "backup", "--reason", "before restart", "--yes", "--wait"); code != 0 {
		t.Fatalf("failover: exit %d\n%s\n%s", code, out, stderr)
	}
	before := w.SameHistory(30 * time.Second)
	serial := mustSerial(t, w)
	for _, n := range w.Nodes {
		if code, err := n.Term(30 * time.Second); err != nil || code != 0 {
			t.Errorf("SIGTERM on %s: exit %d (%v), want 0", n.ID, code, err)
		}
	}
	for _, n := range w.Nodes {
		if err := n.Start(); err != nil {
			t.Fatal(err)
		}
	}
	w.WaitHealthy(90 * time.Second)
	// Give the new leader's reconciler several passes to (wrongly) write.
	Within(5*w.Opts.Interval, func() bool { return false })
	st, _ := w.LeaderView()
	if st.State.Active != failover.Backup || !st.State.Desired.Done {
		t.Errorf("after restart: active %s done %v, want backup and done", st.State.Active, st.State.Desired.Done)
	}
	if got := w.Answer(); got != BackupIP {
		t.Errorf("after restart BIND answers %s, want %s", got, BackupIP)
	}
	if s := mustSerial(t, w); s != serial {
		t.Errorf("BIND serial moved from %d to %d on restart: a DNS write happened", serial, s)
	}
	after := w.SameHistory(30 * time.Second)
	if len(after) < len(before) {
		t.Fatalf("history shrank from %d to %d entries", len(before), len(after))
	}
	for i := range before {
		if before[i].Index != after[i].Index || before[i].Kind != after[i].Kind || before[i].Actor != after[i].Actor {
			t.Errorf("history entry %d changed across the restart: %+v -> %+v", i, before[i], after[i])
		}
	}
	if len(Decisions(after)) != len(Decisions(before)) {
		t.Errorf("new decisions after the restart:\n%s", Summary(after[len(before):]))
	}
}

// Scenario 8: a flapping primary (down and up every 2s for 60s).
// Invariant: at most one automatic flip, and at most one DNS write.
func TestChaos08FlappingPrimary(t *testing.T) {
	w := Start(t, Options{})
	serial0 := mustSerial(t, w)
	site := w.Sites[failover.Primary]
	end := time.Now().Add(60 * time.Second)
	down := false
	tick := time.NewTicker(2 * time.Second)
	for time.Now().Before(end) {
		down = !down
		if down {
			site.SetMode(faultproxy.Reset)
		} else {
			site.SetMode(faultproxy.Pass)
		}
		<-tick.C
	}
	tick.Stop()
	site.SetMode(faultproxy.Pass)
	h := w.SameHistory(30 * time.Second)
	auto := 0
	for _, d := range Decisions(h) {
		if strings.HasPrefix(d.Kind, "auto_") {
			auto++
		}
	}
	if auto > 1 {
		t.Errorf("automatic flips during flapping: got %d, want at most 1\n%s", auto, Summary(h))
	}
	if err := CheckQuorumEvidence(h, w.Opts.Quorum); err != nil {
		t.Error(err)
	}
	if s := mustSerial(t, w); s > serial0+1 {
		t.Errorf("BIND serial: got %d, want at most %d", s, serial0+1)
	}
	t.Logf("automatic flips: %d; BIND answers %s", auto, w.Answer())
}

// Scenario 9: the backup is unhealthy when the primary dies. Invariants: no
// automatic flip; the status says why (each watcher that sees both sites
// fail abstains, with the self-check reason, so the primary has no DOWN
// quorum and the flip cannot be taken); a manual failover without --force
// is refused with exit 3 and names the rule, and with --force it works and
// is recorded as forced.
func TestChaos09BackupUnhealthy(t *testing.T) {
	w := Start(t, Options{})
	w.Sites[failover.Backup].SetMode(faultproxy.Reset)
	Eventually(t, 60*time.Second, func() bool {
		st, ok := w.LeaderView()
		return ok && st.State.Sites[failover.Backup].Verdict == failover.Down
	}, "the backup is DOWN at quorum")
	w.Sites[failover.Primary].SetMode(faultproxy.Reset)
	Eventually(t, 60*time.Second, func() bool {
		st, ok := w.LeaderView()
		if !ok || st.State.Sites[failover.Primary].Verdict == failover.Up {
			return false
		}
		for _, nv := range st.State.Nodes {
			if nv.Abstain == "" {
				return false
			}
		}
		return true
	}, "every watcher abstains and the primary is no longer UP at quorum")
	if Within(5*w.Opts.Interval, func() bool { return w.Answer() != PrimaryIP }) {
		t.Fatalf("flipped to an unhealthy backup: BIND answers %s", w.Answer())
	}
	f := w.Follower()
	st, err := w.StatusCLI(f)
	if err != nil {
		t.Fatal(err)
	}
	if st.State.Desired.Gen != 0 || st.State.Active != failover.Primary {
		t.Errorf("status: desired gen %d active %s, want 0 and primary", st.State.Desired.Gen, st.State.Active)
	}
	for _, nv := range st.State.Nodes {
		if !strings.Contains(nv.Abstain, "both sites") {
			t.Errorf("status: watcher %s abstain reason %q, want the self-check naming both sites", nv.Node, nv.Abstain)
		}
	}
	if v := st.State.Sites[failover.Primary].Verdict; v != failover.NoQuorum {
		t.Errorf("status: primary verdict %s, want %s", v, failover.NoQuorum)
	}
	if h := w.SameHistory(30 * time.Second); len(Decisions(h)) != 0 {
		t.Errorf("history: want no decision, got\n%s", Summary(h))
	}
	_, stderr, code := w.CLI(f, "failover", "--to", "backup", "--reason", "unforced", "--yes")
	if code != 3 || !strings.Contains(stderr, "--force") {
		t.Errorf("unforced failover: exit %d stderr %q, want 3 naming the rule and --force", code, stderr)
	}
	out, stderr, code := w.CLI(f, "failover", "--to", "backup", "--reason", "forced", "--force", "--yes", "--wait")
	if code != 0 {
		t.Fatalf("forced failover: exit %d\n%s\n%s", code, out, stderr)
	}
	if got := w.Answer(); got != BackupIP {
		t.Errorf("after forced failover BIND answers %s, want %s", got, BackupIP)
	}
	h := w.SameHistory(30 * time.Second)
	if m := OfKind(h, failover.KindManualFailover); len(m) != 1 || !m[0].Forced {
		t.Errorf("manual failover entries: got\n%s want one, forced", Summary(m))
	}
}
