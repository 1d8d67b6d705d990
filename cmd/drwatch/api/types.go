package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/drwatch/drwatch/cluster"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/monitor/clusterhealth"
)

// ReadModel is what the read endpoints, the status page, the badges and
// the health checks need. Everything comes from the local replica and this
// node's own loops; nothing is proposed. Safe for concurrent use.
type ReadModel interface {
	// Status assembles the whole status from the local replica.
	Status(ctx context.Context) Status
	// History returns the replicated history, oldest first.
	History() []failover.Entry
	// Explain describes the evidence behind decision gen.
	Explain(gen uint64) (string, error)
	// WhatIf asks the decision core, on a copy of the local replica, what
	// would happen if every critical probe of the scenario's site failed
	// now; an unknown scenario wraps failover.ErrUnknownScenario.
	WhatIf(ctx context.Context, scenario string) (WhatIf, error)
	// Members lists the Raft configuration.
	Members(ctx context.Context) ([]cluster.Member, error)
	// Ready returns nil once the config is loaded, Raft has joined and a leader is known.
	Ready() error
	// Alive returns nil while the node's own loops run (probe rounds keep
	// arriving); an error means the process is wedged and should be restarted.
	Alive() error
	// Metrics serves this node's Prometheus registry.
	Metrics() http.Handler
	// Drills returns the replicated drills with their measured RTO.
	Drills() DrillHistory
}

// Writes is what the write endpoints need: commands committed through the
// cluster (forwarded to the leader), or tried on a scratch copy.
type Writes interface {
	// Submit proposes a command and returns the decision core's result.
	Submit(ctx context.Context, c failover.Command) (failover.Result, uint64, error)
	// DryRun applies c to a scratch copy of the local replica and reports
	// what would change; nothing is proposed.
	DryRun(c failover.Command) (DryRun, error)
	// DrillCanary is the canary a drill started now would move; an error
	// when the node runs no drills or knows no policy yet.
	DrillCanary() (failover.DrillCanary, error)
}

// Membership is what the members endpoints need to change the Raft
// configuration.
type Membership interface {
	// RemoveMember removes a voter; force confirms removing the leader or
	// going below three voters. The change is recorded in the log with
	// actor and reason (failover.Membership).
	RemoveMember(ctx context.Context, id string, force bool, actor, reason string) error
	// AddMember adds (or re-addresses) a voter; idempotent for a voter
	// already at that address. Recorded like RemoveMember.
	AddMember(ctx context.Context, id, raftAddr, actor, reason string) error
}

// Backend is all a node offers the API, in one value.
type Backend interface {
	ReadModel
	Writes
	Membership
}

// Status is GET /api/v1/status. docs/api.md documents every field.
type Status struct {
	ServedBy string    `json:"served_by"`
	ServedAt time.Time `json:"served_at"`
	Leader   string    `json:"leader"`
	// StaleSeconds is how old, by this node's clock, the leader-stamped time
	// of the last command applied here is. Large means this replica lags.
	StaleSeconds float64       `json:"stale_seconds"`
	Raft         RaftStatus    `json:"raft"`
	Warnings     []string      `json:"warnings"`
	State        failover.View `json:"state"`
	DNS          DNSCheck      `json:"dns"`
	// Reconcile is the last reconciler pass; only the leader has one.
	Reconcile *ReconcileStatus `json:"reconcile,omitempty"`
	// ClusterHealth is each site's cluster as this node last read it
	// (read-only, not replicated; never an input to a decision).
	ClusterHealth []clusterhealth.Site `json:"cluster_health"`
	// Drill is the last drill, the running one and whether to worry.
	Drill DrillStatus `json:"drill"`
	// LogFormat is the cluster's effective log format as this replica
	// applied it (failover.Machine.Format).
	LogFormat int `json:"log_format"`
}

// RaftStatus summarises this node's Raft state.
type RaftStatus struct {
	State             string           `json:"state"`
	Term              uint64           `json:"term"`
	CommitIndex       uint64           `json:"commit_index"`
	AppliedIndex      uint64           `json:"applied_index"`
	LastSnapshotIndex uint64           `json:"last_snapshot_index"`
	LastContactSecs   float64          `json:"last_contact_seconds"` // -1: never; 0 on the leader
	LeaderAddr        string           `json:"leader_addr"`
	Members           []cluster.Member `json:"members"`
	StorageError      string           `json:"storage_error,omitempty"`
}

