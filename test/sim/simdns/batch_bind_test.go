package simdns_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/test/dnsservers"
	"github.com/drwatch/drwatch/test/sim/simdns"
)

// outcome names an error as the batch's caller tells them apart.
func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, dnsprovider.ErrConfig):
		return "config"
	case errors.Is(err, dnsprovider.ErrConflict):
		return "conflict"
	}
	return "error: " + err.Error()
}

// SwapBatch on the simulator's authority does what the RFC 2136 client's
// one UPDATE does on real BIND, step by step: two groups of one zone,
// each on its own fence, batched while every prerequisite holds, with one
// group's fence stale, one group's records changed, one group expecting a
// record absent that is there, and one fence named twice; after each
// step both hold the same records and fences.
func TestSwapBatchAgreesWithBIND(t *testing.T) {
	srv, err := dnsservers.StartBIND(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	key, err := dnsprovider.NewTSIGKey(dnsservers.KeySHA256, "hmac-sha256", srv.Secret)
	if err != nil {
		t.Fatal(err)
	}
	bind := func(fence string) dnsprovider.BatchSwapper {
		p, err := dnsprovider.NewRFC2136WithKey(dnsservers.Zone, fence, srv.Addr, key, 5*time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	auth := simdns.New(dnsservers.Zone, "")
	sim := func(fence string) dnsprovider.BatchSwapper { return auth.Client(fence) }

	type world struct {
		name string
		a, b dnsprovider.BatchSwapper
	}
	worlds := []world{{"bind", bind("_drwatch-a"), bind("_drwatch-b")}, {"simdns", sim("_drwatch-a"), sim("_drwatch-b")}}
	for _, w := range worlds {
		if _, err := w.a.SetRecords(context.Background(), primary); err != nil {
			t.Fatalf("%s: seed: %v", w.name, err)
		}
	}
	op := func(p dnsprovider.BatchSwapper, i int, from, to []dnsprovider.RRset, old, new uint64) dnsprovider.SwapOp {
		return dnsprovider.SwapOp{Provider: p, Expected: from[i : i+1], Desired: to[i : i+1], FenceOld: old, FenceNew: new}
	}
	steps := []struct {
		name string
		ops  func(w world) []dnsprovider.SwapOp
		want string
	}{
		{"both groups' first decision", func(w world) []dnsprovider.SwapOp {
			return []dnsprovider.SwapOp{op(w.a, 0, primary, backup, 0, 5), op(w.b, 1, primary, backup, 0, 5)}
		}, "ok"},
		{"group b's fence stale", func(w world) []dnsprovider.SwapOp {
			return []dnsprovider.SwapOp{op(w.a, 0, backup, primary, 5, 6), op(w.b, 1, backup, primary, 4, 6)}
		}, "conflict"},
		{"group a's records changed", func(w world) []dnsprovider.SwapOp {
			return []dnsprovider.SwapOp{op(w.a, 0, primary, backup, 5, 7), op(w.b, 1, backup, primary, 5, 7)}
		}, "conflict"},
		{"group b expects its record absent", func(w world) []dnsprovider.SwapOp {
			return []dnsprovider.SwapOp{op(w.a, 0, backup, primary, 5, 7), op(w.b, 1, absent, primary, 5, 7)}
		}, "conflict"},
		{"one fence twice", func(w world) []dnsprovider.SwapOp {
			return []dnsprovider.SwapOp{op(w.a, 0, backup, primary, 5, 7), op(w.a, 1, backup, primary, 5, 7)}
		}, "config"},
		{"both groups' next decision", func(w world) []dnsprovider.SwapOp {
			return []dnsprovider.SwapOp{op(w.a, 0, backup, primary, 5, 8), op(w.b, 1, backup, primary, 5, 8)}
		}, "ok"},
	}
	ids := []dnsprovider.RRsetID{primary[0].ID(), primary[1].ID()}
	for _, st := range steps {
		var states [][]dnsprovider.RRset
		for _, w := range worlds {
			if got := outcome(w.a.SwapBatch(context.Background(), st.ops(w))); got != st.want {
				t.Fatalf("%s on %s: got %s, want %s", st.name, w.name, got, st.want)
			}
			sets, err := w.a.GetRecords(context.Background(), ids)
			if err != nil {
				t.Fatalf("%s on %s: read: %v", st.name, w.name, err)
			}
			for _, p := range []dnsprovider.BatchSwapper{w.a, w.b} {
				gen, err := p.GetFence(context.Background())
				if err != nil {
					t.Fatalf("%s on %s: fence %s: %v", st.name, w.name, p.FenceName(), err)
				}
				sets = append(sets, dnsprovider.RRset{Name: p.FenceName(), Type: "TXT", Values: []string{dnsprovider.FenceText(gen)}})
			}
			states = append(states, sets)
		}
		if !slices.EqualFunc(states[0], states[1], dnsprovider.RRset.Equal) {
			t.Fatalf("after %s: BIND holds %v, simdns %v", st.name, states[0], states[1])
		}
	}
}
