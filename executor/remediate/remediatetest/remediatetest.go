package remediatetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/failover"
)

// Log is the replicated log in one process: every proposal is stamped with
// the time and applied to M in order, as a one-node cluster would. It
// satisfies failover.Leader.
type Log struct {
	mu  sync.Mutex
	M   *failover.Machine
	idx uint64
}

var _ failover.Leader = (*Log)(nil)

// NewLog returns an empty log.
func NewLog() *Log { return &Log{M: failover.New()} }

// VerifyLeader implements failover.Leader: this log always leads.
func (c *Log) VerifyLeader(context.Context) error { return nil }

// Propose implements failover.Leader.
func (c *Log) Propose(_ context.Context, cmd []byte) ([]byte, uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, err := failover.Stamp(cmd, time.Now().UnixNano())
	if err != nil {
		return nil, 0, err
	}
	c.idx++
	return c.M.Apply(c.idx, b), c.idx, nil
}

// Step proposes cmd and fails t if the core rejects it.
func (c *Log) Step(t testing.TB, cmd failover.Command) {
	t.Helper()
	if _, _, err := failover.Submit(context.Background(), c, cmd); err != nil {
		t.Fatal(err)
	}
}

// FailoverToBackup sets a small policy and makes a forced decision for the
// backup; it returns the decision's generation.
func (c *Log) FailoverToBackup(t testing.TB) uint64 {
	t.Helper()
	refs := []failover.ProbeRef{{Name: "p", Critical: true}}
	c.Step(t, failover.Command{Payload: failover.SetPolicy{Policy: failover.Policy{Nodes: []string{"a", "b", "c"}, Quorum: 2, Fall: 3, Rise: 2,
		Interval: time.Second, Sites: map[failover.Site]failover.SitePolicy{failover.Primary: {Probes: refs}, failover.Backup: {Probes: refs}},
		Zone:    "example.org.",
		Records: []failover.Record{{Name: "www", Type: "A", TTL: 60, Primary: []string{"192.0.2.1"}, Backup: []string{"192.0.2.2"}}}}}})
	c.Step(t, failover.Command{Payload: failover.Failover{To: failover.Backup, Force: true, Actor: "alice", Reason: "drill"}})
	return c.M.Desired().Gen
}

// Pass runs one Runner pass of r in settings s and returns the records it added.
func Pass(t testing.TB, c *Log, r remediate.Remediator, s remediate.Settings) []failover.RemediationRecord {
	t.Helper()
	return PassAt(t, c, r, s, nil)
}

// PassAt is Pass with the runner's clock set to now (nil: time.Now), for
// tests that step past a backoff or a wait.
func PassAt(t testing.TB, c *Log, r remediate.Remediator, s remediate.Settings, now func() time.Time) []failover.RemediationRecord {
	t.Helper()
	return PassEntries(t, c, now, remediate.Entry{Remediator: r, Settings: s})
}

// PassEntries runs one Runner pass over entries (several remediations, one
// node disruption budget per Entry.Cluster) with the runner's clock set to
// now (nil: time.Now), and returns the records it added.
func PassEntries(t testing.TB, c *Log, now func() time.Time, entries ...remediate.Entry) []failover.RemediationRecord {
	t.Helper()
	before := len(c.M.Remediations())
	run, err := remediate.NewRunner(remediate.RunnerConfig{Node: "a", Cluster: c, State: c.M, Now: now, Remediators: entries})
	if err != nil {
		t.Fatal(err)
	}
	if rep := run.Pass(context.Background()); rep.Err != nil {
		t.Fatalf("pass: %v", rep.Err)
	}
	return c.M.Remediations()[before:]
}

// Summary renders records as "result verb target" lines, in order.
func Summary(recs []failover.RemediationRecord) []string {
	out := []string{}
	for _, r := range recs {
		out = append(out, r.Result+" "+r.Verb+" "+r.Target)
	}
	return out
}
