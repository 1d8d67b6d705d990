package reconcile

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/dnsprovider/dnstest"
	"github.com/drwatch/drwatch/failover"
)

const zone = "example.test."

var secret = base64.StdEncoding.EncodeToString([]byte("reconcile-test-secret-0123456789"))

// fakeCluster applies proposals to a real failover.Machine in order, as a
// one-node log would, stamping the time as the leader does.
type fakeCluster struct {
	mu       sync.Mutex
	m        *failover.Machine
	index    uint64
	now      int64
	leaderFn func() error
}

func (c *fakeCluster) VerifyLeader(context.Context) error {
	if c.leaderFn != nil {
		return c.leaderFn()
	}
	return nil
}

func (c *fakeCluster) Propose(_ context.Context, cmd []byte) ([]byte, uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.index++
	c.now += int64(time.Second)
	b, err := failover.Stamp(cmd, c.now)
	if err != nil {
		return nil, 0, err
	}
	return c.m.Apply(c.index, b), c.index, nil
}

func (c *fakeCluster) step(t *testing.T, cmd failover.Command) failover.Result {
	t.Helper()
	b, err := failover.Encode(cmd)
	if err != nil {
		t.Fatal(err)
	}
	resp, _, _ := c.Propose(context.Background(), b)
	res, err := failover.DecodeResponse(resp)
	if err != nil {
		t.Fatalf("step %s: %v", cmd.Type(), err)
	}
	return res
}

type fixture struct {
	base    int // updates made by seeding
	dns     *dnstest.Server
	cluster *fakeCluster
	rec     *Reconciler
	prov    *dnsprovider.RFC2136
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureTTL(t, 60)
}

