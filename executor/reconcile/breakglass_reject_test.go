package reconcile

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/failover"
)

// healthyPrimary makes the fixture a cluster whose verified decision is the
// primary: a forced move to the backup and back, each written and verified.
func healthyPrimary(t *testing.T, f *fixture) {
	t.Helper()
	for _, site := range []failover.Site{failover.Backup, failover.Primary} {
		f.failoverTo(t, site)
		if _, err := f.rec.Pass(context.Background()); err != nil {
			t.Fatalf("pass to %s: %v", site, err)
		}
	}
	if d := f.cluster.m.Desired(); d.Active != failover.Primary || !d.Done {
		t.Fatalf("setup: desired %+v, want primary verified", d)
	}
}

// writeTXT writes only the marker TXT values, as a key that may write TXT
// and nothing else can.
func writeTXT(t *testing.T, f *fixture, values ...string) {
	t.Helper()
	if _, err := f.prov.SetRecords(context.Background(), []dnsprovider.RRset{{Name: BreakGlassName, Type: "TXT", TTL: time.Minute, Values: values}}); err != nil {
		t.Fatal(err)
	}
}

func markerValues(t *testing.T, f *fixture) []string {
	t.Helper()
	sets, err := f.prov.GetRecords(context.Background(), []dnsprovider.RRsetID{{Name: BreakGlassName, Type: "TXT"}})
	if err != nil {
		t.Fatal(err)
	}
	return sets[0].Values
}

