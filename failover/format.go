package failover

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Format is the newest log format this binary reads: every command type,
// payload field, snapshot field and encoding it knows. A change that adds
// any of them bumps Format by one and names what it adds in commandFormats
// or fieldFormats (TestEveryCommandTypeAndFieldHasAFormat fails until it
// does). A leader writes what a format adds only once the cluster's
// effective format, raised by SetFormat when every server reads it, is at
// least that format: invariant 15, a node never writes what a voter cannot
// read (see DESIGN.md "Why log formats").
const Format = 3

// LegacyFormat is the format of a node that makes none known: a release
// from before formats. It reads exactly what the release at commit
// 3ef9e9a (docs/testing.md) reads, which is every command type and field
// listed in testdata/format/legacy.txt.
const LegacyFormat = 0

// commandFormats names the format that introduced each command type newer
// than LegacyFormat.
var commandFormats = map[CommandType]int{
	CmdSetFormat: 1,
}

// fieldFormats names the format that introduced each field newer than
// LegacyFormat, of a payload (and what it holds) or of the snapshot's
// state, as "Type.json_name".
var fieldFormats = map[string]int{
	"SetFormat.format": 1,
	"state.format":     1,
	// A watcher's own failure streak on its results, and the span without
	// a leader on the state and a decision's timings.
	"ProbeResult.streak":         2,
	"ProbeResult.streak_at":      2,
	"ProbeResult.streak_fell_at": 2,
	"ProbeFailure.streak_at":     2,
	"state.leaderless_from":      2,
	"state.leaderless_to":        2,
	"Timings.leaderless_from":    2,
	"Timings.leaderless_to":      2,
	// Failover groups: the policy's groups, their state, the group an
	// entry is about and the group a command is for.
	"Policy.groups":            3,
	"Group.name":               3,
	"Group.auto_failover":      3,
	"Group.block_window":       3,
	"Group.failback":           3,
	"Group.sites":              3,
	"Group.zone":               3,
	"Group.records":            3,
	"Group.failback_gate":      3,
	"state.groups":             3,
	"Entry.group":              3,
	"Failover.group":           3,
	"Failover.all_groups":      3,
	"Failback.group":           3,
	"Pause.group":              3,
	"Resume.group":             3,
	"Ack.group":                3,
	"ActionResult.group":       3,
	"groupState.active":        3,
	"groupState.active_since":  3,
	"groupState.desired":       3,
	"groupState.paused":        3,
	"groupState.paused_until":  3,
	"groupState.paused_by":     3,
	"groupState.pause_reason":  3,
	"groupState.blocked_until": 3,
	"groupState.withheld":      3,
	"groupState.down_since":    3,
	"groupState.primary_up":    3,
	"groupState.primary_up_at": 3,
	// Each group's own remediations: the group a record is for, and the
	// budgets carried from its evicted records.
	"Remediation.group":  3,
	"groupState.budgets": 3,
	// Never set: DefaultGroup's budgets are state.remediation_budgets.
	"state.budgets": 3,
}

// RuleLogFormat names the refusal of a command that needs a newer log
// format than the cluster's effective one.
const RuleLogFormat = "log_format"

// CmdSetFormat raises the cluster's effective log format.
const CmdSetFormat CommandType = "set_format"

// SetFormat raises the cluster's effective log format to Format. The
// leader proposes it once every server of the configuration has made
// known that it reads Format; from its index on, the leader may write what
// that format adds. It never lowers the format: one not above the current
// one changes nothing, so a retry or a stale leader's proposal is harmless.
type SetFormat struct {
	Format int `json:"format"`
}

// CommandType implements Payload.
func (SetFormat) CommandType() CommandType { return CmdSetFormat }

func (SetFormat) text() (reason, actor string) { return "", "" }

func (f SetFormat) apply(s *state, a applyArgs) error {
	if f.Format > Format {
		// Decode refuses it first; Step may still be handed one.
		return unreadableFormat(f.Format)
	}
	s.Format = max(s.Format, f.Format)
	return nil
}

