package failover

import (
	"fmt"
	"slices"
	"strings"
)

// KindRemediation is the history kind of a remediation action that was
// applied, failed or skipped by a cap (see Remediation).
const KindRemediation = "remediation"

// Remediation results, as recorded by the remediation runner.
const (
	// RemediationPlanned: Plan proposed the action; the runner is about to apply it.
	RemediationPlanned = "planned"
	// RemediationApplied: Apply succeeded (or found the effect already there).
	RemediationApplied = "applied"
	// RemediationFailed: Apply returned an error.
	RemediationFailed = "failed"
	// RemediationSkippedCap: a per-pass or per-hour cap stopped the action.
	RemediationSkippedCap = "skipped_cap"
	// RemediationDryRun: nothing was written, because the remediator is in
	// dry-run mode or because the action is report-only (its Detail then
	// starts "report-only: " and says why it cannot be applied).
	RemediationDryRun = "dry_run"
	// RemediationBlocked: a guard of the target system refused the action
	// (a PodDisruptionBudget refusing an eviction); it is tried again on a
	// later pass and uses no cap. Older binaries never record it.
	RemediationBlocked = "blocked"
)

// MaxRemediations is how many remediation records the machine keeps; older
// ones are dropped, and what they said is carried in the remediation's
// budget (RemediationBudget), which the runner's caps, backoff and
// applied-key check read.
const MaxRemediations = 1000

// Bounds on a Remediation's strings, so that the replicated state stays
// bounded whatever a runner proposes.
const (
	maxRemediationName   = 64
	maxRemediationVerb   = 64
	maxRemediationTarget = 512
	maxRemediationKey    = 1024
	maxRemediationText   = 2048
)

// Remediation records one remediation action and what became of it. Key
// identifies the action across passes and leaders (remediation, verb,
// target, and for per-decision actions the generation): the runner never
// applies a Key that is recorded as applied.
type Remediation struct {
	// Name is the remediator ("dead-node-out-of-service").
	Name string `json:"name"`
	// Group is the failover group whose runner recorded the action: its
	// budget (caps, applied keys, backoff, parking) and its generation are
	// that group's. Empty for the runner of the top-level remediations
	// section, which acts for DefaultGroup (or, in a policy without it,
	// the lead group), as before groups; DefaultGroup named is the same.
	Group string `json:"group,omitempty"`
	// Gen is the decision generation current when the action was planned (0: none yet).
	Gen    uint64 `json:"gen"`
	Target string `json:"target"`
	Verb   string `json:"verb"`
	// Result is one of the Remediation* results.
	Result string `json:"result"`
	Reason string `json:"reason,omitempty"`
	Detail string `json:"detail,omitempty"`
	Key    string `json:"key"`
	Actor  string `json:"actor,omitempty"`
	// NeedsAdmin marks a failed action that will not succeed by retrying (the
	// API refused it for good: 403, or 409 on a state that does not change by
	// itself). The runner parks its target until the plan for it changes.
	// Only with Result failed; false (and absent in older logs) is an
	// ordinary failure.
	NeedsAdmin bool `json:"needs_admin,omitempty"`
	// Precondition marks a failed action whose precondition no longer held
	// (the world moved on since Plan): nothing was done, and the runner lets
	// the next Plan decide afresh, without a backoff. Only with Result
	// failed; false (and absent in older logs) is an ordinary failure.
	Precondition bool `json:"precondition,omitempty"`
}

// RemediationRecord is a Remediation as the machine stored it, with the log
// index of the command that recorded it.
type RemediationRecord struct {
	Index uint64 `json:"index"`
	// At is the machine's clock when the record was applied.
	At int64 `json:"at"`
	Remediation
}

// CommandType implements Payload.
func (Remediation) CommandType() CommandType { return CmdRemediation }

// text: a remediator, not a person, writes a remediation record.
func (Remediation) text() (reason, actor string) { return "", "" }

func (r Remediation) apply(s *state, a applyArgs) error {
	if r.Group == DefaultGroup {
		r.Group = ""
	}
	return s.remediation(a.index, a.now, &r, a.res)
}

func validRemediationResult(r string) bool {
	switch r {
	case RemediationPlanned, RemediationApplied, RemediationFailed, RemediationSkippedCap, RemediationDryRun, RemediationBlocked:
		return true
	}
	return false
}

