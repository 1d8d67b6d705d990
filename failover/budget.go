package failover

import (
	"hash/fnv"
	"slices"
	"strconv"
	"time"
)

// Bounds on the remediation budgets (invariant 13): they hold what the
// runner's caps, backoff and parking need, whatever traffic the records see.
const (
	// BudgetRetention is how long an applied or failed action stays in a
	// budget's window, counted back from the latest record of its
	// remediation: the hourly cap needs one hour; the rest is slack for a
	// runner whose clock lags the leader's stamps.
	BudgetRetention = 2 * time.Hour
	// MaxBudgetWindow bounds a window; far above any useful hourly cap.
	MaxBudgetWindow = 4096
	// MaxBudgetTargets bounds the targets a budget remembers; the least
	// recently recorded one is forgotten first.
	MaxBudgetTargets = 1024
	// MaxAppliedKeys is how many applied Keys a target remembers, newest last.
	MaxAppliedKeys = 8
	// maxBudgets bounds how many remediations have a carried budget.
	maxBudgets = 64
)

// RemediationBudget is what all of one remediation's records say about its
// caps, backoff and parking, including the records that were evicted from
// the bounded records: the runner reads it instead of the records, so that
// no amount of record traffic makes it forget an applied action.
type RemediationBudget struct {
	// Window holds, oldest first, each applied action and each target's
	// latest failure within BudgetRetention of Seen.
	Window []BudgetEvent `json:"window,omitempty"`
	// Targets is keyed by the record's Target.
	Targets map[string]*TargetBudget `json:"targets,omitempty"`
	// Seen is the time of the latest record.
	Seen int64 `json:"seen"`
}

// BudgetEvent is one entry of a budget's window.
type BudgetEvent struct {
	At int64 `json:"at"`
	// Target is set for a failure: the hourly cap counts each failing
	// target once, however often it failed.
	Target string `json:"target,omitempty"`
}

// TargetBudget is what the records say about one target of a remediation.
type TargetBudget struct {
	// Touched is the time of its latest record, whatever its result.
	Touched int64 `json:"touched"`
	// LastAttempt is when an action on it was last planned or tried.
	LastAttempt int64 `json:"last_attempt,omitempty"`
	// Failures counts its failures since its last success, except those that
	// need an admin (they park it) and those whose precondition no longer
	// held; LastFailure is the latest such failure's time.
	Failures    int   `json:"failures,omitempty"`
	LastFailure int64 `json:"last_failure,omitempty"`
	// Applied are the latest Keys recorded as applied, oldest first.
	Applied []string `json:"applied,omitempty"`
	// Parked is the Key whose latest outcome failed needing an admin.
	Parked string `json:"parked,omitempty"`
	// Last is a digest of its latest record without the reason (Key,
	// result, gen, detail and flags), so that a runner records a held or
	// skipped target once per change of its state.
	Last uint64 `json:"last,omitempty"`
}

// Hour is the hourly cap's count at cutoff (unix nanoseconds): every action
// applied since, plus each target that failed since, once.
func (b *RemediationBudget) Hour(cutoff int64) int {
	n := 0
	for _, e := range b.Window {
		if e.At >= cutoff {
			n++
		}
	}
	return n
}

// WasApplied reports whether key was recorded as applied on target.
func (b *RemediationBudget) WasApplied(target, key string) bool {
	t := b.Targets[target]
	return t != nil && slices.Contains(t.Applied, key)
}

