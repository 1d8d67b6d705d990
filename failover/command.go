package failover

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// Command is one entry of the replicated log: a version, a type tag and
// exactly the one payload the tag names. Every payload carries At, the
// leader's clock in unix nanoseconds (see Stamp).
type Command struct {
	V            int           `json:"v"`
	Type         CommandType   `json:"type"`
	Observe      *Observe      `json:"observe,omitempty"`
	Tick         *Tick         `json:"tick,omitempty"`
	Failover     *Failover     `json:"failover,omitempty"`
	Failback     *Failback     `json:"failback,omitempty"`
	Pause        *Pause        `json:"pause,omitempty"`
	Resume       *Resume       `json:"resume,omitempty"`
	Ack          *Ack          `json:"ack,omitempty"`
	ActionResult *ActionResult `json:"action_result,omitempty"`
	SetPolicy    *SetPolicy    `json:"set_policy,omitempty"`
	BreakGlass   *BreakGlass   `json:"break_glass,omitempty"`
	Remediation  *Remediation  `json:"remediation,omitempty"`
	Membership   *Membership   `json:"membership,omitempty"`
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
}

// Observe is one probe round from one watcher, covering both sites. Seq is
// the watcher's round counter; a repeat of the node's last Seq is a no-op
// (0 disables that check). PolicyHash is the hash of the policy the watcher runs.
type Observe struct {
	Node       string        `json:"node"`
	At         int64         `json:"at"`
	Seq        uint64        `json:"seq,omitempty"`
	PolicyHash string        `json:"policy_hash"`
	Results    []ProbeResult `json:"results"`
}

// Tick advances time so that staleness, pause expiry, block expiry and
// failback dwell are evaluated even when no reports arrive.
type Tick struct {
	At int64 `json:"at"`
}

// Failover asks to make To the active site. Force overrides the safety rules
// and is recorded. Planned asks for a switchover: both sites must be UP at quorum.
type Failover struct {
	At      int64  `json:"at"`
	To      Site   `json:"to"`
	Reason  string `json:"reason,omitempty"`
	Actor   string `json:"actor,omitempty"`
	Force   bool   `json:"force,omitempty"`
	Planned bool   `json:"planned,omitempty"`
	// AckBlock: see Failback.AckBlock.
	AckBlock bool `json:"ack_block,omitempty"`
}

// Failback asks to make the primary active again.
type Failback struct {
	At     int64  `json:"at"`
	Reason string `json:"reason,omitempty"`
	Actor  string `json:"actor,omitempty"`
	Force  bool   `json:"force,omitempty"`
	// AckBlock makes the move, once applied, acknowledge a standing block on
	// automatic flips as Ack does, so a manual move re-arms automatic
	// failover. Stamp sets it: it is false in entries that leaders wrote
	// before this rule, and those replay as they were applied then, with
	// the block left standing.
	AckBlock bool `json:"ack_block,omitempty"`
}

// Pause stops automatic decisions until Until (unix ns), or until Resume when Until is 0.
type Pause struct {
	At     int64  `json:"at"`
	Reason string `json:"reason,omitempty"`
	Actor  string `json:"actor,omitempty"`
	Until  int64  `json:"until,omitempty"`
}

// Resume ends a pause.
type Resume struct {
	At     int64  `json:"at"`
	Reason string `json:"reason,omitempty"`
	Actor  string `json:"actor,omitempty"`
}

// Ack acknowledges an automatic flip and lifts the block on further automatic flips.
type Ack struct {
	At     int64  `json:"at"`
	Reason string `json:"reason,omitempty"`
	Actor  string `json:"actor,omitempty"`
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
	At         int64                `json:"at"`
	Gen        uint64               `json:"gen"`
	Outcome    string               `json:"outcome"`
	Detail     string               `json:"detail,omitempty"`
	Actor      string               `json:"actor,omitempty"`
	WrittenAt  int64                `json:"written_at,omitempty"`
	VerifiedAt int64                `json:"verified_at,omitempty"`
	Servers    []ServerVerification `json:"servers,omitempty"`
}

// SetPolicy replaces the replicated policy.
type SetPolicy struct {
	At     int64  `json:"at"`
	Policy Policy `json:"policy"`
	Actor  string `json:"actor,omitempty"`
}

// BreakGlass records a DNS write that an operator made without quorum; it
// makes Site active and is recorded as forced.
type BreakGlass struct {
	At        int64  `json:"at"`
	Site      Site   `json:"site"`
	Reason    string `json:"reason,omitempty"`
	Actor     string `json:"actor,omitempty"`
	WrittenAt int64  `json:"written_at,omitempty"`
}

// Command wraps the payload in a Command of the current version.
func (o Observe) Command() Command { return Command{V: Version, Type: CmdObserve, Observe: &o} }

// Command wraps the payload in a Command of the current version.
func (t Tick) Command() Command { return Command{V: Version, Type: CmdTick, Tick: &t} }

