package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/drwatch/drwatch/internal/regularfile"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/drwatch/drwatch/internal/field"
)

// Event is what a hook is told about a decision.
type Event struct {
	Phase  string `json:"phase"` // "pre-failover" or "post-failover"
	Gen    uint64 `json:"gen"`
	From   string `json:"from"`
	To     string `json:"to"`
	Kind   string `json:"kind"` // the history kind: auto_failover, manual_failover, ...
	Forced bool   `json:"forced"`
	Actor  string `json:"actor"`
	Reason string `json:"reason"`
	Node   string `json:"node"` // the leader running the hook
	// Group is the failover group whose flip this is, for a group's own
	// hooks (groups[].hooks); empty for the top-level hooks, which act on
	// the default group. Empty, it is left out of the webhook body and the
	// command's environment, so what the top-level hooks receive is byte
	// for byte what it was before groups (a receiver's schema still holds).
	Group string `json:"group,omitempty"`
}

// Hook is one configured hook: exactly one of Command or URL.
type Hook struct {
	Name string `yaml:"name" doc:"Name, for the history and logs."`
	// Command is argv; no shell is involved.
	Command []string `yaml:"command" doc:"Command and arguments (no shell); the decision is in DRWATCH_PHASE, DRWATCH_GEN, DRWATCH_FROM, DRWATCH_TO, DRWATCH_KIND, DRWATCH_FORCED, DRWATCH_ACTOR, DRWATCH_REASON, DRWATCH_NODE, and for a group's own hooks (groups[].hooks) DRWATCH_GROUP, the group's name."`
	URL     string   `yaml:"url" doc:"Webhook URL: the decision is POSTed as JSON with X-Drwatch-Timestamp (Unix seconds), X-Drwatch-Nonce (32 hex digits) and X-Drwatch-Signature: sha256=<hex HMAC-SHA256 of timestamp, newline, nonce, newline, body>; docs/security.md says how a receiver checks it. A group's own hooks (groups[].hooks) have the group's name in the body's group field, left out for the top-level hooks."`
	// SecretFile holds the webhook's HMAC key.
	SecretFile string        `yaml:"secret_file" doc:"File holding the webhook's HMAC-SHA256 key (required with url)."`
	Timeout    time.Duration `yaml:"timeout" default:"1m" doc:"Longest the hook may run, at most 10m; then a command is killed with its process group and a webhook request is cancelled."`
	// OnTimeout says what a pre-failover hook that times out does to an
	// automatic flip; empty means OnTimeoutProceed.
	OnTimeout string `yaml:"on_timeout" doc:"Pre-failover hooks only: proceed (the default: the flip goes ahead and the history says the hook timed out) or block (a timeout holds back an automatic flip like a failure; a manual or forced flip still goes ahead)."`
}

// What a pre-failover hook that times out does.
const (
	OnTimeoutProceed = "proceed"
	OnTimeoutBlock   = "block"
)

// ErrTimedOut is what a hook that ran out of its timeout wraps (as a
// *TimeoutError). Its parent context ending is not a timeout.
var ErrTimedOut = errors.New("hook timed out")

// TimeoutError is a hook that ran out of its timeout.
type TimeoutError struct {
	Hook  string
	After time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("hook %s: timed out after %s", e.Hook, e.After)
}

// Is makes errors.Is(err, ErrTimedOut) hold.
func (e *TimeoutError) Is(target error) bool { return target == ErrTimedOut }

// Config holds the hooks of each phase.
type Config struct {
	PreFailover  []Hook `yaml:"pre_failover" doc:"Run before DNS is written for a decision; a failure blocks an automatic flip (not a manual or forced one)."`
	PostFailover []Hook `yaml:"post_failover" doc:"Run once a flip is verified at every authoritative server; failures are recorded."`
}

// DefaultTimeout bounds a hook without its own timeout.
const DefaultTimeout = time.Minute

// MaxTimeout bounds any hook's timeout: a flip waits for its hooks.
const MaxTimeout = 10 * time.Minute

// maxOutput bounds what a failing command's output contributes to the error.
const maxOutput = 512

// Validate reports every problem, naming the field by its path inside the
// hooks section: a hook by its name, or its index when it has none
// ("pre_failover[check-db].timeout").
func (c Config) Validate() field.Errors {
	var errs field.Errors
	for _, phase := range []struct {
		name  string
		hooks []Hook
	}{{"pre_failover", c.PreFailover}, {"post_failover", c.PostFailover}} {
		labels, names := field.Labels{}, map[string]bool{}
		for i, h := range phase.hooks {
			p := phase.name + "[" + labels.Next(h.Name, i) + "]"
			if h.Name != "" && names[h.Name] {
				errs.Add(p+".name", "duplicate hook name %q", h.Name)
			}
			names[h.Name] = true
			switch {
			case (len(h.Command) > 0) == (h.URL != ""):
				errs.Add(p, "set exactly one of command and url")
			case h.URL != "" && h.SecretFile == "":
				errs.Add(p+".secret_file", "required with url (the webhook is signed)")
			case h.URL != "" && !strings.HasPrefix(h.URL, "https://") && !strings.HasPrefix(h.URL, "http://"):
				errs.Add(p+".url", "must be http(s)")
			}
			switch {
			case h.Timeout < 0:
				errs.Add(p+".timeout", "%s must be >= 0", h.Timeout)
			case h.Timeout > MaxTimeout:
				errs.Add(p+".timeout", "%s must be at most %s", h.Timeout, MaxTimeout)
			}
			switch {
			case h.OnTimeout == "":
			case phase.name != "pre_failover":
				errs.Add(p+".on_timeout", "only pre_failover hooks hold a flip")
			case h.OnTimeout != OnTimeoutProceed && h.OnTimeout != OnTimeoutBlock:
				errs.Add(p+".on_timeout", "%q must be %s or %s", h.OnTimeout, OnTimeoutProceed, OnTimeoutBlock)
			}
		}
	}
	return errs
}

