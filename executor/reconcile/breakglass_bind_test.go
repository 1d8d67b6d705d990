package reconcile

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/dnsservers"
)

// bindFixture is a fixture on a real BIND whose drwatch key may write
// anything in the zone, and an attacker's provider whose key
// (dnsservers.KeyTXTOnly, an ACME DNS-01 solver's) may write only TXT. The
// cluster's verified decision is the primary.
func bindFixture(t *testing.T) (*fixture, *dnsprovider.RFC2136) {
	t.Helper()
	srv, err := dnsservers.StartBIND(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	f := newFixtureAt(t, srv.Addr, dnsservers.KeySHA256, srv.Secret, 60)
	key, err := dnsprovider.NewTSIGKey(dnsservers.KeyTXTOnly, "hmac-sha256", srv.Secret)
	if err != nil {
		t.Fatal(err)
	}
	attacker, err := dnsprovider.NewRFC2136WithKey(zone, "", srv.Addr, key, 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	healthyPrimary(t, f)
	return f, attacker
}

// Against real BIND: a key that may write only TXT writes break-glass
// markers on a healthy cluster (the one from the field, unsigned; a forged
// one; a genuine one copied from an earlier write, whose records are not
// served). The A records never change, the decision stays, and the
// history records each rejection.
func TestTXTOnlyKeyCannotMoveTrafficOnBIND(t *testing.T) {
	f, attacker := bindFixture(t)
	ctx := context.Background()
	now := time.Now()
	f.rec.cfg.Now = func() time.Time { return now }
	before := f.cluster.m.Desired()
	claim := BreakGlassMarker{ID: "0011223344556677", Site: failover.Backup, Actor: "alice", At: now.Add(-time.Minute), Reason: "region down"}
	markers := []struct {
		value, why string
	}{
		{claim.String(), failover.MarkerUnauthenticated},
		{claim.Sign([]byte("guessed-key-0123456789abcdef012345"), f.sign(t, claim).Scope).String(), failover.MarkerForged},
		{f.sign(t, claim).String(), failover.MarkerNotServed},
	}
	for i, m := range markers {
		if _, err := attacker.SetRecords(ctx, []dnsprovider.RRset{{Name: BreakGlassName, Type: "TXT", TTL: time.Minute, Values: []string{m.value}}}); err != nil {
			t.Fatalf("marker %d with the TXT-only key: %v", i, err)
		}
		for range 2 {
			if _, err := f.rec.Pass(ctx); err != nil {
				t.Fatalf("pass after marker %d: %v", i, err)
			}
		}
		for _, name := range []string{"lms", "studio"} {
			if got := f.lookup(t, name); !slices.Equal(got, []string{"192.0.2.1"}) {
				t.Fatalf("after marker %d (%s): %s = %v, want the primary's 192.0.2.1", i, m.why, name, got)
			}
		}
		if d := f.cluster.m.Desired(); d.Gen != before.Gen || d.Active != failover.Primary || !d.Done {
			t.Fatalf("after marker %d (%s): desired %+v, want gen %d primary verified", i, m.why, d, before.Gen)
		}
		now = now.Add(DefaultMarkerRejectEvery)
	}
	h := f.cluster.m.History()
	if n := countKind(h, failover.KindBreakGlass); n != 0 {
		t.Errorf("got %d break_glass entries, want none", n)
	}
	rej := entriesOf(h, failover.KindBreakGlassRejected)
	if len(rej) != len(markers) {
		t.Fatalf("got %d break_glass_rejected entries, want %d: %+v", len(rej), len(markers), rej)
	}
	for i, m := range markers {
		if rej[i].Rule != m.why || rej[i].Detail != failover.RejectedMarkerDetail(MarkerHash(m.value)) {
			t.Errorf("rejection %d: %+v, want rule %s for its marker", i, rej[i], m.why)
		}
	}
}

// Against real BIND, the look-alike that must still work: a genuine
// break-glass write (the records and a signed marker in one update, with
// the drwatch key) is recorded as break_glass, kept, and its marker removed.
func TestGenuineBreakGlassIsRecordedOnBIND(t *testing.T) {
	f, _ := bindFixture(t)
	m := BreakGlassMarker{ID: "8899aabbccddeeff", Site: failover.Backup, Actor: "bob", At: time.Now(), Reason: "region down, no quorum"}
	breakGlassWrite(t, f, m, "198.51.100.1")
	if _, err := f.rec.Pass(context.Background()); err != nil {
		t.Fatalf("pass: %v", err)
	}
	h := f.cluster.m.History()
	if n := countKind(h, failover.KindBreakGlass); n != 1 {
		t.Fatalf("got %d break_glass entries, want 1", n)
	}
	if n := countKind(h, failover.KindBreakGlassRejected); n != 0 {
		t.Errorf("got %d rejected entries, want none", n)
	}
	if d := f.cluster.m.Desired(); d.Active != failover.Backup || !d.Done {
		t.Errorf("desired %+v, want backup verified", d)
	}
	for _, name := range []string{"lms", "studio"} {
		if got := f.lookup(t, name); !slices.Equal(got, []string{"198.51.100.1"}) {
			t.Errorf("%s = %v, want the break-glass write kept", name, got)
		}
	}
	if got := markerValues(t, f); len(got) != 0 {
		t.Errorf("marker not removed: %v", got)
	}
}