func entriesOf(h []failover.Entry, kind string) []failover.Entry {
	var out []failover.Entry
	for _, e := range h {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// A TXT record never moves traffic: on a healthy cluster whose verified
// decision is the primary, a marker claiming a break-glass to the backup,
// with the A records left alone, is recorded as rejected (with why), and
// nothing else happens: no DNS write at all, the same decision, the marker
// left in place.
func TestMarkerWithoutProofMovesNoTraffic(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	base := BreakGlassMarker{ID: "evil", Site: failover.Backup, Actor: "alice", At: now.Add(-time.Minute), Reason: "region down"}
	otherRecords := []dnsprovider.RRset{{Name: "lms", Type: "A", Values: []string{"203.0.113.7"}}}
	tests := []struct {
		name   string
		marker func(f *fixture) string
		why    string
	}{
		{"unsigned, as version 1 wrote it", func(*fixture) string { return base.String() }, failover.MarkerUnauthenticated},
		{"signed with another key", func(f *fixture) string {
			return base.Sign([]byte("not-the-break-glass-key-0123456789"), f.sign(t, base).Scope).String()
		}, failover.MarkerForged},
		{"fields changed after signing", func(f *fixture) string {
			m := f.sign(t, base)
			m.Actor = "mallory"
			return m.String()
		}, failover.MarkerForged},
		{"for another cluster's records in the zone", func(*fixture) string {
			return base.Sign(testBreakGlassKey, MarkerScope(zone, otherRecords)).String()
		}, failover.MarkerForeign},
		{"for the same records in another zone", func(f *fixture) string {
			p, _ := f.cluster.m.Policy()
			return base.Sign(testBreakGlassKey, MarkerScope("example.org.", toProvider(p.RRsets(failover.Backup), zone))).String()
		}, failover.MarkerForeign},
		{"older than max_age", func(f *fixture) string {
			m := base
			m.At = now.Add(-DefaultBreakGlassMaxAge - time.Hour)
			return f.sign(t, m).String()
		}, failover.MarkerStale},
		{"from the future", func(f *fixture) string {
			m := base
			m.At = now.Add(time.Hour)
			return f.sign(t, m).String()
		}, failover.MarkerStale},
		{"genuine but its records are not served", func(f *fixture) string { return f.sign(t, base).String() }, failover.MarkerNotServed},
		{"malformed", func(*fixture) string { return "v=2;site=backup;go=now" }, failover.MarkerMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			healthyPrimary(t, f)
			f.rec.cfg.Now = func() time.Time { return now }
			before := f.cluster.m.Desired()
			value := tc.marker(f)
			writeTXT(t, f, value)
			updates := f.updates()

			if _, err := f.rec.Pass(context.Background()); err != nil {
				t.Fatalf("pass: %v", err)
			}
			for _, name := range []string{"lms", "studio"} {
				if got := f.lookup(t, name); !slices.Equal(got, []string{"192.0.2.1"}) {
					t.Errorf("%s = %v after a TXT-only marker, want the primary's 192.0.2.1", name, got)
				}
			}
			if n := f.updates() - updates; n != 0 {
				t.Errorf("the pass made %d DNS updates, want none", n)
			}
			if d := f.cluster.m.Desired(); d.Gen != before.Gen || d.Active != failover.Primary || !d.Done {
				t.Errorf("desired after the marker: %+v, want gen %d primary verified", d, before.Gen)
			}
			h := f.cluster.m.History()
			if n := countKind(h, failover.KindBreakGlass); n != 0 {
				t.Errorf("got %d break_glass entries, want none", n)
			}
			rej := entriesOf(h, failover.KindBreakGlassRejected)
			if len(rej) != 1 {
				t.Fatalf("got %d break_glass_rejected entries, want 1", len(rej))
			}
			if e := rej[0]; e.Rule != tc.why || e.Actor != "a" || e.Detail != failover.RejectedMarkerDetail(MarkerHash(value)) {
				t.Errorf("rejected entry %+v, want rule %s, actor a (the leader, not the claimed actor), the marker's hash", e, tc.why)
			}
			if got := markerValues(t, f); !slices.Equal(got, []string{value}) {
				t.Errorf("marker after rejection: %v, want it left in place", got)
			}
		})
	}
}

// A rejected marker is recorded once, however many passes and leaders read
// it; distinct markers are recorded at most one per MarkerRejectEvery, so
// rewriting the TXT cannot flood the history.
func TestRejectedMarkerRecordedOnceAndRateLimited(t *testing.T) {
	f := newFixture(t)
	healthyPrimary(t, f)
	now := time.Unix(1_800_000_000, 0)
	f.rec.cfg.Now = func() time.Time { return now }
	first := BreakGlassMarker{ID: "one", Site: failover.Backup, Actor: "x", At: now, Reason: "r"}.String()
	writeTXT(t, f, first)
	pass := func(rec *Reconciler) {
		t.Helper()
		if _, err := rec.Pass(context.Background()); err != nil {
			t.Fatalf("pass: %v", err)
		}
	}
	pass(f.rec)
	pass(f.rec)
	// A new leader knows the marker from the history alone.
	next, err := New(f.rec.cfg)
	if err != nil {
		t.Fatal(err)
	}
	pass(next)
	if n := countKind(f.cluster.m.History(), failover.KindBreakGlassRejected); n != 1 {
		t.Fatalf("got %d rejected entries for one marker read by three passes and two leaders, want 1", n)
	}

	second := BreakGlassMarker{ID: "two", Site: failover.Backup, Actor: "x", At: now, Reason: "r"}.String()
	writeTXT(t, f, first, second)
	pass(f.rec)
	if n := countKind(f.cluster.m.History(), failover.KindBreakGlassRejected); n != 1 {
		t.Fatalf("got %d rejected entries right after the first, want 1 (one per %s)", n, DefaultMarkerRejectEvery)
	}
	now = now.Add(DefaultMarkerRejectEvery)
	pass(f.rec)
	pass(f.rec)
	if n := countKind(f.cluster.m.History(), failover.KindBreakGlassRejected); n != 2 {
		t.Fatalf("got %d rejected entries once the interval passed, want 2", n)
	}
}

// A genuine break-glass write is recorded and its marker removed, while a
// forged marker beside it stays, recorded as rejected.
func TestGenuineMarkerBesideForgedOne(t *testing.T) {
	f := newFixture(t)
	healthyPrimary(t, f)
	m := BreakGlassMarker{ID: "real", Site: failover.Backup, Actor: "bob", At: time.Unix(1_800_000_000, 0), Reason: "region down"}
	breakGlassWrite(t, f, m, "198.51.100.1")
	forged := BreakGlassMarker{ID: "fake", Site: failover.Primary, Actor: "eve", At: m.At, Reason: "r"}.String()
	writeTXT(t, f, f.sign(t, m).String(), forged)
	if _, err := f.rec.Pass(context.Background()); err != nil {
		t.Fatalf("pass: %v", err)
	}
	h := f.cluster.m.History()
	if n := countKind(h, failover.KindBreakGlass); n != 1 {
		t.Errorf("got %d break_glass entries, want 1", n)
	}
	if n := countKind(h, failover.KindBreakGlassRejected); n != 1 {
		t.Errorf("got %d rejected entries, want 1", n)
	}
	if d := f.cluster.m.Desired(); d.Active != failover.Backup {
		t.Errorf("active %s, want backup (the genuine write)", d.Active)
	}
	if got := markerValues(t, f); !slices.Equal(got, []string{forged}) {
		t.Errorf("markers left: %v, want only the forged one", got)
	}
	if got := f.lookup(t, "lms"); !slices.Equal(got, []string{"198.51.100.1"}) {
		t.Errorf("lms = %v, want the break-glass write kept", got)
	}
}

// With no break-glass key configured, no marker counts, not even one that
// a key would verify: fail closed.
func TestNoBreakGlassKeyTrustsNoMarker(t *testing.T) {
	f := newFixture(t)
	healthyPrimary(t, f)
	f.rec.cfg.BreakGlassKey = nil
	m := BreakGlassMarker{ID: "real", Site: failover.Backup, Actor: "bob", At: time.Unix(1_800_000_000, 0), Reason: "region down"}
	breakGlassWrite(t, f, m, "198.51.100.1")
	if _, err := f.rec.Pass(context.Background()); err != nil {
		t.Fatalf("pass: %v", err)
	}
	rej := entriesOf(f.cluster.m.History(), failover.KindBreakGlassRejected)
	if len(rej) != 1 || rej[0].Rule != failover.MarkerUnauthenticated || !strings.Contains(rej[0].Reason, "dns.break_glass.key_file") {
		t.Fatalf("rejected entries %+v, want one, unauthenticated, naming dns.break_glass.key_file", rej)
	}
	if d := f.cluster.m.Desired(); d.Active != failover.Primary {
		t.Errorf("active %s, want primary", d.Active)
	}
}

func TestMarkerVerify(t *testing.T) {
	key := []byte("k-0123456789abcdef0123456789abcdef")
	now := time.Unix(1_800_000_000, 0)
	scope := MarkerScope(zone, []dnsprovider.RRset{{Name: "lms", Type: "A", Values: []string{"198.51.100.1"}}})
	m := BreakGlassMarker{ID: "x", Site: failover.Backup, Actor: "a", At: now, Reason: "r"}.Sign(key, scope)
	if err := m.Verify(key, scope, now.Add(time.Hour), time.Hour); err != nil {
		t.Errorf("genuine marker at max age: %v", err)
	}
	if err := m.Verify(key, scope, now.Add(-MarkerClockSkew), time.Hour); err != nil {
		t.Errorf("genuine marker within the clock skew: %v", err)
	}
	// The scope ignores name case, value order and TTL.
	same := MarkerScope(zone, []dnsprovider.RRset{{Name: "LMS.example.test.", Type: "A", TTL: time.Hour, Values: []string{"198.51.100.1"}}})
	if same != scope {
		t.Errorf("scope of the same records written otherwise: %s, want %s", same, scope)
	}
	override := m
	override.Override = OverrideLeader
	for _, tc := range []struct {
		name string
		m    BreakGlassMarker
		key  []byte
		at   time.Time
		why  string
	}{
		{"no key", m, nil, now, failover.MarkerUnauthenticated},
		{"override added after signing", override, key, now, failover.MarkerForged},
		{"too old", m, key, now.Add(time.Hour + time.Second), failover.MarkerStale},
		{"too far ahead", m, key, now.Add(-MarkerClockSkew - time.Second), failover.MarkerStale},
	} {
		var me *MarkerError
		if err := tc.m.Verify(tc.key, scope, tc.at, time.Hour); !errors.As(err, &me) || me.Why != tc.why {
			t.Errorf("%s: got %v, want a MarkerError %s", tc.name, err, tc.why)
		}
	}
}

func TestSignedMarkerRoundTrip(t *testing.T) {
	m := BreakGlassMarker{ID: "x1", Site: failover.Primary, Actor: "ops@example.org", At: time.Unix(1_700_000_000, 0),
		Reason: "a;b=c %20 ünïcode", Override: OverrideLeader}.Sign([]byte("k-0123456789abcdef0123456789abcdef"), "00ff")
	if !strings.HasPrefix(m.String(), "v=2;") || m.Check() != nil {
		t.Fatalf("signed marker %q: want version 2 within MaxMarkerLen", m)
	}
	got, err := ParseBreakGlassMarker(m.String())
	if err != nil || got != m {
		t.Fatalf("got %+v %v, want %+v", got, err, m)
	}
	for _, bad := range []string{
		strings.Replace(m.String(), ";mac=", ";mac2=", 1),
		strings.Replace(m.String(), "scope=00ff", "scope=", 1),
		m.String() + ";extra=1",
	} {
		if _, err := ParseBreakGlassMarker(bad); !errors.Is(err, ErrBadMarker) {
			t.Errorf("%q: got %v, want ErrBadMarker", bad, err)
		}
	}
}

func TestParseBreakGlassKey(t *testing.T) {
	if k, err := ParseBreakGlassKey([]byte("  MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n")); err != nil || len(k) != 32 {
		t.Errorf("32-byte key: got %d bytes, %v", len(k), err)
	}
	for _, bad := range []string{"", "c2hvcnQ=", "not base64!"} {
		if _, err := ParseBreakGlassKey([]byte(bad)); !errors.Is(err, ErrBadBreakGlassKey) || strings.Contains(err.Error(), bad) && bad != "" {
			t.Errorf("%q: got %v, want ErrBadBreakGlassKey that does not quote the file", bad, err)
		}
	}
}

// A break-glass write made with --ignore-leader is recorded as such: the
// override is signed into the marker and shows in the history's reason.
func TestBreakGlassOverrideIsRecorded(t *testing.T) {
	f := newFixture(t)
	m := BreakGlassMarker{ID: "over", Site: failover.Backup, Actor: "bob", At: time.Unix(1_800_000_000, 0), Reason: "leader stuck", Override: OverrideLeader}
	breakGlassWrite(t, f, m, "198.51.100.1")
	if _, err := f.rec.Pass(context.Background()); err != nil {
		t.Fatalf("pass: %v", err)
	}
	bg := entriesOf(f.cluster.m.History(), failover.KindBreakGlass)
	if len(bg) != 1 || !strings.Contains(bg[0].Reason, "overrode "+OverrideLeader) {
		t.Fatalf("break_glass entries %+v, want one whose reason names the override", bg)
	}
}
