package remediate

import (
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
)

func TestNewDecision(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	d := failover.Desired{Gen: 7, Active: failover.Primary, Done: true,
		Records: []failover.RRset{{Name: "a.", TTL: 30}, {Name: "b.", TTL: 300}, {Name: "c.", TTL: 60}}}
	decided := failover.Entry{Index: 7, Gen: 7, Kind: failover.KindManualFailback, Timings: failover.Timings{VerifiedAt: at.UnixNano()}}
	// An action entry for the same gen carries the same timings; the
	// decision's own entry is the one read.
	action := failover.Entry{Index: 9, Gen: 7, Kind: failover.KindAction, Timings: failover.Timings{VerifiedAt: at.Add(time.Hour).UnixNano()}}
	for _, tc := range []struct {
		name    string
		d       failover.Desired
		history []failover.Entry
		want    Decision
	}{
		{"verified", d, []failover.Entry{decided, action}, Decision{Gen: 7, Active: failover.Primary, Verified: true, VerifiedAt: at, TTL: 300 * time.Second}},
		{"decision left the history", d, []failover.Entry{action}, Decision{Gen: 7, Active: failover.Primary, Verified: true, TTL: 300 * time.Second}},
		{"not verified yet", func() failover.Desired { d := d; d.Done = false; return d }(), []failover.Entry{decided}, Decision{Gen: 7, Active: failover.Primary, TTL: 300 * time.Second}},
		{"no decision", failover.Desired{}, nil, Decision{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NewDecision(tc.d, tc.history); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