// newFixtureTTL is newFixture with the policy's records at ttl seconds
// (the zone is seeded with 60).
func newFixtureTTL(t *testing.T, ttl int) *fixture {
	t.Helper()
	srv, err := dnstest.Start("127.0.0.1:0", zone, dnstest.Key{Name: "drwatch.", Algorithm: "hmac-sha256", Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if err := srv.Seed("lms.example.test. 60 IN A 192.0.2.1", "studio.example.test. 60 IN A 192.0.2.1"); err != nil {
		t.Fatal(err)
	}
	f := newFixtureAt(t, srv.Addr(), "drwatch.", secret, ttl)
	f.base, f.dns = srv.Updates(), srv
	return f
}

// newFixtureAt is a fixture on the DNS server at addr, written with TSIG
// key keyName: a one-node cluster whose policy flips lms and studio (ttl
// seconds) between 192.0.2.1 and 198.51.100.1, and its reconciler.
func newFixtureAt(t *testing.T, addr, keyName, secret string, ttl int) *fixture {
	t.Helper()
	key, err := dnsprovider.NewTSIGKey(keyName, "hmac-sha256", secret)
	if err != nil {
		t.Fatal(err)
	}
	prov, err := dnsprovider.NewRFC2136WithKey(zone, "", addr, key, 2*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	ver, err := dnsprovider.NewVerifier(zone, dnsprovider.VerifyConfig{Servers: []string{addr}, Timeout: 5 * time.Second, Interval: 20 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	fc := &fakeCluster{m: failover.New()}
	fc.step(t, failover.Command{Payload: failover.SetPolicy{Policy: failover.Policy{
		Nodes: []string{"a", "b", "c"}, Quorum: 2, Fall: 2, Rise: 2, Interval: time.Second,
		AutoFailover: true, BlockWindow: time.Hour, Failback: failover.FailbackPolicy{Mode: failover.FailbackManual},
		Sites: map[failover.Site]failover.SitePolicy{
			failover.Primary: {Probes: []failover.ProbeRef{{Name: "lms", Critical: true}}},
			failover.Backup:  {Probes: []failover.ProbeRef{{Name: "lms", Critical: true}}},
		},
		Zone: zone,
		Records: []failover.Record{
			{Name: "lms", Type: "A", TTL: ttl, Primary: []string{"192.0.2.1"}, Backup: []string{"198.51.100.1"}},
			{Name: "studio", Type: "A", TTL: ttl, Primary: []string{"192.0.2.1"}, Backup: []string{"198.51.100.1"}},
		},
	}}})
	rec, err := New(Config{Node: "a", State: fc.m, Cluster: fc, DNS: prov, Verifier: ver, Interval: time.Second, BreakGlassKey: testBreakGlassKey})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{cluster: fc, rec: rec, prov: prov}
}

// updates counts UPDATE messages that changed the zone since the fixture was seeded.
func (f *fixture) updates() int { return f.dns.Updates() - f.base }

func (f *fixture) lookup(t *testing.T, name string) []string {
	t.Helper()
	sets, err := f.prov.GetRecords(context.Background(), []dnsprovider.RRsetID{{Name: name, Type: "A"}})
	if err != nil {
		t.Fatal(err)
	}
	return sets[0].Values
}

func (f *fixture) failoverTo(t *testing.T, site failover.Site) uint64 {
	t.Helper()
	f.cluster.step(t, failover.Command{Payload: failover.Failover{To: site, Reason: "test", Actor: "alice", Force: true}})
	return f.cluster.m.Desired().Gen
}

type fixedState failover.Desired

func (s fixedState) Desired() failover.Desired { return failover.Desired(s) }

// Before any decision (generation 0) the operator's DNS is left alone, even
// when it differs from what the policy would publish, by value or only by
// TTL; the difference is reported.
func TestNoWriteBeforeFirstDecision(t *testing.T) {
	for _, want := range []failover.RRset{
		{Name: "lms.example.test.", Type: "A", TTL: 60, Values: []string{"203.0.113.200"}},
		{Name: "lms.example.test.", Type: "A", TTL: 5, Values: []string{"192.0.2.1"}}, // served: 60 A 192.0.2.1
	} {
		t.Run(fmt.Sprintf("ttl %d %v", want.TTL, want.Values), func(t *testing.T) {
			f := newFixture(t)
			state := fixedState{Gen: 0, Active: failover.Primary, Records: []failover.RRset{want}}
			rec, err := New(Config{Node: "a", State: state, Cluster: f.cluster, DNS: f.prov, Interval: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := rec.Pass(context.Background()); err != nil {
				t.Fatal(err)
			}
			if n := f.updates(); n != 0 {
				t.Fatalf("got %d dns updates before any decision, want 0", n)
			}
			if rep := rec.Last(); rep.Action != "observe" || rep.Match {
				t.Errorf("got action %q match %v, want observe and a reported mismatch", rep.Action, rep.Match)
			}
		})
	}
}

func TestFlipWritesOnceAndVerifies(t *testing.T) {
	f := newFixture(t)
	gen := f.failoverTo(t, failover.Backup)
	if gen == 0 {
		t.Fatal("forced failover made no decision")
	}
	if _, err := f.rec.Pass(context.Background()); err != nil {
		t.Fatalf("pass: %v", err)
	}
	for _, n := range []string{"lms", "studio"} {
		if got := f.lookup(t, n); len(got) != 1 || got[0] != "198.51.100.1" {
			t.Errorf("%s: got %v, want [198.51.100.1]", n, got)
		}
	}
	fence, err := f.prov.GetFence(context.Background())
	if err != nil || fence != gen {
		t.Errorf("fence: got %d %v, want %d", fence, err, gen)
	}
	if d := f.cluster.m.Desired(); !d.Done {
		t.Errorf("desired gen %d not done after a verified pass", d.Gen)
	}
	updates := f.updates()
	if updates != 1 {
		t.Errorf("got %d updates for one flip, want 1 (records and fence in one message)", updates)
	}
	for i := 0; i < 3; i++ {
		if _, err := f.rec.Pass(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.updates(); n != updates {
		t.Errorf("repeated passes wrote: got %d updates, want %d", n, updates)
	}
}

// The verified report names each authoritative server with the time it was
// first seen serving the new records, between the write and the verification.
func TestVerifiedReportTimesEachServer(t *testing.T) {
	f := newFixture(t)
	gen := f.failoverTo(t, failover.Backup)
	if _, err := f.rec.Pass(context.Background()); err != nil {
		t.Fatalf("pass: %v", err)
	}
	var tm failover.Timings
	for _, e := range f.cluster.m.History() {
		if e.Gen == gen && e.Kind == failover.KindManualFailover {
			tm = e.Timings
		}
	}
	if len(tm.Servers) != 1 || tm.Servers[0].Server != f.dns.Addr() {
		t.Fatalf("got servers %+v, want one for %s", tm.Servers, f.dns.Addr())
	}
	if at := tm.Servers[0].VerifiedAt; at < tm.WrittenAt || at > tm.VerifiedAt {
		t.Fatalf("got %s verified at %d, want between written %d and verified %d", f.dns.Addr(), at, tm.WrittenAt, tm.VerifiedAt)
	}
}

func TestDeposedLeaderDoesNotWrite(t *testing.T) {
	f := newFixture(t)
	f.failoverTo(t, failover.Backup)
	errDeposed := errors.New("not leader")
	f.cluster.leaderFn = func() error { return errDeposed }
	_, err := f.rec.Pass(context.Background())
	if !errors.Is(err, errDeposed) {
		t.Fatalf("got %v, want the VerifyLeader error", err)
	}
	if n := f.updates(); n != 0 {
		t.Fatalf("deposed leader wrote %d updates", n)
	}
}

// A new leader finds DNS already written for the desired generation (the old
// leader died before proposing its ActionResult): it verifies and reports,
// and writes nothing.
func TestResumeHalfDoneFlip(t *testing.T) {
	f := newFixture(t)
	gen := f.failoverTo(t, failover.Backup)
	want := toProvider(f.cluster.m.Desired().Records, zone)
	old, err := f.prov.GetRecords(context.Background(), []dnsprovider.RRsetID{want[0].ID(), want[1].ID()})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.prov.Swap(context.Background(), old, want, 0, gen); err != nil {
		t.Fatalf("old leader's write: %v", err)
	}
	before := f.updates()
	if _, err := f.rec.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := f.updates(); n != before {
		t.Errorf("new leader rewrote a finished write: %d updates, want %d", n, before)
	}
	if !f.cluster.m.Desired().Done {
		t.Error("resumed flip not marked done")
	}
}

// A lagging replica whose desired generation is older than the fence in DNS
// must not write: a newer decision is already there.
func TestStaleReplicaRefusesToWrite(t *testing.T) {
	f := newFixture(t)
	gen := f.failoverTo(t, failover.Backup)
	want := toProvider(f.cluster.m.Desired().Records, zone)
	old, _ := f.prov.GetRecords(context.Background(), []dnsprovider.RRsetID{want[0].ID(), want[1].ID()})
	// A newer decision (gen+100) put the primary's records back.
	if err := f.prov.Swap(context.Background(), old, old, 0, gen+100); err != nil {
		t.Fatal(err)
	}
	before := f.updates()
	_, err := f.rec.Pass(context.Background())
	if !errors.Is(err, ErrStale) {
		t.Fatalf("got %v, want ErrStale", err)
	}
	if n := f.updates(); n != before {
		t.Errorf("stale replica wrote")
	}
	if got := f.lookup(t, "lms"); got[0] != "192.0.2.1" {
		t.Errorf("newer decision overwritten: lms = %v", got)
	}
}

// racingDNS lets another writer commit between the reconciler's read and its
// swap, as a new leader would while this one is being deposed.
type racingDNS struct {
	*dnsprovider.RFC2136
	before func()
}

func (r *racingDNS) Swap(ctx context.Context, expected, desired []dnsprovider.RRset, fenceOld, fenceNew uint64) error {
	r.before()
	return r.RFC2136.Swap(ctx, expected, desired, fenceOld, fenceNew)
}

func TestLostRaceIsAConflictAndKeepsTheNewerWrite(t *testing.T) {
	f := newFixture(t)
	gen := f.failoverTo(t, failover.Backup)
	rd := &racingDNS{RFC2136: f.prov}
	rd.before = func() {
		cur, _ := f.prov.GetRecords(context.Background(), []dnsprovider.RRsetID{{Name: "lms", Type: "A"}, {Name: "studio", Type: "A"}})
		newer := []dnsprovider.RRset{
			{Name: "lms", Type: "A", TTL: time.Minute, Values: []string{"203.0.113.9"}},
			{Name: "studio", Type: "A", TTL: time.Minute, Values: []string{"203.0.113.9"}},
		}
		if err := f.prov.Swap(context.Background(), cur, newer, 0, gen+1); err != nil {
			t.Errorf("newer leader's write: %v", err)
		}
	}
	rec, err := New(Config{Node: "old", State: f.cluster.m, Cluster: f.cluster, DNS: rd, Interval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = rec.Pass(context.Background())
	if !errors.Is(err, dnsprovider.ErrConflict) {
		t.Fatalf("got %v, want a CAS conflict", err)
	}
	if got := f.lookup(t, "lms"); got[0] != "203.0.113.9" {
		t.Errorf("the newer write was lost: lms = %v", got)
	}
	if f.cluster.m.Desired().Done {
		t.Error("a lost race was reported done")
	}
}

func TestDriftAfterVerifiedIsReportedNotReverted(t *testing.T) {
	for _, drift := range []dnsprovider.RRset{
		{Name: "lms", Type: "A", TTL: time.Minute, Values: []string{"192.0.2.77"}},
		{Name: "lms", Type: "A", TTL: time.Hour, Values: []string{"198.51.100.1"}}, // the decision's value, another TTL
	} {
		t.Run(drift.String(), func(t *testing.T) {
			f := newFixture(t)
			f.failoverTo(t, failover.Backup)
			if _, err := f.rec.Pass(context.Background()); err != nil {
				t.Fatal(err)
			}
			if _, err := f.prov.SetRecords(context.Background(), []dnsprovider.RRset{drift}); err != nil {
				t.Fatal(err)
			}
			before := f.updates()
			if _, err := f.rec.Pass(context.Background()); err != nil {
				t.Fatal(err)
			}
			rep := f.rec.Last()
			if rep.Match || rep.Action != "none" {
				t.Errorf("got match %v action %q, want drift reported (false, none)", rep.Match, rep.Action)
			}
			if f.updates() != before {
				t.Error("drift was silently reverted")
			}
			if !strings.Contains(describe(rep.Actual), drift.String()) {
				t.Errorf("report does not show the drifted record %s: %s", drift, describe(rep.Actual))
			}
		})
	}
}

// TestProviderRoundTrip: FromProvider undoes ToProvider, apex included, so
// the API shows the provider's records as the decision core names them.
func TestProviderRoundTrip(t *testing.T) {
	in := []failover.RRset{
		{Name: "example.org.", Type: "A", TTL: 60, Values: []string{"192.0.2.1"}},
		{Name: "lms.example.org.", Type: "AAAA", TTL: 300, Values: []string{"2001:db8::1", "2001:db8::2"}},
	}
	prov := ToProvider(in, "example.org.")
	if prov[0].Name != "@" || prov[1].Name != "lms" || prov[1].TTL != 5*time.Minute {
		t.Fatalf("ToProvider: got %+v, want @ and lms with TTL 5m", prov)
	}
	if got := FromProvider(prov, "example.org"); !reflect.DeepEqual(got, in) {
		t.Fatalf("FromProvider: got %+v, want %+v", got, in)
	}
	if got := FromProvider(nil, "example.org."); got != nil {
		t.Fatalf("FromProvider(nil): got %+v, want nil", got)
	}
}

// TestFlipVerifiesWithShortTTL: a flip to records with a 5 s TTL is
// written with that TTL and verified, the fence with the TTL the swap
// gives it.
func TestFlipVerifiesWithShortTTL(t *testing.T) {
	f := newFixtureTTL(t, 5)
	gen := f.failoverTo(t, failover.Backup)
	if _, err := f.rec.Pass(context.Background()); err != nil {
		t.Fatalf("got %v, want the flip written and verified", err)
	}
	if d := f.cluster.m.Desired(); d.Gen != gen || !d.Done {
		t.Fatalf("got desired gen %d done=%v, want gen %d verified", d.Gen, d.Done, gen)
	}
	got, err := f.prov.GetRecords(context.Background(), []dnsprovider.RRsetID{{Name: "lms", Type: "A"}})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].TTL != 5*time.Second {
		t.Errorf("served ttl: got %s, want 5s", got[0].TTL)
	}
}
