package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cluster"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/faultproxy"
)

// PreviousRelease is the commit the upgrade test starts from: the newest
// release before failover groups, which reads log format 2
// (PreviousFormat) and whose loader refuses a config with groups.
// docs/testing.md says how to move it forward.
const PreviousRelease = "ed7affa64a71e27b4f48b58444b2eed317549fc0"

// PreviousFormat is the log format PreviousRelease reads: what a trio
// with one watcher on it writes.
const PreviousFormat = 2

// upgradeGroups are the world of the upgrade test: the one pair of lms
// records, which every release guards (the default group), and two
// failover groups, which only this release's configs name.
var upgradeGroups = GroupOptions{Names: []string{"learn", "wiki"}, WithDefault: true}

// buildRelease builds ./cmd/drwatch as it was at commit, from this
// clone's own history, and returns the binary's path.
func buildRelease(t *testing.T, commit string) string {
	t.Helper()
	root := moduleRoot()
	has := func() ([]byte, error) {
		return exec.Command("git", "-C", root, "cat-file", "-e", commit+"^{commit}").CombinedOutput()
	}
	out, err := has()
	if err != nil {
		// A shallow clone (CI systems often make one) lacks the history:
		// deepen it from its origin once before giving up.
		if sh, _ := exec.Command("git", "-C", root, "rev-parse", "--is-shallow-repository").Output(); strings.TrimSpace(string(sh)) == "true" {
			fetch := exec.Command("git", "-C", root, "fetch", "--quiet", "--unshallow")
			if fo, ferr := fetch.CombinedOutput(); ferr != nil {
				t.Logf("git fetch --unshallow: %v: %s", ferr, fo)
			}
			out, err = has()
		}
	}
	if err != nil {
		t.Fatalf("commit %s, the release the upgrade test starts from, is not in this clone's history (%v: %s): "+
			"a shallow clone lacks it; run `git fetch --unshallow` (docs/testing.md)", commit, err, out)
	}
	src := t.TempDir()
	archive := exec.Command("/bin/sh", "-c", `git -C "$0" archive --format=tar "$1" | tar -x -C "$2"`, root, commit, src)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", commit, err, out)
	}
	bin := filepath.Join(t.TempDir(), "drwatch-"+commit[:12])
	build := exec.Command("go", "build", "-o", bin, "./cmd/drwatch")
	build.Dir = src
	build.Env = append(os.Environ(), "GOFLAGS=-mod=readonly")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build drwatch at %s: %v\n%s", commit, err, out)
	}
	return bin
}

