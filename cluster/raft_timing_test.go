package cluster

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/internal/field"
)

// Validate names each problem by its path inside the raft section, for the
// config loader to prefix.
func TestRaftTimingValidate(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   RaftTiming
		want field.Errors
	}{
		{"defaults", RaftTiming{}.withDefaults(), nil},
		{"zero", RaftTiming{}, field.Errors{
			{Path: "heartbeat_timeout", Msg: "0s must be > 0"},
			{Path: "election_timeout", Msg: "0s must be > 0"},
			{Path: "commit_timeout", Msg: "0s must be > 0"},
			{Path: "snapshot_interval", Msg: "0s must be > 0"},
			{Path: "leader_lease_timeout", Msg: "0s must be > 0"},
			{Path: "snapshot_threshold", Msg: "0 must be at least 16"},
		}},
		// A file that raises heartbeat_timeout alone (the old default, 2s)
		// keeps the default election_timeout: raft would refuse to start.
		{"election below heartbeat", RaftTiming{HeartbeatTimeout: 2 * time.Second, LeaderLeaseTimeout: time.Second}.withDefaults(), field.Errors{
			{Path: "election_timeout", Msg: "1s must not be below heartbeat_timeout (2s)"},
		}},
		{"election above heartbeat", RaftTiming{HeartbeatTimeout: time.Second, ElectionTimeout: 3 * time.Second}.withDefaults(), nil},
		{"above the bounds", RaftTiming{HeartbeatTimeout: 2 * time.Minute, ElectionTimeout: 2 * time.Minute, LeaderLeaseTimeout: 3 * time.Minute,
			CommitTimeout: 11 * time.Second, SnapshotInterval: 25 * time.Hour, SnapshotThreshold: 15}, field.Errors{
			{Path: "heartbeat_timeout", Msg: "2m0s must be ≤ 1m0s"},
			{Path: "election_timeout", Msg: "2m0s must be ≤ 1m0s"},
			{Path: "commit_timeout", Msg: "11s must be ≤ 10s"},
			{Path: "snapshot_interval", Msg: "25h0m0s must be ≤ 24h0m0s"},
			{Path: "leader_lease_timeout", Msg: "3m0s must not exceed heartbeat_timeout (2m0s)"},
			{Path: "snapshot_threshold", Msg: "15 must be at least 16"},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.Validate(); !slices.Equal(got, tt.want) {
				t.Errorf("got\n%v\nwant\n%v", got, tt.want)
			}
		})
	}
}

// The raft section's documented defaults are the ones a Config left zero
// gets, for every field: a node built without the config loader (tests,
// benchmarks, the simulator) compacts its log as a deployed one does.
func TestRaftTimingDefaultTagsMatchDefaults(t *testing.T) {
	d := RaftTiming{}.withDefaults()
	v, typ := reflect.ValueOf(d), reflect.TypeOf(d)
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, tag := strings.Split(f.Tag.Get("yaml"), ",")[0], f.Tag.Get("default")
		switch f.Type {
		case reflect.TypeOf(time.Duration(0)):
			want, err := time.ParseDuration(tag)
			if err != nil {
				t.Fatalf("%s: default tag %q: %v", name, tag, err)
			}
			if got := time.Duration(v.Field(i).Int()); got != want {
				t.Errorf("%s: got default %s, want the documented %s", name, got, want)
			}
		case reflect.TypeOf(uint64(0)):
			want, err := strconv.ParseUint(tag, 10, 64)
			if err != nil {
				t.Fatalf("%s: default tag %q: %v", name, tag, err)
			}
			if got := v.Field(i).Uint(); got != want {
				t.Errorf("%s: got default %d, want the documented %d", name, got, want)
			}
		default:
			t.Errorf("%s: no check for a field of type %s", name, f.Type)
		}
	}
}
