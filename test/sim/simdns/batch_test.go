package simdns_test

import (
	"context"
	"errors"
	"testing"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/test/sim/simdns"
)

// twoGroups returns an authority holding two groups' records, each under
// its own fence at gen=1: lms under _drwatch-a, studio under _drwatch-b.
func twoGroups(t *testing.T) (*simdns.Authority, *simdns.Client, *simdns.Client) {
	t.Helper()
	auth := simdns.New(zone, "")
	ga, gb := auth.Client("_drwatch-a"), auth.Client("_drwatch-b")
	if err := ga.Swap(context.Background(), absent[:1], primary[:1], 0, 1); err != nil {
		t.Fatalf("seed group a: %v", err)
	}
	if err := gb.Swap(context.Background(), absent[1:], primary[1:], 0, 1); err != nil {
		t.Fatalf("seed group b: %v", err)
	}
	return auth, ga, gb
}

// flip is the swap moving group c's one record from primary to backup,
// from fence gen old to gen new.
func flip(c *simdns.Client, i int, old, new uint64) dnsprovider.SwapOp {
	return dnsprovider.SwapOp{Provider: c, Expected: primary[i : i+1], Desired: backup[i : i+1], FenceOld: old, FenceNew: new}
}

func fenceOf(t *testing.T, c *simdns.Client) uint64 {
	t.Helper()
	gen, err := c.GetFence(context.Background())
	if err != nil {
		t.Fatalf("fence %s: %v", c.FenceName(), err)
	}
	return gen
}

// A batch of two groups' swaps, each on its own fence, is one write of
// the authority: both groups' records and fences change together, with
// one serial bump and one history entry, as one RFC 2136 UPDATE.
func TestSwapBatchWritesEveryGroupInOneWrite(t *testing.T) {
	auth, ga, gb := twoGroups(t)
	serial, writes := auth.Serial(), len(auth.History())
	if err := ga.SwapBatch(context.Background(), []dnsprovider.SwapOp{flip(ga, 0, 1, 7), flip(gb, 1, 1, 7)}); err != nil {
		t.Fatalf("batch: got %v, want nil", err)
	}
	holds(t, ga, backup)
	if a, b := fenceOf(t, ga), fenceOf(t, gb); a != 7 || b != 7 {
		t.Fatalf("fences: got a=%d b=%d, want 7 and 7", a, b)
	}
	h := auth.History()
	if auth.Serial() != serial+1 || len(h) != writes+1 || h[len(h)-1].Op != "batch" || len(h[len(h)-1].Sets) != 4 {
		t.Fatalf("serial %d -> %d, history %+v; want one bump and one batch write of 2 records and 2 fences", serial, auth.Serial(), h[writes:])
	}
}

// One group's stale prerequisite refuses the whole batch, as BIND
// refuses the whole UPDATE: the other group's swap, valid on its own, is
// not applied either, and the error is ErrConflict without a re-read
// (which op failed is the caller's to learn). The look-alike: the same
// batch with the fence each group holds now goes through.
func TestSwapBatchRefusesEveryGroupWhenOnePrerequisiteFails(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  func(ga, gb *simdns.Client) []dnsprovider.SwapOp
	}{
		{"group b's fence moved on", func(ga, gb *simdns.Client) []dnsprovider.SwapOp {
			return []dnsprovider.SwapOp{flip(ga, 0, 1, 3), flip(gb, 1, 0, 3)}
		}},
		{"group a's records changed", func(ga, gb *simdns.Client) []dnsprovider.SwapOp {
			op := flip(ga, 0, 1, 3)
			op.Expected = []dnsprovider.RRset{a("lms", "192.0.2.99")}
			op.Desired = backup[:1]
			return []dnsprovider.SwapOp{op, flip(gb, 1, 1, 3)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			auth, ga, gb := twoGroups(t)
			serial, writes := auth.Serial(), len(auth.History())
			err := ga.SwapBatch(context.Background(), tc.ops(ga, gb))
			var ce *dnsprovider.ConflictError
			if !errors.Is(err, dnsprovider.ErrConflict) || errors.As(err, &ce) || dnsprovider.IsRetryable(err) {
				t.Fatalf("got %v, want ErrConflict without a re-read, not retryable", err)
			}
			holds(t, ga, primary)
			if a, b := fenceOf(t, ga), fenceOf(t, gb); a != 1 || b != 1 || auth.Serial() != serial || len(auth.History()) != writes {
				t.Fatalf("fences a=%d b=%d, serial %d (was %d), %d writes (was %d): want nothing applied", a, b, auth.Serial(), serial, len(auth.History()), writes)
			}
		})
	}
	t.Run("every prerequisite holds", func(t *testing.T) {
		_, ga, gb := twoGroups(t)
		if err := ga.SwapBatch(context.Background(), []dnsprovider.SwapOp{flip(ga, 0, 1, 3), flip(gb, 1, 1, 3)}); err != nil {
			t.Fatalf("got %v, want nil", err)
		}
		holds(t, ga, backup)
	})
}

