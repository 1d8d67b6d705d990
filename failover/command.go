package failover

import (
	"cmp"
	"fmt"
	"strings"
)

// Version is the command encoding version this package reads and writes.
const Version = 1

// MaxCommandSize bounds an encoded command; Decode refuses anything larger.
const MaxCommandSize = 1 << 20

// CommandType tags which payload a Command carries.
type CommandType string

// Command types.
const (
	CmdObserve      CommandType = "observe"
	CmdTick         CommandType = "tick"
	CmdFailover     CommandType = "failover"
	CmdFailback     CommandType = "failback"
	CmdPause        CommandType = "pause"
	CmdResume       CommandType = "resume"
	CmdAck          CommandType = "ack"
	CmdActionResult CommandType = "action_result"
	CmdSetPolicy    CommandType = "set_policy"
	CmdBreakGlass   CommandType = "break_glass"
	CmdRemediation  CommandType = "remediation"
	CmdMembership   CommandType = "membership"
)

// Command is one entry of the replicated log: the time the leader stamped
// it with and the one payload that says what it asks. Like the term on an
// etcd raft Message, At belongs to every entry whatever its type, so it
// lives here and not in each payload; on the wire it stays where version 1
// wrote it, inside the payload object (see wire.go).
type Command struct {
	// At is the leader's clock in unix nanoseconds (see Stamp). Every time
	// rule of the machine reads it, never a wall clock.
	At int64
	// Payload is one of the payload types of this package (Observe, Tick,
	// ...), as a value, not a pointer.
	Payload Payload
}

// Payload is what a command asks of the machine. The payload types of this
// package implement it, and only they: the machine must know how to apply
// each, and the wire format how to read each (payloadTypes).
type Payload interface {
	// CommandType names the payload on the wire.
	CommandType() CommandType
	// text returns the free text a person wrote into the payload, held to
	// CheckText when it is proposed; "" where there is none.
	text() (reason, actor string)
	// apply steps s by the payload. On error s must be unchanged.
	apply(s *state, a applyArgs) error
}

// applyArgs is what a payload's apply gets besides the state: the log index,
// the machine's clock (the command's At, never going backwards), the
// result to fill in, and, in a dry run, where to list the rules checked.
type applyArgs struct {
	index   uint64
	now     int64
	res     *Result
	checked *[]Check
}

// payloadTypes is every payload type, in the order of the version 1 union
// the wire format keeps. Decode looks up a command's type here.
var payloadTypes = []Payload{
	Observe{}, Tick{}, Failover{}, Failback{}, Pause{}, Resume{}, Ack{},
	ActionResult{}, SetPolicy{}, BreakGlass{}, Remediation{}, Membership{},
	DrillStart{}, DrillStep{}, DrillEnd{}, BreakGlassRejected{}, SetFormat{},
}

// Type returns the command's type, "" when it has no payload.
func (c Command) Type() CommandType {
	if c.Payload == nil {
		return ""
	}
	return c.Payload.CommandType()
}

// ProbeResult is one probe's outcome in one round, as a watcher saw it.
// CertExpiry is unix seconds, 0 when the probe saw no certificate.
//
// CompletedAt is the watcher's own clock when the probe finished, unix
// nanoseconds, 0 when the watcher did not say (older versions). It is
// evidence only: it feeds the decision's Timings (FirstFailureAt,
// DetectedAt) and never a rule. Staleness, windows and dwell run on the
// leader's At, so a watcher with a wrong clock cannot change a decision.
type ProbeResult struct {
	Site        Site   `json:"site"`
	Probe       string `json:"probe"`
	OK          bool   `json:"ok"`
	Class       string `json:"class,omitempty"`
	Phase       string `json:"phase,omitempty"`
	Reason      string `json:"reason,omitempty"`
	LatencyMS   int64  `json:"latency_ms,omitempty"`
	CertExpiry  int64  `json:"cert_expiry,omitempty"`
	CompletedAt int64  `json:"completed_at,omitempty"`
	// Streak is the watcher's own count of failures in a row of this
	// probe, this one included, over its consecutive rounds (each within
	// the policy's stale window of the one before), whether or not its
	// reports committed; StreakAt is the CompletedAt of the streak's first
	// failure and StreakFellAt that of its fall-th (0 while fewer). All
	// three are 0 on a success and in reports of log format 1 and before
	// (the watcher writes them only once the cluster's format is 2). The
	// machine counts a failing result with a Streak as that many failing
	// rounds (see probeState.record): so the first report after an
	// election carries the rounds lost while no leader could commit them.
	Streak       int   `json:"streak,omitempty"`
	StreakAt     int64 `json:"streak_at,omitempty"`
	StreakFellAt int64 `json:"streak_fell_at,omitempty"`
}

