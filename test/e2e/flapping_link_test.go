package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cluster"
)

// flapCuts are how long each cut of the flapping link lasts: ten cuts of
// 1 to 3 s, six of them at least twice the default heartbeat_timeout, so
// the cut follower's randomised timeout (1–2 × heartbeat_timeout) surely
// expires in those and it campaigns.
var flapCuts = []time.Duration{
	1000 * time.Millisecond, 2000 * time.Millisecond, 1500 * time.Millisecond, 3000 * time.Millisecond, 2500 * time.Millisecond,
	2000 * time.Millisecond, 1000 * time.Millisecond, 3000 * time.Millisecond, 1500 * time.Millisecond, 2500 * time.Millisecond,
}

// maxNeedlessTerms is how far the term may grow while the leader's link to
// one follower flaps: one election, for a heartbeat that a loaded 2-core
// machine delayed past the other follower's timeout. Without pre-vote the
// cut follower raises its term at every cut that outlasts its timeout
// (six of flapCuts at least), and deposes the leader when the link heals.
const maxNeedlessTerms = 1

// Chaos scenario: the leader's link to one follower flaps, cut ten times
// for 1–3 s with the default raft timing, while the other follower hears
// the leader throughout. Invariant: the leader keeps its quorum through
// the other follower and stays leader; the cut follower does campaign,
// but its campaigns (pre-vote) are refused, so the term grows by at most maxNeedlessTerms
// on any node, and the watchers neither decide nor flip (both sites stay
// UP, the serial does not move).
func TestChaosFlappingLeaderLinkCausesNoElection(t *testing.T) {
	w := Start(t, Options{Heartbeat: cluster.DefaultHeartbeatTimeout})
	leader := w.Leader()
	if leader == nil {
		t.Fatal("no leader after start")
	}
	st0, err := w.Status(leader)
	if err != nil {
		t.Fatal(err)
	}
	term0, serial0 := st0.Raft.Term, mustSerial(t, w)
	var cut, steady *Node
	for _, n := range w.Nodes {
		switch {
		case n == leader:
		case cut == nil:
			cut = n
		default:
			steady = n
		}
	}
	t.Logf("leader %s at term %d; flapping its link to %s, %s hears it throughout", leader.ID, term0, cut.ID, steady.ID)
	campaigns0 := len(LogLines(cut, "entering candidate state"))

	// watch samples the leader's and the steady follower's view: the first
	// moment either names another leader or a later term is the failure.
	var broken string
	watch := func(phase string) {
		for _, n := range []*Node{leader, steady} {
			st, err := w.Status(n)
			if err != nil || broken != "" {
				continue
			}
			if st.Leader != leader.ID || st.Raft.Term > term0+maxNeedlessTerms {
				broken = fmt.Sprintf("%s: node %s says leader %q at term %d (was %s at term %d)", phase, n.ID, st.Leader, st.Raft.Term, leader.ID, term0)
			}
		}
	}
	for i, d := range flapCuts {
		w.Cut(leader, cut)
		// The cut lasts d whatever happens; sampling is all it does.
		Within(d, func() bool { watch(fmt.Sprintf("cut %d (%s)", i+1, d)); return false })
		w.Heal()
		// The link is back once the cut follower follows a leader again:
		// the same one if nothing was deposed.
		var back string
		Eventually(t, 30*time.Second, func() bool {
			watch(fmt.Sprintf("after cut %d", i+1))
			st, err := w.Status(cut)
			if err != nil || st.Leader == "" {
				return false
			}
			back = st.Leader
			return true
		}, "after cut %d, node %s follows a leader again", i+1, cut.ID)
		if back != leader.ID {
			broken = fmt.Sprintf("after cut %d (%s): node %s follows %s, not %s", i+1, d, cut.ID, back, leader.ID)
		}
		if broken != "" {
			t.Fatalf("the flapping link deposed the leader: %s", broken)
		}
	}

	// The cuts did make the follower campaign: otherwise this test would
	// prove nothing about elections.
	if c := len(LogLines(cut, "entering candidate state")) - campaigns0; c == 0 {
		t.Errorf("node %s never campaigned while cut off: the cuts were shorter than its election timeout", cut.ID)
	} else {
		t.Logf("node %s campaigned %d times while cut off", cut.ID, c)
	}

	// Every node, the cut one included, ends on the leader's term: a
	// follower that had raised its own term would show it here.
	for _, n := range w.Nodes {
		st, err := w.Status(n)
		if err != nil {
			t.Fatalf("status of %s: %v", n.ID, err)
		}
		t.Logf("node %s: raft %s, term %d (started at %d), leader %q", n.ID, st.Raft.State, st.Raft.Term, term0, st.Leader)
		if st.Raft.Term > term0+maxNeedlessTerms {
			t.Errorf("node %s: term %d, want at most %d (started at %d): the flapping link caused elections", n.ID, st.Raft.Term, term0+maxNeedlessTerms, term0)
		}
	}
	h := w.SameHistory(30 * time.Second)
	if ds := Decisions(h); len(ds) != 0 {
		t.Errorf("decisions while only a raft link flapped: got\n%s want none", Summary(ds))
	}
	if s := mustSerial(t, w); s != serial0 {
		t.Errorf("BIND serial: got %d, want %d (no flip)", s, serial0)
	}
	if a := w.Answer(); a != PrimaryIP {
		t.Errorf("BIND answers %s, want the primary %s", a, PrimaryIP)
	}
}
