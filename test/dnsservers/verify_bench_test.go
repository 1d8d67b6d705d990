package dnsservers

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
)

// BenchmarkVerifyGroups verifies what a region outage's one UPDATE wrote
// for 50 failover groups (each a record and its fence) against BIND9: as
// each group verified on its own before (50 Verify calls at once, a
// goroutine per group and a socket per query), and as a landed batch is
// verified now (one VerifyEach), in the same run. It reports the time of
// each and verify_each_over_verify, the one over the other; nothing is
// written during the run, so every round finds every record served.
func BenchmarkVerifyGroups(b *testing.B) {
	s := started(b, bind, bindErr)
	key, err := dnsprovider.NewTSIGKey(KeySHA256, "hmac-sha256", s.Secret)
	if err != nil {
		b.Fatal(err)
	}
	const groups = 50
	desired := make([][]dnsprovider.RRset, groups)
	for i := range desired {
		name, fence := fmt.Sprintf("bench-verify-%d", i), fmt.Sprintf("_bench-verify-%d", i)
		p, err := dnsprovider.NewRFC2136WithKey(Zone, fence, s.Addr, key, 30*time.Second, nil)
		if err != nil {
			b.Fatal(err)
		}
		want := []dnsprovider.RRset{{Name: name, Type: "A", TTL: time.Minute, Values: []string{"198.51.100.10"}}}
		if _, err := p.SetRecords(context.Background(), append(want, dnsprovider.RRset{Name: fence, Type: "TXT", TTL: dnsprovider.FenceTTL, Values: []string{dnsprovider.FenceText(1)}})); err != nil {
			b.Fatal(err)
		}
		desired[i] = append(want, dnsprovider.RRset{Name: fence, Type: "TXT", TTL: dnsprovider.FenceTTL, Values: []string{dnsprovider.FenceText(1)}})
	}
	v, err := dnsprovider.NewVerifier(Zone, dnsprovider.VerifyConfig{Servers: []string{s.Addr}, Timeout: 10 * time.Second}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	each := func() error {
		var mu sync.Mutex
		var bad error
		err := v.VerifyEach(ctx, desired, func(i int, r *dnsprovider.Verification) {
			mu.Lock()
			defer mu.Unlock()
			if e := r.Err(); e != nil && bad == nil {
				bad = fmt.Errorf("group %d: %w", i, e)
			}
		})
		if err != nil {
			return err
		}
		return bad
	}
	own := func() error {
		errs := make([]error, groups)
		var wg sync.WaitGroup
		for i := range desired {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := v.Verify(ctx, desired[i])
				if err == nil {
					err = r.Err()
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				return fmt.Errorf("group %d: %w", i, err)
			}
		}
		return nil
	}
	// Alternate the two, so that both see the same machine.
	var tEach, tOwn time.Duration
	rounds := max(b.N, 20)
	b.ResetTimer()
	for range rounds {
		t0 := time.Now()
		if err := own(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := each(); err != nil {
			b.Fatal(err)
		}
		tOwn += t1.Sub(t0)
		tEach += time.Since(t1)
	}
	b.StopTimer()
	b.ReportMetric(float64(tEach.Microseconds())/1000/float64(rounds), "verify_each_ms/op")
	b.ReportMetric(float64(tOwn.Microseconds())/1000/float64(rounds), "verify_own_ms/op")
	b.ReportMetric(float64(tEach)/float64(tOwn), "verify_each_over_verify")
}
