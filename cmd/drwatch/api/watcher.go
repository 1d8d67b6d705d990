package api

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/drwatch/drwatch/cluster"
	"github.com/drwatch/drwatch/executor/reconcile"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/watcher"
)

// WatcherBackend serves a running watcher: it reads from the watcher's
// replica and what its loops last saw, and writes through its cluster. The
// watcher answers in its own types; this maps them onto the API's.
type WatcherBackend struct{ *watcher.Watcher }

var _ Backend = WatcherBackend{}

// Status implements ReadModel: the whole status from the local replica.
func (wb WatcherBackend) Status(ctx context.Context) Status {
	now := wb.Now()
	v := wb.Machine().View()
	st := wb.Stats()
	s := Status{
		ServedBy: wb.ID(), ServedAt: now, Leader: st.LeaderID, State: v,
		Raft: RaftStatus{State: st.State, Term: st.Term, CommitIndex: st.CommitIndex, AppliedIndex: st.AppliedIndex,
			LastSnapshotIndex: st.LastSnapshotIndex, LeaderAddr: st.LeaderAddr, Members: st.Peers, StorageError: st.StorageError},
	}
	s.Raft.LastContactSecs = st.LastContact.Seconds()
	if st.LastContact < 0 {
		s.Raft.LastContactSecs = -1
	}
	if v.Now > 0 {
		s.StaleSeconds = now.Sub(time.Unix(0, v.Now)).Seconds()
	}
	// Those of the group the view shows: the default group, or without
	// one the first group.
	s.DNS, s.Reconcile = wb.GroupDNS(v.Group)
	s.Warnings = wb.Warnings(v, st, s.StaleSeconds)
	s.ClusterHealth = wb.ClusterHealth()
	schedule, timeout := wb.DrillSchedule()
	s.Drill = NewDrillStatus(v, schedule, timeout, now)
	s.LogFormat = wb.Machine().Format()
	return s
}

// dnsCheckOf is the API's shape of chk, its names absolute in the zone it
// was checked in (the dns section's before any check).
func (wb WatcherBackend) dnsCheckOf(chk watcher.DNSCheck) DNSCheck {
	zone := cmp.Or(chk.Zone, wb.Zone())
	out := DNSCheck{At: chk.At, Gen: chk.Gen, Desired: reconcile.FromProvider(chk.Desired, zone), Match: chk.Match, Error: chk.Err}
	for _, sr := range chk.Servers {
		sc := ServerCheck{Server: sr.Server, NS: sr.NS, Matched: sr.Matched, Got: reconcile.FromProvider(sr.Got, zone)}
		if sr.Err != nil {
			sc.Error = sr.Err.Error()
		}
		out.Servers = append(out.Servers, sc)
	}
	return out
}

// reconcileOf is the API's shape of a reconciler's last pass; nil on a
// node that does not lead, or before the pass.
func reconcileOf(rec reconcile.Report, leading bool) *ReconcileStatus {
	if !leading || rec.At.IsZero() {
		return nil
	}
	out := &ReconcileStatus{At: rec.At, Gen: rec.Gen, Action: rec.Action, Match: rec.Match, Fence: rec.Fence}
	if rec.Err != nil {
		out.Error = rec.Err.Error()
	}
	return out
}

var _ GroupDNSReader = WatcherBackend{}

// GroupDNS implements GroupDNSReader: the group's last DNS check on this
// node, and its reconciler's last pass when this node leads.
func (wb WatcherBackend) GroupDNS(name string) (DNSCheck, *ReconcileStatus) {
	chk, _ := wb.LastGroupDNSCheck(name)
	if name == "" || name == failover.DefaultGroup {
		rec, leading := wb.LastReconcile()
		return wb.dnsCheckOf(chk), reconcileOf(rec, leading)
	}
	rec, leading, ok := wb.LastGroupReconcile(name)
	return wb.dnsCheckOf(chk), reconcileOf(rec, leading && ok)
}

// Drills implements ReadModel: the replicated drills, each with the RTO it
// measured under the replicated policy and this node's probe timeout.
func (wb WatcherBackend) Drills() DrillHistory {
	ended, running := wb.Watcher.Drills()
	v := wb.Machine().View()
	schedule, timeout := wb.DrillSchedule()
	h := DrillHistory{Drills: make([]DrillReport, 0, len(ended)), ScheduleSeconds: schedule.Seconds()}
	for _, d := range ended {
		h.Drills = append(h.Drills, NewDrillReport(d, v.Policy, timeout))
	}
	if running != nil {
		r := NewDrillReport(*running, v.Policy, timeout)
		h.Running = &r
	}
	return h
}

