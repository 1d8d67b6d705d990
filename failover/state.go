package failover

import (
	"cmp"
	"slices"
	"strconv"
	"time"
)

// Verdict is a node's or the quorum's judgement of a site.
type Verdict string

// Verdicts. A node votes UP, DOWN, UNKNOWN or ABSTAIN; the quorum verdict
// of a site is UP, DOWN or NO_QUORUM. Probe states are UNKNOWN, UP or DOWN.
const (
	Unknown  Verdict = "UNKNOWN"
	Up       Verdict = "UP"
	Down     Verdict = "DOWN"
	Abstain  Verdict = "ABSTAIN"
	NoQuorum Verdict = "NO_QUORUM"
)

// History entry kinds.
const (
	KindAutoFailover   = "auto_failover"
	KindAutoFailback   = "auto_failback"
	KindManualFailover = "manual_failover"
	KindManualFailback = "manual_failback"
	KindSwitchover     = "switchover"
	KindWithheld       = "withheld"
	KindPause          = "pause"
	KindResume         = "resume"
	KindAck            = "ack"
	KindPolicy         = "policy"
	KindBreakGlass     = "break_glass"
	KindAction         = "action"
	KindMemberAdd      = "member_add"
	KindMemberRemove   = "member_remove"
)

// SystemActor is the actor recorded for automatic decisions.
const SystemActor = "drwatch"

// MaxHistory is how many history entries the machine keeps; older ones are
// dropped, routine ones first (see AuditKind).
const MaxHistory = 1000

// MaxAuditHistory is how many of the MaxHistory entries audit entries may
// hold. Beyond it the oldest audit entry is dropped; a routine entry never
// drops one, so a flood of pauses and resumes cannot push the last manual
// move or membership change out of the history (invariant 13), and
// routine entries still have the other MaxHistory-MaxAuditHistory places.
const MaxAuditHistory = 500

// AuditKind reports whether history entries of kind are audit entries:
// every decision that moves traffic or sets new records (automatic and
// manual failovers and failbacks, switchovers, policy changes), break-glass
// DNS writes and the markers refused as forged or stale
// ("break_glass_rejected"), and changes of the Raft voters. They are rare,
// and each one is what an audit asks about. Automatic decisions and policy
// changes are among them because the reconciler and the decision core look
// a decision up by its generation (its gates, action results, explain), so
// routine traffic must not evict the decision DNS is being written for; a
// policy change rewrites the rules every automatic decision follows.
// Routine entries are pause, resume, ack, withheld, action, remediation and
// drill: an operate token can make them at will, so they may only evict
// each other.
func AuditKind(kind string) bool {
	switch kind {
	case KindAutoFailover, KindAutoFailback, KindManualFailover, KindManualFailback, KindSwitchover, KindPolicy,
		KindBreakGlass, "break_glass_rejected", KindMemberAdd, KindMemberRemove:
		return true
	}
	return false
}

// ringSize is how many recent ok/fail results each probe keeps for the status page.
const ringSize = 20

// maxUnknownProbes bounds the per-node count of distinct unknown probes, so a
// misbehaving watcher cannot grow the replicated state without limit.
const maxUnknownProbes = 32

// otherUnknown collects unknown probes beyond maxUnknownProbes.
const otherUnknown = "(more)"

// Desired is the DNS state the reconciler must bring about.
type Desired struct {
	// Gen is the log index of the entry that set this desired state. 0 means
	// no decision yet: Records then show the policy's records for Active,
	// but DNS must be left as the operator set it.
	Gen    uint64 `json:"gen"`
	Active Site   `json:"active"`
	// Records are the RRsets for Active: absolute names, sorted values.
	Records []RRset `json:"records"`
	// Done is true once an ActionResult reported "verified" for Gen.
	Done bool `json:"done"`
	// Fence is the fencing token the reconciler writes with ("gen=42"), so a
	// deposed leader's write for an older generation can be told apart.
	Fence string `json:"fence"`
}

func fence(gen uint64) string { return "gen=" + strconv.FormatUint(gen, 10) }

func (d Desired) clone() Desired {
	d.Records = cloneRRsets(d.Records)
	return d
}

func cloneRRsets(rs []RRset) []RRset {
	if rs == nil {
		return nil
	}
	out := make([]RRset, len(rs))
	for i, r := range rs {
		r.Values = slices.Clone(r.Values)
		out[i] = r
	}
	return out
}