// Invariant 15, with a real earlier release: a trio of PreviousRelease is
// upgraded one watcher at a time, the leader first, in the middle or
// last. After every step, through an outage of the primary and a manual
// failback, every watcher's reports are committed (the leader counts all
// three UP), no entry is refused and no watcher stops, and the three
// histories are identical and hold exactly the decisions a trio that
// never upgraded makes: an automatic failover, then the manual failback.
// While the trio is mixed this is done twice: under whichever watcher
// leads after the step, and under an upgraded one (handLeadTo), which
// must write nothing the others cannot read.
//
// An upgraded watcher's config adds two failover groups (upgradeGroups)
// to the pair the earlier release's config guards, which cannot name
// them. While the trio is mixed the groups stay off: the replicated
// policy has none, status shows none and the format stays
// PreviousFormat. Once all three run this release, the log format is
// raised and applied everywhere, the groups turn on by themselves, and
// (in one order) one group's outage moves that group alone.
func TestUpgradeFromAnEarlierReleaseInAnyOrder(t *testing.T) {
	old := buildRelease(t, PreviousRelease)
	for _, order := range []struct {
		name  string
		roles []string
		// moveGroup: once the groups are on, one group's outage moves
		// it alone. By then the trio is the same whatever the order, so
		// one order proves it for all, and the others save make test's
		// time.
		moveGroup bool
	}{
		{"leader first", []string{"leader", "follower", "follower"}, false},
		{"leader in the middle", []string{"follower", "leader", "follower"}, false},
		{"leader last", []string{"follower", "follower", "leader"}, true},
	} {
		t.Run(order.name, func(t *testing.T) {
			w := New(t, Options{Groups: upgradeGroups})
			checkRefusesGroups(t, w, old)
			for _, n := range w.Nodes {
				n.Bin, n.WithoutGroups = old, true
				must(t, w.writeConfig(n))
				if err := n.Start(); err != nil {
					t.Fatalf("start %s: %v", n.ID, err)
				}
			}
			waitAllReporting(t, w)
			waitLogFormat(t, w, PreviousFormat, "a trio of "+PreviousRelease[:7])
			upgraded := map[string]bool{}
			for step, role := range order.roles {
				n := pickRole(t, w, role, upgraded)
				t.Logf("step %d: upgrading %s (the %s)", step+1, n.ID, role)
				if code, err := n.Term(30 * time.Second); err != nil || code != 0 {
					t.Fatalf("stop %s: exit %d, %v", n.ID, code, err)
				}
				n.Bin, n.WithoutGroups = "", false
				must(t, w.writeConfig(n))
				if err := n.Start(); err != nil {
					t.Fatalf("start %s upgraded: %v", n.ID, err)
				}
				upgraded[n.ID] = true
				waitAllReporting(t, w)
				outageAndFailback(t, w)
				if step < len(order.roles)-1 {
					checkGroupsOff(t, w, n)
					// The other way round too: this release leading one
					// that cannot read what it does not yet write.
					l := handLeadTo(t, w, func(n *Node) bool { return upgraded[n.ID] })
					t.Logf("%s (upgraded) leads", l.ID)
					checkMixed(t, w, n, upgraded)
					outageAndFailback(t, w)
					checkGroupsOff(t, w, n)
				}
				checkNoneStopped(t, w)
			}
			waitLogFormat(t, w, failover.Format, "once all run this release")
			checkGroupsOn(t, w)
			outageAndFailback(t, w)
			checkNoneStopped(t, w)
			if order.moveGroup {
				checkOneGroupMovesAlone(t, w)
				checkNoneStopped(t, w)
			}
		})
	}
}

// waitLogFormat waits until every watcher applies log format f.
func waitLogFormat(t *testing.T, w *World, f int, when string) {
	t.Helper()
	Eventually(t, 60*time.Second, func() bool {
		for _, n := range w.Nodes {
			if st, err := w.Status(n); err != nil || st.LogFormat != f {
				return false
			}
		}
		return true
	}, "every watcher applying log format %d, %s", f, when)
}

// checkRefusesGroups: the earlier release's loader refuses this release's
// config with groups, so its watcher needs the config without them, which
// it takes.
func checkRefusesGroups(t *testing.T, w *World, old string) {
	t.Helper()
	n := w.Nodes[0]
	validate := func() (string, int) {
		cmd := exec.Command(old, "config", "validate", "-c", n.ConfigPath)
		cmd.Env = cleanEnv()
		out, err := cmd.CombinedOutput()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("run %s config validate: %v", old, err)
		}
		return string(out), code
	}
	n.WithoutGroups = false
	must(t, w.writeConfig(n))
	if out, code := validate(); code == 0 || !strings.Contains(out, "groups: unknown key") {
		t.Fatalf("%s config validate of a config with groups: exit %d, want it refused with \"groups: unknown key\"\n%s", PreviousRelease[:7], code, out)
	}
	n.WithoutGroups = true
	must(t, w.writeConfig(n))
	if out, code := validate(); code != 0 {
		t.Fatalf("%s config validate of the config without groups: exit %d\n%s", PreviousRelease[:7], code, out)
	}
}

