package failover

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/drwatch/drwatch/internal/dnsname"
)

// Drill command types. Older binaries cannot decode them, so followers are
// upgraded before the leader (docs/operations.md).
const (
	CmdDrillStart CommandType = "drill_start"
	CmdDrillStep  CommandType = "drill_step"
	CmdDrillEnd   CommandType = "drill_end"
)

// KindDrill is the history kind of a drill that ended or was skipped.
const KindDrill = "drill"

// Drill outcomes. A drill is running from its DrillStart until its
// DrillEnd; a scheduled drill that a rule refused is recorded as skipped.
const (
	DrillRunning    = "running"
	DrillPassed     = "passed"
	DrillFailed     = "failed"
	DrillRolledBack = "rolled_back"
	DrillSkipped    = "skipped"
)

// Rules that refuse a drill (besides RulePaused). A drill is a rehearsal:
// it never competes with the real thing.
const (
	RuleDrillOutage  = "outage"        // an outage of the active site is pending or active
	RuleDrillWriting = "dns_writing"   // a decision's DNS write is not verified yet
	RuleDrillRunning = "drill_running" // another drill has not ended
)

// Drill steps, stamped by the leader's drill executor in this order.
const (
	DrillStepBackupWritten   = "backup_written"
	DrillStepBackupVerified  = "backup_verified"
	DrillStepPrimaryWritten  = "primary_written"
	DrillStepPrimaryVerified = "primary_verified"
	// DrillStepRollback records that the drill is being rolled back, and
	// why (a step failed, or a real decision arrived): a new leader carries
	// on rolling back rather than moving the canary forward again.
	DrillStepRollback = "rollback"
	// DrillStepInterrupted records that a new leader found the drill half
	// done (its predecessor died in the middle of it) and rolls it back:
	// the drill ends rolled_back, not failed.
	DrillStepInterrupted = "interrupted"
)

var drillSteps = []string{DrillStepBackupWritten, DrillStepBackupVerified, DrillStepRollback, DrillStepInterrupted,
	DrillStepPrimaryWritten, DrillStepPrimaryVerified}

// MaxDrills is how many ended drills the machine keeps.
const MaxDrills = 100

// Bounds on what a drill records, so the replicated state stays bounded.
const (
	maxDrillChecks = 32
	maxDrillName   = 64
	maxDrillText   = 2048
	maxDrillSteps  = 16
)

// DrillCanary is the record a drill moves instead of a production one: it
// lives in the policy's zone, never shares a name with a managed record,
// and flips between the same values as the managed records (Primary,
// Backup) with their TTL. Name is absolute.
type DrillCanary struct {
	Name    string   `json:"name"`
	Type    string   `json:"type"`
	TTL     int      `json:"ttl"`
	Primary []string `json:"primary"`
	Backup  []string `json:"backup"`
}

// RRset returns the canary's RRset for site.
func (c DrillCanary) RRset(site Site) RRset {
	vs := c.Primary
	if site == Backup {
		vs = c.Backup
	}
	return RRset{Name: c.Name, Type: c.Type, TTL: c.TTL, Values: slices.Clone(vs)}
}

// CanaryFor mirrors p's first record (its values and TTL) on name, which is
// relative to p's zone or absolute. The drill config calls it.
func CanaryFor(p Policy, name string) DrillCanary {
	n := p.normalize()
	if len(n.Records) == 0 {
		return DrillCanary{Name: dnsname.Absolute(name, n.Zone)}
	}
	// The config's first record, not the normalized order's.
	first := p.Records[0]
	typ := strings.ToUpper(first.Type)
	return DrillCanary{
		Name: dnsname.Absolute(name, n.Zone), Type: typ, TTL: first.TTL,
		Primary: dnsname.Values(typ, first.Primary), Backup: dnsname.Values(typ, first.Backup),
	}
}

