package failover

import (
	"bufio"
	"bytes"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// legacyFields lists every command type ("type observe") and every field
// ("field Observe.seq") that a node of LegacyFormat reads: the release
// at commit 3ef9e9a (docs/testing.md). It is frozen: what comes later
// goes into commandFormats or fieldFormats, with a bumped Format.
const legacyFields = "testdata/format/legacy.txt"

// formatKeys returns every command type and every field, at any depth, of
// the payloads and of the snapshot's state, as legacyFields names them.
func formatKeys() []string {
	seen := map[reflect.Type]bool{}
	var keys []string
	var walk func(t reflect.Type)
	var fields func(t reflect.Type, owner string)
	walk = func(t reflect.Type) {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			walk(t.Elem())
			return
		case reflect.Struct:
		default:
			return
		}
		if seen[t] {
			return
		}
		seen[t] = true
		fields(t, t.Name())
	}
	// fields lists t's fields as owner's: encoding/json promotes the fields
	// of an embedded struct without a tag (state's groupState) into the
	// struct that embeds it.
	fields = func(t reflect.Type, owner string) {
		for i := range t.NumField() {
			sf := t.Field(i)
			if promoted(sf) {
				fields(sf.Type, owner)
				continue
			}
			name, ok := jsonName(sf)
			if !ok {
				continue
			}
			keys = append(keys, "field "+owner+"."+name)
			walk(sf.Type)
		}
	}
	for _, p := range payloadTypes {
		keys = append(keys, "type "+string(p.CommandType()))
		walk(reflect.TypeOf(p))
	}
	walk(reflect.TypeFor[state]())
	slices.Sort(keys)
	return slices.Compact(keys)
}

func readLegacyFields(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(readFile(t, legacyFields)))
	for sc.Scan() {
		if l := sc.Text(); l != "" && !strings.HasPrefix(l, "#") {
			out[l] = true
		}
	}
	return out
}

// TestEveryCommandTypeAndFieldHasAFormat: a change that adds a command
// type or a field to a payload or to the snapshot without naming the
// format that introduced it fails here, and so does a format table that
// names a format above Format, or a Format that nothing needs.
func TestEveryCommandTypeAndFieldHasAFormat(t *testing.T) {
	legacy := readLegacyFields(t)
	newest := LegacyFormat
	for _, k := range formatKeys() {
		kind, name, _ := strings.Cut(k, " ")
		var f int
		var ok bool
		if kind == "type" {
			f, ok = commandFormats[CommandType(name)]
		} else {
			f, ok = fieldFormats[name]
		}
		switch {
		case legacy[k] && ok:
			t.Errorf("%s: listed in %s and given format %d; a legacy node reads it, so drop it from the table", k, legacyFields, f)
		case legacy[k]:
		case !ok:
			t.Errorf("%s: no log format: a node of an older format cannot read it. Bump Format to %d and add it to commandFormats or fieldFormats in format.go (never to %s)", k, Format+1, legacyFields)
		case f <= LegacyFormat || f > Format:
			t.Errorf("%s: format %d, want one in (%d, %d]", k, f, LegacyFormat, Format)
		}
		newest = max(newest, f)
		delete(legacy, k)
	}
	for k := range legacy {
		t.Errorf("%s: listed in %s but no longer in the code: a legacy node's entries or snapshots may still hold it", k, legacyFields)
	}
	if newest != Format {
		t.Errorf("Format is %d, but the newest format anything needs is %d", Format, newest)
	}
	for typ := range commandFormats {
		if wire.byType[typ] == nil {
			t.Errorf("commandFormats names %q, which is no command type", typ)
		}
	}
}

// TestCommandNeedsTheFormatOfWhatItSets: a command needs the format of
// its type and of the fields it sets; the old ones need LegacyFormat.
func TestCommandNeedsTheFormatOfWhatItSets(t *testing.T) {
	for _, c := range []struct {
		cmd  Command
		want int
	}{
		{Command{Payload: Tick{}}, LegacyFormat},
		{Command{Payload: Observe{Node: "a", Results: []ProbeResult{{Site: Primary, Probe: "lms", CompletedAt: 5}}}}, LegacyFormat},
		{Command{Payload: BreakGlassRejected{}}, LegacyFormat},
		{Command{Payload: SetFormat{Format: 1}}, 1},
	} {
		if got := c.cmd.NeedsFormat(); got != c.want {
			t.Errorf("%s: NeedsFormat() = %d, want %d", c.cmd.Type(), got, c.want)
		}
	}
}

