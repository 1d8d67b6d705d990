package openstack

import (
	"context"
	"errors"
	"github.com/drwatch/drwatch/test/fakeclock"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/remediatetest"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
)

// fakeReadiness answers per instance name; a missing name errors.
type fakeReadiness struct {
	mu    sync.Mutex
	ready map[string]bool
}

func (f *fakeReadiness) NodeReadiness(_ context.Context, in Instance) (bool, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.ready[in.Name]
	if !ok {
		return false, false, errors.New("kube: 503")
	}
	return r, r, nil
}

func (f *fakeReadiness) set(name string, ready bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ready[name] = ready
}

func TestNeverReady(t *testing.T) {
	s, c := novaClients(t, "member-appcred")
	// Nova stamps launched_at with the real time; the test dates the
	// launches instead (cell database), then drives its own clock.
	long := launchedAt(time.Now().Add(-time.Hour))
	ids := mkServers(t, s,
		server{name: "nr-stuck", meta: inCluster, then: long},
		// Look-alikes: Ready node, too young, not ACTIVE, readiness unknown.
		server{name: "nr-ready", meta: inCluster, then: long},
		// Launched "later" than the test clock ever gets: always too young.
		server{name: "nr-young", meta: inCluster, then: launchedAt(time.Now().Add(10 * time.Hour))},
		server{name: "nr-off", meta: inCluster, then: then(long, stop)},
		server{name: "nr-unknown", meta: inCluster, then: long},
	)
	clk := fakeclock.At(time.Now())
	sel := Selector{NamePrefix: "nr-", MetadataKey: "kluster", MetadataValue: "k"}
	rd := &fakeReadiness{ready: map[string]bool{"nr-stuck": false, "nr-ready": true, "nr-young": false, "nr-off": false}}
	r := NewNeverReady(c, sel, rd, 15*time.Minute, 0, clk.Now)
	fc := remediatetest.NewLog()
	stuck := ids["nr-stuck"]
	// writes is every action Nova recorded on the test's servers: a
	// remediator's reboot is one.
	writes := func() int {
		n := 0
		for _, id := range ids {
			n += len(instanceActions(t, s, id))
		}
		return n
	}

	t.Run("dry-run writes nothing", func(t *testing.T) {
		w := writes()
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, remediate.Settings{Mode: remediate.ModeDryRun, MaxPerPass: 5}))
		check(t, "records", got, []string{"dry_run reboot-soft server/" + stuck})
		if n := writes(); n != w {
			t.Fatalf("got %d instance actions after dry-run, want %d", n, w)
		}
	})
	on := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 10}
	t.Run("soft reboot", func(t *testing.T) {
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on))
		check(t, "records", got, []string{"planned reboot-soft server/" + stuck, "applied reboot-soft server/" + stuck})
		if n := reboots(t, s, stuck); n != 1 {
			t.Fatalf("got %d reboots, want 1", n)
		}
		waitActive(t, s, stuck)
	})
	t.Run("repeated pass waits", func(t *testing.T) {
		w := writes()
		if got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on)); len(got) != 0 {
			t.Fatalf("got records %q, want none", got)
		}
		if n := writes(); n != w {
			t.Fatalf("got %d instance actions, want %d", n, w)
		}
	})
	// T is 15 minutes; the clock moves 20, as Nova's reboot started a
	// few real seconds after the clock's start.
	t.Run("hard reboot after T", func(t *testing.T) {
		clk.Add(20 * time.Minute)
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on))
		check(t, "records", got, []string{"planned reboot-hard server/" + stuck, "applied reboot-hard server/" + stuck})
		if n := reboots(t, s, stuck); n != 2 {
			t.Fatalf("got %d reboots, want 2", n)
		}
		waitActive(t, s, stuck)
	})
	t.Run("cap holds: a warning, then nothing", func(t *testing.T) {
		clk.Add(20 * time.Minute)
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on))
		check(t, "records", got, []string{"planned warn server/" + stuck, "applied warn server/" + stuck})
		for i := 0; i < 3; i++ {
			clk.Add(time.Hour)
			if got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on)); len(got) != 0 {
				t.Fatalf("pass %d: got records %q, want none", i, got)
			}
		}
		if n := reboots(t, s, stuck); n != MaxReboots {
			t.Fatalf("got %d reboots, want %d", n, MaxReboots)
		}
		for _, name := range []string{"nr-ready", "nr-young", "nr-off", "nr-unknown"} {
			if n := reboots(t, s, ids[name]); n != 0 {
				t.Fatalf("look-alike %s rebooted %d times", name, n)
			}
		}
	})
	// planned returns the reboot Plan proposes for the server.
	planned := func(t *testing.T, id string) remediate.Action {
		t.Helper()
		acts, err := r.Plan(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range acts {
			if a.Target == "server/"+id {
				return a
			}
		}
		t.Fatalf("got %+v, want a reboot of %s", acts, id)
		return remediate.Action{}
	}
	t.Run("node Ready by Apply is a precondition", func(t *testing.T) {
		late := mkServers(t, s, server{name: "nr-late", meta: inCluster, then: long})["nr-late"]
		rd.set("nr-late", false)
		a := planned(t, late)
		rd.set("nr-late", true)
		if err := r.Apply(context.Background(), a); !errorsIsPrecondition(err) {
			t.Fatalf("got %v, want ErrPrecondition", err)
		}
		if n := reboots(t, s, late); n != 0 {
			t.Fatalf("got %d reboots, want 0", n)
		}
	})
	// Nova refuses a SOFT reboot of a server in ERROR (409) but accepts a
	// HARD one: only Apply's own re-read of the status keeps the hard
	// reboot of a never-ready instance off a server that failed since Plan.
	t.Run("a server in ERROR by Apply is a precondition", func(t *testing.T) {
		errd := mkServers(t, s, server{name: "nr-err", meta: inCluster, then: long})["nr-err"]
		rd.set("nr-err", false)
		a := planned(t, errd)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := resetError(ctx, s, errd); err != nil {
			t.Fatal(err)
		}
		if err := r.Apply(ctx, a); !errorsIsPrecondition(err) {
			t.Fatalf("soft reboot planned, server now in ERROR: got %v, want ErrPrecondition", err)
		}
		hard := a
		hard.Key, hard.Verb, hard.Data = "reboot/"+errd+"/2", "reboot-hard", rebootData{inst: a.Data.(rebootData).inst, nth: 2}
		if err := r.Apply(ctx, hard); !errorsIsPrecondition(err) {
			t.Fatalf("hard reboot planned, server now in ERROR: got %v, want ErrPrecondition", err)
		}
		if n := reboots(t, s, errd); n != 0 {
			t.Fatalf("got %d reboots, want 0", n)
		}
		// Nova's own answers, which Apply never reaches.
		err := servers.Reboot(ctx, c.Compute, errd, servers.RebootOpts{Type: servers.SoftReboot}).ExtractErr()
		if !gophercloud.ResponseCodeIs(err, http.StatusConflict) || !errorsIsPrecondition(precondition(err)) {
			t.Fatalf("soft reboot in ERROR: got %v, want Nova's 409, a precondition", err)
		}
		if err := servers.Reboot(ctx, c.Compute, errd, servers.RebootOpts{Type: servers.HardReboot}).ExtractErr(); err != nil {
			t.Fatalf("hard reboot in ERROR: got %v, want Nova to accept it", err)
		}
	})
}
