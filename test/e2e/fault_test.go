package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/api"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/faultproxy"
)

// viewVia returns the status of the first of nodes that names one of nodes
// as leader (so a frozen or cut-off node is never asked).
func viewVia(w *World, nodes ...*Node) (api.Status, bool) {
	for _, n := range nodes {
		st, err := w.Status(n)
		if err != nil {
			continue
		}
		for _, m := range nodes {
			if st.Leader == m.ID {
				return st, true
			}
		}
	}
	return api.Status{}, false
}

func others(w *World, not *Node) []*Node {
	var out []*Node
	for _, n := range w.Nodes {
		if n != not {
			out = append(out, n)
		}
	}
	return out
}

// Scenario 5: the old leader is partitioned away from the other two (both
// ways, through the per-node proxies that filter by source IP) while its
// DNS write for gen X is in flight, held by the fault proxy on its path to
// BIND. The majority elects a new leader, which writes gen X and then an
// operator's failback, gen Y. Then the old leader's held write reaches
// BIND. Invariants: BIND refuses it (the fence prerequisite fails), DNS
// keeps gen Y (record and fence), the serial grew by exactly the new
// leader's two writes, the old leader stepped down, and after the
// partition heals every node's history is identical with each decision
// verified exactly once.
func TestChaos05PartitionedLeaderWriteFails(t *testing.T) {
	deposedLeaderWrite(t, func(w *World, old *Node) func() {
		w.Partition(old)
		return w.Heal
	})
}

