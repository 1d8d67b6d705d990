package simdns_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/test/sim/simdns"
)

func a(name, ip string) dnsprovider.RRset {
	return dnsprovider.RRset{Name: name, Type: "A", TTL: 60 * time.Second, Values: []string{ip}}
}

var (
	primary = []dnsprovider.RRset{a("lms", "203.0.113.10"), a("studio", "203.0.113.10")}
	backup  = []dnsprovider.RRset{a("lms", "198.51.100.10"), a("studio", "198.51.100.10")}
	absent  = []dnsprovider.RRset{{Name: "lms", Type: "A"}, {Name: "studio", Type: "A"}}
)

// seeded returns an authority at fence gen=1 holding primary.
func seeded(t *testing.T) (*simdns.Authority, *simdns.Client) {
	t.Helper()
	auth := simdns.New(zone, "")
	c := auth.Client("")
	if err := c.Swap(context.Background(), absent, primary, 0, 1); err != nil {
		t.Fatalf("seed swap: got %v, want nil", err)
	}
	return auth, c
}

func holds(t *testing.T, c *simdns.Client, want []dnsprovider.RRset) {
	t.Helper()
	got, err := c.GetRecords(context.Background(), []dnsprovider.RRsetID{want[0].ID(), want[1].ID()})
	if err != nil {
		t.Fatalf("GetRecords: got %v, want nil", err)
	}
	if !slices.EqualFunc(got, want, dnsprovider.RRset.Equal) {
		t.Fatalf("zone: got %v, want %v", got, want)
	}
}

func TestFaultsThatApplyNothing(t *testing.T) {
	tests := []struct {
		kind      simdns.FaultKind
		retryable bool
		terminal  bool
		is        error
	}{
		{simdns.FaultTimeout, true, false, nil},
		{simdns.FaultRefused, false, true, dnsprovider.ErrRefused},
		{simdns.FaultServFail, true, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.kind.String(), func(t *testing.T) {
			auth, c := seeded(t)
			auth.Inject(tt.kind, 2)
			for i := range 2 {
				err := c.Swap(context.Background(), primary, backup, 1, 2)
				if err == nil || dnsprovider.IsRetryable(err) != tt.retryable || dnsprovider.IsTerminal(err) != tt.terminal {
					t.Fatalf("swap %d under %s: got %v (retryable=%v terminal=%v), want retryable=%v terminal=%v",
						i, tt.kind, err, dnsprovider.IsRetryable(err), dnsprovider.IsTerminal(err), tt.retryable, tt.terminal)
				}
				if tt.is != nil && !errors.Is(err, tt.is) {
					t.Fatalf("swap %d under %s: got %v, want errors.Is %v", i, tt.kind, err, tt.is)
				}
			}
			if gen, _ := auth.Fence(); gen != 1 || len(auth.History()) != 1 {
				t.Fatalf("after %s: got fence %d and %d writes, want 1 and 1 (nothing applied)", tt.kind, gen, len(auth.History()))
			}
			// The fault was for two calls only: the third goes through.
			if err := c.Swap(context.Background(), primary, backup, 1, 2); err != nil {
				t.Fatalf("swap after the fault ran out: got %v, want nil", err)
			}
			holds(t, c, backup)
		})
	}
}

// TestLostReplyAppliesAndRetrySeesIt is the ambiguous write: the zone
// changes, the writer gets a timeout, and its retry finds its own fence.
func TestLostReplyAppliesAndRetrySeesIt(t *testing.T) {
	auth, c := seeded(t)
	auth.Inject(simdns.FaultLostReply, 1)
	err := c.Swap(context.Background(), primary, backup, 1, 2)
	if !errors.Is(err, os.ErrDeadlineExceeded) || !dnsprovider.IsRetryable(err) {
		t.Fatalf("swap with lost reply: got %v, want a retryable timeout", err)
	}
	if gen, _ := auth.Fence(); gen != 2 {
		t.Fatalf("fence after lost reply: got %d, want 2 (the write applied)", gen)
	}
	holds(t, c, backup)
	err = c.Swap(context.Background(), primary, backup, 1, 2)
	var ce *dnsprovider.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("retry of the applied swap: got %v, want *ConflictError", err)
	}
	if ce.Fence != 2 || !slices.EqualFunc(ce.Current, backup, dnsprovider.RRset.Equal) {
		t.Fatalf("retry conflict: got fence %d current %v, want fence 2 and %v", ce.Fence, ce.Current, backup)
	}
	if h := auth.History(); len(h) != 2 || h[1].FenceBefore != 1 || h[1].FenceAfter != 2 {
		t.Fatalf("history: got %+v, want the seed and one swap 1->2", h)
	}
}