// check validates the canary against policy p.
func (c DrillCanary) check(p *Policy) error {
	zone := p.Zone
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	switch {
	case c.Name == "" || !strings.HasSuffix(c.Name, "."):
		bad("name %q must be absolute", c.Name)
	case !dnsname.InZone(c.Name, zone):
		bad("name %q is not inside zone %q", c.Name, zone)
	}
	for _, r := range p.Records {
		if strings.EqualFold(r.Name, c.Name) {
			bad("name %q is a managed record: a drill never moves a production record", c.Name)
			break
		}
	}
	switch c.Type {
	case "A", "AAAA", "CNAME":
	default:
		bad("type %q must be A, AAAA or CNAME", c.Type)
	}
	if c.TTL < 1 || c.TTL > 1<<31-1 {
		bad("ttl %d must be between 1 and 2147483647 seconds", c.TTL)
	}
	for _, side := range []struct {
		name   string
		values []string
	}{{"primary", c.Primary}, {"backup", c.Backup}} {
		if len(side.values) == 0 {
			bad("%s: at least one value is needed", side.name)
		}
		for _, v := range side.values {
			if err := checkValue(c.Type, v); err != nil {
				bad("%s: %v", side.name, err)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("drill canary: %s: %w", strings.Join(errs, "; "), ErrBadCommand)
	}
	return nil
}

// DrillCheck is one readiness check a drill ran, PASS or FAIL with the
// reason (the backup's certificates, the DNS credentials, ...).
type DrillCheck struct {
	Name   string `json:"name"`
	Pass   bool   `json:"pass"`
	Reason string `json:"reason,omitempty"`
}

// DrillStepRecord is one stamped step of a drill, on the executor's clock.
type DrillStepRecord struct {
	Step   string `json:"step"`
	At     int64  `json:"at"`
	Detail string `json:"detail,omitempty"`
	// Servers are when each authoritative server was first seen serving
	// the canary (the verification steps).
	Servers []ServerVerification `json:"servers,omitempty"`
}

// DrillRecord is one drill as the machine keeps it.
type DrillRecord struct {
	// ID is the log index of the DrillStart: the drill's name everywhere.
	ID        uint64      `json:"id"`
	Reason    string      `json:"reason"`
	Actor     string      `json:"actor,omitempty"`
	Scheduled bool        `json:"scheduled,omitempty"`
	Canary    DrillCanary `json:"canary"`
	Outcome   string      `json:"outcome"`
	// Rule names what failed or refused the drill: a safety rule that
	// would block a real failover, a refusal rule, or the step that failed.
	Rule   string `json:"rule,omitempty"`
	Detail string `json:"detail,omitempty"`
	// Checks are the failover rules the drill faced at its start.
	Checks []Check `json:"checks,omitempty"`
	// RequestedAt is when the operator or the schedule asked (the asking
	// node's clock, evidence only); StartedAt the leader's stamp of the
	// DrillStart, EndedAt that of the DrillEnd.
	RequestedAt int64             `json:"requested_at,omitempty"`
	StartedAt   int64             `json:"started_at"`
	EndedAt     int64             `json:"ended_at,omitempty"`
	Steps       []DrillStepRecord `json:"steps,omitempty"`
	Readiness   []DrillCheck      `json:"readiness,omitempty"`
	// AbortedBy is the generation of a real decision that arrived while the
	// drill ran: the drill must stop and roll back.
	AbortedBy uint64 `json:"aborted_by,omitempty"`
	// EndedBy is the node whose executor ended the drill.
	EndedBy string `json:"ended_by,omitempty"`
}

func (d DrillRecord) clone() DrillRecord {
	d.Canary.Primary = slices.Clone(d.Canary.Primary)
	d.Canary.Backup = slices.Clone(d.Canary.Backup)
	d.Checks = slices.Clone(d.Checks)
	d.Readiness = slices.Clone(d.Readiness)
	if d.Steps != nil {
		st := make([]DrillStepRecord, len(d.Steps))
		for i, x := range d.Steps {
			x.Servers = slices.Clone(x.Servers)
			st[i] = x
		}
		d.Steps = st
	}
	return d
}

// Step returns the recorded step named step.
func (d DrillRecord) Step(step string) (DrillStepRecord, bool) {
	for _, s := range d.Steps {
		if s.Step == step {
			return s, true
		}
	}
	return DrillStepRecord{}, false
}

// Ran reports whether the drill got as far as running (it was neither
// skipped nor failed by a rule at its start).
func (d DrillRecord) Ran() bool { return len(d.Steps) > 0 || d.Outcome == DrillRunning }

// DrillTimes are a drill's measured durations: what a real failover would
// spend after its decision.
type DrillTimes struct {
	// Commit is from the request to the committed DrillStart (0 when the
	// request time is unknown or after the stamp, as clocks may disagree).
	Commit time.Duration
	// Write is from the committed DrillStart to the canary written.
	Write time.Duration
	// Propagation is from the write to the last authoritative server
	// serving the canary; Servers each server's.
	Propagation time.Duration
	Servers     []ServerDuration
	// TTL is the canary's TTL: how long resolvers may cache the old answer.
	TTL time.Duration
}

// ServerDuration is one authoritative server's propagation time.
type ServerDuration struct {
	Server string
	After  time.Duration
}

// Times measures d from its stamped steps; ok is false when the drill did
// not write and verify the backup values.
func (d DrillRecord) Times() (t DrillTimes, ok bool) {
	w, okW := d.Step(DrillStepBackupWritten)
	v, okV := d.Step(DrillStepBackupVerified)
	t.TTL = time.Duration(d.Canary.TTL) * time.Second
	if d.RequestedAt != 0 && d.RequestedAt <= d.StartedAt {
		t.Commit = time.Duration(d.StartedAt - d.RequestedAt)
	}
	if !okW || !okV {
		return t, false
	}
	t.Write = max(0, time.Duration(w.At-d.StartedAt))
	t.Propagation = max(0, time.Duration(v.At-w.At))
	for _, s := range v.Servers {
		after := max(0, time.Duration(s.VerifiedAt-w.At))
		t.Servers = append(t.Servers, ServerDuration{Server: s.Server, After: after})
		t.Propagation = max(t.Propagation, after)
	}
	return t, true
}

// DrillRTO is the time a real failover would take now, from a drill's
// measurement and the policy: detection, the decision and write, the
// propagation to every authoritative server, and caches up to the TTL.
type DrillRTO struct {
	Detection   time.Duration
	Decision    time.Duration // commit and write
	Propagation time.Duration
	TTL         time.Duration
}

// Total is the time until every authoritative server answers with the
// backup: detection, decision and write, propagation. Resolvers that cached
// the old answer follow within TTL more.
func (r DrillRTO) Total() time.Duration { return r.Detection + r.Decision + r.Propagation }

// Summary is the sentence a drill reports: the total, caches included,
// and its parts.
func (r DrillRTO) Summary() string {
	return fmt.Sprintf("a real failover now would reach most clients in ≈ %s (detection ≤ %s, decision and write %s, propagation %s, caches up to TTL %s)",
		SecondsText(r.Total()+r.TTL), SecondsText(r.Detection), SecondsText(r.Decision), SecondsText(r.Propagation), SecondsText(r.TTL))
}

// SecondsText renders a drill's durations for people: milliseconds below
// a second ("45 ms"), seconds with one decimal below a minute ("7.5 s"),
// whole seconds above ("68 s").
func SecondsText(d time.Duration) string {
	switch s := d.Seconds(); {
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case s < 60:
		return fmt.Sprintf("%.1f s", s)
	default:
		return fmt.Sprintf("%.0f s", s)
	}
}

// RTO estimates a real failover's duration from d under p, with the probe
// timeout; ok is false when d did not measure the write.
func (d DrillRecord) RTO(p Policy, timeout time.Duration) (DrillRTO, bool) {
	t, ok := d.Times()
	if !ok {
		return DrillRTO{}, false
	}
	_, hi := p.DetectionFloor(timeout)
	return DrillRTO{Detection: hi, Decision: t.Commit + t.Write, Propagation: t.Propagation, TTL: t.TTL}, true
}

// DrillStart asks for a drill: the leader's executor moves Canary to the
// backup values and back, and DrillEnd records the outcome. Scheduled
// marks a drill the schedule asked for: a rule that refuses it records it
// as skipped instead of refusing the command.
type DrillStart struct {
	Reason    string      `json:"reason"`
	Actor     string      `json:"actor,omitempty"`
	Canary    DrillCanary `json:"canary"`
	Scheduled bool        `json:"scheduled,omitempty"`
	// RequestedAt is the asking node's clock (unix ns), evidence only.
	RequestedAt int64 `json:"requested_at,omitempty"`
}

// CommandType implements Payload.
func (DrillStart) CommandType() CommandType { return CmdDrillStart }

func (d DrillStart) text() (reason, actor string) { return d.Reason, d.Actor }

func (d DrillStart) apply(s *state, a applyArgs) error {
	return s.drillStart(a.index, a.now, &d, a.res, a.checked)
}

// DrillStep records one step of drill ID, stamped StepAt on the executor's
// clock. A step of a drill that is not running, or a step already
// recorded, is a no-op: a deposed leader's late report changes nothing.
type DrillStep struct {
	ID      uint64               `json:"id"`
	Step    string               `json:"step"`
	StepAt  int64                `json:"step_at"`
	Detail  string               `json:"detail,omitempty"`
	Servers []ServerVerification `json:"servers,omitempty"`
}

// CommandType implements Payload.
func (DrillStep) CommandType() CommandType { return CmdDrillStep }

func (DrillStep) text() (reason, actor string) { return "", "" }

func (d DrillStep) apply(s *state, a applyArgs) error { return s.drillStep(a.index, a.now, &d, a.res) }

// DrillEnd ends drill ID with Outcome (passed, failed or rolled_back),
// the readiness checks and any steps not yet recorded. Only the first
// DrillEnd of a drill counts: the drill is finished exactly once, even
// when a deposed leader and its successor both try.
type DrillEnd struct {
	ID        uint64            `json:"id"`
	Outcome   string            `json:"outcome"`
	Rule      string            `json:"rule,omitempty"`
	Detail    string            `json:"detail,omitempty"`
	Actor     string            `json:"actor,omitempty"`
	Steps     []DrillStepRecord `json:"steps,omitempty"`
	Readiness []DrillCheck      `json:"readiness,omitempty"`
}

// CommandType implements Payload.
func (DrillEnd) CommandType() CommandType { return CmdDrillEnd }

// text: the executor, not a person, ends a drill.
func (DrillEnd) text() (reason, actor string) { return "", "" }

func (d DrillEnd) apply(s *state, a applyArgs) error { return s.drillEnd(a.index, a.now, &d, a.res) }

// drillRefusal names the rule, if any, that refuses a drill now: a drill
// never runs beside the real thing.
func (s *state) drillRefusal(now int64, t map[Site]Tally) *RefusedError {
	switch {
	case s.Drill != nil:
		return &RefusedError{Rule: RuleDrillRunning, Message: fmt.Sprintf("drill %d is still running (started %s)", s.Drill.ID, fmtTime(s.Drill.StartedAt)),
			Override: "wait for it to end (drwatch drill history)"}
	case s.Active != Primary:
		return &RefusedError{Rule: RuleDrillOutage, Message: fmt.Sprintf("traffic is on the %s since %s: the outage is active", s.Active, fmtTime(s.ActiveSince)),
			Override: "fail back first"}
	case t[s.Active].Verdict == Down:
		return &RefusedError{Rule: RuleDrillOutage, Message: fmt.Sprintf("%s is DOWN at quorum: %s", s.Active, describeTally(t[s.Active])),
			Override: "wait until the outage is over"}
	}
	if pd := s.pending(now, now-int64(s.Policy.stale()), t); pd != nil && pd.Countdown() {
		return &RefusedError{Rule: RuleDrillOutage, Message: fmt.Sprintf("an outage of %s is pending: %s failing, DOWN at quorum in %d rounds",
			pd.Site, strings.Join(pd.Leaning, ", "), pd.Rounds), Override: "wait until the watchers see it UP"}
	}
	if s.Desired.Gen != 0 && !s.Desired.Done {
		return &RefusedError{Rule: RuleDrillWriting, Message: fmt.Sprintf("decision gen %d is not verified in DNS yet", s.Desired.Gen),
			Override: "wait until the reconciler verifies it"}
	}
	if s.Paused {
		m := "automatic decisions are paused"
		if s.PausedBy != "" {
			m += " by " + s.PausedBy
		}
		if s.PausedUntil != 0 {
			m += " until " + fmtTime(s.PausedUntil)
		}
		return &RefusedError{Rule: RulePaused, Message: m, Override: "resume first"}
	}
	return nil
}

// drillChecks are the rules a real failover to the backup would face now,
// except that the primary is DOWN: the block on automatic flips when
// failover is automatic, then enough fresh watchers and the backup UP at
// quorum.
func (s *state) drillChecks(now int64, t map[Site]Tally) []check {
	var out []check
	if s.Policy.AutoFailover {
		c := check{Check: Check{Rule: RuleBlocked, OK: s.BlockedUntil <= now, Detail: "automatic flips are not blocked"}}
		if !c.OK {
			c.Detail = "an automatic flip happened recently; automatic flips are blocked until " + fmtTime(s.BlockedUntil) + " or an ack"
		}
		out = append(out, c)
	}
	return append(out, s.targetChecks(Backup, t[Backup])...)
}

func (s *state) drillStart(index uint64, now int64, c *DrillStart, res *Result, checked *[]Check) error {
	p := s.Policy
	if p == nil {
		return fmt.Errorf("drill: %w", ErrNoPolicy)
	}
	if c.Reason == "" {
		return fmt.Errorf("drill: reason is required: %w", ErrBadCommand)
	}
	if len(c.Reason) > maxDrillText || len(c.Actor) > maxDrillName {
		return fmt.Errorf("drill: reason or actor too long: %w", ErrBadCommand)
	}
	if err := c.Canary.check(p); err != nil {
		return err
	}
	t := s.tallies(now)
	rec := DrillRecord{ID: index, Reason: c.Reason, Actor: c.Actor, Scheduled: c.Scheduled, Canary: c.Canary,
		RequestedAt: c.RequestedAt, StartedAt: now}
	rec.Canary.Primary, rec.Canary.Backup = slices.Clone(c.Canary.Primary), slices.Clone(c.Canary.Backup)
	if r := s.drillRefusal(now, t); r != nil {
		if !c.Scheduled {
			return r
		}
		s.Now = now
		rec.Outcome, rec.Rule, rec.Detail, rec.EndedAt = DrillSkipped, r.Rule, r.Message, now
		s.endDrill(index, now, rec)
		res.Kind = KindDrill
		res.Message = fmt.Sprintf("drill %d skipped (%s): %s", index, r.Rule, r.Message)
		return nil
	}
	checks := s.drillChecks(now, t)
	for _, ck := range checks {
		rec.Checks = append(rec.Checks, ck.Check)
		if checked != nil {
			*checked = append(*checked, ck.Check)
		}
	}
	s.Now = now
	res.Kind = KindDrill
	if f := firstFailed(checks); f != nil {
		rec.Outcome, rec.Rule, rec.EndedAt = DrillFailed, f.Rule, now
		rec.Detail = "a real failover now would be withheld: " + f.Message
		s.endDrill(index, now, rec)
		res.Message = fmt.Sprintf("drill %d failed (%s): %s", index, f.Rule, rec.Detail)
		return nil
	}
	rec.Outcome = DrillRunning
	s.Drill = &rec
	res.Message = fmt.Sprintf("drill %d started on %s", index, c.Canary.Name)
	return nil
}

func validDrillStep(step string) bool { return slices.Contains(drillSteps, step) }

func checkDrillStep(st DrillStepRecord) error {
	switch {
	case !validDrillStep(st.Step):
		return fmt.Errorf("drill step %q (want %s): %w", st.Step, strings.Join(drillSteps, ", "), ErrBadCommand)
	case len(st.Detail) > maxDrillText:
		return fmt.Errorf("drill step %s: detail is %d bytes, limit %d: %w", st.Step, len(st.Detail), maxDrillText, ErrBadCommand)
	case len(st.Servers) > maxDrillChecks:
		return fmt.Errorf("drill step %s: %d servers, limit %d: %w", st.Step, len(st.Servers), maxDrillChecks, ErrBadCommand)
	}
	return nil
}

// addStep records st on d unless a step of that name is already there.
func (d *DrillRecord) addStep(st DrillStepRecord) bool {
	if _, ok := d.Step(st.Step); ok || len(d.Steps) >= maxDrillSteps {
		return false
	}
	st.Servers = slices.Clone(st.Servers)
	slices.SortFunc(st.Servers, func(a, b ServerVerification) int { return strings.Compare(a.Server, b.Server) })
	d.Steps = append(d.Steps, st)
	return true
}

func (s *state) drillStep(index uint64, now int64, c *DrillStep, res *Result) error {
	st := DrillStepRecord{Step: c.Step, At: orNow(c.StepAt, now), Detail: c.Detail, Servers: c.Servers}
	if err := checkDrillStep(st); err != nil {
		return err
	}
	s.Now = now
	res.Kind = KindDrill
	switch {
	case s.Drill == nil || s.Drill.ID != c.ID:
		res.Noop = "drill_not_running"
		res.Message = fmt.Sprintf("drill %d is not running; step %s recorded nothing", c.ID, c.Step)
	case !s.Drill.addStep(st):
		res.Noop = "duplicate"
		res.Message = fmt.Sprintf("drill %d step %s already recorded", c.ID, c.Step)
	default:
		res.Message = fmt.Sprintf("drill %d: %s", c.ID, c.Step)
	}
	return nil
}

func (s *state) drillEnd(index uint64, now int64, c *DrillEnd, res *Result) error {
	switch c.Outcome {
	case DrillPassed, DrillFailed, DrillRolledBack:
	default:
		return fmt.Errorf("drill end outcome %q (want passed, failed or rolled_back): %w", c.Outcome, ErrBadCommand)
	}
	if len(c.Readiness) > maxDrillChecks || len(c.Steps) > maxDrillSteps {
		return fmt.Errorf("drill end: %d readiness checks and %d steps, limits %d and %d: %w",
			len(c.Readiness), len(c.Steps), maxDrillChecks, maxDrillSteps, ErrBadCommand)
	}
	for _, r := range c.Readiness {
		if r.Name == "" || len(r.Name) > maxDrillName || len(r.Reason) > maxDrillText {
			return fmt.Errorf("drill end: readiness check %q: name required (≤ %d bytes), reason ≤ %d bytes: %w",
				r.Name, maxDrillName, maxDrillText, ErrBadCommand)
		}
	}
	for _, st := range c.Steps {
		if err := checkDrillStep(st); err != nil {
			return fmt.Errorf("drill end: %w", err)
		}
	}
	if len(c.Detail) > maxDrillText || len(c.Rule) > maxDrillName || len(c.Actor) > maxDrillName {
		return fmt.Errorf("drill end: detail, rule or actor too long: %w", ErrBadCommand)
	}
	s.Now = now
	res.Kind = KindDrill
	if s.Drill == nil || s.Drill.ID != c.ID {
		res.Noop = "drill_not_running"
		res.Message = fmt.Sprintf("drill %d is not running; it ended before", c.ID)
		return nil
	}
	rec := *s.Drill
	for _, st := range c.Steps {
		rec.addStep(st)
	}
	rec.Outcome, rec.Rule, rec.Detail, rec.EndedBy, rec.EndedAt = c.Outcome, c.Rule, c.Detail, c.Actor, now
	rec.Readiness = slices.Clone(c.Readiness)
	s.Drill = nil
	s.endDrill(index, now, rec)
	res.Message = fmt.Sprintf("drill %d %s", c.ID, c.Outcome)
	return nil
}

// endDrill keeps rec among the ended drills and records it in the history.
func (s *state) endDrill(index uint64, now int64, rec DrillRecord) {
	if len(s.Drills) >= MaxDrills {
		n := copy(s.Drills, s.Drills[len(s.Drills)-MaxDrills+1:])
		clear(s.Drills[n:])
		s.Drills = s.Drills[:n]
	}
	s.Drills = append(s.Drills, rec)
	detail := fmt.Sprintf("drill %d on %s", rec.ID, rec.Canary.Name)
	if rec.Detail != "" {
		detail += ": " + rec.Detail
	}
	s.appendHistory(Entry{Index: index, At: now, Kind: KindDrill, From: Primary, To: Backup, Actor: rec.Actor,
		Reason: rec.Reason, Rule: rec.Rule, Outcome: rec.Outcome, Detail: detail})
}

// abortDrill marks a running drill as overtaken by decision gen: a real
// decision wins, and the executor rolls the canary back.
func (s *state) abortDrill(gen uint64) {
	if s.Drill != nil && s.Drill.AbortedBy == 0 {
		s.Drill.AbortedBy = gen
	}
}

// Drills returns the ended drills, oldest first, and the running one (nil
// when none runs).
func (m *Machine) Drills() (ended []DrillRecord, running *DrillRecord) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ended = make([]DrillRecord, len(m.st.Drills))
	for i, d := range m.st.Drills {
		ended[i] = d.clone()
	}
	if m.st.Drill != nil {
		d := m.st.Drill.clone()
		running = &d
	}
	return ended, running
}

// LastDrill returns the latest drill that ran or failed at its start
// (skipped ones are not drills that happened), if any.
func LastDrill(ended []DrillRecord) (DrillRecord, bool) {
	for i := len(ended) - 1; i >= 0; i-- {
		if ended[i].Outcome != DrillSkipped {
			return ended[i], true
		}
	}
	return DrillRecord{}, false
}