// Batch keys separate what the RFC 2136 client's do: the server (here
// the authority), the zone and the key (a client made Unauthorised signs
// with a wrong one). Clients of one authority with other fences share a
// key. A batch mixing keys, naming one fence or RRset twice, or carrying
// an invalid generation is refused with ErrConfig before it reaches the
// authority (no call, no write).
func TestSwapBatchRefusesWhatOneUpdateCannotCarry(t *testing.T) {
	auth, ga, gb := twoGroups(t)
	other := simdns.New(zone, "").Client("_drwatch-b")
	wrong := auth.Client("_drwatch-b", simdns.Unauthorised)
	if ga.BatchKey() != gb.BatchKey() {
		t.Fatalf("two fences of one authority: keys %q and %q differ", ga.BatchKey(), gb.BatchKey())
	}
	for _, c := range []*simdns.Client{other, wrong} {
		if c.BatchKey() == ga.BatchKey() {
			t.Fatalf("key %q shared with another authority or key", c.BatchKey())
		}
	}
	var calls int
	auth.SetHook(func(c simdns.Call) {
		if c.Stage == simdns.BeforeApply {
			calls++
		}
	})
	sameFence := auth.Client("_drwatch-a")
	for _, tc := range []struct {
		name string
		ops  []dnsprovider.SwapOp
	}{
		{"another authority", []dnsprovider.SwapOp{flip(ga, 0, 1, 3), flip(other, 1, 1, 3)}},
		{"another key", []dnsprovider.SwapOp{flip(ga, 0, 1, 3), flip(wrong, 1, 1, 3)}},
		{"one fence twice", []dnsprovider.SwapOp{flip(ga, 0, 1, 3), flip(sameFence, 1, 1, 3)}},
		{"one rrset twice", []dnsprovider.SwapOp{flip(ga, 0, 1, 3), flip(gb, 0, 1, 3)}},
		{"a new fence of 0", []dnsprovider.SwapOp{flip(ga, 0, 1, 3), flip(gb, 1, 1, 0)}},
	} {
		if err := ga.SwapBatch(context.Background(), tc.ops); !errors.Is(err, dnsprovider.ErrConfig) {
			t.Errorf("%s: got %v, want ErrConfig", tc.name, err)
		}
	}
	if calls != 0 {
		t.Fatalf("%d calls reached the authority, want none", calls)
	}
	holds(t, ga, primary)
}

// A batch is one write to the fault injector: a lost reply applies every
// group's swap and answers a retryable timeout (repeating it is then a
// conflict: the fences moved); a wrong key applies nothing and is a
// terminal AuthError.
func TestSwapBatchFaultsHitTheWholeBatch(t *testing.T) {
	auth, ga, gb := twoGroups(t)
	auth.InjectWrites(simdns.FaultLostReply, 1)
	ops := []dnsprovider.SwapOp{flip(ga, 0, 1, 3), flip(gb, 1, 1, 3)}
	if err := ga.SwapBatch(context.Background(), ops); !dnsprovider.IsRetryable(err) {
		t.Fatalf("lost reply: got %v, want a retryable timeout", err)
	}
	holds(t, ga, backup)
	if err := ga.SwapBatch(context.Background(), ops); !errors.Is(err, dnsprovider.ErrConflict) {
		t.Fatalf("repeated: got %v, want ErrConflict", err)
	}
	wa, wb := auth.Client("_drwatch-a", simdns.Unauthorised), auth.Client("_drwatch-b", simdns.Unauthorised)
	back := func(c *simdns.Client, i int) dnsprovider.SwapOp {
		return dnsprovider.SwapOp{Provider: c, Expected: backup[i : i+1], Desired: primary[i : i+1], FenceOld: 3, FenceNew: 4}
	}
	writes := len(auth.History())
	if err := wa.SwapBatch(context.Background(), []dnsprovider.SwapOp{back(wa, 0), back(wb, 1)}); !errors.Is(err, dnsprovider.ErrAuth) || !dnsprovider.IsTerminal(err) {
		t.Fatalf("wrong key: got %v, want a terminal ErrAuth", err)
	}
	if got := len(auth.History()); got != writes {
		t.Fatalf("wrong key: %d writes, want %d", got, writes)
	}
	holds(t, ga, backup)
}