// Scenario 5, process-pause variant: the old leader is frozen (SIGSTOP, a
// stop-the-world pause such as a long GC or a suspended VM) with its DNS
// write for gen X in flight, and thawed after the held write was refused.
// Same invariants.
func TestChaos05FrozenLeaderWriteFails(t *testing.T) {
	deposedLeaderWrite(t, func(w *World, old *Node) func() {
		if err := old.Freeze(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = old.Thaw() })
		return func() {
			if err := old.Thaw(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// deposedLeaderWrite runs scenario 5 with cut isolating the old leader
// and returning the function that ends the isolation.
func deposedLeaderWrite(t *testing.T, cut func(w *World, old *Node) (heal func())) {
	// held by the fault proxy on its path to BIND. The other two elect a new
	// leader, which writes gen X and then an operator's failback, gen Y. Then
	// the old leader's held write reaches BIND. Invariants: BIND refuses it
	// (the fence prerequisite fails), DNS keeps gen Y (record and fence), the
	// serial grew by exactly the two writes of the new leader, and once the
	// old leader is back every node's history is identical, with each decision
	// verified exactly once.
	w := Start(t, Options{})
	serial0 := mustSerial(t, w)
	old := w.Leader()
	rest := others(w, old)
	held := w.DNS[old.ID].Proxy
	held.SetMode(faultproxy.Blackhole)
	accepted := held.Stats().Accepted

	if out, stderr, code := w.CLI(rest[0], "failover", "--to", "backup", "--reason", "gen X", "--yes"); code != 0 {
		t.Fatalf("failover: exit %d\n%s\n%s", code, out, stderr)
	}
	Eventually(t, 30*time.Second, func() bool { return held.Stats().Accepted > accepted },
		"the old leader %s sends its UPDATE into the held path", old.ID)
	heal := cut(w, old)
	t.Logf("isolated leader %s with its write for gen X in flight", old.ID)

	var genX uint64
	Eventually(t, 60*time.Second, func() bool {
		st, ok := viewVia(w, rest...)
		genX = st.State.Desired.Gen
		return ok && st.State.Desired.Done && st.State.Desired.Active == failover.Backup
	}, "the new leader completes gen X")
	if got := w.Answer(); got != BackupIP {
		t.Fatalf("after gen X BIND answers %s, want %s", got, BackupIP)
	}
	if out, stderr, code := w.CLI(rest[1], "failback", "--reason", "gen Y", "--yes", "--wait"); code != 0 {
		t.Fatalf("failback: exit %d\n%s\n%s", code, out, stderr)
	}
	st, _ := viewVia(w, rest...)
	genY := st.State.Desired.Gen
	if genY <= genX {
		t.Fatalf("gen Y %d is not after gen X %d", genY, genX)
	}

	// Release the old leader's write and let it see the outcome.
	refusedBefore := strings.Count(w.BIND.Log(), "prerequisite not satisfied")
	held.SetMode(faultproxy.Pass)
	Eventually(t, 30*time.Second, func() bool {
		return strings.Count(w.BIND.Log(), "prerequisite not satisfied") > refusedBefore
	}, "BIND refuses the deposed leader's write")
	heal()

	if got := w.Answer(); got != PrimaryIP {
		t.Errorf("BIND answers %s after the stale write, want %s (gen Y)", got, PrimaryIP)
	}
	checkFence(t, w, genY)
	if s := mustSerial(t, w); s != serial0+2 {
		t.Errorf("BIND serial: got %d, want %d (two writes by the new leader, none by the old)", s, serial0+2)
	}
	Eventually(t, 60*time.Second, func() bool {
		st, err := w.Status(old)
		return err == nil && st.State.Desired.Gen == genY
	}, "the old leader catches up")
	h := w.SameHistory(60 * time.Second)
	for _, g := range []uint64{genX, genY} {
		if n := len(Actions(h, g, failover.OutcomeVerified)); n != 1 {
			t.Errorf("verified results for gen %d: got %d, want 1\n%s", g, n, Summary(h))
		}
	}
	if ds := Decisions(h); len(ds) != 2 {
		t.Errorf("decisions: got\n%s want gen X and gen Y", Summary(ds))
	}
	// DNS stays on gen Y after the old leader rejoined.
	if Within(3*w.Opts.Interval, func() bool { f, _ := w.Fence(); return f != "gen="+itoa(genY) }) {
		t.Errorf("the fence moved away from gen %d after the old leader rejoined", genY)
	}
}

// Scenario 11: one node's data dir becomes full (RLIMIT_FSIZE 0 on its
// process: every write that grows a file fails, as on a full disk).
// Invariants: that node says so loudly (error-level log lines); the other
// two carry on: a manual failover through one of them is verified at BIND
// and their histories agree.
func TestChaos11DataDirFull(t *testing.T) {
	w := Start(t, Options{})
	victim := w.Follower()
	rest := others(w, victim)
	mark := len(victim.Log())
	if err := victim.LimitFileSize(0); err != nil {
		t.Fatalf("limit file size of %s: %v", victim.ID, err)
	}
	Eventually(t, 90*time.Second, func() bool {
		return strings.Contains(victim.Log()[mark:], "level=ERROR")
	}, "node %s logs errors about its full data dir", victim.ID)
	t.Logf("node %s says:\n%s", victim.ID, tail(victim.Log()[mark:], 30))

	out, stderr, code := w.CLI(rest[0], "failover", "--to", "backup", "--reason", "one disk full", "--yes", "--wait")
	if code != 0 {
		t.Fatalf("failover through %s: exit %d\n%s\n%s", rest[0].ID, code, out, stderr)
	}
	if got := w.Answer(); got != BackupIP {
		t.Errorf("BIND answers %s, want %s", got, BackupIP)
	}
	var hs [][]failover.Entry
	for _, n := range rest {
		h, err := w.History(n)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	if len(OfKind(hs[0], failover.KindManualFailover)) != 1 || Summary(hs[0]) != Summary(hs[1]) {
		t.Errorf("healthy nodes' histories:\n%s---\n%s", Summary(hs[0]), Summary(hs[1]))
	}
	// Invariant 7: the full node does not pass for healthy. Its readyz
	// fails and its own status says it cannot write its log.
	Eventually(t, 60*time.Second, func() bool {
		code, body, err := w.get(victim, "/readyz")
		return err == nil && code == 503 && strings.Contains(body, "cannot write the raft log")
	}, "node %s's /readyz fails naming its storage", victim.ID)
	st, err := w.Status(victim)
	if err != nil {
		t.Fatalf("status of the full node: %v", err)
	}
	if st.Raft.StorageError == "" || !strings.Contains(strings.Join(st.Warnings, "\n"), "cannot write its raft log") {
		t.Errorf("status served by the full node: storage_error %q warnings %v; want both to say it cannot write", st.Raft.StorageError, st.Warnings)
	}
}

func grepLines(s, substr string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return out
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// A follower partitioned from both peers (its probes still reach the
// sites). Invariants: its own status says it has no leader or is stale
// (invariant 7); the majority still fails over on an outage, with quorum
// evidence; after the partition heals the node catches up and every
// history is identical.
func TestChaosPartitionedFollowerStatus(t *testing.T) {
	w := Start(t, Options{})
	lone := w.Follower()
	rest := others(w, lone)
	w.Partition(lone)
	Eventually(t, 30*time.Second, func() bool {
		st, err := w.Status(lone)
		return err == nil && (st.Leader == "" || st.StaleSeconds > 3*w.Opts.Interval.Seconds())
	}, "the partitioned node's status says it has no leader or stale data")
	st, _ := w.Status(lone)
	if len(st.Warnings) == 0 {
		t.Errorf("partitioned node %s: status has no warning (leader %q, stale %.1fs)", lone.ID, st.Leader, st.StaleSeconds)
	}
	t.Logf("partitioned node %s says: leader %q raft %s stale %.1fs warnings %v", lone.ID, st.Leader, st.Raft.State, st.StaleSeconds, st.Warnings)

	if err := w.Sites[failover.Primary].Caddy.Stop(); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 60*time.Second, func() bool { return w.Answer() == BackupIP }, "the majority flips")
	Eventually(t, 60*time.Second, func() bool {
		st, ok := viewVia(w, rest...)
		return ok && st.State.Desired.Done
	}, "the flip is verified")
	w.Heal()
	Eventually(t, 60*time.Second, func() bool {
		st, err := w.Status(lone)
		return err == nil && st.Leader != "" && st.State.Desired.Done && st.State.Active == failover.Backup
	}, "the healed node catches up")
	h := w.SameHistory(60 * time.Second)
	if err := CheckQuorumEvidence(h, w.Opts.Quorum); err != nil {
		t.Error(err)
	}
	if ds := Decisions(h); len(ds) != 1 || ds[0].Kind != failover.KindAutoFailover {
		t.Errorf("decisions: got\n%s want one auto_failover", Summary(ds))
	}
}