// pickRole returns a watcher not yet upgraded that has role now ("leader"
// or "follower"). For "leader", an upgraded leader first hands the lead to
// one not yet upgraded. When no watcher left has the role (a follower is
// wanted, and the last one left leads), it returns that one and says so.
func pickRole(t *testing.T, w *World, role string, upgraded map[string]bool) *Node {
	t.Helper()
	if role == "leader" {
		return handLeadTo(t, w, func(n *Node) bool { return !upgraded[n.ID] })
	}
	l := w.Leader()
	var rest []*Node
	for _, n := range w.Nodes {
		if upgraded[n.ID] {
			continue
		}
		if n != l {
			return n
		}
		rest = append(rest, n)
	}
	t.Logf("no watcher left to upgrade is a follower; taking %s, the leader", rest[0].ID)
	return rest[0]
}

// handLeadTo makes a watcher that want accepts the leader and returns it.
// While another leads, it is stopped (SIGTERM: it hands over leadership)
// and started again on the same binary; the watchers want refuses are
// frozen (SIGSTOP) until the leader has committed a few more entries and
// then until it stopped, so that the most up-to-date peer it hands over
// to is one want accepts.
func handLeadTo(t *testing.T, w *World, want func(*Node) bool) *Node {
	t.Helper()
	for attempt := 0; attempt < 5; attempt++ {
		var l *Node
		Eventually(t, 60*time.Second, func() bool { l = w.Leader(); return l != nil }, "a leader")
		if want(l) {
			return l
		}
		st, err := w.Status(l)
		if err != nil {
			t.Fatal(err)
		}
		var frozen []*Node
		for _, n := range w.Nodes {
			if n != l && !want(n) {
				if err := n.Freeze(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = n.Thaw() })
				frozen = append(frozen, n)
			}
		}
		Eventually(t, 30*time.Second, func() bool {
			s, err := w.Status(l)
			return err == nil && s.Raft.CommitIndex >= st.Raft.CommitIndex+3
		}, "%s committing while the peers it must not hand over to are frozen", l.ID)
		code, err := l.Term(30 * time.Second)
		for _, n := range frozen {
			if err := n.Thaw(); err != nil {
				t.Fatal(err)
			}
		}
		if err != nil || code != 0 {
			t.Fatalf("stop %s: exit %d, %v", l.ID, code, err)
		}
		if err := l.Start(); err != nil {
			t.Fatalf("restart %s: %v", l.ID, err)
		}
		waitAllReporting(t, w)
	}
	t.Fatalf("the lead did not go where wanted in 5 hand-overs")
	return nil
}

// waitAllReporting waits until the leader counts all three watchers UP
// for both sites: every watcher's reports are committed, whichever
// release leads.
func waitAllReporting(t *testing.T, w *World) {
	t.Helper()
	Eventually(t, 90*time.Second, func() bool {
		st, ok := w.LeaderView()
		return ok && len(st.State.Sites[failover.Primary].Up) == 3 && len(st.State.Sites[failover.Backup].Up) == 3
	}, "a leader counting all three watchers UP for both sites")
}

// checkMixed: while the releases differ, an upgraded watcher shows each
// watcher's format and warns, and the cluster still writes the format
// every watcher reads.
func checkMixed(t *testing.T, w *World, upgraded *Node, isUpgraded map[string]bool) {
	t.Helper()
	var out, why string
	if !Within(60*time.Second, func() bool {
		var code int
		out, _, code = w.CLI(upgraded, "members", "list")
		if code != 0 || !strings.Contains(out, "warning: the servers run different releases") {
			why = "no warning"
			return false
		}
		js, _, code := w.CLI(upgraded, "members", "list", "-o", "json")
		var ms struct {
			Members []cluster.Member `json:"members"`
		}
		if code != 0 || json.Unmarshal([]byte(js), &ms) != nil || len(ms.Members) != len(w.Nodes) {
			why = "members list -o json: " + js
			return false
		}
		for _, m := range ms.Members {
			want := PreviousFormat
			if isUpgraded[m.ID] {
				want = failover.Format
			}
			if m.Format != want {
				why = fmt.Sprintf("%s format %d, want %d", m.ID, m.Format, want)
				return false
			}
		}
		return true
	}) {
		t.Fatalf("members list on %s naming each watcher's format and warning: %s\n%s", upgraded.ID, why, out)
	}
	st, err := w.Status(upgraded)
	if err != nil {
		t.Fatal(err)
	}
	if st.LogFormat != PreviousFormat {
		t.Errorf("mixed trio: %s applies log format %d, want %d\n%s", upgraded.ID, st.LogFormat, PreviousFormat, out)
	}
	warned := false
	for _, wn := range st.Warnings {
		warned = warned || strings.Contains(wn, "different releases")
	}
	if !warned {
		t.Errorf("mixed trio: status of %s warns %q, want the releases named", upgraded.ID, st.Warnings)
	}
}