// DryRun implements Writes: the command is stamped as the leader would
// and stepped on a copy of the local replica by the decision core, through
// the same code as the real command, which also says which safety rules it
// faces. The one rule outside the core is the cluster's: with no leader the
// dry run fails as the write would, so the caller asks another node.
func (wb WatcherBackend) DryRun(c failover.Command) (DryRun, error) {
	st := wb.Stats()
	if st.LeaderID == "" {
		return DryRun{}, fmt.Errorf("dry run: %w (%w)", cluster.ErrNoLeader, cluster.ErrNotSent)
	}
	b, err := failover.Encode(c)
	if err != nil {
		return DryRun{}, err
	}
	if b, err = failover.Stamp(b, wb.Now().UnixNano()); err != nil {
		return DryRun{}, err
	}
	cmd, err := failover.Decode(b)
	if err != nil {
		return DryRun{}, err
	}
	return DryRunOn(wb.Machine(), cmd, st.LeaderID)
}

// DryRunOn is the dry run of the stamped command c on machine m, whose
// cluster's leader is leader: WatcherBackend.DryRun's answer, for any
// backend over a failover.Machine. For a failover of every group it says,
// group by group, what each would do and which records would change:
// each group moves by its own rules as if asked alone (failover.Failover
// AllGroups), so each group's records come from its own dry run.
func DryRunOn(m *failover.Machine, c failover.Command, leader string) (DryRun, error) {
	d := m.DryRun(c)
	var ref *failover.RefusedError
	out := DryRun{Result: d.Result, From: d.Before.Records, To: d.After.Records, Changes: d.Result.Gen != 0}
	switch {
	case errors.As(d.Err, &ref):
		out.Error = &ErrorDetail{Code: CodeRefused, Message: ref.Message, Rule: ref.Rule, Override: ref.Override}
	case d.Err != nil:
		return DryRun{}, d.Err
	}
	out.Checks = append([]Check{{Rule: "leader", OK: true, Detail: "a leader can commit the command (leader: " + leader + ")"}}, d.Checks...)
	if f, ok := c.Payload.(failover.Failover); ok && f.AllGroups {
		for _, gr := range d.Result.Groups {
			f.AllGroups, f.Group = false, gr.Group
			one := c
			one.Payload = f
			gd := m.DryRun(one)
			out.Groups = append(out.Groups, GroupDryRun{Group: gr.Group, From: gd.Before.Records, To: gd.After.Records,
				Changes: gr.Gen != 0, Refused: gr.Refused})
		}
	}
	return out, nil
}

var _ GroupReads = WatcherBackend{}

// Groups implements GroupReads.
func (wb WatcherBackend) Groups() []string { return wb.Machine().Groups() }

// Overview implements GroupReads.
func (wb WatcherBackend) Overview() []failover.GroupSummary { return wb.Machine().Overview() }

// GroupStatus implements GroupReads: with the group's own DNS check and
// reconcile pass.
func (wb WatcherBackend) GroupStatus(ctx context.Context, name string) (Status, error) {
	st, err := GroupStatusOn(wb.Machine(), wb.Status(ctx), name)
	if err != nil {
		return Status{}, err
	}
	return withGroupDNS(wb, st, name), nil
}

// GroupExplain implements GroupReads.
func (wb WatcherBackend) GroupExplain(name string, gen uint64) (string, error) {
	return GroupExplainOn(wb.Machine(), name, gen)
}

// GroupStatusOn is st, the whole status of the default group, with its
// State the view of failover group name on machine m: GroupStatus for any
// backend over a failover.Machine.
func GroupStatusOn(m *failover.Machine, st Status, name string) (Status, error) {
	if err := knownGroup(m, name); err != nil {
		return Status{}, err
	}
	v, ok := m.GroupView(name)
	if !ok {
		return Status{}, &UnknownGroupError{Group: name, Known: m.Groups()}
	}
	st.State = v
	return st, nil
}

// GroupExplainOn is Explain for decision gen of failover group name on
// machine m: GroupExplain for any backend over a failover.Machine.
func GroupExplainOn(m *failover.Machine, name string, gen uint64) (string, error) {
	if err := knownGroup(m, name); err != nil {
		return "", err
	}
	return m.ExplainGroup(name, gen)
}

// knownGroup checks name against the policy's groups first: before a
// policy is set there is no group to show, not even the default one.
func knownGroup(m *failover.Machine, name string) error {
	if known := m.Groups(); !slices.Contains(known, name) {
		return &UnknownGroupError{Group: name, Known: known}
	}
	return nil
}
