package watcher

import (
	"context"
	"encoding/base64"
	"testing"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/dnsprovider/dnstest"
	"github.com/drwatch/drwatch/executor/remediate/remediatetest"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/poll"
)

// leadingCluster is fakeCluster as the leader: VerifyLeader succeeds.
type leadingCluster struct{ *fakeCluster }

func (leadingCluster) VerifyLeader(context.Context) error { return nil }

// hangingZone is a zone whose server takes every query and never answers
// (until the caller gives up).
type hangingZone struct{ dnsprovider.Provider }

func (hangingZone) GetRecords(ctx context.Context, _ []dnsprovider.RRsetID) ([]dnsprovider.RRset, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

var groupSecret = base64.StdEncoding.EncodeToString([]byte("groups-lead-test-secret-01234567"))

// twoGroups is a policy of two failover groups and no default group:
// alpha in zone alpha.test., beta in zone beta.test.
func twoGroups() failover.Policy {
	refs := []failover.ProbeRef{{Name: "web", Critical: true}}
	sites := map[failover.Site]failover.SitePolicy{failover.Primary: {Probes: refs}, failover.Backup: {Probes: refs}}
	group := func(name string) failover.Group {
		return failover.Group{Name: name, AutoFailover: true, BlockWindow: time.Hour, Failback: failover.FailbackPolicy{Mode: failover.FailbackManual},
			Sites: sites, Zone: name + ".test.",
			Records: []failover.Record{{Name: "www", Type: "A", TTL: 60, Primary: []string{"192.0.2.1"}, Backup: []string{"198.51.100.1"}}}}
	}
	return failover.Policy{Nodes: []string{"a", "b", "c"}, Quorum: 2, Fall: 3, Rise: 2, Interval: time.Second,
		Groups: []failover.Group{group("alpha"), group("beta")}}
}

// rfc2136To is a provider of zone at addr, fenced on fence, with the
// test's key, whose exchanges time out after timeout.
func rfc2136To(t *testing.T, zone, fence, addr string, timeout time.Duration) *dnsprovider.RFC2136 {
	t.Helper()
	key, err := dnsprovider.NewTSIGKey("drwatch.", "hmac-sha256", groupSecret)
	if err != nil {
		t.Fatal(err)
	}
	p, err := dnsprovider.NewRFC2136WithKey(zone, fence, addr, key, timeout, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// leadUntilCleanup runs w as the leader until the test ends, and returns
// the context it leads under.
func leadUntilCleanup(t *testing.T, w *Watcher) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.lead(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ctx
}

// The leader writes every group, each on its own: while group alpha's
// zone does not answer at all, or refuses every write, group beta's
// decision is still written to its zone, fenced on its own record, and
// verified. Alpha's decision is left unverified, as it must be.
func TestLeaderWritesEachGroupDespiteAnotherGroupsFailingZone(t *testing.T) {
	for _, tc := range []struct {
		name  string
		alpha func(t *testing.T) dnsprovider.Provider
	}{
		{"alpha's zone never answers", func(t *testing.T) dnsprovider.Provider {
			// Every read waits until the leader stops: a leader that
			// wrote the groups one after the other would never reach
			// beta. (A real blackholed server cannot stand in: the DNS
			// client's exchange does not end when its context does, so
			// the leader could not stop until its timeout.)
			return hangingZone{rfc2136To(t, "alpha.test.", "_drwatch-alpha", "127.0.0.1:9", time.Second)}
		}},
		{"alpha's zone refuses the key", func(t *testing.T) dnsprovider.Provider {
			other := base64.StdEncoding.EncodeToString([]byte("another-secret-entirely-76543210"))
			srv, err := dnstest.Start("127.0.0.1:0", "alpha.test.", dnstest.Key{Name: "drwatch.", Algorithm: "hmac-sha256", Secret: other})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { srv.Close() })
			return rfc2136To(t, "alpha.test.", "_drwatch-alpha", srv.Addr(), 5*time.Second)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			beta, err := dnstest.Start("127.0.0.1:0", "beta.test.", dnstest.Key{Name: "drwatch.", Algorithm: "hmac-sha256", Secret: groupSecret})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { beta.Close() })
			ver, err := dnsprovider.NewVerifier("beta.test.", dnsprovider.VerifyConfig{Servers: []string{beta.Addr()}, Timeout: 10 * time.Second, Interval: 20 * time.Millisecond}, nil)
			if err != nil {
				t.Fatal(err)
			}
			betaDNS := rfc2136To(t, "beta.test.", "_drwatch-beta", beta.Addr(), 5*time.Second)

			l := remediatetest.NewLog()
			p := twoGroups()
			l.Step(t, failover.Command{Payload: failover.SetPolicy{Policy: p}})
			l.Step(t, failover.Command{Payload: failover.Failover{AllGroups: true, To: failover.Backup, Force: true, Actor: "alice", Reason: "region down"}})
			wantGen := map[string]uint64{}
			for _, g := range []string{"alpha", "beta"} {
				d, ok := l.M.GroupDesired(g)
				if !ok || d.Gen == 0 || d.Active != failover.Backup {
					t.Fatalf("group %s: got desired %+v (%v), want a decision for the backup", g, d, ok)
				}
				wantGen[g] = d.Gen
			}
			w, err := New(Config{Node: "a", Policy: p, Interval: 100 * time.Millisecond, FSM: NewFSM(l.M, nil),
				Cluster: leadingCluster{&fakeCluster{log: l}},
				Groups: []GroupDNS{
					{Name: "alpha", DNS: tc.alpha(t)},
					{Name: "beta", DNS: betaDNS, Verifier: ver},
				}})
			if err != nil {
				t.Fatal(err)
			}
			ctx := leadUntilCleanup(t, w)

			poll.Until(t, 60*time.Second, func() bool {
				d, _ := l.M.GroupDesired("beta")
				return d.Done
			}, "group beta's decision verified while group alpha's zone fails")
			got, err := betaDNS.GetRecords(ctx, []dnsprovider.RRsetID{{Name: "www", Type: "A"}})
			if err != nil || len(got[0].Values) != 1 || got[0].Values[0] != "198.51.100.1" {
				t.Errorf("beta www: got %v (%v), want the backup's 198.51.100.1", got, err)
			}
			if fence, err := betaDNS.GetFence(ctx); err != nil || fence != wantGen["beta"] {
				t.Errorf("beta's fence _drwatch-beta: got gen=%d (%v), want its own decision's gen=%d", fence, err, wantGen["beta"])
			}
			if d, _ := l.M.GroupDesired("alpha"); d.Done {
				t.Errorf("group alpha: got its decision verified, want it pending while its zone fails")
			}
			if r, _, ok := w.LastGroupReconcile("beta"); !ok || r.Gen != wantGen["beta"] {
				t.Errorf("beta's last pass: got %+v (%v), want one for gen %d", r, ok, wantGen["beta"])
			}
		})
	}
}

// The leader writes the groups of one zone that a region outage moved in
// ONE update, each group fenced on its own record and verified on its own.
// (The look-alike, groups in zones of their own, is written per zone:
// TestLeaderWritesEachGroupDespiteAnotherGroupsFailingZone.)
func TestLeaderWritesGroupsOfOneZoneInOneUpdate(t *testing.T) {
	srv, err := dnstest.Start("127.0.0.1:0", "region.test.", dnstest.Key{Name: "drwatch.", Algorithm: "hmac-sha256", Secret: groupSecret})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ver, err := dnsprovider.NewVerifier("region.test.", dnsprovider.VerifyConfig{Servers: []string{srv.Addr()}, Timeout: 10 * time.Second, Interval: 20 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := twoGroups()
	gdns := map[string]*dnsprovider.RFC2136{}
	var groups []GroupDNS
	for i, name := range []string{"alpha", "beta"} {
		p.Groups[i].Zone = "region.test."
		p.Groups[i].Records[0].Name = name
		gdns[name] = rfc2136To(t, "region.test.", "_drwatch-"+name, srv.Addr(), 5*time.Second)
		groups = append(groups, GroupDNS{Name: name, DNS: gdns[name], Verifier: ver})
	}
	l := remediatetest.NewLog()
	l.Step(t, failover.Command{Payload: failover.SetPolicy{Policy: p}})
	l.Step(t, failover.Command{Payload: failover.Failover{AllGroups: true, To: failover.Backup, Force: true, Actor: "alice", Reason: "region down"}})
	before := srv.Updates()
	// A write waits for its sibling a tenth of an interval at the most:
	// long here, so a loaded machine cannot split the batch.
	w, err := New(Config{Node: "a", Policy: p, Interval: 20 * time.Second, FSM: NewFSM(l.M, nil),
		Cluster: leadingCluster{&fakeCluster{log: l}}, Groups: groups})
	if err != nil {
		t.Fatal(err)
	}
	ctx := leadUntilCleanup(t, w)

	poll.Until(t, 60*time.Second, func() bool {
		a, _ := l.M.GroupDesired("alpha")
		b, _ := l.M.GroupDesired("beta")
		return a.Done && b.Done
	}, "both groups' decisions verified")
	if n := srv.Updates() - before; n != 1 {
		t.Errorf("got %d updates, want both groups in 1", n)
	}
	for name, dns := range gdns {
		d, _ := l.M.GroupDesired(name)
		if fence, err := dns.GetFence(ctx); err != nil || fence != d.Gen {
			t.Errorf("group %s's fence: got gen=%d (%v), want its own decision's gen=%d", name, fence, err, d.Gen)
		}
	}
}

// A settled group's DNS is not read on every applied command: the leader
// wakes a group's reconciler when its decision changes, and leaves a
// verified group to its requeue (an interval here an hour long), so with
// many groups each probe report does not cost two signed queries per
// group. The look-alike: a new decision for the other group is written
// and verified at once, long before any requeue.
func TestLeaderLeavesSettledGroupsToTheirRequeue(t *testing.T) {
	servers := map[string]*dnstest.Server{}
	var groups []GroupDNS
	for _, name := range []string{"alpha", "beta"} {
		dns, ver, srv := zoneServerOf(t, name+".test.", "_drwatch-"+name)
		servers[name] = srv
		groups = append(groups, GroupDNS{Name: name, DNS: dns, Verifier: ver})
	}
	l := remediatetest.NewLog()
	p := twoGroups()
	l.Step(t, failover.Command{Payload: failover.SetPolicy{Policy: p}})
	l.Step(t, failover.Command{Payload: failover.Failover{AllGroups: true, To: failover.Backup, Force: true, Actor: "alice", Reason: "region down"}})
	w, err := New(Config{Node: "a", Policy: p, Interval: time.Hour, FSM: NewFSM(l.M, nil),
		Cluster: leadingCluster{&fakeCluster{log: l}}, Groups: groups})
	if err != nil {
		t.Fatal(err)
	}
	leadUntilCleanup(t, w)
	poll.Until(t, 60*time.Second, func() bool {
		a, _ := l.M.GroupDesired("alpha")
		b, _ := l.M.GroupDesired("beta")
		return a.Done && b.Done
	}, "both groups' decisions verified")

	// The fake log applies without the FSM: wake the leader as each
	// applied command does, and wait until it took each wake-up.
	applied := func(c failover.Command) {
		t.Helper()
		l.Step(t, c)
		w.cfg.FSM.wake()
		poll.Until(t, 10*time.Second, func() bool { return len(w.cfg.FSM.changed) == 0 }, "the leader takes the wake-up")
	}
	before := servers["beta"].SignedQueries()
	for range 10 {
		applied(failover.Command{Payload: failover.Tick{}})
	}
	applied(failover.Command{Payload: failover.Failover{Group: "alpha", To: failover.Primary, Force: true, Actor: "alice", Reason: "alpha back"}})
	poll.Until(t, 60*time.Second, func() bool {
		d, _ := l.M.GroupDesired("alpha")
		return d.Done && d.Active == failover.Primary
	}, "alpha's new decision written and verified without waiting for its requeue")
	if n := servers["beta"].SignedQueries() - before; n != 0 {
		t.Errorf("beta, settled throughout: its records and fence read %d times over 11 commands, want 0 before its requeue", n)
	}
	if n := servers["alpha"].SignedQueries(); n == 0 {
		t.Errorf("alpha: no signed read at all, want its passes to have read its zone")
	}
}