// DNSCheck is the last read-only comparison of the desired records with what
// each authoritative server answers. Every node runs it.
type DNSCheck struct {
	At      time.Time        `json:"at"`
	Gen     uint64           `json:"gen"`
	Desired []failover.RRset `json:"desired"`
	Servers []ServerCheck    `json:"servers"`
	Match   bool             `json:"match"`
	Error   string           `json:"error,omitempty"`
}

// ServerCheck is one authoritative server's answer.
type ServerCheck struct {
	Server  string           `json:"server"`
	NS      string           `json:"ns,omitempty"`
	Matched bool             `json:"matched"`
	Got     []failover.RRset `json:"got"`
	Error   string           `json:"error,omitempty"`
}

// ReconcileStatus is the leader's last reconciler pass.
type ReconcileStatus struct {
	At     time.Time `json:"at"`
	Gen    uint64    `json:"gen"`
	Action string    `json:"action"`
	Match  bool      `json:"match"`
	Fence  uint64    `json:"fence"`
	Error  string    `json:"error,omitempty"`
}

// DryRun is what a write would do. Errors other than a refusal are
// returned as the write would return them.
type DryRun struct {
	Result failover.Result `json:"result"`
	// Error is set when a safety rule would refuse the command.
	Error *ErrorDetail     `json:"error,omitempty"`
	From  []failover.RRset `json:"from"` // the records DNS should hold now
	To    []failover.RRset `json:"to"`   // the records after the command
	// Checks are exactly the rules the write faces, in the order it checks them.
	Checks  []Check `json:"checks"`
	Changes bool    `json:"changes"`
	// Groups is, for a failover of every group (all_groups), what it
	// would do in each, in the policy's order.
	Groups []GroupDryRun `json:"groups,omitempty"`
}

// GroupDryRun is what a failover of every group would do in one of them.
type GroupDryRun struct {
	Group string           `json:"group"`
	From  []failover.RRset `json:"from"`
	To    []failover.RRset `json:"to"`
	// Changes is true when the group would move.
	Changes bool `json:"changes"`
	// Refused is "rule: message" when the group's rules would keep it
	// where it is; the other groups would still move.
	Refused string `json:"refused,omitempty"`
}

// GroupReads is what the per-group read endpoints need. A Backend that
// does not implement it serves the default group only, as before groups.
type GroupReads interface {
	// Groups lists the policy's failover groups in its order
	// (failover.Policy.GroupNames); none before a policy is set.
	Groups() []string
	// Overview summarises every failover group, in the policy's order.
	Overview() []failover.GroupSummary
	// GroupStatus is Status with State the view of failover group name
	// (failover.Machine.GroupView); an *UnknownGroupError when the
	// policy has no such group.
	GroupStatus(ctx context.Context, name string) (Status, error)
	// GroupExplain is Explain for decision gen of failover group name.
	GroupExplain(name string, gen uint64) (string, error)
}

// UnknownGroupError is a failover group the local replica's policy does
// not have.
type UnknownGroupError struct {
	Group string
	Known []string
}

func (e *UnknownGroupError) Error() string {
	known := "none"
	if len(e.Known) > 0 {
		known = strings.Join(e.Known, ", ")
	}
	return fmt.Sprintf("no failover group %q (groups: %s)", e.Group, known)
}

// Check is one safety rule and whether it holds now; the decision core
// computes them (failover.Machine.DryRun).
type Check = failover.Check

// WriteRequest is the body of every write. Fields a command does not use are ignored.
type WriteRequest struct {
	To       string `json:"to,omitempty"`        // failover: primary or backup
	Reason   string `json:"reason"`              // required: recorded in the history
	Force    bool   `json:"force,omitempty"`     // override the target-health rule (recorded as forced)
	Until    string `json:"until,omitempty"`     // pause: a duration ("30m"); empty = until resume
	DryRun   bool   `json:"dry_run,omitempty"`   // report what would happen; commit nothing
	ID       string `json:"id,omitempty"`        // members/add, members/remove: the node
	RaftAddr string `json:"raft_addr,omitempty"` // members/add: host:port its peers dial
	Confirm  bool   `json:"confirm,omitempty"`   // members/remove: removing the leader or going below three voters
	// Group is the failover group a failover, failback, switchover,
	// pause, resume or ack is for; empty or "default" for the default group.
	Group string `json:"group,omitempty"`
	// AllGroups makes a failover move every group, each by its own rules.
	AllGroups bool `json:"all_groups,omitempty"`
}

// WriteResponse is the reply to a committed write.
type WriteResponse struct {
	Index  uint64          `json:"index"`
	Result failover.Result `json:"result"`
	Actor  string          `json:"actor"`
}
