package watcher

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/dnsprovider/dnstest"
	"github.com/drwatch/drwatch/executor/reconcile"
	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/hooks"
	"github.com/drwatch/drwatch/executor/remediate/remediatetest"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/poll"
)

// zoneServer is a DNS server of zone for the test's key, with a verifier
// of it and a provider fenced on fence.
func zoneServer(t *testing.T, zone, fence string) (*dnsprovider.RFC2136, reconcile.Verifier) {
	t.Helper()
	p, v, _ := zoneServerOf(t, zone, fence)
	return p, v
}

// zoneServerOf is zoneServer, with the server itself.
func zoneServerOf(t *testing.T, zone, fence string) (*dnsprovider.RFC2136, reconcile.Verifier, *dnstest.Server) {
	t.Helper()
	srv, err := dnstest.Start("127.0.0.1:0", zone, dnstest.Key{Name: "drwatch.", Algorithm: "hmac-sha256", Secret: groupSecret})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ver, err := dnsprovider.NewVerifier(zone, dnsprovider.VerifyConfig{Servers: []string{srv.Addr()}, Timeout: 10 * time.Second, Interval: 20 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rfc2136To(t, zone, fence, srv.Addr(), 5*time.Second), ver, srv
}

// warmupReady is a backup warm-up that plans one scale-up and is ready.
type warmupReady struct{}

func (warmupReady) Name() string { return "backup-warmup" }
func (warmupReady) Plan(context.Context) ([]remediate.Action, error) {
	return []remediate.Action{{Verb: "scale", Target: "web"}}, nil
}
func (warmupReady) Apply(context.Context, remediate.Action) error { return nil }
func (warmupReady) Ready(context.Context) (bool, string, error)   { return true, "", nil }

// recordingHooks are hooks of both phases that append the phase, the
// group they are told (none: no DRWATCH_GROUP) and the gen to file.
func recordingHooks(file string) hooks.Config {
	h := []hooks.Hook{{Name: "record", Command: []string{"/bin/sh", "-c", `echo "$DRWATCH_PHASE ${DRWATCH_GROUP-none} $DRWATCH_GEN" >> ` + file}}}
	return hooks.Config{PreFailover: h, PostFailover: h}
}

// readRan is what recordingHooks wrote to file ("" when they never ran).
func readRan(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// A group's own hooks run around its flips only, told its name, after
// its own backup warm-up; the top-level hooks run around the default
// group's flips only, told no group. Each flip's written record carries
// its own gates' notes.
func TestGroupHooksRunAroundTheirOwnGroupsFlipsOnly(t *testing.T) {
	defDNS, defVer := zoneServer(t, "example.org.", "_drwatch")
	alphaDNS, alphaVer := zoneServer(t, "alpha.test.", "_drwatch-alpha")
	p := testPolicy()
	p.Groups = twoGroups().Groups[:1]
	dir := t.TempDir()
	defRan, alphaRan := filepath.Join(dir, "default"), filepath.Join(dir, "alpha")
	log := slog.New(slog.DiscardHandler)
	defGates, defAfter := remediate.Gates("a", "", nil, "backup-warmup", 0, recordingHooks(defRan), log)
	warmup := []remediate.Entry{{Remediator: warmupReady{}, Settings: remediate.Settings{Mode: remediate.ModeDryRun}}}
	alphaGates, alphaAfter := remediate.Gates("a", "alpha", warmup, "backup-warmup", 0, recordingHooks(alphaRan), log)

	l := remediatetest.NewLog()
	l.Step(t, failover.Command{Payload: failover.SetPolicy{Policy: p}})
	l.Step(t, failover.Command{Payload: failover.Failover{Group: "alpha", To: failover.Backup, Force: true, Actor: "alice", Reason: "alpha down"}})
	alpha, _ := l.M.GroupDesired("alpha")
	w, err := New(Config{Node: "a", Policy: p, Interval: 100 * time.Millisecond, FSM: NewFSM(l.M, nil),
		Cluster: leadingCluster{&fakeCluster{log: l}}, DNS: defDNS, Verifier: defVer,
		Gates: defGates, AfterVerified: defAfter,
		Groups:     []GroupDNS{{Name: "alpha", DNS: alphaDNS, Verifier: alphaVer}},
		GroupGates: []GroupGates{{Name: "alpha", Gates: alphaGates, AfterVerified: alphaAfter}}})
	if err != nil {
		t.Fatal(err)
	}
	leadUntilCleanup(t, w)

	poll.Until(t, 60*time.Second, func() bool { d, _ := l.M.GroupDesired("alpha"); return d.Done }, "alpha's flip verified")
	wantAlpha := fmt.Sprintf("pre-failover alpha %d\npost-failover alpha %d\n", alpha.Gen, alpha.Gen)
	if got := readRan(t, alphaRan); got != wantAlpha {
		t.Errorf("alpha's hooks: got %q, want both phases told alpha at gen %d", got, alpha.Gen)
	}
	if got := readRan(t, defRan); got != "" {
		t.Errorf("the top-level hooks ran for alpha's flip: %q", got)
	}
	written := writtenDetail(l.M.History(), "alpha", alpha.Gen)
	if !strings.Contains(written, "backup warm-up in dry-run: would scale 1 workload(s)") || !strings.Contains(written, "1 pre-failover hook(s) ok") {
		t.Errorf("alpha's written record: got %q, want its warm-up's and its hooks' notes", written)
	}

	l.Step(t, failover.Command{Payload: failover.Failover{To: failover.Backup, Force: true, Actor: "alice", Reason: "default down"}})
	def := l.M.Desired()
	poll.Until(t, 60*time.Second, func() bool { return l.M.Desired().Done }, "the default group's flip verified")
	if got, want := readRan(t, defRan), fmt.Sprintf("pre-failover none %d\npost-failover none %d\n", def.Gen, def.Gen); got != want {
		t.Errorf("top-level hooks: got %q, want %q", got, want)
	}
	if got := readRan(t, alphaRan); got != wantAlpha {
		t.Errorf("alpha's hooks ran again for the default group's flip: %q", got)
	}
	if written := writtenDetail(l.M.History(), "", def.Gen); strings.Contains(written, "warm-up") {
		t.Errorf("the default group's written record has alpha's warm-up: %q", written)
	}
}

// writtenDetail is the detail of group's "written" record at gen.
func writtenDetail(h []failover.Entry, group string, gen uint64) string {
	for _, e := range h {
		if e.Group == group && e.Gen == gen && e.Outcome == failover.OutcomeWritten {
			return e.Detail
		}
	}
	return ""
}

// heldGate holds every flip it is asked about until release is closed,
// counting the asks.
type heldGate struct {
	release chan struct{}
	asked   *atomic.Int32
}

func (heldGate) Name() string { return "held" }
func (g heldGate) Before(ctx context.Context, _ reconcile.Decision) (string, error) {
	g.asked.Add(1)
	select {
	case <-g.release:
		return "released", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// A group's gate holds that group's flip only: while alpha's gate waits,
// beta's flip (of the same region outage) is written and verified, and
// alpha's records are not written; once the gate lets go, alpha's is.
func TestGroupGateHoldsOnlyItsGroupsFlip(t *testing.T) {
	alphaDNS, alphaVer := zoneServer(t, "alpha.test.", "_drwatch-alpha")
	betaDNS, betaVer := zoneServer(t, "beta.test.", "_drwatch-beta")
	gate := heldGate{release: make(chan struct{}), asked: new(atomic.Int32)}
	l := remediatetest.NewLog()
	p := twoGroups()
	l.Step(t, failover.Command{Payload: failover.SetPolicy{Policy: p}})
	l.Step(t, failover.Command{Payload: failover.Failover{AllGroups: true, To: failover.Backup, Force: true, Actor: "alice", Reason: "region down"}})
	w, err := New(Config{Node: "a", Policy: p, Interval: 100 * time.Millisecond, FSM: NewFSM(l.M, nil),
		Cluster: leadingCluster{&fakeCluster{log: l}},
		Groups: []GroupDNS{
			{Name: "alpha", DNS: alphaDNS, Verifier: alphaVer},
			{Name: "beta", DNS: betaDNS, Verifier: betaVer},
		},
		GroupGates: []GroupGates{{Name: "alpha", Gates: []reconcile.Gate{gate}}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := leadUntilCleanup(t, w)

	poll.Until(t, 60*time.Second, func() bool {
		d, _ := l.M.GroupDesired("beta")
		return d.Done && gate.asked.Load() > 0
	}, "beta's flip verified while alpha's gate holds alpha's")
	if d, _ := l.M.GroupDesired("alpha"); d.Done {
		t.Fatalf("alpha's flip verified past its held gate")
	}
	if got, err := alphaDNS.GetRecords(ctx, []dnsprovider.RRsetID{{Name: "www", Type: "A"}}); err != nil || len(got) != 1 || len(got[0].Values) != 0 {
		t.Errorf("alpha www while its gate holds: got %v (%v), want it unwritten", got, err)
	}
	if n := gate.asked.Load(); n != 1 {
		t.Errorf("alpha's gate asked %d times, want once (for alpha's flip, never beta's)", n)
	}

	close(gate.release)
	poll.Until(t, 60*time.Second, func() bool { d, _ := l.M.GroupDesired("alpha"); return d.Done }, "alpha's flip verified once its gate let go")
	if written := writtenDetail(l.M.History(), "alpha", func() uint64 { d, _ := l.M.GroupDesired("alpha"); return d.Gen }()); !strings.Contains(written, "released") {
		t.Errorf("alpha's written record: got %q, want its gate's note", written)
	}
}
