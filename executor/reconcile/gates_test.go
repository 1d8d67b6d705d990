package reconcile

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate/hooks"
	"github.com/drwatch/drwatch/failover"
)

type fakeGate struct {
	name  string
	note  string
	err   error
	calls atomic.Int32
	last  Decision
}

func (g *fakeGate) Name() string { return g.name }
func (g *fakeGate) Before(_ context.Context, d Decision) (string, error) {
	g.calls.Add(1)
	g.last = d
	return g.note, g.err
}

// autoFailover drives two watchers' reports until the core decides an
// automatic failover to the backup.
func autoFailover(t *testing.T, f *fixture) uint64 {
	t.Helper()
	hash := f.cluster.m.View().PolicyHash
	for seq := uint64(1); seq <= 4 && f.cluster.m.Desired().Active != failover.Backup; seq++ {
		for _, n := range []string{"a", "b"} {
			f.cluster.step(t, failover.Command{Payload: failover.Observe{Node: n, Seq: seq, PolicyHash: hash, Results: []failover.ProbeResult{
				{Site: failover.Primary, Probe: "lms", OK: false, Class: "refused", Reason: "connection refused"},
				{Site: failover.Backup, Probe: "lms", OK: true},
			}}})
		}
	}
	d := f.cluster.m.Desired()
	if d.Active != failover.Backup {
		t.Fatalf("no automatic failover: %+v", f.cluster.m.View().Sites)
	}
	return d.Gen
}

func actionDetails(m *failover.Machine, gen uint64, outcome string) []string {
	var out []string
	for _, e := range m.History() {
		if e.Kind == failover.KindAction && e.Gen == gen && e.Outcome == outcome {
			out = append(out, e.Detail)
		}
	}
	return out
}

func TestFailingGateHoldsBackAnAutomaticFlip(t *testing.T) {
	f := newFixture(t)
	gen := autoFailover(t, f)
	g := &fakeGate{name: "pre-failover hook check-db", err: errors.New("replica lag 40s")}
	f.rec.cfg.Gates = []Gate{g}
	for i := 0; i < 2; i++ {
		if _, err := f.rec.Pass(context.Background()); !errors.Is(err, ErrBlocked) {
			t.Fatalf("pass %d: got %v, want ErrBlocked", i, err)
		}
	}
	if n := f.updates(); n != 0 {
		t.Fatalf("a blocked automatic flip wrote %d updates", n)
	}
	if !g.last.Automatic || g.last.From != failover.Primary || g.last.To != failover.Backup || g.last.Gen != gen {
		t.Errorf("gate saw %+v", g.last)
	}
	if got := actionDetails(f.cluster.m, gen, failover.OutcomeFailed); len(got) != 1 || !strings.Contains(got[0], "replica lag 40s") {
		t.Errorf("got failed records %q, want exactly one naming the hook's error", got)
	}
	g.err = nil
	if _, err := f.rec.Pass(context.Background()); err != nil {
		t.Fatalf("after the gate passes: %v", err)
	}
	if got := f.lookup(t, "lms"); got[0] != "198.51.100.1" || !f.cluster.m.Desired().Done {
		t.Errorf("flip after the gate passed: lms %v done %v", got, f.cluster.m.Desired().Done)
	}
}

func TestFailingGateDoesNotStopAManualFlip(t *testing.T) {
	f := newFixture(t)
	gen := f.failoverTo(t, failover.Backup)
	f.rec.cfg.Gates = []Gate{&fakeGate{name: "pre-failover hook notify", err: errors.New("pager down")}, &fakeGate{name: "backup warm-up", note: "backup ready after 3s"}}
	f.rec.cfg.AfterVerified = func(context.Context, Decision) string { return "post-failover hooks ok" }
	if _, err := f.rec.Pass(context.Background()); err != nil {
		t.Fatalf("pass: %v", err)
	}
	if got := f.lookup(t, "lms"); got[0] != "198.51.100.1" {
		t.Fatalf("manual flip not written: %v", got)
	}
	w := actionDetails(f.cluster.m, gen, failover.OutcomeWritten)
	if len(w) != 1 || !strings.Contains(w[0], "pager down") || !strings.Contains(w[0], "backup ready after 3s") {
		t.Errorf("written record %q, want the hook failure and the warm-up note", w)
	}
	v := actionDetails(f.cluster.m, gen, failover.OutcomeVerified)
	if len(v) != 1 || !strings.Contains(v[0], "post-failover hooks ok") {
		t.Errorf("verified record %q, want the post-failover note", v)
	}
}

