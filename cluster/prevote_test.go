package cluster

import (
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// plainTransport is a raft transport without pre-vote.
type plainTransport struct{ raft.Transport }

// raft runs pre-vote only when the transport it is given implements
// raft.WithPreVote (it checks once, at start): the pipeline tracking that
// wraps the node's NetworkTransport must keep that interface, or a
// follower cut from the leader alone would raise its term and depose a
// healthy leader when its link returns (DESIGN.md, Timeouts). A transport
// without pre-vote is not made to claim it.
func TestTrackedTransportKeepsPreVote(t *testing.T) {
	if raft.DefaultConfig().PreVoteDisabled {
		t.Fatal("raft.DefaultConfig disables pre-vote; the node relies on it being on")
	}
	nt, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer nt.Close()
	tr, _ := trackPipelines(nt)
	if _, ok := tr.(raft.WithPreVote); !ok {
		t.Errorf("tracked NetworkTransport (%T) does not implement raft.WithPreVote", tr)
	}
	plain, _ := trackPipelines(plainTransport{nt})
	if _, ok := plain.(raft.WithPreVote); ok {
		t.Errorf("tracked transport without pre-vote (%T) claims raft.WithPreVote", plain)
	}
}