// check validates c completely before anything is written.
func (c *Remediation) check(s *state) error {
	fields := []struct {
		name, v  string
		max      int
		required bool
	}{
		{"name", c.Name, maxRemediationName, true},
		{"verb", c.Verb, maxRemediationVerb, true},
		{"target", c.Target, maxRemediationTarget, true},
		{"key", c.Key, maxRemediationKey, true},
		{"reason", c.Reason, maxRemediationText, false},
		{"detail", c.Detail, maxRemediationText, false},
		{"actor", c.Actor, maxRemediationName, false},
	}
	for _, f := range fields {
		if f.required && f.v == "" {
			return fmt.Errorf("remediation: %s is required: %w", f.name, ErrBadCommand)
		}
		if len(f.v) > f.max {
			return fmt.Errorf("remediation: %s is %d bytes, limit %d: %w", f.name, len(f.v), f.max, ErrBadCommand)
		}
	}
	if !validRemediationResult(c.Result) {
		return fmt.Errorf("remediation result %q (want planned, applied, failed, skipped_cap, dry_run or blocked): %w", c.Result, ErrBadCommand)
	}
	if (c.NeedsAdmin || c.Precondition) && c.Result != RemediationFailed {
		return fmt.Errorf("remediation: needs_admin or precondition with result %q (only with failed): %w", c.Result, ErrBadCommand)
	}
	// The top-level runner acts on the lead group's decision, as it did
	// before groups; a group's runner on its group's.
	group := s.leadGroup()
	if c.Group != "" {
		if s.Groups[c.Group] == nil {
			known := "none"
			if s.Policy != nil {
				known = strings.Join(s.Policy.GroupNames(), ", ")
			}
			return fmt.Errorf("remediation: unknown failover group %q (groups: %s): %w", c.Group, known, ErrBadCommand)
		}
		group = c.Group
	}
	if desiredGen := s.desiredOf(group).Gen; c.Gen > desiredGen {
		return fmt.Errorf("remediation for gen %d (latest %d): %w", c.Gen, desiredGen, ErrUnknownGen)
	}
	return nil
}

// remediation records c. A record equal to the latest one with the same Key
// (same result, gen, reason and detail) is a no-op, so that a dry-run
// remediator repeating itself every pass, or a retried proposal, does not
// flood the records. Applied, failed, skipped_cap and blocked actions also
// appear in the history, so the status page and `drwatch history` show them.
func (s *state) remediation(index uint64, now int64, c *Remediation, res *Result) error {
	if err := c.check(s); err != nil {
		return err
	}
	s.Now = now
	res.Kind = KindRemediation
	for i := len(s.Remediations) - 1; i >= 0; i-- {
		r := &s.Remediations[i]
		if r.Key != c.Key || r.Group != c.Group {
			// Two groups' runners may plan the same Key (one repair on a
			// target of the same name in each group's cluster): each
			// group's records are its own.
			continue
		}
		if r.Result == c.Result && r.Gen == c.Gen && r.Reason == c.Reason && r.Detail == c.Detail &&
			r.NeedsAdmin == c.NeedsAdmin && r.Precondition == c.Precondition {
			res.Noop = "duplicate"
			res.Message = fmt.Sprintf("%s %s of %s already recorded as %s", c.Name, c.Verb, c.Target, c.Result)
			return nil
		}
		break
	}
	rec := RemediationRecord{Index: index, At: now, Remediation: *c}
	if len(s.Remediations) >= MaxRemediations {
		drop := len(s.Remediations) - MaxRemediations + 1
		s.carryEvicted(s.Remediations[:drop])
		n := copy(s.Remediations, s.Remediations[drop:])
		clear(s.Remediations[n:])
		s.Remediations = s.Remediations[:n]
	}
	s.Remediations = append(s.Remediations, rec)
	switch c.Result {
	case RemediationApplied, RemediationFailed, RemediationSkippedCap, RemediationBlocked:
		detail := c.Verb + " " + c.Target
		if c.Detail != "" {
			detail += ": " + c.Detail
		}
		if c.NeedsAdmin {
			detail += ": needs admin"
		}
		s.appendHistory(Entry{Index: index, Gen: c.Gen, At: now, Kind: KindRemediation, Actor: c.Name,
			Reason: c.Reason, Outcome: c.Result, Detail: detail, Group: c.Group})
	}
	res.Message = fmt.Sprintf("%s %s of %s: %s", c.Name, c.Verb, c.Target, c.Result)
	return nil
}

// Remediations returns a copy of the remediation records, oldest first.
func (m *Machine) Remediations() []RemediationRecord {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Clone(m.st.Remediations)
}
