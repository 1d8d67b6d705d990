package cluster

import (
	"bytes"
	"context"
	"errors"
	"github.com/drwatch/drwatch/test/poll"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const long = 30 * time.Second

func TestProposeOnFollowerAppliesEverywhere(t *testing.T) {
	tc := newCluster(t, 3, nil)
	l := tc.leader(electionBound(testConfig()))
	f := tc.follower(l)
	resp, idx := tc.propose(f, "hello")
	if string(resp) != "n=1" {
		t.Fatalf("response: got %q, want %q", resp, "n=1")
	}
	if idx == 0 {
		t.Fatalf("index: got 0, want > 0")
	}
	tc.converged(long, []string{"hello"})
	// Barrier on a follower: afterwards its state machine has the write.
	resp, _ = tc.propose(l, "world")
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	if err := f.node.Barrier(ctx); err != nil {
		t.Fatalf("barrier on follower: %v", err)
	}
	if got := f.sm.list(); !slices.Equal(got, []string{"hello", "world"}) {
		t.Fatalf("follower after barrier: got %v, want [hello world]", got)
	}
	if string(resp) != "n=2" {
		t.Fatalf("second response: got %q, want n=2", resp)
	}
}

func TestLeaderKillElectsNewLeader(t *testing.T) {
	tc := newCluster(t, 3, nil)
	bound := electionBound(testConfig())
	old := tc.leader(bound)
	tc.propose(old, "before")
	tc.converged(long, []string{"before"})
	tc.stop(old) // a crash: no leadership transfer
	start := time.Now()
	nl := tc.leader(bound)
	if nl.id == old.id {
		t.Fatalf("new leader: got %s, want another node", nl.id)
	}
	t.Logf("new leader %s after %s (bound %s)", nl.id, time.Since(start), bound)
	tc.propose(tc.follower(nl), "after")
	tc.converged(long, []string{"before", "after"})
}

func TestRestartCatchesUpAndFullRestartKeepsState(t *testing.T) {
	tc := newCluster(t, 3, nil)
	l := tc.leader(electionBound(testConfig()))
	var want []string
	for _, s := range items("x", 5) {
		tc.propose(l, s)
		want = append(want, s)
	}
	tc.converged(long, want)

	// One node down while the others commit; it catches up on restart.
	down := tc.follower(l)
	tc.stop(down)
	for _, s := range items("y", 5) {
		tc.propose(l, s)
		want = append(want, s)
	}
	tc.restart(down)
	tc.converged(long, want)

	// Everything down, everything up: nothing acknowledged is lost and
	// nothing is applied twice.
	for _, nd := range tc.nodes {
		tc.stop(nd)
	}
	for _, nd := range tc.nodes {
		tc.restart(nd)
	}
	l = tc.leader(electionBound(testConfig()))
	tc.converged(long, want)
	tc.propose(tc.follower(l), "z")
	tc.converged(long, append(want, "z"))
}

func TestRetriedKeyAppliedOnce(t *testing.T) {
	tc := newCluster(t, 3, nil)
	l := tc.leader(electionBound(testConfig()))
	f := tc.follower(l)
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	key := newKey()
	resp1, idx1, err := f.node.proposeKey(ctx, key, []byte("once"))
	if err != nil {
		t.Fatal(err)
	}
	// The leader dies after committing, before the proposer heard back
	// (ErrLeadershipLost): the proposer resends the same envelope to
	// whoever leads next.
	tc.stop(l)
	nl := tc.leader(electionBound(testConfig()))
	for _, nd := range tc.running() {
		resp2, idx2, err := nd.node.proposeKey(ctx, key, []byte("once"))
		if err != nil {
			t.Fatalf("retry on %s: %v", nd.id, err)
		}
		if !bytes.Equal(resp2, resp1) || idx2 != idx1 {
			t.Fatalf("retry on %s: got (%q, %d), want the first answer (%q, %d)", nd.id, resp2, idx2, resp1, idx1)
		}
	}
	tc.propose(nl, "next")
	tc.converged(long, []string{"once", "next"})
}

func TestLeaderTransformRunsOnLeaderOnly(t *testing.T) {
	var mu sync.Mutex
	var ran []string
	tc := newCluster(t, 3, func(i int, c *Config) {
		id := string(rune('a' + i))
		c.LeaderTransform = func(cmd []byte) ([]byte, error) {
			mu.Lock()
			ran = append(ran, id)
			mu.Unlock()
			return append([]byte(id+":"), cmd...), nil
		}
	})
	l := tc.leader(electionBound(testConfig()))
	tc.propose(tc.follower(l), "cmd")
	tc.converged(long, []string{l.id + ":cmd"})
	mu.Lock()
	got := slices.Clone(ran)
	mu.Unlock()
	if !slices.Equal(got, []string{l.id}) {
		t.Fatalf("transform ran on: got %v, want [%s]", got, l.id)
	}
}

func TestLeaderTransformErrorIsNotRetried(t *testing.T) {
	boom := errors.New("boom")
	tc := newCluster(t, 3, func(i int, c *Config) {
		c.LeaderTransform = func([]byte) ([]byte, error) { return nil, boom }
	})
	l := tc.leader(electionBound(testConfig()))
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	_, _, err := l.node.Propose(ctx, []byte("x"))
	if !errors.Is(err, boom) {
		t.Fatalf("on leader: got %v, want boom", err)
	}
	_, _, err = tc.follower(l).node.Propose(ctx, []byte("x"))
	var re *RemoteError
	if !errors.As(err, &re) {
		t.Fatalf("on follower: got %v, want a RemoteError", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("propose retried until the deadline: %v", err)
	}
}

// TestProposeWithoutQuorumGivesUpNotSent: a node left alone knows no
// leader; Propose gives up after NoLeaderWait, long before its caller's
// deadline, and says that nothing was sent (so another node may be asked).
func TestProposeWithoutQuorumGivesUpNotSent(t *testing.T) {
	tc := newCluster(t, 3, nil)
	l := tc.leader(electionBound(testConfig()))
	f := tc.follower(l)
	for _, nd := range tc.nodes {
		if nd != f {
			tc.stop(nd)
		}
	}
	poll.For(t, long, "the survivor to know no leader", func() bool { id, _ := f.node.Leader(); return id == "" })
	ctx, cancel := context.WithTimeout(context.Background(), 10*long)
	defer cancel()
	_, _, err := f.node.Propose(ctx, []byte("lonely"))
	if ctx.Err() != nil {
		t.Fatalf("Propose returned at its caller's deadline (%v), want it to give up after NoLeaderWait", err)
	}
	if !errors.Is(err, ErrNoLeader) || !errors.Is(err, ErrNotSent) {
		t.Fatalf("got %v, want ErrNoLeader and ErrNotSent", err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("error %q spans lines; it is shown as one status warning", err)
	}
}
