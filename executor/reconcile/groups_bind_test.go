package reconcile

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/dnsservers"
)

// groupsOnBIND is failover groups on a real BIND, each fenced on its own
// record: by default (newGroupsOnBIND) two in one zone, alpha flipping lms
// and beta flipping wiki. Two replicas of one log stand for the new leader
// and a deposed one: both applied the policy and a forced failover of each
// group to the backup (in the order of the groups), and nobody has written
// DNS yet.
type groupsOnBIND struct {
	srv        *dnsservers.Server
	addr       string // where the providers send: BIND, or a counter in front of it
	key        string // the TSIG key the providers sign with
	new, stale *fakeCluster
	fences     map[string]string
	groups     map[string]groupOnBIND
}

// groupOnBIND is one group of a groupsOnBIND: its zone and the one record
// it flips.
type groupOnBIND struct {
	name, zone, record string
}

var twoGroupsOneZone = []groupOnBIND{{"alpha", zone, "lms"}, {"beta", zone, "wiki"}}

func newGroupsOnBIND(t *testing.T, fences map[string]string) *groupsOnBIND {
	t.Helper()
	return startGroupsOnBIND(t, fences, twoGroupsOneZone, nil)
}

// startGroupsOnBIND starts BIND with every zone of groups and sets the
// records to the primary's address; addr, if set, picks where the
// providers send given BIND's address.
func startGroupsOnBIND(t *testing.T, fences map[string]string, groups []groupOnBIND, addr func(bind string) string) *groupsOnBIND {
	t.Helper()
	var zones []string
	for _, gr := range groups {
		if gr.zone != zone && !slices.Contains(zones, gr.zone) {
			zones = append(zones, gr.zone)
		}
	}
	srv, err := dnsservers.StartBIND(t.TempDir(), zones...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	g := &groupsOnBIND{srv: srv, addr: srv.Addr, key: dnsservers.KeySHA256, new: &fakeCluster{m: failover.New()}, stale: &fakeCluster{m: failover.New()},
		fences: fences, groups: map[string]groupOnBIND{}}
	if addr != nil {
		g.addr = addr(srv.Addr)
	}
	refs := []failover.ProbeRef{{Name: "web", Critical: true}}
	sites := map[failover.Site]failover.SitePolicy{failover.Primary: {Probes: refs}, failover.Backup: {Probes: refs}}
	var policyGroups []failover.Group
	for _, gr := range groups {
		g.groups[gr.name] = gr
		if _, err := g.provider(t, gr.name).SetRecords(context.Background(), []dnsprovider.RRset{
			{Name: gr.record, Type: "A", TTL: time.Minute, Values: []string{"192.0.2.1"}},
		}); err != nil {
			t.Fatal(err)
		}
		policyGroups = append(policyGroups, failover.Group{Name: gr.name, AutoFailover: true, BlockWindow: time.Hour,
			Failback: failover.FailbackPolicy{Mode: failover.FailbackManual}, Sites: sites, Zone: gr.zone,
			Records: []failover.Record{{Name: gr.record, Type: "A", TTL: 60, Primary: []string{"192.0.2.1"}, Backup: []string{"198.51.100.1"}}}})
	}
	policy := failover.Policy{Nodes: []string{"a", "b", "c"}, Quorum: 2, Fall: 2, Rise: 2, Interval: time.Second, Groups: policyGroups}
	for _, c := range []*fakeCluster{g.new, g.stale} {
		c.step(t, failover.Command{Payload: failover.SetPolicy{Policy: policy}})
		for _, gr := range groups {
			c.step(t, failover.Command{Payload: failover.Failover{Group: gr.name, To: failover.Backup, Force: true, Actor: "alice", Reason: "test"}})
		}
	}
	return g
}

// provider writes group's records in its zone, fenced on the group's fence.
func (g *groupsOnBIND) provider(t *testing.T, group string) *dnsprovider.RFC2136 {
	t.Helper()
	key, err := dnsprovider.NewTSIGKey(g.key, "hmac-sha256", g.srv.Secret)
	if err != nil {
		t.Fatal(err)
	}
	p, err := dnsprovider.NewRFC2136WithKey(g.groups[group].zone, g.fences[group], g.addr, key, 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// reconciler is the reconciler of group on the replica c, with a provider
// and verifier of its own.
func (g *groupsOnBIND) reconciler(t *testing.T, c *fakeCluster, group string) *Reconciler {
	t.Helper()
	ver, err := dnsprovider.NewVerifier(g.groups[group].zone, dnsprovider.VerifyConfig{Servers: []string{g.srv.Addr}, Timeout: 10 * time.Second, Interval: 20 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(Config{Node: "a", Group: group, State: GroupState(c.m, group), Cluster: c, DNS: g.provider(t, group), Verifier: ver, Interval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// pass runs one pass of group's reconciler on c and fails t on an error.
func (g *groupsOnBIND) pass(t *testing.T, c *fakeCluster, group string) {
	t.Helper()
	if _, err := g.reconciler(t, c, group).Pass(context.Background()); err != nil {
		t.Fatalf("group %s: pass: %v", group, err)
	}
}

// failback makes the new leader's decision to move group back to the
// primary and writes it; it returns the decision's generation.
func (g *groupsOnBIND) failback(t *testing.T, group string) uint64 {
	t.Helper()
	g.new.step(t, failover.Command{Payload: failover.Failover{Group: group, To: failover.Primary, Force: true, Actor: "bob", Reason: "fixed"}})
	d, _ := g.new.m.GroupDesired(group)
	g.pass(t, g.new, group)
	if d, _ := g.new.m.GroupDesired(group); !d.Done {
		t.Fatalf("group %s: the new leader's failback gen %d was not verified", group, d.Gen)
	}
	return d.Gen
}

// served is what BIND serves for record, and the generation group's fence holds.
func (g *groupsOnBIND) served(t *testing.T, group, record string) ([]string, uint64) {
	t.Helper()
	p := g.provider(t, group)
	sets, err := p.GetRecords(context.Background(), []dnsprovider.RRsetID{{Name: record, Type: "A"}})
	if err != nil {
		t.Fatal(err)
	}
	fence, err := p.GetFence(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return sets[0].Values, fence
}

func (g *groupsOnBIND) expect(t *testing.T, when, group, record, value string, fence uint64) {
	t.Helper()
	got, gotFence := g.served(t, group, record)
	if !slices.Equal(got, []string{value}) || gotFence != fence {
		t.Errorf("%s: %s = %v with %s gen=%d, want %s with gen=%d", when, record, got, g.fences[group], gotFence, value, fence)
	}
}

var ownFences = map[string]string{"alpha": "_drwatch-alpha", "beta": "_drwatch-beta"}

// Against real BIND, two groups in one zone and a deposed leader: after
// the new leader has written both groups' failovers and then their
// failbacks, the deposed leader, still driving the failovers, writes
// neither group: each reconciler finds its own group's fence newer and
// stops, and both groups' records and fences stay the new leader's.
func TestDeposedLeaderRollsBackNoGroupOnBIND(t *testing.T) {
	g := newGroupsOnBIND(t, ownFences)
	for _, group := range []string{"alpha", "beta"} {
		g.pass(t, g.new, group)
	}
	genA, genB := g.failback(t, "alpha"), g.failback(t, "beta")
	for _, group := range []string{"alpha", "beta"} {
		_, err := g.reconciler(t, g.stale, group).Pass(context.Background())
		if !errors.Is(err, ErrStale) {
			t.Errorf("deposed leader, group %s: got %v, want ErrStale", group, err)
		}
	}
	g.expect(t, "after the deposed leader's passes", "alpha", "lms", "192.0.2.1", genA)
	g.expect(t, "after the deposed leader's passes", "beta", "wiki", "192.0.2.1", genB)
}

// Against real BIND, the race the fence is for: the deposed leader has
// read group beta's records and fence and is about to write its failover
// when the new leader writes beta's failover and failback. BIND refuses
// the deposed leader's write (the fence it expected is gone), so beta
// stays on the primary at the new leader's generation. The look-alike
// that must go through: the deposed leader's write for alpha, whose
// decision is still the latest for alpha, is fenced on alpha's record
// alone, so beta's newer fence does not stop it, and it leaves beta's
// records and fence as they are.
func TestStaleWriteForOneGroupNeverOverwritesAnothersOnBIND(t *testing.T) {
	g := newGroupsOnBIND(t, ownFences)
	var genB uint64
	raced := false
	g.stale.leaderFn = func() error {
		if !raced {
			raced = true
			// The deposed leader's VerifyLeader answers just before the
			// new leader takes over and writes beta.
			g.pass(t, g.new, "beta")
			genB = g.failback(t, "beta")
		}
		return nil
	}
	_, err := g.reconciler(t, g.stale, "beta").Pass(context.Background())
	var conflict *dnsprovider.ConflictError
	if !raced || !errors.As(err, &conflict) || conflict.Fence != genB {
		t.Fatalf("deposed leader's write for beta: got %v (raced %v), want BIND to refuse it as a conflict with fence gen=%d", err, raced, genB)
	}
	g.expect(t, "after the deposed leader's write for beta", "beta", "wiki", "192.0.2.1", genB)

	genA, _ := g.stale.m.GroupDesired("alpha")
	g.pass(t, g.stale, "alpha")
	g.expect(t, "after the write for alpha", "alpha", "lms", "198.51.100.1", genA.Gen)
	g.expect(t, "after the write for alpha", "beta", "wiki", "192.0.2.1", genB)
}
