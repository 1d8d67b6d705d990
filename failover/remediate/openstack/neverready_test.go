package openstack

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover/remediate"
	"github.com/drwatch/drwatch/failover/remediate/remediatetest"
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
	s, c := simClients(t)
	clk := &clock{t: t0}
	s.Now = clk.Now
	long := t0.Add(-time.Hour)
	node(s, "vm1", "k-stuck", "ACTIVE", "10.180.0.1", long, nil)
	// Look-alikes: Ready node, too young, not ACTIVE, readiness unknown.
	node(s, "vm2", "k-ready", "ACTIVE", "10.180.0.2", long, nil)
	// Launched "later" than the test clock ever gets: always too young.
	node(s, "vm3", "k-young", "ACTIVE", "10.180.0.3", t0.Add(10*time.Hour), nil)
	node(s, "vm4", "k-off", "SHUTOFF", "10.180.0.4", long, nil)
	node(s, "vm5", "k-unknown", "ACTIVE", "10.180.0.5", long, nil)
	rd := &fakeReadiness{ready: map[string]bool{"k-stuck": false, "k-ready": true, "k-young": false, "k-off": false}}
	r := NewNeverReady(c, cluster, rd, 15*time.Minute, clk.Now)
	fc := remediatetest.NewLog()
	rebootCount := func(id string) int {
		n := 0
		for _, a := range s.Actions(id) {
			if a.Action == "reboot" {
				n++
			}
		}
		return n
	}

	t.Run("dry-run writes nothing", func(t *testing.T) {
		w := s.Writes()
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, remediate.Settings{Mode: remediate.ModeDryRun, MaxPerPass: 5}))
		check(t, "records", got, []string{"dry_run reboot-soft server/vm1"})
		if s.Writes() != w {
			t.Fatalf("got %d writes after dry-run, want %d", s.Writes(), w)
		}
	})
	on := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 10}
	t.Run("soft reboot", func(t *testing.T) {
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on))
		check(t, "records", got, []string{"planned reboot-soft server/vm1", "applied reboot-soft server/vm1"})
		if n := rebootCount("vm1"); n != 1 {
			t.Fatalf("got %d reboots, want 1", n)
		}
	})
	t.Run("repeated pass waits", func(t *testing.T) {
		w := s.Writes()
		if got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on)); len(got) != 0 {
			t.Fatalf("got records %q, want none", got)
		}
		if s.Writes() != w {
			t.Fatalf("got %d writes, want %d", s.Writes(), w)
		}
	})
	t.Run("hard reboot after T", func(t *testing.T) {
		clk.Add(16 * time.Minute)
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on))
		check(t, "records", got, []string{"planned reboot-hard server/vm1", "applied reboot-hard server/vm1"})
		if n := rebootCount("vm1"); n != 2 {
			t.Fatalf("got %d reboots, want 2", n)
		}
	})
	t.Run("cap holds: a warning, then nothing", func(t *testing.T) {
		clk.Add(16 * time.Minute)
		got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on))
		check(t, "records", got, []string{"planned warn server/vm1", "applied warn server/vm1"})
		for i := 0; i < 3; i++ {
			clk.Add(time.Hour)
			if got := remediatetest.Summary(remediatetest.Pass(t, fc, r, on)); len(got) != 0 {
				t.Fatalf("pass %d: got records %q, want none", i, got)
			}
		}
		if n := rebootCount("vm1"); n != MaxReboots {
			t.Fatalf("got %d reboots, want %d", n, MaxReboots)
		}
		for _, id := range []string{"vm2", "vm3", "vm4", "vm5"} {
			if n := rebootCount(id); n != 0 {
				t.Fatalf("look-alike %s rebooted %d times", id, n)
			}
		}
	})
	t.Run("node Ready by Apply is a precondition", func(t *testing.T) {
		node(s, "vm6", "k-late", "ACTIVE", "10.180.0.6", long, nil)
		rd.set("k-late", false)
		acts, err := r.Plan(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var a *remediate.Action
		for i := range acts {
			if acts[i].Target == "server/vm6" {
				a = &acts[i]
			}
		}
		if a == nil {
			t.Fatalf("got %+v, want a reboot of vm6", acts)
		}
		rd.set("k-late", true)
		if err := r.Apply(context.Background(), *a); !errorsIsPrecondition(err) {
			t.Fatalf("got %v, want ErrPrecondition", err)
		}
		if n := rebootCount("vm6"); n != 0 {
			t.Fatalf("got %d reboots, want 0", n)
		}
	})
}
