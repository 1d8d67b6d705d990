package dnsprovider_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
)

// A batch that cannot be one atomic UPDATE is refused before anything is
// sent: a provider signing with another key (the server's update policy
// may grant it other names), or two swaps on one fence (one prerequisite
// would stand for both). The look-alike that must go through: two swaps
// of one key, each on its own fence.
func TestSwapBatchRefusesWhatOneUpdateCannotCarry(t *testing.T) {
	// Names of their own in each run: the embedded server outlives one.
	run := sprintf("-%d", swapBatchRuns.Add(1))
	cas := func(key, alg, fence string) dnsprovider.BatchSwapper {
		return newEmbeddedProviderKey(t, key, alg, fence+run, false).(dnsprovider.BatchSwapper)
	}
	a, b := cas(testKey, "hmac-sha256", "_batch-a"), cas(testKey, "hmac-sha256", "_batch-b")
	other, sameFence := cas("drwatch-512.", "hmac-sha512", "_batch-o"), cas(testKey, "hmac-sha256", "_batch-a")
	op := func(p dnsprovider.BatchSwapper, name string) dnsprovider.SwapOp {
		name += run
		return dnsprovider.SwapOp{Provider: p, Expected: []dnsprovider.RRset{{Name: name, Type: "A"}},
			Desired: []dnsprovider.RRset{{Name: name, Type: "A", TTL: time.Minute, Values: []string{"192.0.2.7"}}}, FenceNew: 1}
	}
	for _, tc := range []struct {
		name string
		ops  []dnsprovider.SwapOp
	}{
		{"another key", []dnsprovider.SwapOp{op(a, "batch-a1"), op(other, "batch-o1")}},
		{"one fence twice", []dnsprovider.SwapOp{op(a, "batch-a2"), op(sameFence, "batch-s2")}},
	} {
		before := embedded.Updates()
		if err := a.SwapBatch(context.Background(), tc.ops); !errors.Is(err, dnsprovider.ErrConfig) {
			t.Errorf("%s: got %v, want ErrConfig", tc.name, err)
		}
		if n := embedded.Updates() - before; n != 0 {
			t.Errorf("%s: got %d updates, want none", tc.name, n)
		}
	}
	before := embedded.Updates()
	if err := a.SwapBatch(context.Background(), []dnsprovider.SwapOp{op(a, "batch-a3"), op(b, "batch-b3")}); err != nil {
		t.Fatalf("two fences of one key: %v", err)
	}
	if n := embedded.Updates() - before; n != 1 {
		t.Errorf("two fences of one key: got %d updates, want 1", n)
	}
	for _, p := range []dnsprovider.BatchSwapper{a, b} {
		if gen, err := p.GetFence(context.Background()); err != nil || gen != 1 {
			t.Errorf("fence %s: got gen=%d (%v), want 1", p.FenceName(), gen, err)
		}
	}
}

var swapBatchRuns atomic.Int32
