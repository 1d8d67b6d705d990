package failover

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Sentinel errors. Every error Step returns wraps exactly one of them, and
// DecodeResponse rebuilds it, so errors.Is works across a forwarded RPC.
var (
	// ErrRefused means a safety rule refused the command; the error is a *RefusedError.
	ErrRefused = errors.New("refused by safety rule")
	// ErrBadCommand means the command is malformed or invalid; retrying it cannot help.
	ErrBadCommand = errors.New("bad command")
	// ErrNoPolicy means no policy has been set yet.
	ErrNoPolicy = errors.New("no policy set")
	// ErrUnknownNode means an Observe came from a node that is not in the policy.
	ErrUnknownNode = errors.New("unknown node")
	// ErrUnknownGen means no decision with that generation is known (or it left the history).
	ErrUnknownGen = errors.New("unknown generation")
)

// ErrUnreadable means a log entry or snapshot needs a newer log format
// than this binary reads (see Format): the replica must stop applying,
// never skip the entry. An entry's error wraps ErrBadCommand too, so a
// response encodes it as any unreadable entry's.
var ErrUnreadable = errors.New("needs a newer log format")

// Safety rules, as named in RefusedError.Rule, withheld history entries and the status page.
const (
	RulePaused          = "paused"           // automatic decisions are paused
	RuleBlocked         = "blocked"          // an automatic flip happened recently and is not acknowledged
	RuleAutoDisabled    = "auto_disabled"    // policy has auto_failover off
	RuleTargetUnhealthy = "target_unhealthy" // the target site is not UP at quorum
	RuleNoQuorum        = "no_quorum"        // too few fresh nodes to reach quorum on the target
	RuleAlreadyActive   = "already_active"   // the target is already active (a no-op, not an error)
	RuleNotPlannedSafe  = "not_planned_safe" // a planned switchover needs both sites UP at quorum
	RuleFailbackManual  = "failback_manual"  // moving back to the primary is manual under this policy
	RuleFailbackDwell   = "failback_dwell"   // the primary has not been UP long enough for auto failback
	RuleFailbackGate    = "failback_gate"    // the primary's gate probes (its load balancers) are not UP at quorum
)

// RefusedError says which safety rule refused a command and how to override it.
// errors.Is(err, ErrRefused) is true for it.
type RefusedError struct {
	Rule     string `json:"rule"`
	Message  string `json:"message"`
	Override string `json:"override,omitempty"`
}

// Error names the rule, says why, and how to override it.
func (e *RefusedError) Error() string {
	s := "refused (" + e.Rule + "): " + e.Message
	if e.Override != "" {
		s += "; to override: " + e.Override
	}
	return s
}

// Is makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// Result is what a successful Step reports.
type Result struct {
	Index uint64      `json:"index"`
	Type  CommandType `json:"type"`
	// Gen is non-zero when this command created a decision (a new desired state).
	Gen  uint64 `json:"gen,omitempty"`
	Kind string `json:"kind,omitempty"` // history kind of the decision or record made
	From Site   `json:"from,omitempty"`
	To   Site   `json:"to,omitempty"`
	// Active is the active site after the command.
	Active Site `json:"active"`
	// Noop names why nothing changed (e.g. "already_active", "duplicate",
	// "not_blocked", "not_paused", "policy_unchanged"); empty otherwise.
	Noop string `json:"noop,omitempty"`
	// Withheld is set when this command opened or changed a withheld episode.
	Withheld string `json:"withheld,omitempty"`
	Message  string `json:"message,omitempty"`
	// Group names the failover group of a command that named one; empty
	// for DefaultGroup.
	Group string `json:"group,omitempty"`
	// Groups are the decisions and withheld episodes this command made in
	// failover groups other than DefaultGroup, in the policy's order; the
	// fields above hold DefaultGroup's, or the named group's.
	Groups []Result `json:"groups,omitempty"`
	// Refused is, in Groups, why a command for every group left this one
	// where it was: "rule: message".
	Refused string `json:"refused,omitempty"`
}

// Error codes on the wire; each maps to one sentinel.
const (
	codeRefused     = "refused"
	codeBadCommand  = "bad_command"
	codeNoPolicy    = "no_policy"
	codeUnknownNode = "unknown_node"
	codeUnknownGen  = "unknown_gen"
	codeOther       = "other"
)

type wireError struct {
	Code     string `json:"code"`
	Message  string `json:"message"`
	Rule     string `json:"rule,omitempty"`
	Override string `json:"override,omitempty"`
}

type response struct {
	Result *Result    `json:"result,omitempty"`
	Error  *wireError `json:"error,omitempty"`
}

// codedError is an error rebuilt from the wire that still matches its sentinel.
type codedError struct {
	msg string
	is  error
}

func (e *codedError) Error() string { return e.msg }
func (e *codedError) Unwrap() error { return e.is }

func encodeResponse(r Result, err error) []byte {
	var resp response
	if err == nil {
		resp.Result = &r
	} else {
		w := &wireError{Code: codeOther, Message: err.Error()}
		var re *RefusedError
		switch {
		case errors.As(err, &re):
			w.Code, w.Message, w.Rule, w.Override = codeRefused, re.Message, re.Rule, re.Override
		case errors.Is(err, ErrBadCommand):
			w.Code = codeBadCommand
		case errors.Is(err, ErrNoPolicy):
			w.Code = codeNoPolicy
		case errors.Is(err, ErrUnknownNode):
			w.Code = codeUnknownNode
		case errors.Is(err, ErrUnknownGen):
			w.Code = codeUnknownGen
		}
		resp.Error = w
	}
	b, mErr := json.Marshal(resp)
	if mErr != nil {
		// Only strings and integers: cannot fail.
		panic("failover: encode response: " + mErr.Error())
	}
	return b
}

// EncodeError encodes err as Apply answers a command that failed at log
// index: for a wrapper of the machine that refuses an entry itself.
func EncodeError(index uint64, err error) []byte { return encodeResponse(Result{Index: index}, err) }

// DecodeResponse parses what Apply returned. A failed command comes back as
// an error that matches the same sentinel (and is a *RefusedError for
// refusals), so callers on another node can use errors.Is and errors.As.
func DecodeResponse(b []byte) (Result, error) {
	var resp response
	if err := json.Unmarshal(b, &resp); err != nil {
		return Result{}, fmt.Errorf("decode response: %w", err)
	}
	if resp.Error == nil {
		if resp.Result == nil {
			return Result{}, errors.New("decode response: neither result nor error")
		}
		return *resp.Result, nil
	}
	w := resp.Error
	switch w.Code {
	case codeRefused:
		return Result{}, &RefusedError{Rule: w.Rule, Message: w.Message, Override: w.Override}
	case codeBadCommand:
		return Result{}, &codedError{msg: w.Message, is: ErrBadCommand}
	case codeNoPolicy:
		return Result{}, &codedError{msg: w.Message, is: ErrNoPolicy}
	case codeUnknownNode:
		return Result{}, &codedError{msg: w.Message, is: ErrUnknownNode}
	case codeUnknownGen:
		return Result{}, &codedError{msg: w.Message, is: ErrUnknownGen}
	}
	return Result{}, errors.New(w.Message)
}
