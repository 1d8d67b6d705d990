package watcher

import (
	"log/slog"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
)

// The watcher's loops share one copy of the replicated policy until the
// policy changes: no copy per round or per entry, and a new policy as
// soon as it is applied.
func TestPolicyCacheCopiesThePolicyOnlyWhenItChanges(t *testing.T) {
	m := failover.New()
	f := NewFSM(m, slog.New(slog.DiscardHandler))
	var c policyCache
	if p, h := c.get(m); p != nil || h != "" {
		t.Fatalf("before any policy: %v %q", p, h)
	}
	at := int64(time.Second)
	f.Apply(1, stampedEntry(t, failover.Command{Payload: failover.SetFormat{Format: failover.Format}}, at))
	one := regionPolicy(2)
	f.Apply(2, stampedEntry(t, failover.Command{Payload: failover.SetPolicy{Policy: one}}, at))
	p1, h1 := c.get(m)
	if p1 == nil || h1 != one.Hash() {
		t.Fatalf("got policy %q, want %q", h1, one.Hash())
	}
	f.Apply(3, stampedEntry(t, fullObserve(one, "a", 1, at), at))
	if p, _ := c.get(m); p != p1 {
		t.Fatal("the policy was copied again although it did not change")
	}
	two := regionPolicy(3)
	f.Apply(4, stampedEntry(t, failover.Command{Payload: failover.SetPolicy{Policy: two}}, at))
	if p, h := c.get(m); h != two.Hash() || len(p.Groups) != 3 {
		t.Fatalf("after a new policy got %q with %d groups, want %q with 3", h, len(p.Groups), two.Hash())
	}
}