// TestLeaderStampsOnlyWhatTheClusterFormatReads: at the cluster's
// effective format the leader stamps a command of that format; below it,
// it refuses naming the rule, and a legacy command still goes through.
func TestLeaderStampsOnlyWhatTheClusterFormatReads(t *testing.T) {
	setFormat, err := Encode(Command{Payload: SetFormat{Format: 1}})
	if err != nil {
		t.Fatal(err)
	}
	tick, err := Encode(Command{Payload: Tick{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := StampFormat(setFormat, 7, 1, 1); err != nil {
		t.Errorf("set_format 1 at format 1: %v, want stamped", err)
	}
	if _, err := StampFormat(setFormat, 7, LegacyFormat, 1); err != nil {
		t.Errorf("set_format 1 at format 0, every server reading 1: %v, want stamped", err)
	}
	for _, everyServer := range []int{LegacyFormat, -1} {
		_, err = StampFormat(setFormat, 7, LegacyFormat, everyServer)
		var re *RefusedError
		if !errors.As(err, &re) || re.Rule != RuleLogFormat {
			t.Errorf("set_format 1 at format 0, every server reading %d: %v, want refused by %s", everyServer, err, RuleLogFormat)
		}
	}
	if _, err := StampFormat(tick, 7, LegacyFormat, -1); err != nil {
		t.Errorf("tick at format 0: %v, want stamped", err)
	}
}

// TestSetFormatRaisesNeverLowers: the effective format is replicated
// state, raised by set_format and never lowered, and it survives a
// snapshot.
func TestSetFormatRaisesNeverLowers(t *testing.T) {
	m := New()
	if m.Format() != LegacyFormat {
		t.Fatalf("new machine at format %d, want %d", m.Format(), LegacyFormat)
	}
	for i, c := range []struct{ set, want int }{{1, 1}, {0, 1}, {1, 1}} {
		b, err := Encode(Command{At: int64(i + 1), Payload: SetFormat{Format: c.set}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeResponse(m.Apply(uint64(i+1), b)); err != nil {
			t.Fatalf("set_format %d: %v", c.set, err)
		}
		if m.Format() != c.want {
			t.Errorf("after set_format %d: format %d, want %d", c.set, m.Format(), c.want)
		}
	}
	snap, err := m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	r := New()
	if err := r.Restore(snap); err != nil || r.Format() != 1 {
		t.Errorf("restored: format %d, err %v; want 1, nil", r.Format(), err)
	}
}

// TestNewerFormatIsUnreadableNotSkipped: an entry that raises the format
// above this binary's, and any entry that does not decode, come back from
// ApplyEntry as errors with nothing applied, so the replica can stop; an
// entry the core merely refuses is applied (as a refusal) like before.
func TestNewerFormatIsUnreadableNotSkipped(t *testing.T) {
	m := New()
	newer := []byte(`{"v":1,"type":"set_format","set_format":{"at":1,"format":` + strconv.Itoa(Format+1) + `}}`)
	_, err := m.ApplyEntry(1, newer)
	if !errors.Is(err, ErrUnreadable) {
		t.Errorf("set_format %d: %v, want ErrUnreadable", Format+1, err)
	}
	unknown := []byte(`{"v":1,"type":"group_observe","group_observe":{"at":1}}`)
	if _, err := m.ApplyEntry(1, unknown); !errors.Is(err, ErrBadCommand) {
		t.Errorf("unknown command type: %v, want an error", err)
	}
	if m.View().Index != 0 {
		t.Errorf("applied through %d, want nothing applied", m.View().Index)
	}
	refused, err := Encode(Command{At: 1, Payload: Failover{To: Backup}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.ApplyEntry(1, refused)
	if err != nil {
		t.Fatalf("failover without a policy: %v, want it applied with an error response", err)
	}
	if _, err := DecodeResponse(resp); !errors.Is(err, ErrNoPolicy) {
		t.Errorf("failover without a policy: response %v, want ErrNoPolicy", err)
	}
}

// TestSnapshotOfNewerFormatIsRefused: a binary restoring a snapshot that
// records a newer effective format than it reads (a downgrade below the
// format in use) refuses it by its format, before the fields it does not
// know; a snapshot at its own format restores.
func TestSnapshotOfNewerFormatIsRefused(t *testing.T) {
	m := New()
	snap, err := m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	newer := bytes.Replace(snap, []byte(`"state":{`), []byte(`"state":{"format":99,"group_states":{},`), 1)
	err = New().Restore(newer)
	if !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), "log format 99") {
		t.Errorf("restore of a format 99 snapshot: %v, want ErrUnreadable naming format 99", err)
	}
	if err := New().Restore(snap); err != nil {
		t.Errorf("restore of a format %d snapshot: %v", LegacyFormat, err)
	}
}

// A cluster at this binary's Format refuses no command CheckFormat is
// given, whatever it sets: it is the fast path the leader stamps through,
// and it agrees with the walk over the fields (NeedsFormat).
func TestCheckFormatAtTheNewestFormatAgreesWithNeedsFormat(t *testing.T) {
	for _, c := range []Command{
		{Payload: Tick{}},
		{Payload: SetFormat{Format: Format}},
		{Payload: ActionResult{Group: "lms", Gen: 3, Outcome: OutcomeVerified, Actor: "a", WrittenAt: 1, VerifiedAt: 2}},
		{Payload: SetPolicy{Policy: twoGroupPolicy(), Actor: "ops"}},
	} {
		if need := c.NeedsFormat(); need > Format {
			t.Errorf("%s needs format %d, newer than this binary's %d", c.Type(), need, Format)
		}
		if err := CheckFormat(c, Format); err != nil {
			t.Errorf("%s at format %d: got %v, want it written", c.Type(), Format, err)
		}
	}
}