// Observe is one probe round from one watcher. Seq is the watcher's round
// counter; a repeat of the node's last Seq is a no-op (0 disables that
// check). PolicyHash is the hash of the policy the watcher runs.
//
// A full report (Base 0) carries every result of the round. A lean report
// (Base != 0) carries only what the log does not already know: it is
// relative to the node's report with Seq == Base, which must be the last
// one applied, under the replicated policy, and Sites names the sites the
// round covered. Every policy probe of a covered site that has no result
// in Results repeats its last recorded result in this round, completed at
// RoundAt, exactly as if the watcher had sent it again: the hysteresis,
// staleness and ring step as for a full report, so both forms give the
// same decisions (LeanEncoder builds lean reports; see DESIGN.md). A lean
// report with no Results that covers both sites is a heartbeat. The three
// fields are absent from full reports, whose encoding is version 1's.
//
// A lean report may leave PolicyHash empty, meaning the policy of its
// base, which must be the replicated one (effectiveHash): the encoding
// then omits policy_hash, the largest field of a heartbeat. A full report
// always writes policy_hash, empty or not, as version 1 did.
//
// A lean report whose entry writes policy_hash empty (WrittenEmpty) is
// what a leader from before hashless lean reports makes of one when it
// stamps it: that leader and its replicas read it as under no policy and
// refuse it, and so must every replica.
type Observe struct {
	Node string `json:"node"`
	// Version 1 wrote the command's At here, after node (see wireAt).
	_          wireAt
	Seq        uint64        `json:"seq,omitempty"`
	PolicyHash string        `json:"policy_hash" wire:"omitempty"`
	Results    []ProbeResult `json:"results"`
	// Base is the Seq of the node's applied report that a lean report
	// builds on; 0 for a full report.
	Base uint64 `json:"base,omitempty"`
	// Sites are the sites a lean report's round covered.
	Sites []Site `json:"sites,omitempty"`
	// RoundAt is the watcher's clock when the round completed, unix ns: the
	// CompletedAt of every repeated result (0: not stamped).
	RoundAt int64 `json:"round_at,omitempty"`
	// WrittenEmpty is set by Decode on a lean report whose entry writes
	// policy_hash empty or null: its policy is none, not its base's. It is
	// no wire field of its own; with it, the encoding writes policy_hash.
	WrittenEmpty bool `json:"-"`
}

// CommandType implements Payload.
func (Observe) CommandType() CommandType { return CmdObserve }

// wireOmitEmpty implements wireOmitter: a lean report leaves out an empty
// policy_hash, unless its entry wrote it.
func (o Observe) wireOmitEmpty() bool { return o.Base != 0 && !o.WrittenEmpty }

// wireWritten implements wireOmitter.
func (o Observe) wireWritten() Payload {
	o.WrittenEmpty = o.PolicyHash == ""
	return o
}

// baseHash reports whether o is under the policy of its base: a lean
// report without a policy hash, its entry not writing one.
func (o *Observe) baseHash() bool { return o.Base != 0 && o.PolicyHash == "" && !o.WrittenEmpty }

// effectiveHash returns the hash of the policy o was observed under, given
// its node's recorded state ns (nil: none): PolicyHash, or under the
// policy of its base the hash recorded with the base, the node's last
// applied report.
func (o *Observe) effectiveHash(ns *nodeState) string {
	if o.baseHash() && ns != nil {
		return ns.PolicyHash
	}
	return o.PolicyHash
}

