package e2e

import (
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/api"
	"github.com/drwatch/drwatch/failover"
)

// Two platforms in one zone, each a failover group with its own Caddy per
// site, its own record and its own fence, and both naming the region's
// probe (a Caddy per site standing for the region's Kubernetes API). When
// one platform's primary Caddy dies, only that platform moves: the other's
// record, fence and state stay as they were. When the region's primary
// endpoint dies too, the other platform follows with a decision, a
// generation and a fence of its own, and the first makes no second move.
//
// The region probe runs on both sites, not only on the primary: it is what
// tells the watchers that the backup region can take the platforms, so a
// failover never lands in a region that is down too.
func TestOnlyTheFailedGroupMovesUntilTheSharedRegionProbeFails(t *testing.T) {
	w := Start(t, Options{Groups: GroupOptions{Names: []string{"learn", "wiki"}}})
	learn, wiki := w.Group("learn"), w.Group("wiki")
	for _, g := range w.Groups {
		Eventually(t, 30*time.Second, func() bool { return w.GroupAnswer(g) == g.IPs[failover.Primary] },
			"BIND answers %s's primary address before any fault", g.Name)
	}
	wikiFence0 := mustGroupFence(t, w, wiki)
	wikiDesired0 := groupDesired(t, w, wiki)

	// One platform's Caddy dies: only its group moves.
	killed := time.Now()
	if err := learn.Sites[failover.Primary].Caddy.Stop(); err != nil {
		t.Fatal(err)
	}
	dl := waitGroupFailover(t, w, learn, killed)
	if got := w.GroupAnswer(wiki); got != wiki.IPs[failover.Primary] {
		t.Errorf("after learn's failover BIND answers %q for wiki, want its primary %s untouched", got, wiki.IPs[failover.Primary])
	}
	if got := mustGroupFence(t, w, wiki); got != wikiFence0 {
		t.Errorf("after learn's failover wiki's fence at BIND is %q, want %q untouched", got, wikiFence0)
	}
	if got := groupDesired(t, w, wiki); !reflect.DeepEqual(got, wikiDesired0) {
		t.Errorf("after learn's failover wiki's desired state is %+v, want %+v untouched", got, wikiDesired0)
	}
	st := mustGroupStatus(t, w, w.Leader(), wiki.Name)
	if st.State.Active != failover.Primary || st.State.Blocked || st.State.Sites[failover.Primary].Verdict != failover.Up {
		t.Errorf("after learn's failover wiki: active %s, blocked %v, primary %s; want primary, not blocked, UP",
			st.State.Active, st.State.Blocked, st.State.Sites[failover.Primary].Verdict)
	}
	if ds := Decisions(sameGroupHistory(t, w, wiki.Name)); len(ds) != 0 {
		t.Errorf("after learn's failover wiki's history holds decisions:\n%s", Summary(ds))
	}

	// The region's primary endpoint dies: the other platform follows.
	killed = time.Now()
	if err := w.Sites[failover.Primary].Caddy.Stop(); err != nil {
		t.Fatal(err)
	}
	dw := waitGroupFailover(t, w, wiki, killed)
	if dw.Gen <= dl.Gen {
		t.Errorf("wiki's decision has gen %d, want a generation of its own after learn's %d", dw.Gen, dl.Gen)
	}
	checkGroupFence(t, w, learn, dl.Gen)
	if ds := Decisions(sameGroupHistory(t, w, learn.Name)); len(ds) != 1 || ds[0].Gen != dl.Gen {
		t.Errorf("after the region outage learn's history holds decisions:\n%s want only its first, gen %d", Summary(ds), dl.Gen)
	}
	if got := w.GroupAnswer(learn); got != learn.IPs[failover.Backup] {
		t.Errorf("after the region outage BIND answers %q for learn, want its backup %s", got, learn.IPs[failover.Backup])
	}
}