// checkGroupsOff: while a watcher still runs PreviousRelease, the groups
// of the upgraded watchers' configs are not on: no replica's policy has
// them, `drwatch status` on upgraded lists none, its API knows none but
// the default group, and its status says why; the format stays
// PreviousFormat, the groups' records are as seeded, and no leader logged
// a command its stamp refused for the log format.
func checkGroupsOff(t *testing.T, w *World, upgraded *Node) {
	t.Helper()
	for _, n := range w.Running() {
		st, err := w.Status(n)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.State.Groups) != 0 || st.LogFormat != PreviousFormat {
			t.Errorf("mixed trio: %s shows groups %v at log format %d, want none at %d", n.ID, summaryNames(st.State.Groups), st.LogFormat, PreviousFormat)
		}
		if ls := LogLines(n, "(log_format)"); len(ls) > 0 {
			t.Errorf("mixed trio: %s logged a command refused for the log format:\n%s", n.ID, strings.Join(ls, "\n"))
		}
	}
	out, stderr, code := w.CLI(upgraded, "status")
	if code != 0 || strings.Contains(out, "GROUP") || strings.Contains(out, "--group NAME") {
		t.Errorf("mixed trio: drwatch status on %s: exit %d, want no groups\n%s\n%s", upgraded.ID, code, out, stderr)
	}
	if !strings.Contains(out, fmt.Sprintf("needs log format %d (the cluster writes %d)", failover.Format, PreviousFormat)) {
		t.Errorf("mixed trio: drwatch status on %s does not say its policy waits for log format %d:\n%s", upgraded.ID, failover.Format, out)
	}
	if ov, err := w.Overview(upgraded); err != nil || !slices.Equal(summaryNames(ov), []string{failover.DefaultGroup}) {
		t.Errorf("mixed trio: /api/v1/groups on %s: %v, %v; want the default group alone", upgraded.ID, summaryNames(ov), err)
	}
	for _, g := range w.Groups {
		if got := w.GroupAnswer(g); got != g.IPs[failover.Primary] {
			t.Errorf("mixed trio: BIND answers %q for %s, want %s as seeded", got, g.Name, g.IPs[failover.Primary])
		}
	}
}

// summaryNames are the names of gs, in order.
func summaryNames(gs []failover.GroupSummary) []string {
	var out []string
	for _, g := range gs {
		out = append(out, g.Name)
	}
	return out
}

// checkGroupsOn: once every watcher runs this release, the groups turn on
// by themselves: every replica's policy has them beside the default
// group, with both sites UP at quorum, and `drwatch status` lists them.
func checkGroupsOn(t *testing.T, w *World) {
	t.Helper()
	want := []string{failover.DefaultGroup}
	for _, g := range w.Groups {
		want = append(want, g.Name)
	}
	Eventually(t, 60*time.Second, func() bool {
		for _, n := range w.Nodes {
			st, err := w.Status(n)
			if err != nil || !slices.Equal(summaryNames(st.State.Groups), want) {
				return false
			}
		}
		return true
	}, "every replica's policy with the groups %v once all run this release", want)
	w.waitGroupsHealthy(90 * time.Second)
	out, stderr, code := w.CLI(w.Follower(), "status")
	if code != 0 {
		t.Fatalf("drwatch status: exit %d\n%s", code, stderr)
	}
	for _, g := range w.Groups {
		if !strings.Contains(out, "\n"+g.Name+" ") {
			t.Errorf("drwatch status once the groups are on lists no line for %s:\n%s", g.Name, out)
		}
	}
}