func (Observe) text() (reason, actor string) { return "", "" }

func (o Observe) apply(s *state, a applyArgs) error { return s.observe(a.index, a.now, &o, a.res) }

// Tick advances time so that staleness, pause expiry, block expiry and
// failback dwell are evaluated even when no reports arrive.
type Tick struct{}

// CommandType implements Payload.
func (Tick) CommandType() CommandType { return CmdTick }

func (Tick) text() (reason, actor string) { return "", "" }

func (Tick) apply(s *state, a applyArgs) error {
	s.Now = a.now
	s.evaluate(a.index, a.res)
	return nil
}

// Failover asks to make To the active site. Force overrides the safety rules
// and is recorded. Planned asks for a switchover: both sites must be UP at quorum.
type Failover struct {
	To      Site   `json:"to"`
	Reason  string `json:"reason,omitempty"`
	Actor   string `json:"actor,omitempty"`
	Force   bool   `json:"force,omitempty"`
	Planned bool   `json:"planned,omitempty"`
	// AckBlock: see Failback.AckBlock.
	AckBlock bool `json:"ack_block,omitempty"`
	// Group is the failover group the command is for; empty for DefaultGroup.
	Group string `json:"group,omitempty"`
	// AllGroups moves every failover group of the policy (Group must be
	// empty), each by its own rules as if asked alone: a group its rules
	// refuse stays where it is, and the others move. Result.Groups says
	// what happened to each; the command fails only when no group moved
	// and one was refused.
	AllGroups bool `json:"all_groups,omitempty"`
}

// CommandType implements Payload.
func (Failover) CommandType() CommandType { return CmdFailover }

func (f Failover) text() (reason, actor string) { return f.Reason, f.Actor }

func (f Failover) apply(s *state, a applyArgs) error {
	if f.AllGroups {
		return s.allGroups(f, a)
	}
	return s.forGroup(f.Group, CmdFailover, a, func() error { return s.manual(a.index, a.now, f.move(), a.res, a.checked) })
}

// Failback asks to make the primary active again.
type Failback struct {
	Reason string `json:"reason,omitempty"`
	Actor  string `json:"actor,omitempty"`
	Force  bool   `json:"force,omitempty"`
	// AckBlock makes the move, once applied, acknowledge a standing block on
	// automatic flips as Ack does, so a manual move re-arms automatic
	// failover. Stamp sets it: it is false in entries that leaders wrote
	// before this rule, and those replay as they were applied then, with
	// the block left standing.
	AckBlock bool `json:"ack_block,omitempty"`
	// Group is the failover group the command is for; empty for DefaultGroup.
	Group string `json:"group,omitempty"`
}

// CommandType implements Payload.
func (Failback) CommandType() CommandType { return CmdFailback }

func (f Failback) text() (reason, actor string) { return f.Reason, f.Actor }

func (f Failback) apply(s *state, a applyArgs) error {
	return s.forGroup(f.Group, CmdFailback, a, func() error { return s.manual(a.index, a.now, f.move(), a.res, a.checked) })
}

// Pause stops automatic decisions until Until (unix ns), or until Resume when Until is 0.
type Pause struct {
	Reason string `json:"reason,omitempty"`
	Actor  string `json:"actor,omitempty"`
	Until  int64  `json:"until,omitempty"`
	// Group is the failover group the command is for; empty for DefaultGroup.
	Group string `json:"group,omitempty"`
}

// CommandType implements Payload.
func (Pause) CommandType() CommandType { return CmdPause }

func (p Pause) text() (reason, actor string) { return p.Reason, p.Actor }

func (p Pause) apply(s *state, a applyArgs) error {
	return s.forGroup(p.Group, CmdPause, a, func() error { return s.pause(a.index, a.now, &p, a.res) })
}

// Resume ends a pause.
type Resume struct {
	Reason string `json:"reason,omitempty"`
	Actor  string `json:"actor,omitempty"`
	// Group is the failover group the command is for; empty for DefaultGroup.
	Group string `json:"group,omitempty"`
}

