package failover_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/drwatch/drwatch/failover"
)

// logOfOne is a replicated log of one node: it stamps each command with
// the leader's clock and applies it to the decision core at the next
// index, as cluster.Node does once Raft has committed it on a quorum.
type logOfOne struct {
	m     *failover.Machine
	index uint64
	now   time.Time
}

func (l *logOfOne) Propose(_ context.Context, cmd []byte) ([]byte, uint64, error) {
	l.index++
	stamped, err := failover.Stamp(cmd, l.now.UnixNano())
	if err != nil {
		return nil, 0, err
	}
	return l.m.Apply(l.index, stamped), l.index, nil
}

// A replicated command is a Command: the envelope that carries the
// leader's time stamp and one payload. Encode gives the bytes the log
// holds (the stamp, 0 until the leader's Stamp sets it, sits inside the
// payload, where version 1 wrote it); Submit encodes, proposes through the cluster and decodes the
// core's answer, which is the same on every node, a refusal included (a
// sentinel for errors.Is). A new command is a payload type of the failover
// package (its CommandType constant, its text and apply methods, the
// state change it makes) and one line of payloadTypes, the union the wire
// format reads.
func ExampleSubmit() {
	ctx := context.Background()
	log := &logOfOne{m: failover.New(), now: time.Unix(1_700_000_000, 0)}

	wire, _ := failover.Encode(failover.Command{Payload: failover.Pause{Actor: "alice", Reason: "maintenance"}})
	fmt.Printf("on the log: %s\n", wire)

	web := []failover.ProbeRef{{Name: "web", Critical: true}}
	policy := failover.Policy{
		Nodes: []string{"a", "b", "c"}, Quorum: 2, Fall: 3, Rise: 2, Interval: time.Second,
		AutoFailover: true, BlockWindow: time.Hour, Failback: failover.FailbackPolicy{Mode: "manual"},
		Sites: map[failover.Site]failover.SitePolicy{failover.Primary: {Probes: web}, failover.Backup: {Probes: web}},
		Zone:  "example.org.",
		Records: []failover.Record{{Name: "lms", Type: "A", TTL: 60,
			Primary: []string{"203.0.113.10"}, Backup: []string{"198.51.100.10"}}},
	}
	res, index, err := failover.Submit(ctx, log, failover.Command{Payload: failover.SetPolicy{Policy: policy, Actor: "node:a"}})
	fmt.Println(res.Type, "applied at index", index, "error:", err)

	// No watcher has seen the backup UP: the core refuses to move there.
	_, _, err = failover.Submit(ctx, log, failover.Command{Payload: failover.Failover{To: failover.Backup, Actor: "alice", Reason: "drill"}})
	fmt.Println("failover refused:", errors.Is(err, failover.ErrRefused))

	res, index, err = failover.Submit(ctx, log, failover.Command{Payload: failover.Pause{Actor: "alice", Reason: "maintenance"}})
	fmt.Println(res.Type, "applied at index", index, "error:", err, "paused:", log.m.View().Paused)
	// Output:
	// on the log: {"v":1,"type":"pause","pause":{"at":0,"reason":"maintenance","actor":"alice"}}
	// set_policy applied at index 1 error: <nil>
	// failover refused: true
	// pause applied at index 3 error: <nil> paused: true
}