// Tally is a site's quorum verdict with the nodes behind each vote.
type Tally struct {
	Verdict Verdict  `json:"verdict"`
	Up      []string `json:"up"`
	Down    []string `json:"down"`
	Abstain []string `json:"abstain"`
	Unknown []string `json:"unknown"`
	Quorum  int      `json:"quorum"`
}

func (t Tally) clone() Tally {
	t.Up = slices.Clone(t.Up)
	t.Down = slices.Clone(t.Down)
	t.Abstain = slices.Clone(t.Abstain)
	t.Unknown = slices.Clone(t.Unknown)
	return t
}

// ProbeFailure is a failing critical probe named in evidence.
type ProbeFailure struct {
	Site      Site    `json:"site"`
	Probe     string  `json:"probe"`
	State     Verdict `json:"state"`
	Fails     int     `json:"fails"`
	FailSince int64   `json:"fail_since,omitempty"`
	Class     string  `json:"class,omitempty"`
	Phase     string  `json:"phase,omitempty"`
	Reason    string  `json:"reason,omitempty"`
	// StreakAt is when the watcher's current run of failures began, on its
	// clock (its last result's ProbeResult.StreakAt): with a streak Fails
	// counts rounds the log never saw, so FailSince, when the log learnt
	// of the first, can be later than the failures it counts. 0 in logs
	// of format 1 and before.
	StreakAt int64 `json:"streak_at,omitempty"`
}

// NodeEvidence is one node's part in a decision: its votes, why it abstained
// if it did, and which critical probes were failing.
type NodeEvidence struct {
	Node       string           `json:"node"`
	Votes      map[Site]Verdict `json:"votes"`
	Abstain    string           `json:"abstain,omitempty"`
	LastReport int64            `json:"last_report"`
	Failing    []ProbeFailure   `json:"failing,omitempty"`
}

func (e NodeEvidence) clone() NodeEvidence {
	if e.Votes != nil {
		v := make(map[Site]Verdict, len(e.Votes))
		for k, x := range e.Votes {
			v[k] = x
		}
		e.Votes = v
	}
	e.Failing = slices.Clone(e.Failing)
	return e
}

// Timings follow a decision from the first failed probe to verified DNS.
// Unix nanoseconds; 0 = not yet, or unknown.
//
// FirstFailureAt and DetectedAt are evidence times on the watchers' clocks
// (ProbeResult.CompletedAt), the rest are the leader's. So the gaps between
// them include any clock skew between watchers and leader.
type Timings struct {
	// FirstFailureAt is when the first failed critical probe of the site
	// being left completed, on any watcher that does not abstain. 0 when
	// no watcher stamped its results.
	FirstFailureAt int64 `json:"first_failure_at,omitempty"`
	// DetectedAt is when the probe completed that gave the quorum-th
	// watcher its fall-th failure: the earliest the decision could have
	// been made. When a DOWN voter did not stamp its results (older
	// versions), it is the leader-stamped time the quorum first saw the
	// site DOWN.
	DetectedAt int64 `json:"detected_at,omitempty"`
	// DecidedAt is the leader's stamp of the command that made the decision.
	DecidedAt int64 `json:"decided_at,omitempty"`
	// WrittenAt and VerifiedAt are the reconciler's: the DNS write, and
	// every authoritative server serving the new records.
	WrittenAt  int64 `json:"written_at,omitempty"`
	VerifiedAt int64 `json:"verified_at,omitempty"`
	// Servers are the per-server verification times, sorted by server.
	Servers []ServerVerification `json:"servers,omitempty"`
	// LeaderlessFrom and LeaderlessTo are the last span without a leader
	// (nothing committed for longer than LeaderlessAfter intervals, see
	// state.LeaderlessFrom) before the decision, when it ended after the
	// failure episode began: the leaders' stamps of the last command
	// before it and of the first after. 0 when there was none, and in
	// logs of format 1 and before.
	LeaderlessFrom int64 `json:"leaderless_from,omitempty"`
	LeaderlessTo   int64 `json:"leaderless_to,omitempty"`
}

// ServerVerification is when one authoritative server was first seen
// serving a decision's records (reconciler's clock, unix nanoseconds).
type ServerVerification struct {
	Server     string `json:"server"`
	VerifiedAt int64  `json:"verified_at"`
}

