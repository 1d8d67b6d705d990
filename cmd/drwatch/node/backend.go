package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/drwatch/drwatch/cluster"
	"github.com/drwatch/drwatch/cmd/drwatch/api"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/failover/reconcile"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

var _ api.Backend = (*Node)(nil)

// ID is this node's ID.
func (n *Node) ID() string { return n.cfg.Node.ID }

// Machine is the local replica (read-only use).
func (n *Node) Machine() *failover.Machine { return n.machine }

// Cluster is the node's Raft member.
func (n *Node) Cluster() *cluster.Node { return n.cluster }

// Status implements api.Backend.
func (n *Node) Status(ctx context.Context) api.Status {
	now := n.now()
	v := n.machine.View()
	st := n.cluster.Stats()
	s := api.Status{
		ServedBy: n.cfg.Node.ID, ServedAt: now, Leader: st.LeaderID, State: v,
		Raft: api.RaftStatus{State: st.State, Term: st.Term, CommitIndex: st.CommitIndex, AppliedIndex: st.AppliedIndex,
			LastSnapshotIndex: st.LastSnapshotIndex, LeaderAddr: st.LeaderAddr, Members: st.Peers, StorageError: st.StorageError},
	}
	s.Raft.LastContactSecs = st.LastContact.Seconds()
	if st.LastContact < 0 {
		s.Raft.LastContactSecs = -1
	}
	if v.Now > 0 {
		s.StaleSeconds = now.Sub(time.Unix(0, v.Now)).Seconds()
	}
	n.mu.Lock()
	chk := n.dnsCheck
	rec := n.lastRec
	leading := n.reconciler != nil
	n.mu.Unlock()
	zone := n.dns.Zone()
	s.DNS = api.DNSCheck{At: chk.At, Gen: chk.Gen, Desired: reconcile.FromProvider(chk.Desired, zone), Match: chk.Match, Error: chk.Err}
	for _, sr := range chk.Servers {
		sc := api.ServerCheck{Server: sr.Server, NS: sr.NS, Matched: sr.Matched, Got: reconcile.FromProvider(sr.Got, zone)}
		if sr.Err != nil {
			sc.Error = sr.Err.Error()
		}
		s.DNS.Servers = append(s.DNS.Servers, sc)
	}
	if leading && !rec.At.IsZero() {
		s.Reconcile = &api.ReconcileStatus{At: rec.At, Gen: rec.Gen, Action: rec.Action, Match: rec.Match, Fence: rec.Fence}
		if rec.Err != nil {
			s.Reconcile.Error = rec.Err.Error()
		}
	}
	s.Warnings = n.warnings(v, st, s.StaleSeconds)
	s.ClusterHealth = n.health.Sites()
	return s
}

// warnings are what the status page shouts first: this node's own view may
// be wrong, and the reader must know it.
func (n *Node) warnings(v failover.View, st cluster.Stats, stale float64) []string {
	var w []string
	if st.StorageError != "" {
		w = append(w, fmt.Sprintf("this node (%s) cannot write its raft log: %s; it cannot persist decisions and its view is falling behind — free or fix %s", n.cfg.Node.ID, st.StorageError, n.cfg.Node.DataDir))
	}
	interval := n.cfg.Policy.Interval.Seconds()
	switch {
	case st.LeaderID == "":
		w = append(w, fmt.Sprintf("this node (%s) has no leader: no quorum of watchers is reachable, so nothing is decided or written; what follows may be stale", n.cfg.Node.ID))
	case st.LastContact > 3*n.cfg.Raft.HeartbeatTimeout:
		w = append(w, fmt.Sprintf("this node last heard from the leader %s ago", st.LastContact.Round(time.Second)))
	}
	if v.Now > 0 && stale > 3*interval {
		w = append(w, fmt.Sprintf("stale data: the last command applied here is %.0f s old", stale))
	}
	if v.Policy != nil && v.PolicyHash != n.hash {
		w = append(w, fmt.Sprintf("this node's config file differs from the replicated policy (file %s, cluster %s): the cluster decides by its replicated policy", failover.ShortHash(n.hash), failover.ShortHash(v.PolicyHash)))
	}
	n.mu.Lock()
	repErr := n.lastReport.err
	n.mu.Unlock()
	if repErr != nil && !n.stopping.Load() {
		w = append(w, "this node's probe reports are not being committed: "+repErr.Error())
	}
	return append(w, v.Warnings...)
}

// History implements api.Backend.
func (n *Node) History() []failover.Entry { return n.machine.History() }

// Explain implements api.Backend.
func (n *Node) Explain(gen uint64) (string, error) { return n.machine.Explain(gen) }