// CommandType implements Payload.
func (Resume) CommandType() CommandType { return CmdResume }

func (r Resume) text() (reason, actor string) { return r.Reason, r.Actor }

func (r Resume) apply(s *state, a applyArgs) error {
	return s.forGroup(r.Group, CmdResume, a, func() error { s.resume(a.index, a.now, &r, a.res); return nil })
}

// Ack acknowledges an automatic flip and lifts the block on further automatic flips.
type Ack struct {
	Reason string `json:"reason,omitempty"`
	Actor  string `json:"actor,omitempty"`
	// Group is the failover group the command is for; empty for DefaultGroup.
	Group string `json:"group,omitempty"`
}

// CommandType implements Payload.
func (Ack) CommandType() CommandType { return CmdAck }

func (k Ack) text() (reason, actor string) { return k.Reason, k.Actor }

func (k Ack) apply(s *state, a applyArgs) error {
	return s.forGroup(k.Group, CmdAck, a, func() error { s.ack(a.index, a.now, &k, a.res); return nil })
}

// Action outcomes reported by the reconciler.
const (
	OutcomeWritten  = "written"
	OutcomeVerified = "verified"
	OutcomeFailed   = "failed"
	OutcomeConflict = "conflict"
)

// ActionResult reports what the reconciler did for decision Gen. Servers
// are the times each authoritative server was first seen serving the new
// records (with OutcomeVerified; empty from older versions).
type ActionResult struct {
	Gen        uint64               `json:"gen"`
	Outcome    string               `json:"outcome"`
	Detail     string               `json:"detail,omitempty"`
	Actor      string               `json:"actor,omitempty"`
	WrittenAt  int64                `json:"written_at,omitempty"`
	VerifiedAt int64                `json:"verified_at,omitempty"`
	Servers    []ServerVerification `json:"servers,omitempty"`
	// Group is the failover group of decision Gen; empty for DefaultGroup.
	Group string `json:"group,omitempty"`
}

// CommandType implements Payload.
func (ActionResult) CommandType() CommandType { return CmdActionResult }

// text: the reconciler, not a person, writes an action result.
func (ActionResult) text() (reason, actor string) { return "", "" }

func (r ActionResult) apply(s *state, a applyArgs) error {
	return s.forGroup(r.Group, CmdActionResult, a, func() error { return s.actionResult(a.index, a.now, &r, a.res) })
}

// forGroup applies f in group's scope (state.inGroup) and names the group
// in the result; a group the policy does not have is a bad command. The
// default group, named or not, applies as before groups existed.
func (s *state) forGroup(group string, t CommandType, a applyArgs, f func() error) error {
	if group == DefaultGroup {
		group = ""
	}
	var err error
	if !s.inGroup(group, func() { err = f() }) {
		known := "none"
		if s.Policy != nil {
			known = strings.Join(s.Policy.GroupNames(), ", ")
		}
		return fmt.Errorf("%s: unknown failover group %q (groups: %s): %w", t, cmp.Or(group, DefaultGroup), known, ErrBadCommand)
	}
	if group != "" {
		a.res.Group = group
	}
	return err
}

// SetPolicy replaces the replicated policy.
type SetPolicy struct {
	Policy Policy `json:"policy"`
	Actor  string `json:"actor,omitempty"`
}

// CommandType implements Payload.
func (SetPolicy) CommandType() CommandType { return CmdSetPolicy }

func (p SetPolicy) text() (reason, actor string) { return "", p.Actor }

func (p SetPolicy) apply(s *state, a applyArgs) error { return s.setPolicy(a.index, a.now, &p, a.res) }

// BreakGlass records a DNS write that an operator made without quorum; it
// makes Site active and is recorded as forced.
type BreakGlass struct {
	Site      Site   `json:"site"`
	Reason    string `json:"reason,omitempty"`
	Actor     string `json:"actor,omitempty"`
	WrittenAt int64  `json:"written_at,omitempty"`
}

