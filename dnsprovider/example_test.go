package dnsprovider_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/libdns/libdns"
)

// memoryZone is a libdns provider that keeps one zone in memory and counts
// the writes it is asked for: the shape of any libdns client (Cloudflare,
// Route 53, ...), without the network.
type memoryZone struct {
	mu     sync.Mutex
	rrs    []libdns.RR
	writes int
}

func (z *memoryZone) GetRecords(context.Context, string) ([]libdns.Record, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	out := make([]libdns.Record, len(z.rrs))
	for i, rr := range z.rrs {
		out[i] = rr
	}
	return out, nil
}

// SetRecords makes each (name, type) of recs hold exactly recs' records.
func (z *memoryZone) SetRecords(_ context.Context, _ string, recs []libdns.Record) ([]libdns.Record, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.writes++
	replaced := map[[2]string]bool{}
	for _, r := range recs {
		replaced[[2]string{r.RR().Name, r.RR().Type}] = true
	}
	var kept []libdns.RR
	for _, rr := range z.rrs {
		if !replaced[[2]string{rr.Name, rr.Type}] {
			kept = append(kept, rr)
		}
	}
	for _, r := range recs {
		kept = append(kept, r.RR())
	}
	z.rrs = kept
	return recs, nil
}

// A DNS provider is a Provider bound to one zone. One reached through
// libdns is its client wrapped by NewLibdns, which reads before it writes
// so a re-apply makes no API call; it has no compare-and-swap (no
// CompareAndSwapper), so its fencing is the weaker kind the package doc
// describes. Inside dnsprovider, plugging a new one in is its section type
// (its rules, the credentials it reads, and a build that wraps the client
// like this) and one line of the providers table.
func ExampleNewLibdns() {
	ctx := context.Background()
	zone := &memoryZone{rrs: []libdns.RR{{Name: "lms", Type: "A", TTL: time.Minute, Data: "203.0.113.10"}}}
	var p dnsprovider.Provider = dnsprovider.NewLibdns("memory", "example.org.", zone, nil)

	backup := []dnsprovider.RRset{{Name: "lms", Type: "A", TTL: time.Minute, Values: []string{"198.51.100.10"}}}
	for range 2 {
		changed, err := p.SetRecords(ctx, backup)
		fmt.Println("changed:", len(changed), "error:", err, "writes so far:", zone.writes)
	}
	got, err := p.GetRecords(ctx, []dnsprovider.RRsetID{{Name: "lms", Type: "A"}})
	fmt.Println(got[0].Name, got[0].Type, got[0].TTL, got[0].Values, err)
	_, cas := p.(dnsprovider.CompareAndSwapper)
	fmt.Println("compare-and-swap:", cas)
	// Output:
	// changed: 1 error: <nil> writes so far: 1
	// changed: 0 error: <nil> writes so far: 1
	// lms A 1m0s [198.51.100.10] <nil>
	// compare-and-swap: false
}
