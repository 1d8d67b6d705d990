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
		w = append(w, fmt.Sprintf("this node's config file differs from the replicated policy (file %s, cluster %s): the cluster decides by its replicated policy", short(n.hash), short(v.PolicyHash)))
	}
	n.mu.Lock()
	repErr := n.lastReport.err
	n.mu.Unlock()
	if repErr != nil && !n.stopping.Load() {
		w = append(w, "this node's probe reports are not being committed: "+repErr.Error())
	}
	return append(w, v.Warnings...)
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// History implements api.Backend.
func (n *Node) History() []failover.Entry { return n.machine.History() }

// Explain implements api.Backend.
func (n *Node) Explain(gen uint64) (string, error) { return n.machine.Explain(gen) }

// Members implements api.Backend.
func (n *Node) Members(ctx context.Context) ([]cluster.Member, error) { return n.cluster.Members(ctx) }

// RemoveMember implements api.Backend.
func (n *Node) RemoveMember(ctx context.Context, id string, force bool) error {
	return n.cluster.RemoveServer(ctx, id, force)
}

// AddMember implements api.Backend.
func (n *Node) AddMember(ctx context.Context, id, raftAddr string) error {
	return n.cluster.AddVoter(ctx, id, raftAddr)
}

// Submit implements api.Backend.
func (n *Node) Submit(ctx context.Context, c failover.Command) (failover.Result, uint64, error) {
	b, err := failover.Encode(c)
	if err != nil {
		return failover.Result{}, 0, err
	}
	resp, index, err := n.cluster.Propose(ctx, b)
	if err != nil {
		return failover.Result{}, 0, err
	}
	res, err := failover.DecodeResponse(resp)
	if err != nil {
		return failover.Result{}, index, err
	}
	// Make the local replica catch up, so a read right after sees the write.
	_ = n.cluster.WaitApplied(ctx, index)
	return res, index, nil
}

// DryRun implements api.Backend: the command is stepped on a scratch copy
// of the local replica, exactly as the leader would apply it.
func (n *Node) DryRun(c failover.Command) (api.DryRun, error) {
	snap, err := n.machine.Snapshot()
	if err != nil {
		return api.DryRun{}, err
	}
	scratch := failover.New()
	if err := scratch.Restore(snap); err != nil {
		return api.DryRun{}, err
	}
	v := n.machine.View()
	b, err := failover.Encode(c)
	if err != nil {
		return api.DryRun{}, err
	}
	if b, err = failover.Stamp(b, max(n.now().UnixNano(), v.Now)); err != nil {
		return api.DryRun{}, err
	}
	cmd, err := failover.Decode(b)
	if err != nil {
		return api.DryRun{}, err
	}
	out := api.DryRun{From: v.Desired.Records}
	res, stepErr := scratch.Step(v.Index+1, cmd)
	out.Result = res
	out.To = scratch.Desired().Records
	out.Changes = res.Gen != 0
	var ref *failover.RefusedError
	if errors.As(stepErr, &ref) {
		out.Error = &api.ErrorDetail{Code: api.CodeRefused, Message: ref.Message, Rule: ref.Rule, Override: ref.Override}
	} else if stepErr != nil {
		out.Error = &api.ErrorDetail{Code: api.CodeBadRequest, Message: stepErr.Error()}
	}
	out.Checks = n.checks(v, cmd)
	return out, nil
}

// checks lists the safety rules relevant to a manual write and whether each
// holds now.
func (n *Node) checks(v failover.View, c failover.Command) []api.Check {
	st := n.cluster.Stats()
	tally := func(s failover.Site) string {
		t := v.Sites[s]
		return fmt.Sprintf("%d of %d watchers see %s UP, %d DOWN, quorum %d", len(t.Up), len(v.Nodes), s, len(t.Down), t.Quorum)
	}
	out := []api.Check{{Rule: "leader", OK: st.LeaderID != "", Detail: "a leader can commit the command (leader: " + orNone(st.LeaderID) + ")"}}
	var target failover.Site
	switch c.Type {
	case failover.CmdFailover:
		target = c.Failover.To
		if c.Failover.Planned {
			both := v.Sites[failover.Primary].Verdict == failover.Up && v.Sites[failover.Backup].Verdict == failover.Up
			out = append(out, api.Check{Rule: "both_sites_up", OK: both, Detail: "switchover needs both sites UP at quorum"})
		}
	case failover.CmdFailback:
		target = failover.Primary
	}
	if target != "" {
		out = append(out,
			api.Check{Rule: "already_active", OK: v.Active != target, Detail: fmt.Sprintf("active site is %s", v.Active)},
			api.Check{Rule: "target_healthy", OK: v.Sites[target].Verdict == failover.Up, Detail: tally(target)})
	}
	out = append(out,
		api.Check{Rule: "not_paused", OK: !v.Paused, Detail: "pause stops automatic decisions only; manual commands still work"},
		api.Check{Rule: "not_blocked", OK: !v.Blocked, Detail: "the block after an automatic flip stops automatic flips only"})
	return out
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
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