// CommandType implements Payload.
func (BreakGlass) CommandType() CommandType { return CmdBreakGlass }

func (b BreakGlass) text() (reason, actor string) { return b.Reason, b.Actor }

func (b BreakGlass) apply(s *state, a applyArgs) error {
	return s.breakGlass(a.index, a.now, &b, a.res)
}

// check verifies that c has a payload of one of the payload types, as a
// value: the payload decides how the machine applies c, and the wire
// format knows the values only.
func (c *Command) check() error {
	if c.Payload == nil {
		return fmt.Errorf("command without a payload: %w", ErrBadCommand)
	}
	if wire.payload(c.Payload) == nil {
		return fmt.Errorf("command payload %T is not one of the payload types: %w", c.Payload, ErrBadCommand)
	}
	return nil
}

// Encode returns the JSON encoding of c after checking its envelope and
// the free text a person wrote into it (see CheckText).
func Encode(c Command) ([]byte, error) {
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("encode command: %w", err)
	}
	if err := c.checkText(); err != nil {
		return nil, fmt.Errorf("encode command: %w", err)
	}
	b, err := wire.marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode command: %w: %w", ErrBadCommand, err)
	}
	if len(b) > MaxCommandSize {
		return nil, fmt.Errorf("encode command: %d bytes, limit %d: %w", len(b), MaxCommandSize, ErrBadCommand)
	}
	return b, nil
}

// Decode parses one command strictly: unknown fields, a wrong version, a
// missing or extra payload, trailing data and inputs over MaxCommandSize are
// errors wrapping ErrBadCommand. It never panics.
func Decode(b []byte) (Command, error) {
	if len(b) > MaxCommandSize {
		return Command{}, fmt.Errorf("decode command: %d bytes, limit %d: %w", len(b), MaxCommandSize, ErrBadCommand)
	}
	c, err := wire.unmarshal(b)
	if err != nil {
		return Command{}, fmt.Errorf("decode command: %w", err)
	}
	if f, ok := c.Payload.(SetFormat); ok && f.Format > Format {
		return Command{}, fmt.Errorf("decode command: %w", unreadableFormat(f.Format))
	}
	return c, nil
}

// MarshalJSON writes c in the wire format, as Encode does but without its
// checks.
func (c Command) MarshalJSON() ([]byte, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	return wire.marshal(c)
}

// UnmarshalJSON reads c strictly, as Decode does.
func (c *Command) UnmarshalJSON(b []byte) error {
	d, err := wire.unmarshal(b)
	if err != nil {
		return err
	}
	*c = d
	return nil
}

// Stamp sets At on the encoded command b and re-encodes it. Only the Raft
// leader calls it, right before proposing, so that the only clock in the log
// is the leader's.
//
// Stamp also marks manual moves with AckBlock. The leader, not the API that
// built the command, writes the rule into the log: followers are upgraded
// before the leader, so an old leader keeps proposing entries that old
// followers can decode, with the old meaning, and every replica, old or
// new, applies them alike.
func Stamp(b []byte, at int64) ([]byte, error) { return StampFormat(b, at, Format, Format) }

// StampFormat is Stamp on a leader whose cluster writes log format
// effective (Machine.Format) and whose servers all read everyServer: it
// refuses, with CheckFormat's refusal, a command that needs a newer
// format than effective, but for a SetFormat, which raises effective and
// may go as far as everyServer.
func StampFormat(b []byte, at int64, effective, everyServer int) ([]byte, error) {
	c, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("stamp: %w", err)
	}
	writable := effective
	if f, ok := c.Payload.(SetFormat); ok && f.Format <= everyServer {
		writable = max(effective, f.Format)
	}
	if err := CheckFormat(c, writable); err != nil {
		return nil, fmt.Errorf("stamp: %w", err)
	}
	c.At = at
	switch p := c.Payload.(type) {
	case Failover:
		p.AckBlock = true
		c.Payload = p
	case Failback:
		p.AckBlock = true
		c.Payload = p
	}
	return Encode(c)
}
