package failover

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestReplayDeterminism applies one long seeded random log to three fresh
// machines and requires byte-identical responses and snapshots after every
// entry. Every few hundred entries a fourth machine is restored from a
// snapshot and must then continue identically.
func TestReplayDeterminism(t *testing.T) {
	// Snapshots are compared after every entry, so cost grows with the log:
	// one long run and two short ones.
	runs := []struct {
		seed uint64
		n    int
	}{{1, 1000}, {2, 300}, {3, 300}}
	kinds := map[string]int{}
	for _, run := range runs {
		seed, n := run.seed, run.n
		if testing.Short() {
			n = min(n, 200)
		}
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			g := newCmdGen(rand.New(rand.NewPCG(seed, seed*7919)), true)
			ms := []*Machine{New(), New(), New()}
			var restored *Machine
			errs := 0
			for i := 1; i <= n; i++ {
				b := g.next()
				if i == 1 {
					b = g.first()
				}
				var resp0 []byte
				for j, m := range ms {
					resp := m.Apply(uint64(i), b)
					if j == 0 {
						resp0 = resp
					} else if !bytes.Equal(resp, resp0) {
						t.Fatalf("entry %d: machine %d response %s, want %s", i, j, resp, resp0)
					}
				}
				if restored != nil {
					if resp := restored.Apply(uint64(i), b); !bytes.Equal(resp, resp0) {
						t.Fatalf("entry %d: restored machine response %s, want %s", i, resp, resp0)
					}
				}
				r, err := DecodeResponse(resp0)
				if err != nil {
					errs++
				}
				g.seen(r)
				if r.Kind != "" {
					kinds[r.Kind]++
				}
				if r.Withheld != "" {
					kinds[KindWithheld]++
				}
				snap0, err := ms[0].Snapshot()
				if err != nil {
					t.Fatalf("entry %d: snapshot: %v", i, err)
				}
				for j, m := range ms[1:] {
					if s, _ := m.Snapshot(); !bytes.Equal(s, snap0) {
						t.Fatalf("entry %d: machine %d snapshot differs from machine 0", i, j+1)
					}
				}
				if restored != nil {
					if s, _ := restored.Snapshot(); !bytes.Equal(s, snap0) {
						t.Fatalf("entry %d: restored machine snapshot differs", i)
					}
				}
				if i%250 == 0 {
					restored = New()
					if err := restored.Restore(snap0); err != nil {
						t.Fatalf("entry %d: restore: %v", i, err)
					}
					if s, _ := restored.Snapshot(); !bytes.Equal(s, snap0) {
						t.Fatalf("entry %d: snapshot after restore differs", i)
					}
				}
				if h := len(ms[0].History()); h > MaxHistory {
					t.Fatalf("entry %d: history has %d entries, want <= %d", i, h, MaxHistory)
				}
			}
			t.Logf("seed %d: %d entries, %d rejected", seed, n, errs)
		})
	}
	t.Logf("kinds seen: %v", kinds)
	if !testing.Short() {
		for _, k := range []string{KindAutoFailover, KindWithheld, KindManualFailover, KindAction, KindPolicy} {
			if kinds[k] == 0 {
				t.Errorf("got no %s in the replayed logs, want the generator to exercise it", k)
			}
		}
	}
}

// TestSnapshotRestoreIdentity checks Snapshot(Restore(x)) == x and that a
// restored machine continues exactly like the original.
func TestSnapshotRestoreIdentity(t *testing.T) {
	g := newCmdGen(rand.New(rand.NewPCG(42, 42)), true)
	orig := New()
	log := [][]byte{g.first()}
	for range 800 {
		log = append(log, g.next())
	}
	for i, b := range log[:500] {
		g.seen(mustDecodeResp(orig.Apply(uint64(i+1), b)))
	}
	snap, err := orig.Snapshot()
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	cp := New()
	if err := cp.Restore(snap); err != nil {
		t.Fatalf("restore: %v", err)
	}
	again, _ := cp.Snapshot()
	if !bytes.Equal(again, snap) {
		t.Fatalf("got a different snapshot after restore, want identical bytes")
	}
	for i, b := range log[500:] {
		idx := uint64(501 + i)
		r1, r2 := orig.Apply(idx, b), cp.Apply(idx, b)
		if !bytes.Equal(r1, r2) {
			t.Fatalf("entry %d: got response %s from restored, want %s", idx, r2, r1)
		}
	}
	s1, _ := orig.Snapshot()
	s2, _ := cp.Snapshot()
	if !bytes.Equal(s1, s2) {
		t.Fatalf("got diverging snapshots after continuing, want identical")
	}
	// A bad snapshot leaves the machine as it was.
	for _, bad := range []string{``, `{}`, `{"v":2,"state":{}}`, `{"v":1,"state":{"active":"mars"}}`, string(snap) + "x", `{"v":1,"state":{"active":"primary","nodes":{"a":null}}}`} {
		if err := cp.Restore([]byte(bad)); err == nil {
			t.Errorf("restore %.40q: got nil error, want one", bad)
		}
	}
	if s3, _ := cp.Snapshot(); !bytes.Equal(s3, s2) {
		t.Errorf("failed restore changed the state")
	}
}

func mustDecodeResp(b []byte) Result {
	r, _ := DecodeResponse(b)
	return r
}
