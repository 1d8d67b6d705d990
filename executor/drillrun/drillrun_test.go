package drillrun

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/dnsprovider/dnstest"
	"github.com/drwatch/drwatch/executor/remediate/remediatetest"
	"github.com/drwatch/drwatch/failover"
)

const zone = "example.test."

var secret = base64.StdEncoding.EncodeToString([]byte("drillrun-test-secret-0123456789ab"))

// production is what the drills must never change: the managed records
// and the production fence.
var production = []dnsprovider.RRsetID{{Name: "lms", Type: "A"}, {Name: "studio", Type: "A"}, {Name: "_drwatch", Type: "TXT"}}

type fixture struct {
	dns    *dnstest.Server
	log    *remediatetest.Log
	prov   *dnsprovider.RFC2136 // fenced on _drwatch-drill
	prod   *dnsprovider.RFC2136 // the production provider, to read
	ver    *dnsprovider.Verifier
	before []dnsprovider.RRset // production before any drill
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	srv, err := dnstest.Start("127.0.0.1:0", zone, dnstest.Key{Name: "drwatch.", Algorithm: "hmac-sha256", Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if err := srv.Seed("lms.example.test. 60 IN A 192.0.2.1", "studio.example.test. 60 IN A 192.0.2.1",
		`_drwatch.example.test. 60 IN TXT "gen=3"`); err != nil {
		t.Fatal(err)
	}
	key, err := dnsprovider.NewTSIGKey("drwatch.", "hmac-sha256", secret)
	if err != nil {
		t.Fatal(err)
	}
	prov, err := dnsprovider.NewRFC2136WithKey(zone, "_drwatch-drill", srv.Addr(), key, 2*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	prod, err := dnsprovider.NewRFC2136WithKey(zone, "", srv.Addr(), key, 2*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	ver, err := dnsprovider.NewVerifier(zone, dnsprovider.VerifyConfig{Servers: []string{srv.Addr()}, Timeout: 2 * time.Second, Interval: 20 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := remediatetest.NewLog()
	probes := []failover.ProbeRef{{Name: "web", Critical: true}}
	l.Step(t, failover.Command{Payload: failover.SetPolicy{Policy: failover.Policy{
		Nodes: []string{"a", "b", "c"}, Quorum: 2, Fall: 3, Rise: 2, Interval: time.Second, StaleAfter: time.Hour,
		AutoFailover: true, BlockWindow: time.Hour,
		Sites: map[failover.Site]failover.SitePolicy{failover.Primary: {Probes: probes}, failover.Backup: {Probes: probes}},
		Zone:  zone,
		Records: []failover.Record{
			{Name: "lms", Type: "A", TTL: 60, Primary: []string{"192.0.2.1"}, Backup: []string{"198.51.100.1"}},
			{Name: "studio", Type: "A", TTL: 60, Primary: []string{"192.0.2.1"}, Backup: []string{"198.51.100.1"}},
		},
	}}})
	f := &fixture{dns: srv, log: l, prov: prov, prod: prod, ver: ver}
	f.rounds(t, true)
	f.before = f.production(t)
	return f
}

// rounds reports one round from every watcher, the backup up or down.
func (f *fixture) rounds(t *testing.T, backupUp bool) {
	t.Helper()
	for _, n := range []string{"a", "b", "c"} {
		f.log.Step(t, failover.Command{Payload: failover.Observe{Node: n, PolicyHash: f.log.M.View().PolicyHash, Results: []failover.ProbeResult{
			{Site: failover.Primary, Probe: "web", OK: true}, {Site: failover.Backup, Probe: "web", OK: backupUp}}}})
	}
}

func (f *fixture) production(t *testing.T) []dnsprovider.RRset {
	t.Helper()
	sets, err := f.prod.GetRecords(context.Background(), production)
	if err != nil {
		t.Fatal(err)
	}
	return sets
}

// checkProduction fails t unless the production records and fence are as
// they were before the first drill.
func (f *fixture) checkProduction(t *testing.T) {
	t.Helper()
	got := f.production(t)
	for i := range got {
		if !got[i].Equal(f.before[i]) {
			t.Errorf("production %s: got %s, want %s (unchanged)", production[i], got[i], f.before[i])
		}
	}
}

// checkCanaryAtPrimary fails t unless the canary holds its primary values
// under the drill's write-back fence.
func (f *fixture) checkCanaryAtPrimary(t *testing.T, id uint64) {
	t.Helper()
	got, err := f.prov.GetRecords(context.Background(), []dnsprovider.RRsetID{{Name: "drwatch-drill.lms", Type: "A"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := (dnsprovider.RRset{Name: "drwatch-drill.lms", Type: "A", TTL: 60 * time.Second, Values: []string{"192.0.2.1"}}); !got[0].Equal(want) {
		t.Errorf("canary: got %s, want %s", got[0], want)
	}
	if fence, err := f.prov.GetFence(context.Background()); err != nil || fence != id+1 {
		t.Errorf("drill fence: got gen=%d (%v), want gen=%d", fence, err, id+1)
	}
}

func (f *fixture) runner(t *testing.T, mod func(*Config)) *Runner {
	t.Helper()
	cfg := Config{Node: "a", State: f.log.M, Cluster: f.log, DNS: f.prov, Verifier: f.ver, Interval: time.Second,
		Canary: func(p failover.Policy) failover.DrillCanary { return failover.CanaryFor(p, "drwatch-drill.lms") }}
	if mod != nil {
		mod(&cfg)
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// start proposes a drill by hand and returns its ID.
func (f *fixture) start(t *testing.T) uint64 {
	t.Helper()
	v := f.log.M.View()
	res, id, err := failover.Submit(context.Background(), f.log, failover.Command{Payload: failover.DrillStart{
		Reason: "test", Actor: "alice", Canary: failover.CanaryFor(*v.Policy, "drwatch-drill.lms"), RequestedAt: time.Now().UnixNano()}})
	if err != nil {
		t.Fatalf("drill start: %v", err)
	}
	if !strings.Contains(res.Message, "started") {
		t.Fatalf("drill start: %s", res.Message)
	}
	return id
}

func (f *fixture) drill(t *testing.T, id uint64) failover.DrillRecord {
	t.Helper()
	ended, running := f.log.M.Drills()
	for _, d := range ended {
		if d.ID == id {
			return d
		}
	}
	if running != nil && running.ID == id {
		return *running
	}
	t.Fatalf("no drill %d", id)
	return failover.DrillRecord{}
}

func steps(d failover.DrillRecord) string {
	var out []string
	for _, s := range d.Steps {
		out = append(out, s.Step)
	}
	return strings.Join(out, ",")
}

func TestDrillPassesAndLeavesProductionAlone(t *testing.T) {
	f := newFixture(t)
	id := f.start(t)
	var checked failover.DrillRecord
	r := f.runner(t, func(c *Config) {
		c.Readiness = func(_ context.Context, d failover.DrillRecord) []failover.DrillCheck {
			checked = d
			return []failover.DrillCheck{{Name: "certificates", Pass: true, Reason: "valid for 89 days"}}
		}
	})
	if _, err := r.Pass(context.Background()); err != nil {
		t.Fatalf("pass: %v", err)
	}
	d := f.drill(t, id)
	if d.Outcome != failover.DrillPassed || steps(d) != "backup_written,backup_verified,primary_written,primary_verified" {
		t.Fatalf("got drill %s with steps %s (%s), want passed with all four steps", d.Outcome, steps(d), d.Detail)
	}
	if len(d.Readiness) != 2 || d.Readiness[0].Name != "dns_credentials" || !d.Readiness[0].Pass || d.Readiness[1].Name != "certificates" {
		t.Errorf("readiness: got %+v, want dns_credentials and certificates passing", d.Readiness)
	}
	v, _ := d.Step(failover.DrillStepBackupVerified)
	if len(v.Servers) != 1 || v.Servers[0].Server != f.dns.Addr() {
		t.Errorf("backup verification: got servers %+v, want %s", v.Servers, f.dns.Addr())
	}
	if _, ok := d.Times(); !ok {
		t.Errorf("drill %d measured no times", id)
	}
	// The readiness checks see what the drill measured, so the TTL check
	// adds the real write and propagation, not zeros.
	if _, ok := checked.Times(); !ok || checked.ID != id {
		t.Errorf("readiness got drill %d with steps %s, want drill %d with the canary written and verified", checked.ID, steps(checked), id)
	}
	f.checkCanaryAtPrimary(t, id)
	f.checkProduction(t)
	// Nothing left to do: another pass writes nothing.
	before := f.dns.Updates()
	if _, err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := f.dns.Updates() - before; n != 0 {
		t.Errorf("an idle pass made %d dns updates, want 0", n)
	}
	// A second drill moves the fence on: gen=ID2+1.
	id2 := f.start(t)
	if _, err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := f.drill(t, id2); d.Outcome != failover.DrillPassed {
		t.Fatalf("second drill: got %s (%s), want passed", d.Outcome, d.Detail)
	}
	f.checkCanaryAtPrimary(t, id2)
	f.checkProduction(t)
}

func TestFailedReadinessFailsTheDrill(t *testing.T) {
	f := newFixture(t)
	id := f.start(t)
	r := f.runner(t, func(c *Config) {
		c.Readiness = func(context.Context, failover.DrillRecord) []failover.DrillCheck {
			return []failover.DrillCheck{{Name: "certificates", Pass: false, Reason: "lms.example.test: certificate expires in 2h, want at least 336h"}}
		}
	})
	if _, err := r.Pass(context.Background()); err != nil {
		t.Fatalf("pass: %v", err)
	}
	d := f.drill(t, id)
	if d.Outcome != failover.DrillFailed || d.Rule != "certificates" || !strings.Contains(d.Detail, "expires in 2h") {
		t.Errorf("got %s rule %q detail %q, want failed by certificates saying why", d.Outcome, d.Rule, d.Detail)
	}
	f.checkCanaryAtPrimary(t, id)
	f.checkProduction(t)
}

// faultyDNS is the drill's provider with switches: down makes every call
// fail as a DNS server that does not answer would; refuse makes every
// write fail as a zone whose update policy refuses the canary.
type faultyDNS struct {
	*dnsprovider.RFC2136
	mu           sync.Mutex
	down, refuse bool
}

var errDown = errors.New("read udp 127.0.0.1:53: i/o timeout")

func (p *faultyDNS) set(down, refuse bool) {
	p.mu.Lock()
	p.down, p.refuse = down, refuse
	p.mu.Unlock()
}

func (p *faultyDNS) err(write bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.down:
		return errDown
	case p.refuse && write:
		return fmt.Errorf("rfc2136 swap: %w", dnsprovider.ErrRefused)
	}
	return nil
}

func (p *faultyDNS) GetRecords(ctx context.Context, want []dnsprovider.RRsetID) ([]dnsprovider.RRset, error) {
	if err := p.err(false); err != nil {
		return nil, err
	}
	return p.RFC2136.GetRecords(ctx, want)
}

func (p *faultyDNS) Swap(ctx context.Context, expected, desired []dnsprovider.RRset, fenceOld, fenceNew uint64) error {
	if err := p.err(true); err != nil {
		return err
	}
	return p.RFC2136.Swap(ctx, expected, desired, fenceOld, fenceNew)
}

// With the DNS server down the drill fails at its first write, is rolled
// back once the server answers again, and names the step and the error.
func TestDrillWithDNSDownFailsAndRollsBack(t *testing.T) {
	f := newFixture(t)
	dns := &faultyDNS{RFC2136: f.prov, down: true}
	r := f.runner(t, func(c *Config) { c.DNS = dns })
	id := f.start(t)
	if _, err := r.Pass(context.Background()); err == nil {
		t.Fatal("pass with the DNS down: got no error, want the write back to be retried")
	}
	d := f.drill(t, id)
	if d.Outcome != failover.DrillRunning || steps(d) != "rollback" {
		t.Fatalf("with the DNS down: got %s with steps %s, want running and rolling back", d.Outcome, steps(d))
	}
	dns.set(false, false)
	if _, err := r.Pass(context.Background()); err != nil {
		t.Fatalf("pass with the DNS back: %v", err)
	}
	d = f.drill(t, id)
	if d.Outcome != failover.DrillFailed || d.Rule != failover.DrillStepBackupWritten || !strings.Contains(d.Detail, "i/o timeout") {
		t.Errorf("got %s rule %q detail %q, want failed at backup_written naming the error", d.Outcome, d.Rule, d.Detail)
	}
	if len(d.Readiness) == 0 || d.Readiness[0].Name != "dns_credentials" || d.Readiness[0].Pass {
		t.Errorf("readiness: got %+v, want dns_credentials failing", d.Readiness)
	}
	f.checkCanaryAtPrimary(t, id)
	f.checkProduction(t)
}

// A zone that refuses the canary for good (BIND's check-names, an update
// policy without it) fails the drill at its first write; nothing was
// written, so the drill ends rather than retrying its write back for ever
// and refusing every later drill.
func TestZoneRefusingTheCanaryEndsTheDrill(t *testing.T) {
	f := newFixture(t)
	dns := &faultyDNS{RFC2136: f.prov, refuse: true}
	r := f.runner(t, func(c *Config) { c.DNS = dns })
	id := f.start(t)
	before := f.dns.Updates()
	for range 2 {
		if _, err := r.Pass(context.Background()); err != nil {
			t.Fatalf("pass: %v", err)
		}
	}
	d := f.drill(t, id)
	if d.Outcome != failover.DrillFailed || d.Rule != failover.DrillStepBackupWritten || !strings.Contains(d.Detail, "refused") {
		t.Errorf("got %s rule %q detail %q, want failed at backup_written, saying the zone refused", d.Outcome, d.Rule, d.Detail)
	}
	if n := f.dns.Updates() - before; n != 0 {
		t.Errorf("got %d dns updates, want none", n)
	}
	f.checkProduction(t)
}

// verifierFunc lets a test act in the middle of a drill, at its first
// verification.
type verifierFunc func(ctx context.Context, desired []dnsprovider.RRset) (*dnsprovider.Verification, error)

func (v verifierFunc) Verify(ctx context.Context, desired []dnsprovider.RRset) (*dnsprovider.Verification, error) {
	return v(ctx, desired)
}

// A real decision arriving mid-drill wins: the drill is rolled back, the
// canary ends at its primary values, and production is not touched by the
// drill (the decision's own write is the reconciler's, not run here).
func TestRealDecisionMidDrillRollsBack(t *testing.T) {
	f := newFixture(t)
	id := f.start(t)
	var once sync.Once
	r := f.runner(t, func(c *Config) {
		c.Verifier = verifierFunc(func(ctx context.Context, desired []dnsprovider.RRset) (*dnsprovider.Verification, error) {
			once.Do(func() {
				f.log.Step(t, failover.Command{Payload: failover.Failover{To: failover.Backup, Reason: "real outage", Actor: "bob"}})
			})
			return f.ver.Verify(ctx, desired)
		})
	})
	if _, err := r.Pass(context.Background()); err != nil {
		t.Fatalf("pass: %v", err)
	}
	d := f.drill(t, id)
	if d.Outcome != failover.DrillRolledBack || d.AbortedBy == 0 || !strings.Contains(steps(d), "rollback,primary_written,primary_verified") {
		t.Fatalf("got %s aborted by %d steps %s, want rolled_back after the decision", d.Outcome, d.AbortedBy, steps(d))
	}
	f.checkCanaryAtPrimary(t, id)
	f.checkProduction(t)
}

// A leader that dies in the middle of a drill (its context ends after the
// canary went to the backup values) leaves the drill running; the next
// leader rolls it back, the drill ends once, and a late end from the old
// leader changes nothing.
func TestNextLeaderFinishesAnInterruptedDrillOnce(t *testing.T) {
	f := newFixture(t)
	id := f.start(t)
	ctx, kill := context.WithCancel(context.Background())
	old := f.runner(t, func(c *Config) {
		c.Verifier = verifierFunc(func(context.Context, []dnsprovider.RRset) (*dnsprovider.Verification, error) {
			kill()
			return nil, context.Canceled
		})
	})
	if _, err := old.Pass(ctx); err == nil {
		t.Fatal("the killed leader's pass: got no error")
	}
	if d := f.drill(t, id); d.Outcome != failover.DrillRunning || steps(d) != "backup_written" {
		t.Fatalf("after the leader died: got %s steps %s, want running with the canary written", d.Outcome, steps(d))
	}
	next := f.runner(t, func(c *Config) { c.Node = "b" })
	if _, err := next.Pass(context.Background()); err != nil {
		t.Fatalf("next leader's pass: %v", err)
	}
	d := f.drill(t, id)
	if d.Outcome != failover.DrillRolledBack || d.EndedBy != "b" || steps(d) != "backup_written,interrupted,primary_written,primary_verified" {
		t.Fatalf("got %s ended by %q with steps %s, want rolled_back by b after an interruption", d.Outcome, d.EndedBy, steps(d))
	}
	if err := old.finish(context.Background(), d, failover.DrillPassed, "", "late", nil); err != nil {
		t.Fatal(err)
	}
	ended, running := f.log.M.Drills()
	n := 0
	for _, e := range f.log.M.History() {
		if e.Kind == failover.KindDrill {
			n++
		}
	}
	if len(ended) != 1 || running != nil || n != 1 || ended[0].Outcome != failover.DrillRolledBack {
		t.Errorf("got %d ended drills (running %v), %d drill history entries, want exactly one rolled back drill", len(ended), running, n)
	}
	f.checkCanaryAtPrimary(t, id)
	f.checkProduction(t)
}

func TestScheduledDrills(t *testing.T) {
	f := newFixture(t)
	now := time.Now()
	clock := func() time.Time { return now }
	r := f.runner(t, func(c *Config) { c.Schedule = time.Hour; c.Now = clock })
	for range 3 {
		if _, err := r.Pass(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	ended, _ := f.log.M.Drills()
	if len(ended) != 1 || !ended[0].Scheduled || ended[0].Outcome != failover.DrillPassed || ended[0].Actor != failover.SystemActor {
		t.Fatalf("got drills %s, want one scheduled drill that passed", summary(ended))
	}
	// Not due again within the hour.
	now = now.Add(59 * time.Minute)
	if _, err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ended, _ = f.log.M.Drills(); len(ended) != 1 {
		t.Fatalf("within the schedule: got drills %s, want still one", summary(ended))
	}
	// Due, but decisions are paused: recorded as skipped, with the rule.
	f.log.Step(t, failover.Command{Payload: failover.Pause{Reason: "maintenance", Actor: "alice"}})
	now = now.Add(2 * time.Hour)
	f.rounds(t, true)
	if _, err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	ended, _ = f.log.M.Drills()
	if len(ended) != 2 || ended[1].Outcome != failover.DrillSkipped || ended[1].Rule != failover.RulePaused {
		t.Fatalf("paused: got drills %s, want the second skipped by paused", summary(ended))
	}
	f.checkProduction(t)
}

func summary(ds []failover.DrillRecord) string {
	var out []string
	for _, d := range ds {
		out = append(out, fmt.Sprintf("%d:%s(%s)", d.ID, d.Outcome, d.Rule))
	}
	return "[" + strings.Join(out, " ") + "]"
}

// A drill the rules fail at its start (the backup not UP at quorum) is
// never executed: no DNS write at all.
func TestDrillFailedByARuleWritesNothing(t *testing.T) {
	f := newFixture(t)
	for range 3 {
		f.rounds(t, false)
	}
	v := f.log.M.View()
	res, id, err := failover.Submit(context.Background(), f.log, failover.Command{Payload: failover.DrillStart{
		Reason: "test", Actor: "alice", Canary: failover.CanaryFor(*v.Policy, "drwatch-drill.lms")}})
	if err != nil {
		t.Fatal(err)
	}
	before := f.dns.Updates()
	if _, err := f.runner(t, nil).Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := f.drill(t, id); d.Outcome != failover.DrillFailed || d.Rule != failover.RuleTargetUnhealthy {
		t.Errorf("got %s rule %q (%s), want failed by target_unhealthy", d.Outcome, d.Rule, res.Message)
	}
	if n := f.dns.Updates() - before; n != 0 {
		t.Errorf("got %d dns updates, want none", n)
	}
}