// TimingStep is one step of a decision's timeline, as explain and the
// status page show it.
type TimingStep struct {
	// Label is "first failure", "detected", "leaderless" (the time
	// without a leader, see Since), "decided", "DNS written", "verified",
	// or the server's name for a per-server verification.
	Label string
	At    int64
	// Gap is the time since the step before (for a server: since the DNS
	// write, or the decision when the write time is unknown); 0 for the
	// first step. It is negative when clocks disagree.
	Gap time.Duration
	// Server is true for a per-server verification step.
	Server bool
	// Since is, for the "leaderless" step, the stamp of the last command
	// before the span: its Gap is the time without a leader, from Since to
	// At, and the next step's gap counts from At.
	Since int64
}

// Steps lists the known times in causal order with the gaps between them.
// Unknown (0) times are left out.
func (t Timings) Steps() []TimingStep {
	var out []TimingStep
	var prev int64
	add := func(label string, at int64) {
		if at == 0 {
			return
		}
		st := TimingStep{Label: label, At: at}
		if prev != 0 {
			st.Gap = time.Duration(at - prev)
		}
		prev = at
		out = append(out, st)
	}
	leaderless := func(before int64) {
		if t.LeaderlessTo == 0 || (before != 0 && before < t.LeaderlessTo) {
			return
		}
		out = append(out, TimingStep{Label: "leaderless", At: t.LeaderlessTo, Gap: time.Duration(t.LeaderlessTo - t.LeaderlessFrom), Since: t.LeaderlessFrom})
		prev = t.LeaderlessTo
		t.LeaderlessTo = 0
	}
	add("first failure", t.FirstFailureAt)
	leaderless(t.DetectedAt)
	add("detected", t.DetectedAt)
	leaderless(t.DecidedAt)
	add("decided", t.DecidedAt)
	leaderless(0)
	add("DNS written", t.WrittenAt)
	from := cmp.Or(t.WrittenAt, t.DecidedAt)
	for _, sv := range t.Servers {
		st := TimingStep{Label: sv.Server, At: sv.VerifiedAt, Server: true}
		if from != 0 {
			st.Gap = time.Duration(sv.VerifiedAt - from)
		}
		out = append(out, st)
	}
	add("verified", t.VerifiedAt)
	return out
}

// IsZero reports whether no time is known.
func (t Timings) IsZero() bool {
	return t.FirstFailureAt == 0 && t.DetectedAt == 0 && t.DecidedAt == 0 && t.WrittenAt == 0 &&
		t.VerifiedAt == 0 && len(t.Servers) == 0 && t.LeaderlessTo == 0
}

// Entry is one line of the audit history.
type Entry struct {
	// Index is the log index of the command that made the entry.
	Index uint64 `json:"index"`
	// Gen is the decision generation: equal to Index for entries that set a
	// new desired state, the referenced generation for "action" entries, 0 otherwise.
	Gen      uint64         `json:"gen,omitempty"`
	At       int64          `json:"at"`
	Kind     string         `json:"kind"`
	From     Site           `json:"from,omitempty"`
	To       Site           `json:"to,omitempty"`
	Actor    string         `json:"actor,omitempty"`
	Reason   string         `json:"reason,omitempty"`
	Rule     string         `json:"rule,omitempty"` // withheld: the rule that held; forced: the rule overridden
	Forced   bool           `json:"forced,omitempty"`
	Evidence []NodeEvidence `json:"evidence,omitempty"`
	Tallies  map[Site]Tally `json:"tallies,omitempty"`
	Timings  Timings        `json:"timings"`
	Outcome  string         `json:"outcome,omitempty"`
	Detail   string         `json:"detail,omitempty"`
	// Group is the failover group the entry is about; empty for
	// DefaultGroup and for what belongs to no group (membership, drills).
	Group string `json:"group,omitempty"`
}

// decision reports whether e set a new desired state.
// InGroup reports whether e belongs in failover group's history (""
// or DefaultGroup for the default group): the group's own entries and the
// cluster's (policy, membership, repairs, drills). An entry of the default
// group carries no group, like the cluster's; its kind tells them apart:
// a move, a withheld flip, a pause, resume or ack, a reconciler's report
// and a break-glass are a group's.
func (e Entry) InGroup(group string) bool {
	if group == DefaultGroup {
		group = ""
	}
	switch {
	case e.Group != "":
		return e.Group == group
	case group == "":
		return true
	}
	switch e.Kind {
	case KindAutoFailover, KindAutoFailback, KindManualFailover, KindManualFailback, KindSwitchover,
		KindWithheld, KindPause, KindResume, KindAck, KindAction, KindBreakGlass:
		return false // the default group's
	}
	return true
}