// Command wraps the payload in a Command of the current version.
func (f Failover) Command() Command { return Command{V: Version, Type: CmdFailover, Failover: &f} }

// Command wraps the payload in a Command of the current version.
func (f Failback) Command() Command { return Command{V: Version, Type: CmdFailback, Failback: &f} }

// Command wraps the payload in a Command of the current version.
func (p Pause) Command() Command { return Command{V: Version, Type: CmdPause, Pause: &p} }

// Command wraps the payload in a Command of the current version.
func (r Resume) Command() Command { return Command{V: Version, Type: CmdResume, Resume: &r} }

// Command wraps the payload in a Command of the current version.
func (a Ack) Command() Command { return Command{V: Version, Type: CmdAck, Ack: &a} }

// Command wraps the payload in a Command of the current version.
func (a ActionResult) Command() Command {
	return Command{V: Version, Type: CmdActionResult, ActionResult: &a}
}

// Command wraps the payload in a Command of the current version.
func (s SetPolicy) Command() Command { return Command{V: Version, Type: CmdSetPolicy, SetPolicy: &s} }

// Command wraps the payload in a Command of the current version.
func (b BreakGlass) Command() Command {
	return Command{V: Version, Type: CmdBreakGlass, BreakGlass: &b}
}

// check verifies the envelope: version, a known type, and exactly the one
// payload the type names.
func (c *Command) check() error {
	if c.V != Version {
		return fmt.Errorf("command version %d, want %d: %w", c.V, Version, ErrBadCommand)
	}
	payloads := []struct {
		t   CommandType
		set bool
	}{
		{CmdObserve, c.Observe != nil},
		{CmdTick, c.Tick != nil},
		{CmdFailover, c.Failover != nil},
		{CmdFailback, c.Failback != nil},
		{CmdPause, c.Pause != nil},
		{CmdResume, c.Resume != nil},
		{CmdAck, c.Ack != nil},
		{CmdActionResult, c.ActionResult != nil},
		{CmdSetPolicy, c.SetPolicy != nil},
		{CmdBreakGlass, c.BreakGlass != nil},
		{CmdRemediation, c.Remediation != nil},
		{CmdMembership, c.Membership != nil},
	}
	known, n, match := false, 0, false
	for _, p := range payloads {
		if p.t == c.Type {
			known = true
			match = p.set
		}
		if p.set {
			n++
		}
	}
	switch {
	case !known:
		return fmt.Errorf("unknown command type %q: %w", c.Type, ErrBadCommand)
	case !match:
		return fmt.Errorf("command %s without its payload: %w", c.Type, ErrBadCommand)
	case n != 1:
		return fmt.Errorf("command %s with %d payloads, want 1: %w", c.Type, n, ErrBadCommand)
	}
	return nil
}

// at returns the payload's At. c must have passed check.
func (c *Command) at() int64 {
	switch c.Type {
	case CmdObserve:
		return c.Observe.At
	case CmdTick:
		return c.Tick.At
	case CmdFailover:
		return c.Failover.At
	case CmdFailback:
		return c.Failback.At
	case CmdPause:
		return c.Pause.At
	case CmdResume:
		return c.Resume.At
	case CmdAck:
		return c.Ack.At
	case CmdActionResult:
		return c.ActionResult.At
	case CmdSetPolicy:
		return c.SetPolicy.At
	case CmdBreakGlass:
		return c.BreakGlass.At
	case CmdRemediation:
		return c.Remediation.At
	case CmdMembership:
		return c.Membership.At
	}
	return 0
}

// setAt sets the payload's At. c must have passed check.
func (c *Command) setAt(at int64) {
	switch c.Type {
	case CmdObserve:
		c.Observe.At = at
	case CmdTick:
		c.Tick.At = at
	case CmdFailover:
		c.Failover.At = at
	case CmdFailback:
		c.Failback.At = at
	case CmdPause:
		c.Pause.At = at
	case CmdResume:
		c.Resume.At = at
	case CmdAck:
		c.Ack.At = at
	case CmdActionResult:
		c.ActionResult.At = at
	case CmdSetPolicy:
		c.SetPolicy.At = at
	case CmdBreakGlass:
		c.BreakGlass.At = at
	case CmdRemediation:
		c.Remediation.At = at
	case CmdMembership:
		c.Membership.At = at
	}
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
	b, err := json.Marshal(c)
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
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var c Command
	if err := dec.Decode(&c); err != nil {
		return Command{}, fmt.Errorf("decode command: %w: %w", ErrBadCommand, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Command{}, fmt.Errorf("decode command: trailing data after the command: %w", ErrBadCommand)
	}
	if err := c.check(); err != nil {
		return Command{}, fmt.Errorf("decode command: %w", err)
	}
	return c, nil
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
func Stamp(b []byte, at int64) ([]byte, error) {
	c, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("stamp: %w", err)
	}
	c.setAt(at)
	switch c.Type {
	case CmdFailover:
		c.Failover.AckBlock = true
	case CmdFailback:
		c.Failback.AckBlock = true
	}
	return Encode(c)
}