// RecordDigest is the digest TargetBudget.Last holds for a record r: equal
// for two records that say the same about the same state of the target,
// whatever their reasons (which may carry an age that grows every pass).
func RecordDigest(r *Remediation) uint64 {
	h := fnv.New64a()
	for _, s := range []string{r.Key, r.Result, strconv.FormatUint(r.Gen, 10), r.Detail,
		strconv.FormatBool(r.NeedsAdmin), strconv.FormatBool(r.Precondition)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

func (b *RemediationBudget) clone() *RemediationBudget {
	out := &RemediationBudget{Window: slices.Clone(b.Window), Seen: b.Seen,
		Targets: make(map[string]*TargetBudget, len(b.Targets))}
	for k, t := range b.Targets {
		c := *t
		c.Applied = slices.Clone(t.Applied)
		out.Targets[k] = &c
	}
	return out
}

// add folds rec, the next record of b's remediation in log order, into b,
// and keeps b within its bounds. The runner reads every result as it read
// the records before budgets existed.
func (b *RemediationBudget) add(rec *RemediationRecord) {
	b.Seen = max(b.Seen, rec.At)
	if b.Targets == nil {
		b.Targets = map[string]*TargetBudget{}
	}
	t := b.Targets[rec.Target]
	if t == nil {
		t = &TargetBudget{}
		b.Targets[rec.Target] = t
	}
	t.Touched, t.Last = rec.At, RecordDigest(&rec.Remediation)
	switch rec.Result {
	case RemediationPlanned:
		t.LastAttempt = rec.At
	case RemediationApplied:
		if !slices.Contains(t.Applied, rec.Key) {
			t.Applied = append(t.Applied, rec.Key)
			t.Applied = t.Applied[max(0, len(t.Applied)-MaxAppliedKeys):]
		}
		if t.Parked == rec.Key {
			t.Parked = ""
		}
		t.Failures, t.LastAttempt = 0, rec.At
		b.Window = append(b.Window, BudgetEvent{At: rec.At})
	case RemediationFailed:
		t.LastAttempt = rec.At
		switch {
		case rec.NeedsAdmin:
			t.Parked = rec.Key
		case t.Parked == rec.Key:
			t.Parked = ""
		}
		if !rec.NeedsAdmin && !rec.Precondition {
			t.Failures++
			t.LastFailure = rec.At
		}
		// The target's latest failure replaces its earlier one: counted once.
		b.Window = slices.DeleteFunc(b.Window, func(e BudgetEvent) bool { return e.Target == rec.Target })
		b.Window = append(b.Window, BudgetEvent{At: rec.At, Target: rec.Target})
	}
	cutoff := b.Seen - int64(BudgetRetention)
	b.Window = slices.DeleteFunc(b.Window, func(e BudgetEvent) bool { return e.At < cutoff })
	if n := len(b.Window) - MaxBudgetWindow; n > 0 {
		b.Window = slices.Delete(b.Window, 0, n)
	}
	if len(b.Targets) > MaxBudgetTargets {
		delete(b.Targets, leastRecent(b.Targets, func(t *TargetBudget) int64 { return t.Touched }))
	}
}

// leastRecent is the key of m whose time is oldest, the smallest key among
// equals, so that every replica forgets the same one.
func leastRecent[V any](m map[string]V, at func(V) int64) string {
	var least string
	var leastAt int64
	first := true
	for k, v := range m {
		if t := at(v); first || t < leastAt || (t == leastAt && k < least) {
			least, leastAt, first = k, t, false
		}
	}
	return least
}

// carryEvicted folds recs, records about to be evicted from the bounded
// records (oldest first), into the carried budgets of their groups, so
// that the budgets still count them. A record of a group the policy no
// longer has is dropped with it: that group's runner is gone.
func (s *state) carryEvicted(recs []RemediationRecord) {
	for i := range recs {
		rec := &recs[i]
		budgets := s.budgetsOf(rec.Group)
		if budgets == nil {
			continue
		}
		if *budgets == nil {
			*budgets = map[string]*RemediationBudget{}
		}
		b := (*budgets)[rec.Name]
		if b == nil {
			b = &RemediationBudget{}
			(*budgets)[rec.Name] = b
		}
		b.add(rec)
		if len(*budgets) > maxBudgets {
			delete(*budgets, leastRecent(*budgets, func(b *RemediationBudget) int64 { return b.Seen }))
		}
	}
}

// budgetsOf is where group's carried budgets live ("" for the top-level
// runner's: state.RemediationBudgets, as before groups), or nil for a
// group the state does not have.
func (s *state) budgetsOf(group string) *map[string]*RemediationBudget {
	if group == "" || group == DefaultGroup {
		return &s.RemediationBudgets
	}
	if gs := s.Groups[group]; gs != nil {
		return &gs.Budgets
	}
	return nil
}

// remediationBudget is the budget of remediation name in group ("" for
// the top-level runner's): the one carried from its evicted records, with
// its records still kept folded in. One group's records never count in
// another's budget.
func (s *state) remediationBudget(group, name string) RemediationBudget {
	if group == DefaultGroup {
		group = ""
	}
	b := &RemediationBudget{}
	if budgets := s.budgetsOf(group); budgets != nil {
		if c := (*budgets)[name]; c != nil {
			b = c.clone()
		}
	}
	for i := range s.Remediations {
		if r := &s.Remediations[i]; r.Name == name && r.Group == group {
			b.add(r)
		}
	}
	if b.Targets == nil {
		b.Targets = map[string]*TargetBudget{}
	}
	return *b
}

// RemediationBudget returns a copy of name's budget for the top-level
// runner (records without a group): what all its records say, those
// evicted from the bounded records included.
func (m *Machine) RemediationBudget(name string) RemediationBudget {
	return m.GroupRemediationBudget("", name)
}

// GroupRemediationBudget returns a copy of the budget of remediation name
// in failover group ("" or DefaultGroup: the top-level runner's, as
// RemediationBudget): what all of that group's records of it say, those
// evicted included. A group the policy does not have has an empty one.
func (m *Machine) GroupRemediationBudget(group, name string) RemediationBudget {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.st.remediationBudget(group, name)
}