// A new leader finishing a flip whose DNS write already happened does not
// run the gates again (no second warm-up wait, no second hook run).
func TestGatesDoNotRunWhenDNSAlreadyHoldsTheDecision(t *testing.T) {
	f := newFixture(t)
	f.failoverTo(t, failover.Backup)
	first := &fakeGate{name: "warm-up"}
	f.rec.cfg.Gates = []Gate{first}
	if _, err := f.rec.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	again := &fakeGate{name: "warm-up"}
	rec, err := New(Config{Node: "b", State: f.cluster.m, Cluster: f.cluster, DNS: f.prov, Interval: f.rec.cfg.Interval, Gates: []Gate{again}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rec.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if first.calls.Load() != 1 || again.calls.Load() != 0 {
		t.Errorf("gate calls: first leader %d, new leader %d; want 1 and 0", first.calls.Load(), again.calls.Load())
	}
}

// preFailoverHooks is the gate the node builds from hooks.pre_failover.
type preFailoverHooks []hooks.Hook

func (preFailoverHooks) Name() string { return "pre-failover hooks" }
func (g preFailoverHooks) Before(ctx context.Context, d Decision) (string, error) {
	return hooks.RunPreFailover(ctx, g, hooks.Event{Phase: "pre-failover", Gen: d.Gen, From: string(d.From), To: string(d.To), Kind: d.Kind})
}

// A pre-failover hook that hangs never holds an automatic flip for ever:
// by default the flip goes ahead once the hook's timeout passes, and the
// history says the hook timed out; on_timeout: block holds it back.
func TestHungPreFailoverHook(t *testing.T) {
	hang := hooks.Hook{Name: "hang", Command: []string{"/bin/sh", "-c", "exec sleep 300"}, Timeout: 150 * time.Millisecond}

	t.Run("proceeds by default", func(t *testing.T) {
		f := newFixture(t)
		gen := autoFailover(t, f)
		f.rec.cfg.Gates = []Gate{preFailoverHooks{hang}}
		if _, err := f.rec.Pass(context.Background()); err != nil {
			t.Fatalf("pass: got %v, want the flip written", err)
		}
		if got := f.lookup(t, "lms"); got[0] != "198.51.100.1" {
			t.Fatalf("flip not written past a hung hook: lms %v", got)
		}
		w := actionDetails(f.cluster.m, gen, failover.OutcomeWritten)
		if len(w) != 1 || !strings.Contains(w[0], "hook hang: timed out after 150ms; on_timeout: proceed, so the flip goes ahead") {
			t.Errorf("written record %q, want it to say the hook timed out and the flip went ahead", w)
		}
	})
	t.Run("on_timeout block holds an automatic flip back", func(t *testing.T) {
		f := newFixture(t)
		gen := autoFailover(t, f)
		block := hang
		block.OnTimeout = hooks.OnTimeoutBlock
		f.rec.cfg.Gates = []Gate{preFailoverHooks{block}}
		if _, err := f.rec.Pass(context.Background()); !errors.Is(err, ErrBlocked) {
			t.Fatalf("pass: got %v, want ErrBlocked", err)
		}
		if n := f.updates(); n != 0 {
			t.Fatalf("a blocked automatic flip wrote %d updates", n)
		}
		if got := actionDetails(f.cluster.m, gen, failover.OutcomeFailed); len(got) != 1 || !strings.Contains(got[0], "hook hang: timed out after 150ms (on_timeout: block)") {
			t.Errorf("failed records %q, want one saying the hook timed out and blocked", got)
		}
	})
}
