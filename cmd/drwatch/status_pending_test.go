package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/api"
	"github.com/drwatch/drwatch/failover"
)

// `drwatch status` counts down only when quorum watchers fail the active
// site; with fewer it says who fails and who does not (DESIGN §4 invariant 7).
func TestStatusTablePendingLine(t *testing.T) {
	for _, tt := range []struct {
		name string
		p    failover.Pending
		want string
	}{
		{"one of three failing", failover.Pending{Site: failover.Primary, Leaning: []string{"c"}, Up: []string{"a", "b"}, Undecided: []string{}, Quorum: 2},
			"pending:     1 of 3 watchers (c) sees primary failing; a flip needs 2; a and b see it UP\n"},
		{"two of three failing", failover.Pending{Site: failover.Primary, Leaning: []string{"b", "c"}, Up: []string{"a"}, Undecided: []string{}, Quorum: 2,
			Rounds: 2, In: 4 * time.Second, Then: &failover.PendingThen{Action: failover.KindAutoFailover}},
			"pending:     automatic failover to backup in about 4 s if this persists (2 more failing rounds): b, c see primary failing\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := api.Status{ServedAt: time.Unix(100, 0), State: failover.View{Active: failover.Primary, Mode: "auto", Pending: &tt.p}}
			var b bytes.Buffer
			printStatus(&b, st)
			if !strings.Contains(b.String(), tt.want) {
				t.Errorf("got:\n%s\nwant a line %q", b.String(), tt.want)
			}
		})
	}
}
