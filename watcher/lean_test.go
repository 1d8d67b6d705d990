package watcher

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cluster"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/probes"
)

// logProposer stamps and applies each command to one machine, as a
// one-node log would, unless fail says otherwise.
type logProposer struct {
	m     *failover.Machine
	index uint64
	at    time.Time
	last  failover.Observe
	// fail, when set, decides what happens to the next proposal: apply it
	// and still return the error (a lost answer), or not apply it.
	fail func() (apply bool, err error)
}

func (l *logProposer) Propose(_ context.Context, cmd []byte) ([]byte, uint64, error) {
	apply, err := true, error(nil)
	if l.fail != nil {
		apply, err = l.fail()
		l.fail = nil
	}
	var resp []byte
	if apply {
		b, serr := failover.Stamp(cmd, l.at.UnixNano())
		if serr != nil {
			return nil, 0, serr
		}
		c, _ := failover.Decode(b)
		l.last, _ = c.Payload.(failover.Observe)
		l.index++
		resp = l.m.Apply(l.index, b)
	}
	if err != nil {
		return nil, 0, err
	}
	return resp, l.index, nil
}

func leanTestPolicy() failover.Policy {
	probesOf := []failover.ProbeRef{{Name: "web", Critical: true}, {Name: "api"}}
	return failover.Policy{Nodes: []string{"a", "b", "c"}, Quorum: 2, Fall: 3, Rise: 2, Interval: time.Second, AutoFailover: true,
		BlockWindow: time.Hour, Failback: failover.FailbackPolicy{Mode: failover.FailbackManual},
		Sites: map[failover.Site]failover.SitePolicy{failover.Primary: {Probes: probesOf}, failover.Backup: {Probes: probesOf}},
		Zone:  "example.org.", Records: []failover.Record{{Name: "lms", Type: "A", TTL: 60, Primary: []string{"203.0.113.10"}, Backup: []string{"198.51.100.10"}}}}
}

// reporterOnLog is node a's reporter on a one-node log whose machine
// holds leanTestPolicy.
func reporterOnLog(t *testing.T) (failover.Policy, *failover.Machine, *logProposer, *Reporter) {
	t.Helper()
	pol := leanTestPolicy()
	m := failover.New()
	if _, err := m.Step(1, failover.Command{At: 1, Payload: failover.SetPolicy{Policy: pol}}); err != nil {
		t.Fatal(err)
	}
	lp := &logProposer{m: m, index: 1, at: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	return pol, m, lp, NewReporter("a", pol.Hash(), m)
}

// The reporter sends a full report first and after anything that leaves
// the log's content unknown, lean ones otherwise; it keeps its view when
// the report never left, settles a lost answer from the local replica, and
// backs off to full reports only after the machine refused a lean one.
func TestReporterSendsLeanReportsOnlyOnAKnownBase(t *testing.T) {
	pol, m, lp, rep := reporterOnLog(t)
	seq := uint64(0)
	round := func(webOK bool) probes.Round {
		seq++
		r := probes.Round{Seq: seq}
		for _, site := range []string{"primary", "backup"} {
			for _, name := range []string{"web", "api"} {
				res := probes.Result{OK: true, Duration: 4 * time.Millisecond}
				if site == "primary" && name == "web" && !webOK {
					res = probes.Result{Class: probes.ClassRefused, Phase: "connect", Reason: "refused"}
				}
				r.Results = append(r.Results, probes.NamedResult{Site: site, Probe: name, Completed: lp.at, Result: res})
			}
		}
		return r
	}
	send := func(step string, webOK bool, wantLean bool, wantResults int) {
		t.Helper()
		lp.at = lp.at.Add(time.Second)
		p, h := m.Policy()
		_, lean, err := rep.Report(context.Background(), lp, p, h, round(webOK), func() time.Time { return lp.at })
		if lean != wantLean {
			t.Fatalf("%s: Report says lean %v, want %v", step, lean, wantLean)
		}
		if lp.fail == nil && err != nil && !errors.Is(err, cluster.ErrNotSent) && !errors.Is(err, errLost) {
			t.Fatalf("%s: %v", step, err)
		}
		if got := lp.last.Base != 0; got != wantLean || len(lp.last.Results) != wantResults {
			t.Fatalf("%s: got lean %v with %d results (%+v), want lean %v with %d", step, got, len(lp.last.Results), lp.last, wantLean, wantResults)
		}
	}
	send("first round", true, false, 4)
	send("nothing changed", true, true, 0)
	send("primary/web fails", false, true, 1)
	send("failing, under fall", false, true, 1)
	send("failing, under fall", false, true, 1)
	send("DOWN: repeated", false, true, 0)
	lp.fail = func() (bool, error) { return false, fmt.Errorf("no leader (%w)", cluster.ErrNotSent) }
	lp.last = failover.Observe{Base: 1}
	send("never sent", false, true, 0) // the proposer saw nothing; last is what we set
	// Still lean on the same base; two seconds without a record of
	// primary/web is over half of stale_after (3 s), so the log may count
	// its failures from one again: it goes out until fall.
	send("view kept after not sent", false, true, 1)
	lp.fail = func() (bool, error) { return true, errLost }
	send("answer lost", true, true, 1)
	send("the replica holds the lost report: lean on it", true, true, 0)
	lp.fail = func() (bool, error) { return false, errLost }
	send("timed out, not applied", true, true, 0)
	send("the replica lacks it: full", true, false, 4)
	send("lean again", true, true, 0)
	// Another report of node a (an earlier process, say) moves the log
	// past this reporter's base: the machine refuses the next lean report,
	// and reports stay full for LeanBackoff.
	lp.at = lp.at.Add(time.Second)
	if _, _, err := failover.Submit(context.Background(), lp, failover.Command{Payload: Observation("a", pol.Hash(), round(true))}); err != nil {
		t.Fatal(err)
	}
	lp.at = lp.at.Add(time.Second)
	p, h := m.Policy()
	if _, lean, err := rep.Report(context.Background(), lp, p, h, round(true), func() time.Time { return lp.at }); !lean || !errors.Is(err, failover.ErrBadCommand) {
		t.Fatalf("lean report on a base the log moved past: lean %v, err %v; want a lean report refused as a bad command", lean, err)
	}
	for i := range 59 {
		send(fmt.Sprintf("backoff second %d: full", i+1), true, false, 4)
	}
	send("backoff over", true, true, 0)
	if v := m.View(); len(v.Nodes) == 0 || v.Nodes[0].Node != "a" {
		t.Fatalf("node a's reports are not in the view: %+v", v.Nodes)
	}
}

var errLost = errors.New("context deadline exceeded")
