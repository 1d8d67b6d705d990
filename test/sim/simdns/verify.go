package simdns

import (
	"context"
	"fmt"

	"github.com/drwatch/drwatch/dnsprovider"
)

// Verifier checks the simulated world's one authoritative server, the
// authority itself, the way dnsprovider.Verifier checks real ones. Writes
// are served at once, so it answers from one read and never waits. It has
// the shape executor/reconcile's Verifier asks for.
type Verifier struct {
	a      *Authority
	server string
}

// Verifier returns a verifier that names the server server ("" means
// "simdns") in its results.
func (a *Authority) Verifier(server string) *Verifier {
	if server == "" {
		server = "simdns"
	}
	return &Verifier{a: a, server: server}
}

// Verify reports whether the zone serves every desired RRset, TTL included.
// Like dnsprovider.Verifier, a mismatch is a result, not an error; an error
// means the check could not run (a bad RRset, ctx ended).
func (v *Verifier) Verify(ctx context.Context, desired []dnsprovider.RRset) (*dnsprovider.Verification, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("simdns verify: %w", err)
	}
	ids := make([]dnsprovider.RRsetID, len(desired))
	for i, s := range desired {
		ids[i] = s.ID()
	}
	v.a.mu.Lock()
	got, err := v.a.readLocked(ids)
	v.a.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("simdns verify: %w", err)
	}
	matched := true
	for i, s := range desired {
		if !got[i].Equal(s) {
			matched = false
		}
	}
	return &dnsprovider.Verification{Servers: []dnsprovider.ServerResult{{Server: v.server, Matched: matched, Got: got}}}, nil
}