// Label is the hook's name, or what it runs.
func (h Hook) Label() string {
	switch {
	case h.Name != "":
		return h.Name
	case len(h.Command) > 0:
		return h.Command[0]
	}
	return "webhook"
}

// errHookDeadline is the cause of a hook's own deadline, told apart from
// its parent context ending.
var errHookDeadline = errors.New("hook deadline")

// Run runs the hook once for ev. It is safe for concurrent use. A hook
// that runs out of its timeout returns a *TimeoutError (ErrTimedOut); a
// command is then killed with its process group.
func (h Hook) Run(ctx context.Context, ev Event) error {
	t := h.Timeout
	if t <= 0 {
		t = DefaultTimeout
	}
	hctx, cancel := context.WithTimeoutCause(ctx, t, errHookDeadline)
	defer cancel()
	var err error
	if len(h.Command) > 0 {
		err = h.runCommand(hctx, ev)
	} else {
		err = h.runWebhook(hctx, ev)
	}
	switch {
	case err == nil:
		return nil
	case ctx.Err() == nil && context.Cause(hctx) == errHookDeadline:
		return &TimeoutError{Hook: h.Label(), After: t}
	}
	return fmt.Errorf("hook %s: %w", h.Label(), err)
}

func (h Hook) runCommand(ctx context.Context, ev Event) error {
	cmd := exec.CommandContext(ctx, h.Command[0], h.Command[1:]...)
	// DRWATCH_GROUP is set for a group's hooks only: one inherited from
	// drwatch's own environment must not name a group for the others.
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "DRWATCH_GROUP=") })
	cmd.Env = append(env,
		"DRWATCH_PHASE="+ev.Phase, "DRWATCH_GEN="+strconv.FormatUint(ev.Gen, 10),
		"DRWATCH_FROM="+ev.From, "DRWATCH_TO="+ev.To, "DRWATCH_KIND="+ev.Kind,
		"DRWATCH_FORCED="+strconv.FormatBool(ev.Forced), "DRWATCH_ACTOR="+ev.Actor,
		"DRWATCH_REASON="+ev.Reason, "DRWATCH_NODE="+ev.Node)
	if ev.Group != "" {
		cmd.Env = append(cmd.Env, "DRWATCH_GROUP="+ev.Group)
	}
	// Its own process group, so a timeout kills what the hook started too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("%w; output: %s", err, lastBytes(out.String(), maxOutput))
	}
	return nil
}

func (h Hook) runWebhook(ctx context.Context, ev Event) error {
	key, err := regularfile.Read("secret_file", h.SecretFile)
	if err != nil {
		return err
	}
	key = bytes.TrimSpace(key)
	body, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("url: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if err := signRequest(req, key, body, time.Now()); err != nil {
		return err
	}
	req.Header.Set("X-Drwatch-Event", ev.Phase)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	defer resp.Body.Close()
	excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, maxOutput))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("webhook answered %d: %s", resp.StatusCode, strings.TrimSpace(string(excerpt)))
	}
	return nil
}

// RunPreFailover runs the pre-failover hooks in order and returns the note
// to record. An error (a hook that failed, or timed out with on_timeout:
// block) holds back an automatic flip. A hook that timed out with
// on_timeout: proceed, the default, is in the note and the flip goes
// ahead, so a hung hook never holds a flip for ever.
func RunPreFailover(ctx context.Context, hs []Hook, ev Event) (string, error) {
	var errs []error
	var notes []string
	ok := 0
	for _, h := range hs {
		err := h.Run(ctx, ev)
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, ErrTimedOut):
			errs = append(errs, err)
		case h.OnTimeout == OnTimeoutBlock:
			errs = append(errs, fmt.Errorf("%w (on_timeout: %s)", err, OnTimeoutBlock))
		default:
			notes = append(notes, fmt.Sprintf("%v; on_timeout: %s, so the flip goes ahead", err, OnTimeoutProceed))
		}
	}
	if len(errs) > 0 {
		return "", errors.Join(errs...)
	}
	return strings.Join(append([]string{fmt.Sprintf("%d pre-failover hook(s) ok", ok)}, notes...), "; "), nil
}

// RunAll runs hooks in order and returns every failure joined.
func RunAll(ctx context.Context, hs []Hook, ev Event) error {
	var errs []error
	for _, h := range hs {
		if err := h.Run(ctx, ev); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func lastBytes(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