func TestFaultUntilCleared(t *testing.T) {
	auth, c := seeded(t)
	auth.Inject(simdns.FaultServFail, -1)
	for i := range 5 {
		if _, err := c.GetFence(context.Background()); err == nil {
			t.Fatalf("read %d under a standing fault: got nil, want SERVFAIL", i)
		}
	}
	auth.Clear()
	if gen, err := c.GetFence(context.Background()); err != nil || gen != 1 {
		t.Fatalf("read after Clear: got %d, %v; want 1, nil", gen, err)
	}
}

func TestWriteFaultSparesReads(t *testing.T) {
	auth, c := seeded(t)
	auth.InjectWrites(simdns.FaultTimeout, 1)
	if gen, err := c.GetFence(context.Background()); err != nil || gen != 1 {
		t.Fatalf("read under a write fault: got %d, %v; want 1, nil", gen, err)
	}
	if _, err := c.SetRecords(context.Background(), backup); !dnsprovider.IsRetryable(err) {
		t.Fatalf("write under a write fault: got %v, want a retryable timeout", err)
	}
	if _, err := c.SetRecords(context.Background(), backup); err != nil {
		t.Fatalf("second write: got %v, want nil (the fault was for one write)", err)
	}
	holds(t, c, backup)
}

func TestHookSeesEveryCallAroundItsEffect(t *testing.T) {
	auth, c := seeded(t)
	var seen []simdns.Call
	var fenceAtAfter uint64
	auth.SetHook(func(call simdns.Call) {
		seen = append(seen, call)
		if call.Stage == simdns.AfterApply && call.Op == "swap" {
			fenceAtAfter, _ = auth.Fence() // the hook may call the authority
		}
	})
	auth.Inject(simdns.FaultLostReply, 1)
	_ = c.Swap(context.Background(), primary, backup, 1, 2)
	if _, err := c.GetRecords(context.Background(), []dnsprovider.RRsetID{{Name: "lms", Type: "A"}}); err != nil {
		t.Fatalf("GetRecords: %v", err)
	}
	want := []simdns.Call{
		{Seq: 2, Op: "swap", Fault: simdns.FaultLostReply, Stage: simdns.BeforeApply},
		{Seq: 2, Op: "swap", Fault: simdns.FaultLostReply, Stage: simdns.AfterApply},
		{Seq: 3, Op: "get", Fault: simdns.FaultNone, Stage: simdns.BeforeApply},
		{Seq: 3, Op: "get", Fault: simdns.FaultNone, Stage: simdns.AfterApply},
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("hook calls: got %+v, want %+v", seen, want)
	}
	if fenceAtAfter != 2 {
		t.Fatalf("fence seen by the hook after the lost-reply swap: got %d, want 2", fenceAtAfter)
	}
}

// TestStaleWriterCannotLowerTheFence: a deposed leader still holds the
// generation it read; its swap is refused, whatever records it expects,
// and the fence never goes back.
func TestStaleWriterCannotLowerTheFence(t *testing.T) {
	auth, leader1 := seeded(t)
	leader2 := auth.Client("")
	if err := leader2.Swap(context.Background(), primary, backup, 1, 5); err != nil {
		t.Fatalf("new leader's swap: got %v, want nil", err)
	}
	for _, exp := range [][]dnsprovider.RRset{primary, backup} {
		err := leader1.Swap(context.Background(), exp, primary, 1, 3)
		if !errors.Is(err, dnsprovider.ErrConflict) {
			t.Fatalf("stale swap 1->3 expecting %v: got %v, want ErrConflict", exp, err)
		}
	}
	if gen, _ := auth.Fence(); gen != 5 {
		t.Fatalf("fence: got %d, want 5", gen)
	}
	if w, back := auth.FenceWentBackwards(); back {
		t.Fatalf("FenceWentBackwards: got %+v, want none", w)
	}
}

// TestFenceWentBackwardsReportsALoweringWrite: the authority obeys a swap
// that holds the current fence and names a lower one, as BIND would; the
// observation reports it, so the simulator's invariant catches the writer.
func TestFenceWentBackwardsReportsALoweringWrite(t *testing.T) {
	auth, c := seeded(t)
	if err := c.Swap(context.Background(), primary, backup, 1, 9); err != nil {
		t.Fatalf("swap 1->9: %v", err)
	}
	if _, back := auth.FenceWentBackwards(); back {
		t.Fatalf("FenceWentBackwards after 1->9: got true, want false")
	}
	if err := c.Swap(context.Background(), backup, primary, 9, 4); err != nil {
		t.Fatalf("swap 9->4: got %v, want nil (BIND checks only the prerequisite)", err)
	}
	w, back := auth.FenceWentBackwards()
	if !back || w.FenceBefore != 9 || w.FenceAfter != 4 || w.Op != "swap" {
		t.Fatalf("FenceWentBackwards: got %+v, %v; want the swap 9->4", w, back)
	}
}

