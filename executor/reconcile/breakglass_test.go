package reconcile

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/failover"
)

// testBreakGlassKey is the fixture's break-glass key.
var testBreakGlassKey = []byte("break-glass-test-key-0123456789abcdef")

// sign signs m as `dns set` does, for the records of m.Site under the
// fixture's replicated policy.
func (f *fixture) sign(t *testing.T, m BreakGlassMarker) BreakGlassMarker {
	t.Helper()
	p, _ := f.cluster.m.Policy()
	if p == nil {
		t.Fatal("sign: no policy")
	}
	return m.Sign(testBreakGlassKey, MarkerScope(zone, toProvider(p.RRsets(m.Site), zone)))
}

// breakGlassWrite writes what `dns set --no-quorum` writes: lms and studio
// at ip, and m signed. The reconciler's clock is set a minute after m.At,
// so the marker is fresh.
func breakGlassWrite(t *testing.T, f *fixture, m BreakGlassMarker, ip string) {
	t.Helper()
	m = f.sign(t, m)
	f.rec.cfg.Now = func() time.Time { return m.At.Add(time.Minute) }
	sets := []dnsprovider.RRset{
		{Name: "lms", Type: "A", TTL: time.Minute, Values: []string{ip}},
		{Name: "studio", Type: "A", TTL: time.Minute, Values: []string{ip}},
		m.MarkerRRset(time.Minute),
	}
	if _, err := f.prov.SetRecords(context.Background(), sets); err != nil {
		t.Fatal(err)
	}
}