// checkOneGroupMovesAlone kills the first group's primary Caddy: that
// group fails over with a decision and fence of its own, and the other
// group and the default pair stay where they are, with no new decision.
func checkOneGroupMovesAlone(t *testing.T, w *World) {
	t.Helper()
	moved, still := w.Groups[0], w.Groups[1]
	before := Decisions(w.SameHistory(30 * time.Second))
	killed := time.Now()
	if err := moved.Sites[failover.Primary].Caddy.Stop(); err != nil {
		t.Fatal(err)
	}
	waitGroupFailover(t, w, moved, killed)
	if got := w.GroupAnswer(still); got != still.IPs[failover.Primary] {
		t.Errorf("after %s's failover BIND answers %q for %s, want its primary %s", moved.Name, got, still.Name, still.IPs[failover.Primary])
	}
	if got := w.Answer(); got != PrimaryIP {
		t.Errorf("after %s's failover BIND answers %q for %s, want the primary %s", moved.Name, got, Name, PrimaryIP)
	}
	if ds := Decisions(sameGroupHistory(t, w, still.Name)); len(ds) != 0 {
		t.Errorf("after %s's failover %s's history holds decisions:\n%s", moved.Name, still.Name, Summary(ds))
	}
	if ds := Decisions(w.SameHistory(30 * time.Second)); len(ds) != len(before)+1 || ds[len(ds)-1].Group != moved.Name {
		t.Errorf("after %s's failover the decisions are:\n%s want those before and %s's alone", moved.Name, Summary(ds), moved.Name)
	}
}

// outageAndFailback cuts every watcher off the primary until the trio
// fails over, heals it, fails back by hand, and checks that the three
// histories agree and end with those two decisions.
func outageAndFailback(t *testing.T, w *World) {
	t.Helper()
	before := len(Decisions(w.SameHistory(30 * time.Second)))
	primary := w.Sites[failover.Primary]
	primary.SetMode(faultproxy.Reset)
	Eventually(t, 60*time.Second, func() bool { return w.Answer() == BackupIP }, "BIND answering the backup after the primary's outage")
	primary.SetMode(faultproxy.Pass)
	waitAllReporting(t, w)
	out, stderr, code := w.CLI(w.Follower(), "failback", "--reason", "upgrade test", "--yes", "--wait")
	if code != 0 {
		t.Fatalf("failback: exit %d\n%s\n%s", code, out, stderr)
	}
	if got := w.Answer(); got != PrimaryIP {
		t.Fatalf("after failback --wait BIND answers %s, want %s", got, PrimaryIP)
	}
	ds := Decisions(w.SameHistory(30 * time.Second))
	if len(ds) != before+2 || ds[before].Kind != failover.KindAutoFailover || ds[before+1].Kind != failover.KindManualFailback {
		t.Fatalf("decisions after the outage and failback:\n%s want %d before them, then auto_failover and manual_failback", Summary(ds), before)
	}
}

// checkNoneStopped: every watcher runs, none halted, and no log holds an
// entry or report refused for its encoding.
func checkNoneStopped(t *testing.T, w *World) {
	t.Helper()
	for _, n := range w.Nodes {
		if !n.Running() {
			t.Errorf("%s is not running\n%s", n.ID, tail(n.Log(), 20))
		}
		for _, bad := range []string{"replica halted", "decode command", "unknown field", "unknown command type"} {
			if ls := LogLines(n, bad); len(ls) > 0 {
				t.Errorf("%s logged %q:\n%s", n.ID, bad, strings.Join(ls, "\n"))
			}
		}
	}
}