// TestNamedFenceWentBackwardsWatchesOneGroupsFence: two failover groups
// share the zone, each with its own fence. A write that lowers one
// group's fence is reported for that fence only, even while the other's
// is higher; the zone's own fence is read as FenceWentBackwards reads it.
func TestNamedFenceWentBackwardsWatchesOneGroupsFence(t *testing.T) {
	auth, def := seeded(t)
	apps, studio := auth.Client("_drwatch-apps"), auth.Client("_drwatch-studio")
	appsA, studioA := []dnsprovider.RRset{a("apps", "203.0.113.20")}, []dnsprovider.RRset{a("studio-x", "203.0.113.21")}
	appsB := []dnsprovider.RRset{a("apps", "198.51.100.20")}
	ctx := context.Background()
	for _, step := range []struct {
		c                  *simdns.Client
		expected, desired  []dnsprovider.RRset
		fenceOld, fenceNew uint64
	}{
		{apps, []dnsprovider.RRset{{Name: "apps", Type: "A"}}, appsA, 0, 3},
		{studio, []dnsprovider.RRset{{Name: "studio-x", Type: "A"}}, studioA, 0, 12},
		{def, primary, backup, 1, 7},
		{apps, appsA, appsB, 3, 9},
	} {
		if err := step.c.Swap(ctx, step.expected, step.desired, step.fenceOld, step.fenceNew); err != nil {
			t.Fatalf("swap %s %d->%d: %v", step.c.FenceName(), step.fenceOld, step.fenceNew, err)
		}
	}
	// Another group's fence above this one's, and the zone's own moving
	// up, are not a group's fence going back.
	for _, name := range []string{"", "_drwatch", "_drwatch-apps", "_drwatch-studio", "_drwatch-wiki"} {
		if w, back := auth.NamedFenceWentBackwards(name); back {
			t.Fatalf("NamedFenceWentBackwards(%q): got %+v, want none", name, w)
		}
	}
	if err := apps.Swap(ctx, appsB, appsA, 9, 4); err != nil {
		t.Fatalf("apps swap 9->4: got %v, want nil (BIND checks only the prerequisite)", err)
	}
	w, back := auth.NamedFenceWentBackwards("_drwatch-apps")
	if !back || w.FenceBefore != 9 || w.FenceAfter != 4 || w.Op != "swap" {
		t.Fatalf("NamedFenceWentBackwards(apps): got %+v, %v; want the swap 9->4", w, back)
	}
	for _, name := range []string{"", "_drwatch-studio"} {
		if w, back := auth.NamedFenceWentBackwards(name); back {
			t.Fatalf("NamedFenceWentBackwards(%q) after apps went back: got %+v, want none", name, w)
		}
	}
	if _, back := auth.FenceWentBackwards(); back {
		t.Fatalf("FenceWentBackwards, the zone's own fence: got true, want false")
	}
}

func TestRecordsAndHistoryAreSorted(t *testing.T) {
	auth := simdns.New(zone, "")
	c := auth.Client("")
	sets := []dnsprovider.RRset{a("zz", "192.0.2.3"), a("aa", "192.0.2.1"), a("mm", "192.0.2.2")}
	if _, err := c.SetRecords(context.Background(), sets); err != nil {
		t.Fatalf("SetRecords: %v", err)
	}
	var names []string
	for _, s := range auth.Records() {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"aa", "mm", "zz"}) {
		t.Fatalf("Records names: got %v, want [aa mm zz]", names)
	}
	h := auth.History()
	if len(h) != 1 || h[0].Sets[0].Name != "aa" || h[0].Sets[2].Name != "zz" {
		t.Fatalf("History: got %+v, want one write sorted aa, mm, zz", h)
	}
}

// TestRunsInsideASynctestBubble: calls, faults and a hook that waits on
// the virtual clock complete inside a bubble, and virtual time moves only
// by what the hook slept.
func TestRunsInsideASynctestBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		auth := simdns.New(zone, "")
		auth.SetHook(func(call simdns.Call) {
			if call.Stage == simdns.AfterApply {
				time.Sleep(time.Second) // a slow reply, in virtual time
			}
		})
		c := auth.Client("")
		start := time.Now()
		auth.Inject(simdns.FaultLostReply, 1)
		if err := c.Swap(t.Context(), absent, primary, 0, 1); err == nil {
			t.Fatalf("lost-reply swap: got nil, want a timeout")
		}
		if gen, err := c.GetFence(t.Context()); err != nil || gen != 1 {
			t.Fatalf("GetFence: got %d, %v; want 1, nil", gen, err)
		}
		synctest.Wait()
		if d := time.Since(start); d != 2*time.Second {
			t.Fatalf("virtual time: got %s, want 2s (two calls, one second each)", d)
		}
	})
}