func (e *Entry) decision() bool {
	return e.Gen != 0 && e.Gen == e.Index && e.Kind != KindAction && e.Kind != KindRemediation
}

func (e Entry) clone() Entry {
	e.Timings.Servers = slices.Clone(e.Timings.Servers)
	if e.Evidence != nil {
		ev := make([]NodeEvidence, len(e.Evidence))
		for i, x := range e.Evidence {
			ev[i] = x.clone()
		}
		e.Evidence = ev
	}
	if e.Tallies != nil {
		t := make(map[Site]Tally, len(e.Tallies))
		for k, x := range e.Tallies {
			t[k] = x.clone()
		}
		e.Tallies = t
	}
	return e
}

// probeState is the hysteresis state of one (node, site, probe).
type probeState struct {
	State     Verdict     `json:"state"`
	OKs       int         `json:"oks"`
	Fails     int         `json:"fails"`
	FailSince int64       `json:"fail_since,omitempty"`
	LastAt    int64       `json:"last_at"`
	Last      ProbeResult `json:"last"`
	// Ring holds the last ringSize results, oldest first: '+' ok, '-' failed.
	Ring string `json:"ring"`
	// FirstFailAt is the watcher's completion time of the first failure
	// since the probe was last UP or UNKNOWN (kept through single successes
	// while DOWN), and FellAt that of the failure that made it DOWN. Both
	// are evidence for Timings only; 0 = not failing, or not stamped.
	FirstFailAt int64 `json:"first_fail_at,omitempty"`
	FellAt      int64 `json:"fell_at,omitempty"`
}

// nodeState is what the machine knows of one watcher.
type nodeState struct {
	Reported   bool   `json:"reported"`
	LastAt     int64  `json:"last_at"`
	LastSeq    uint64 `json:"last_seq,omitempty"`
	PolicyHash string `json:"policy_hash,omitempty"`
	// Probes is keyed "site/probe".
	Probes map[string]*probeState `json:"probes,omitempty"`
	// Unknown counts results for probes the policy does not name, keyed "site/probe".
	Unknown map[string]uint64 `json:"unknown,omitempty"`
}

func probeKey(s Site, probe string) string { return string(s) + "/" + probe }

// probe returns the state of site's probe name, nil when it has none. It
// builds the key on the stack: every evaluation looks up each critical
// probe of every group on every node.
func (ns *nodeState) probe(site Site, name string) *probeState {
	var buf [64]byte
	k := append(append(append(buf[:0], site...), '/'), name...)
	return ns.Probes[string(k)]
}

// withheld is an open episode in which the active site is DOWN at quorum but
// no automatic flip happens.
type withheld struct {
	Rule    string `json:"rule,omitempty"`
	Message string `json:"message,omitempty"`
	Since   int64  `json:"since,omitempty"`
}

// state is everything the machine replicates. It is encoded as-is by
// Snapshot: encoding/json sorts map keys, so the bytes are canonical.
type state struct {
	LastIndex  uint64  `json:"last_index"`
	Now        int64   `json:"now"`
	Policy     *Policy `json:"policy"`
	PolicyHash string  `json:"policy_hash"`
	// groupState is DefaultGroup's own state. Embedded without a tag, its
	// fields encode here, in this order, as they did before groups.
	groupState
	Nodes   map[string]*nodeState `json:"nodes"`
	History []Entry               `json:"history"`
	// Remediations are the remediation runner's records (bounded by MaxRemediations).
	Remediations []RemediationRecord `json:"remediations,omitempty"`
	// Drill is the running drill, nil when none runs; Drills the ended
	// ones, bounded by MaxDrills. Both are absent from older snapshots.
	Drill  *DrillRecord  `json:"drill,omitempty"`
	Drills []DrillRecord `json:"drills,omitempty"`
	// RemediationBudgets carry, per remediation, what its records evicted
	// from Remediations said (see RemediationBudget), so that caps and
	// backoff outlive any record traffic (invariant 13). Empty until a
	// record is evicted, and absent from older snapshots: their binaries
	// kept nothing of an evicted record, so there is nothing to rebuild.
	RemediationBudgets map[string]*RemediationBudget `json:"remediation_budgets,omitempty"`
	// Format is the cluster's effective log format (SetFormat): what the
	// leader may write. Absent (LegacyFormat) until a SetFormat raised it,
	// so older snapshots read as before.
	Format int `json:"format,omitempty"`
	// LeaderlessFrom and LeaderlessTo are the latest span in which nothing
	// committed for longer than LeaderlessAfter intervals, on the leaders'
	// clocks: the At of the last command before it and of the first after.
	// A leader commits a tick every interval and the watchers report every
	// interval, so such a span is time without a leader that could commit
	// (an election, a lost quorum). Recorded only from log format 2 on, so
	// older logs replay to the same snapshots.
	LeaderlessFrom int64 `json:"leaderless_from,omitempty"`
	LeaderlessTo   int64 `json:"leaderless_to,omitempty"`
	// Groups is the state of each failover group of Policy.Groups, by
	// name. DefaultGroup's is the embedded groupState, where it always was. Absent until a policy with groups is set (log
	// format 3), so older snapshots read, and encode, as before.
	Groups map[string]*groupState `json:"groups,omitempty"`

	// scope is the group whose state the embedded groupState holds while
	// inGroup runs; "" for DefaultGroup. Not replicated.
	scope string
}