func countKind(h []failover.Entry, kind string) int {
	n := 0
	for _, e := range h {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// A write made without quorum is recorded in the log by the next leader and
// is never reverted, even when a decision for the other site was in flight.
func TestBreakGlassIsRecordedNotReverted(t *testing.T) {
	f := newFixture(t)
	f.failoverTo(t, failover.Primary) // no-op: already primary
	// An in-flight decision the old leader could not finish: move to primary again
	// after a forced failover to backup, left unverified.
	f.failoverTo(t, failover.Backup)
	f.failoverTo(t, failover.Primary)
	inflight := f.cluster.m.Desired()
	if inflight.Done || inflight.Active != failover.Primary {
		t.Fatalf("setup: desired %+v", inflight)
	}
	m := BreakGlassMarker{ID: "n0nce", Site: failover.Backup, Actor: "alice", At: time.Unix(1_800_000_000, 0), Reason: "no quorum; region down"}
	breakGlassWrite(t, f, m, "198.51.100.1")

	if _, err := f.rec.Pass(context.Background()); err != nil {
		t.Fatalf("pass: %v", err)
	}
	if got := f.lookup(t, "lms"); got[0] != "198.51.100.1" {
		t.Fatalf("break-glass write reverted: lms = %v", got)
	}
	d := f.cluster.m.Desired()
	if d.Active != failover.Backup || d.Gen <= inflight.Gen || !d.Done {
		t.Errorf("got desired %s gen %d done %v; want backup, a newer gen than %d, verified", d.Active, d.Gen, d.Done, inflight.Gen)
	}
	h := f.cluster.m.History()
	if n := countKind(h, failover.KindBreakGlass); n != 1 {
		t.Fatalf("got %d break_glass entries, want 1", n)
	}
	for _, e := range h {
		if e.Kind == failover.KindBreakGlass && (e.Actor != "alice" || !e.Forced || !strings.Contains(e.Reason, "region down")) {
			t.Errorf("break_glass entry: %+v", e)
		}
	}
	sets, _ := f.prov.GetRecords(context.Background(), []dnsprovider.RRsetID{{Name: BreakGlassName, Type: "TXT"}})
	if len(sets[0].Values) != 0 {
		t.Errorf("marker not removed: %v", sets[0].Values)
	}
	if fence, _ := f.prov.GetFence(context.Background()); fence != d.Gen {
		t.Errorf("fence %d, want the break-glass gen %d", fence, d.Gen)
	}
}

// A leader lost between recording the write and removing the marker: the
// next one removes the marker without recording the write twice.
func TestBreakGlassRecordedOnce(t *testing.T) {
	f := newFixture(t)
	m := BreakGlassMarker{ID: "again", Site: failover.Backup, Actor: "bob", At: time.Unix(1_800_000_000, 0), Reason: "drill"}
	breakGlassWrite(t, f, m, "198.51.100.1")
	f.cluster.step(t, failover.Command{Payload: failover.BreakGlass{Site: failover.Backup, Actor: "bob", Reason: "drill " + breakGlassTag("again")}})
	if _, err := f.rec.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := countKind(f.cluster.m.History(), failover.KindBreakGlass); n != 1 {
		t.Errorf("got %d break_glass entries, want 1", n)
	}
}

func TestMarkerRoundTrip(t *testing.T) {
	m := BreakGlassMarker{ID: "x1", Site: failover.Primary, Actor: "ops@example.org", At: time.Unix(1_700_000_000, 0), Reason: "a;b=c %20 ünïcode"}
	got, err := ParseBreakGlassMarker(m.String())
	if err != nil {
		t.Fatal(err)
	}
	if got != m {
		t.Errorf("got %+v, want %+v", got, m)
	}
	for _, bad := range []string{"", "v=2;id=a;site=backup;actor=a;at=1;reason=", "v=1;id=a;site=mars;actor=a;at=1;reason=",
		"v=1;id=;site=backup;actor=a;at=1;reason=", "v=1;id=a;site=backup;actor=a;at=x;reason=", "v=1;v=1;id=a;site=backup;actor=a;at=1;reason=",
		"v=1;id=a;site=backup;actor=a;at=1;reason=;extra=1", "v=1;id=a;site=backup;actor=a;at=1;reason=%zz", strings.Repeat("a", MaxMarkerLen+1)} {
		if _, err := ParseBreakGlassMarker(bad); err == nil {
			t.Errorf("%q: got nil error", bad)
		}
	}
}

// A marker is written only if it reads back: a reason that percent-encoding
// pushes past MaxMarkerLen is refused before the write.
func TestBreakGlassMarkerCheckRefusesWhatCannotReadBack(t *testing.T) {
	m := BreakGlassMarker{ID: "x1", Site: failover.Backup, Actor: "ops", At: time.Unix(1_700_000_000, 0), Reason: strings.Repeat("!", 400)}
	if _, err := ParseBreakGlassMarker(m.String()); err == nil {
		t.Fatal("a 400-character reason of '!' reads back; the test needs one that does not")
	}
	if err := m.Check(); !errors.Is(err, ErrBadMarker) || !strings.Contains(err.Error(), "once encoded") {
		t.Fatalf("Check of a marker that cannot read back: got %v, want ErrBadMarker naming the encoded length", err)
	}
	m.Reason = "region down, no quorum"
	if err := m.Check(); err != nil {
		t.Fatalf("Check of an ordinary marker: %v", err)
	}
}

func FuzzParseBreakGlassMarker(f *testing.F) {
	f.Add(BreakGlassMarker{ID: "x", Site: failover.Backup, Actor: "a", At: time.Unix(1, 0), Reason: "r"}.String())
	f.Add("v=1;id=a;site=backup;actor=a;at=1;reason=")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseBreakGlassMarker(s)
		if err != nil {
			return
		}
		if m.Check() != nil {
			// Its canonical encoding is too long: no writer may write it
			// (dns set refuses it), so it need not read back.
			return
		}
		again, err := ParseBreakGlassMarker(m.String())
		if err != nil || again != m {
			t.Fatalf("round trip of %q: got %+v %v, want %+v", s, again, err, m)
		}
	})
}

// A marker written by a CLI older than the text rule, with control
// characters in its reason and actor, is still recorded: escaped, not refused.
func TestBreakGlassWithControlCharactersIsRecordedEscaped(t *testing.T) {
	f := newFixture(t)
	m := BreakGlassMarker{ID: "ctl", Site: failover.Backup, Actor: "eve\x1b[2J", At: time.Unix(1_800_000_000, 0), Reason: "down\n12 forged\x00"}
	breakGlassWrite(t, f, m, "198.51.100.1")
	if _, err := f.rec.Pass(context.Background()); err != nil {
		t.Fatalf("pass: %v", err)
	}
	for _, e := range f.cluster.m.History() {
		if e.Kind != failover.KindBreakGlass {
			continue
		}
		if e.Actor != `eve\x1b[2J` || !strings.HasPrefix(e.Reason, `down\n12 forged\x00 `) {
			t.Errorf("got actor %q reason %q, want them escaped", e.Actor, e.Reason)
		}
		return
	}
	t.Error("got no break_glass entry, want the write recorded")
}