// Members implements api.Backend.
func (n *Node) Members(ctx context.Context) ([]cluster.Member, error) { return n.cluster.Members(ctx) }

// RemoveMember implements api.Backend.
func (n *Node) RemoveMember(ctx context.Context, id string, force bool, actor, reason string) error {
	if err := n.cluster.RemoveServer(ctx, id, force); err != nil {
		return err
	}
	return n.recordMembership(ctx, failover.Membership{Op: failover.MemberRemove, ID: id, Actor: actor, Reason: reason})
}

// AddMember implements api.Backend.
func (n *Node) AddMember(ctx context.Context, id, raftAddr, actor, reason string) error {
	if err := n.cluster.AddVoter(ctx, id, raftAddr); err != nil {
		return err
	}
	return n.recordMembership(ctx, failover.Membership{Op: failover.MemberAdd, ID: id, Addr: raftAddr, Actor: actor, Reason: reason})
}

// recordMembership commits the record of a membership change the cluster
// has made. Its failure must not read as "nothing was committed": the
// change stands, so the sentinels of the propose error are dropped.
func (n *Node) recordMembership(ctx context.Context, m failover.Membership) error {
	if _, _, err := n.Submit(ctx, failover.Command{Payload: m}); err != nil {
		return fmt.Errorf("member %s %s done, but its history record was not committed: %v", m.Op, m.ID, err)
	}
	return nil
}

// Submit implements api.Backend.
func (n *Node) Submit(ctx context.Context, c failover.Command) (failover.Result, uint64, error) {
	res, index, err := failover.Submit(ctx, n.cluster, c)
	if err != nil {
		return failover.Result{}, index, err
	}
	// Make the local replica catch up, so a read right after sees the write.
	_ = n.cluster.WaitApplied(ctx, index)
	return res, index, nil
}

// DryRun implements api.Backend: the command is stamped as the leader would
// and stepped on a copy of the local replica by the decision core, through
// the same code as the real command, which also says which safety rules it
// faces. The one rule outside the core is the cluster's: with no leader the
// dry run fails as the write would, so the caller asks another node.
func (n *Node) DryRun(c failover.Command) (api.DryRun, error) {
	st := n.cluster.Stats()
	if st.LeaderID == "" {
		return api.DryRun{}, fmt.Errorf("dry run: %w (%w)", cluster.ErrNoLeader, cluster.ErrNotSent)
	}
	b, err := failover.Encode(c)
	if err != nil {
		return api.DryRun{}, err
	}
	if b, err = failover.Stamp(b, n.now().UnixNano()); err != nil {
		return api.DryRun{}, err
	}
	cmd, err := failover.Decode(b)
	if err != nil {
		return api.DryRun{}, err
	}
	d := n.machine.DryRun(cmd)
	var ref *failover.RefusedError
	out := api.DryRun{Result: d.Result, From: d.Before.Records, To: d.After.Records, Changes: d.Result.Gen != 0}
	switch {
	case errors.As(d.Err, &ref):
		out.Error = &api.ErrorDetail{Code: api.CodeRefused, Message: ref.Message, Rule: ref.Rule, Override: ref.Override}
	case d.Err != nil:
		return api.DryRun{}, d.Err
	}
	out.Checks = append([]api.Check{{Rule: "leader", OK: true, Detail: "a leader can commit the command (leader: " + st.LeaderID + ")"}}, d.Checks...)
	return out, nil
}

// Ready implements api.Backend.
func (n *Node) Ready() error {
	st := n.cluster.Stats()
	switch {
	case n.stopping.Load():
		return errors.New("shutting down")
	case st.StorageError != "":
		return fmt.Errorf("cannot write the raft log: %s", st.StorageError)
	case st.LeaderID == "":
		return errors.New("no leader")
	case !slices.ContainsFunc(st.Peers, func(m cluster.Member) bool { return m.ID == n.cfg.Node.ID }):
		return errors.New("not a member of the raft configuration yet")
	}
	return nil
}

// Alive implements api.Backend: probe rounds must keep arriving. A round
// takes at most one interval plus its timeout, so five intervals of silence
// mean a wedged loop, not a slow one.
func (n *Node) Alive() error {
	last := time.Unix(0, n.lastRound.Load())
	if since := n.now().Sub(last); since > 5*n.cfg.Policy.Interval {
		return fmt.Errorf("no probe round for %s (interval %s)", since.Round(time.Second), n.cfg.Policy.Interval)
	}
	return nil
}

// Metrics implements api.Backend.
func (n *Node) Metrics() http.Handler {
	return promhttp.HandlerFor(n.reg, promhttp.HandlerOpts{})
}