// groupState is one failover group's own state; state embeds
// DefaultGroup's.
type groupState struct {
	Active       Site           `json:"active"`
	ActiveSince  int64          `json:"active_since"`
	Desired      Desired        `json:"desired"`
	Paused       bool           `json:"paused"`
	PausedUntil  int64          `json:"paused_until"`
	PausedBy     string         `json:"paused_by,omitempty"`
	PauseReason  string         `json:"pause_reason,omitempty"`
	BlockedUntil int64          `json:"blocked_until"`
	Withheld     withheld       `json:"withheld"`
	DownSince    map[Site]int64 `json:"down_since,omitempty"`
	PrimaryUp    bool           `json:"primary_up"`
	PrimaryUpAt  int64          `json:"primary_up_at"`
	// Budgets carry, per remediation, what the group's own runner's
	// evicted records said (state.RemediationBudgets, per group). Only a
	// group of Policy.Groups has them: DefaultGroup's, and the top-level
	// runner's, stay in state.RemediationBudgets where they always were,
	// so this is empty, and absent, in the embedded groupState.
	Budgets map[string]*RemediationBudget `json:"budgets,omitempty"`
}

// newGroupState is a group's state before any decision: the primary
// active, nothing desired yet.
func newGroupState() *groupState {
	return &groupState{Active: Primary, Desired: Desired{Active: Primary, Fence: fence(0)}}
}

// inGroup runs f with group name's state in the embedded groupState and
// its policy (Policy.ForGroup) in s.Policy, so every rule reads one
// group's state and policy by the code DefaultGroup has always run, then
// puts everything back. DefaultGroup runs f as it is. Entries f appends
// carry the group's name. ok is false, and f does not run, for a group the
// policy does not have.
func (s *state) inGroup(name string, f func()) (ok bool) {
	if name == "" || name == DefaultGroup {
		if s.Policy != nil && !s.Policy.HasDefaultGroup() {
			return false
		}
		f()
		return true
	}
	if s.Policy == nil || s.scope != "" {
		return false
	}
	gp, ok := s.Policy.ForGroup(name)
	gs := s.Groups[name]
	if !ok || gs == nil {
		return false
	}
	full, def := s.Policy, s.groupState
	s.Policy, s.scope, s.groupState = gp, name, *gs
	defer func() {
		*gs = s.groupState
		s.Policy, s.scope, s.groupState = full, "", def
	}()
	f()
	return true
}

// LeaderlessAfter is how many report intervals without any commit make a
// span leaderless (state.LeaderlessFrom). One and a half: a leader's ticks
// alone commit every interval, give or take a proposal's latency.
const LeaderlessAfter = 1.5

// noteLeaderless records the span since the last command, when the
// command at now comes after a leaderless one.
func (s *state) noteLeaderless(now int64) {
	if s.Format < 2 || s.Policy == nil || s.Now == 0 {
		return
	}
	if float64(now-s.Now) > LeaderlessAfter*float64(s.Policy.Interval) {
		s.LeaderlessFrom, s.LeaderlessTo = s.Now, now
	}
}

func newState() state {
	return state{groupState: *newGroupState(), Nodes: map[string]*nodeState{}}
}
