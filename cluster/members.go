package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/raft"
)

// Member is one server in the raft configuration.
type Member struct {
	ID       string `json:"id"`
	Addr     string `json:"addr"`
	Suffrage string `json:"suffrage"` // "voter", "nonvoter" or "staging"
	Leader   bool   `json:"leader"`
	// Format is the newest log format the server reads, as it last told
	// this node: LegacyFormat for a release from before formats,
	// UnknownFormat when it could not be asked. Release is its release
	// ("" then).
	Format  int    `json:"format"`
	Release string `json:"release,omitempty"`
}

// DescribeReleases says what each member runs ("a format 1 (v1 (abc)),
// b format 0 (a release from before log formats), c not reachable"), the
// newest format among them, and whether those that answered differ in
// release or format: a rolling upgrade is under way. A member that could
// not be asked is named but makes no difference on its own.
func DescribeReleases(ms []Member) (desc string, newest int, differ bool) {
	var parts []string
	formats, releases := map[int]bool{}, map[string]bool{}
	newest = UnknownFormat
	for _, m := range ms {
		switch {
		case m.Format == UnknownFormat:
			parts = append(parts, m.ID+" not reachable")
			continue
		case m.Format == LegacyFormat && m.Release == "":
			parts = append(parts, m.ID+" format 0 (a release from before log formats)")
		default:
			parts = append(parts, fmt.Sprintf("%s format %d (%s)", m.ID, m.Format, m.Release))
		}
		formats[m.Format], releases[m.Release] = true, true
		newest = max(newest, m.Format)
	}
	return strings.Join(parts, ", "), newest, len(formats) > 1 || len(releases) > 1
}

func suffrage(s raft.ServerSuffrage) string {
	switch s {
	case raft.Voter:
		return "voter"
	case raft.Nonvoter:
		return "nonvoter"
	}
	return "staging"
}

// Members lists the latest configuration as this node knows it.
func (n *Node) Members(ctx context.Context) ([]Member, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f := n.raft.GetConfiguration()
	if err := n.wait(ctx, f); err != nil {
		return nil, fmt.Errorf("members: %w", err)
	}
	leader, _ := n.Leader()
	var out []Member
	for _, s := range f.Configuration().Servers {
		i := n.serverInfo(string(s.ID))
		out = append(out, Member{
			ID: string(s.ID), Addr: string(s.Address),
			Suffrage: suffrage(s.Suffrage), Leader: string(s.ID) == leader,
			Format: i.Format, Release: i.Release,
		})
	}
	return out, nil
}

func (n *Node) voters() int {
	c := 0
	for _, s := range n.servers() {
		if s.Suffrage == raft.Voter {
			c++
		}
	}
	return c
}

// AddVoter adds (or re-addresses) voter id at addr. Called on a follower
// it is forwarded to the leader. Idempotent.
func (n *Node) AddVoter(ctx context.Context, id, addr string) error {
	if err := ValidNodeID(id); err != nil {
		return err
	}
	return n.leaderOp(ctx, "add voter", rpcRequest{Op: opAdd, ID: id, Addr: addr},
		func(ctx context.Context) error { return n.addVoterLocal(ctx, id, addr) })
}

// RemoveServer removes id from the configuration. Removing the leader, or
// leaving fewer than three voters, returns ErrNeedsConfirmation unless
// force is true. Called on a follower it is forwarded to the leader.
// Removing a server that is not a member returns ErrNotMember.
func (n *Node) RemoveServer(ctx context.Context, id string, force bool) error {
	return n.leaderOp(ctx, "remove server", rpcRequest{Op: opRemove, ID: id, Force: force},
		func(ctx context.Context) error { return n.removeLocal(ctx, id, force) })
}

func (n *Node) leaderOp(ctx context.Context, what string, req rpcRequest, local func(context.Context) error) error {
	err := n.toLeader(ctx, local, func(ctx context.Context, id, addr string) error {
		_, err := n.forward(ctx, id, addr, req)
		return err
	})
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, req.ID, err)
	}
	return nil
}

func (n *Node) addVoterLocal(ctx context.Context, id, addr string) error {
	if n.raft.State() != raft.Leader {
		return ErrNotLeader
	}
	return n.wait(ctx, n.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, enqueueTimeout(ctx)))
}

func (n *Node) removeLocal(ctx context.Context, id string, force bool) error {
	if n.raft.State() != raft.Leader {
		return ErrNotLeader
	}
	found, voter := false, false
	for _, s := range n.servers() {
		if string(s.ID) == id {
			found, voter = true, s.Suffrage == raft.Voter
		}
	}
	if !found {
		return fmt.Errorf("%s: %w", id, ErrNotMember)
	}
	if !force {
		if id == n.id {
			return fmt.Errorf("%s is the leader: %w", id, ErrNeedsConfirmation)
		}
		if left := n.voters() - 1; voter && left < 3 {
			return fmt.Errorf("removing %s leaves %d voters: %w", id, left, ErrNeedsConfirmation)
		}
	}
	return n.wait(ctx, n.raft.RemoveServer(raft.ServerID(id), 0, enqueueTimeout(ctx)))
}

// Stats is a point-in-time view of this node's raft state.
type Stats struct {
	NodeID            string
	State             string // Follower, Candidate, Leader, Shutdown
	Term              uint64
	CommitIndex       uint64
	AppliedIndex      uint64
	LastIndex         uint64
	LastSnapshotIndex uint64
	LastContact       time.Duration // since the leader was last heard; 0 on the leader; -1 never
	LeaderID          string
	LeaderAddr        string
	Peers             []Member
	DedupeEntries     int
	// StorageError is set while the last write to this node's raft log or
	// stable store failed (disk full, read-only): the node cannot persist
	// what it is told and must not be taken as healthy.
	StorageError string
}

// Stats returns the node's current raft state without blocking on raft.
func (n *Node) Stats() Stats {
	lid, laddr := n.Leader()
	s := Stats{
		NodeID:        n.id,
		State:         n.raft.State().String(),
		Term:          n.raft.CurrentTerm(),
		CommitIndex:   n.raft.CommitIndex(),
		AppliedIndex:  n.raft.AppliedIndex(),
		LastIndex:     n.raft.LastIndex(),
		LastContact:   n.lastContact(),
		LeaderID:      lid,
		LeaderAddr:    laddr,
		DedupeEntries: n.fsm.dedupeLen(),
	}
	if err, at := n.store.failure(); err != nil {
		s.StorageError = fmt.Sprintf("%v (since %s)", err, at.UTC().Format(time.RFC3339))
	}
	var snapIdx uint64
	_, _ = fmt.Sscan(n.raft.Stats()["last_snapshot_index"], &snapIdx)
	s.LastSnapshotIndex = snapIdx
	for _, sv := range n.servers() {
		i := n.serverInfo(string(sv.ID))
		s.Peers = append(s.Peers, Member{ID: string(sv.ID), Addr: string(sv.Address),
			Suffrage: suffrage(sv.Suffrage), Leader: string(sv.ID) == lid, Format: i.Format, Release: i.Release})
	}
	return s
}

func (n *Node) lastContact() time.Duration {
	if n.raft.State() == raft.Leader {
		return 0
	}
	t := n.raft.LastContact()
	if t.IsZero() {
		return -1
	}
	return time.Since(t)
}