func unreadableFormat(f int) error {
	return fmt.Errorf("log format %d is newer than this binary's %d: %w: %w", f, Format, ErrUnreadable, ErrBadCommand)
}

// NeedsFormat returns the oldest log format that reads c: the greatest
// format of its type and of every field it sets (a field left at its zero
// value is not written, or reads as before).
func (c Command) NeedsFormat() int {
	if c.Payload == nil {
		return LegacyFormat
	}
	return max(commandFormats[c.Type()], valueFormat(reflect.ValueOf(c.Payload)))
}

// valueFormat is the greatest format of the fields v sets, at any depth.
func valueFormat(v reflect.Value) int {
	f := LegacyFormat
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			f = valueFormat(v.Elem())
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			f = max(f, valueFormat(v.Index(i)))
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			f = max(f, valueFormat(it.Value()))
		}
	case reflect.Struct:
		f = structFormat(v, v.Type().Name())
	}
	return f
}

// structFormat is the greatest format of the fields v sets, each named as
// owner's field: encoding/json promotes the fields of an embedded struct
// without a tag into the struct that embeds it, and so do formats.
func structFormat(v reflect.Value, owner string) int {
	f := LegacyFormat
	t := v.Type()
	for i := range t.NumField() {
		fv := v.Field(i)
		if fv.IsZero() {
			continue
		}
		if sf := t.Field(i); promoted(sf) {
			f = max(f, structFormat(fv, owner))
			continue
		}
		if name, ok := jsonName(t.Field(i)); ok {
			f = max(f, fieldFormats[owner+"."+name])
		}
		if t.Field(i).IsExported() {
			f = max(f, valueFormat(fv))
		}
	}
	return f
}

// promoted reports whether sf's fields are named as the embedding
// struct's own: an embedded struct of an unexported type without a json
// tag (state's groupState), which encoding/json writes in place. An
// exported embedded type (RemediationRecord's Remediation) keeps its own
// name, as the legacy listing has it.
func promoted(sf reflect.StructField) bool {
	return sf.Anonymous && !sf.IsExported() && sf.Type.Kind() == reflect.Struct && sf.Tag.Get("json") == ""
}

// jsonName is the key encoding/json writes sf under; ok is false for a
// field it never writes.
func jsonName(sf reflect.StructField) (string, bool) {
	if !sf.IsExported() {
		return "", false
	}
	tag := sf.Tag.Get("json")
	if tag == "-" {
		return "", false
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		name = sf.Name
	}
	return name, true
}

// CheckFormat refuses c when it needs a newer log format than effective,
// the cluster's (Machine.Format): a leader must not write it yet, since a
// server that cannot read it would stop applying. The refusal is a
// *RefusedError with RuleLogFormat.
func CheckFormat(c Command, effective int) error {
	if effective >= Format {
		// Nothing needs a newer format than this binary's own
		// (TestEveryCommandTypeAndFieldHasAFormat), so a cluster that
		// writes it refuses nothing, and the leader skips the walk
		// over the fields of every command it stamps: a region outage
		// of 50 groups stamps a hundred action results in a few ms.
		return nil
	}
	need := c.NeedsFormat()
	if need <= effective {
		return nil
	}
	return &RefusedError{
		Rule: RuleLogFormat,
		Message: fmt.Sprintf("command %s needs log format %d, and the cluster writes format %d until every server reads %d",
			c.Type(), need, effective, need),
		Override: "upgrade the servers that lag (drwatch members list shows each one's format); the leader raises the format by itself",
	}
}

// Format returns the cluster's effective log format as this replica has
// applied it: LegacyFormat until a SetFormat raised it.
func (m *Machine) Format() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.st.Format
}

// snapshotFormat reads the effective format a snapshot records, leniently,
// so that a snapshot of a newer format is refused by its format and not by
// the first field this binary does not know.
func snapshotFormat(b []byte) int {
	var s struct {
		State struct {
			Format int `json:"format"`
		} `json:"state"`
	}
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&s); err != nil {
		return LegacyFormat
	}
	return s.State.Format
}