// waitGroupFailover waits until BIND answers g's backup address and every
// node's history of g holds exactly one decision, an automatic failover
// of g to the backup with at least quorum DOWN voters, verified once, and
// g's fence at BIND names its generation; it returns that decision.
func waitGroupFailover(t *testing.T, w *World, g *Group, killed time.Time) failover.Entry {
	t.Helper()
	Eventually(t, 90*time.Second, func() bool { return w.GroupAnswer(g) == g.IPs[failover.Backup] }, "BIND answers %s's backup address", g.Name)
	t.Logf("%s: BIND answers the backup %s after the kill", g.Name, time.Since(killed).Round(time.Millisecond))
	var h []failover.Entry
	Eventually(t, 60*time.Second, func() bool {
		h = sameGroupHistory(t, w, g.Name)
		ds := Decisions(h)
		return len(ds) == 1 && len(Actions(h, ds[0].Gen, failover.OutcomeVerified)) == 1
	}, "every node's history of %s holds one verified decision", g.Name)
	d := Decisions(h)[0]
	if d.Kind != failover.KindAutoFailover || d.Group != g.Name || d.From != failover.Primary || d.To != failover.Backup {
		t.Fatalf("%s's decision: got %s (group %q), want an auto_failover of group %s primary->backup", g.Name, Summary([]failover.Entry{d}), d.Group, g.Name)
	}
	if down := DownVoters(d, failover.Primary); len(down) < w.Opts.Quorum {
		t.Errorf("%s's decision: DOWN voters %v, want at least %d", g.Name, down, w.Opts.Quorum)
	}
	if tm := d.Timings; tm.DetectedAt < killed.UnixNano() || tm.DetectedAt >= tm.DecidedAt {
		t.Errorf("%s's decision: detected %d, decided %d; want kill %d <= detected < decided", g.Name, tm.DetectedAt, tm.DecidedAt, killed.UnixNano())
	}
	checkGroupFence(t, w, g, d.Gen)
	return d
}

// sameGroupHistory polls GET /api/v1/history?group=NAME on every running
// node until all return the same history, which must hold no other
// group's entry, and returns it.
func sameGroupHistory(t *testing.T, w *World, group string) []failover.Entry {
	t.Helper()
	h := w.sameHistoryOf(30*time.Second, "histories of group "+group, func(n *Node) ([]failover.Entry, error) { return w.GroupHistory(n, group) })
	for _, e := range h {
		if e.Group != "" && e.Group != group {
			t.Fatalf("history?group=%s holds an entry of group %q: %s", group, e.Group, Summary([]failover.Entry{e}))
		}
	}
	return h
}

// checkGroupFence fails t unless g's fence TXT at BIND names gen.
func checkGroupFence(t *testing.T, w *World, g *Group, gen uint64) {
	t.Helper()
	if got, want := mustGroupFence(t, w, g), "gen="+strconv.FormatUint(gen, 10); got != want {
		t.Errorf("%s's fence %s at BIND: got %q, want %q", g.Name, g.Fence, got, want)
	}
}

func mustGroupFence(t *testing.T, w *World, g *Group) string {
	t.Helper()
	f, err := w.GroupFence(g)
	if err != nil {
		t.Fatalf("%s's fence at BIND: %v", g.Name, err)
	}
	return f
}

func mustGroupStatus(t *testing.T, w *World, n *Node, group string) api.Status {
	t.Helper()
	if n == nil {
		t.Fatal("no leader")
	}
	st, err := w.GroupStatus(n, group)
	if err != nil {
		t.Fatalf("status of group %s on %s: %v", group, n.ID, err)
	}
	return st
}

// groupDesired is the desired state of group as the leader shows it.
func groupDesired(t *testing.T, w *World, g *Group) failover.Desired {
	t.Helper()
	var d failover.Desired
	Eventually(t, 30*time.Second, func() bool {
		l := w.Leader()
		if l == nil {
			return false
		}
		st, err := w.GroupStatus(l, g.Name)
		d = st.State.Desired
		return err == nil
	}, "the leader shows group %s", g.Name)
	return d
}
