package sim

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/failover"
)

// Invariant 5 must flag two automatic flips within the block window with
// no ack between, and pass them once apart or acknowledged.
func TestAntiFlapCheckNeedsAnAckWithinTheWindow(t *testing.T) {
	at := func(s int) int64 { return time.Unix(1000+int64(s), 0).UnixNano() }
	flip := func(i uint64, s int, kind string) failover.Entry {
		return failover.Entry{Index: i, Gen: i, At: at(s), Kind: kind}
	}
	for _, tc := range []struct {
		name    string
		history []failover.Entry
		want    bool
	}{
		{"two flips 10s apart", []failover.Entry{flip(5, 0, failover.KindAutoFailover), flip(9, 10, failover.KindAutoFailback)}, true},
		{"two flips a window apart", []failover.Entry{flip(5, 0, failover.KindAutoFailover), flip(9, 30, failover.KindAutoFailback)}, false},
		{"acked between", []failover.Entry{flip(5, 0, failover.KindAutoFailover), {Index: 7, At: at(5), Kind: failover.KindAck},
			flip(9, 10, failover.KindAutoFailback)}, false},
		{"ack before the first only", []failover.Entry{{Index: 3, At: at(0), Kind: failover.KindAck}, flip(5, 1, failover.KindAutoFailover),
			flip(9, 10, failover.KindAutoFailback)}, true},
		{"manual flip between", []failover.Entry{flip(5, 0, failover.KindAutoFailover), flip(7, 5, failover.KindManualFailback),
			flip(9, 10, failover.KindAutoFailover)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := antiFlapViolation(tc.history, 30*time.Second)
			if (got != "") != tc.want {
				t.Fatalf("violation: got %q, want one: %v", got, tc.want)
			}
		})
	}
}

// Invariant 2 must flag a write that takes the fence back, a fence whose
// records are not its decision's, and a fence naming a generation no
// replica decided.
func TestFencingCheckFlagsALoweredFenceAndMismatchedRecords(t *testing.T) {
	newWorld := func(t *testing.T) (*World, *failover.Machine) {
		w := checkWorld()
		var err error
		if w.auth, err = newAuthority(w.policy); err != nil {
			t.Fatal(err)
		}
		m := failover.New()
		for i, c := range []failover.Command{
			{At: 1, Payload: failover.SetPolicy{Policy: w.policy}},
			{At: 2, Payload: failover.Failover{To: failover.Backup, Force: true, Actor: "alice", Reason: "drill"}},
		} {
			b, err := failover.Encode(c)
			if err != nil {
				t.Fatal(err)
			}
			m.Apply(uint64(i+1), b)
		}
		w.nodes = []*simNode{{id: "a", machine: m}}
		return w, m
	}
	primary, backup := siteRecords(simPolicy(), failover.Primary), siteRecords(simPolicy(), failover.Backup)

	t.Run("the decision's records", func(t *testing.T) {
		w, m := newWorld(t)
		if err := w.auth.Client("").Swap(context.Background(), primary, backup, 0, m.Desired().Gen); err != nil {
			t.Fatal(err)
		}
		w.checkFencing()
		if len(w.violations) > 0 {
			t.Fatalf("got %v, want no violation", w.violations)
		}
	})
	t.Run("other records under the fence", func(t *testing.T) {
		w, m := newWorld(t)
		if err := w.auth.Client("").Swap(context.Background(), primary, primary, 0, m.Desired().Gen); err != nil {
			t.Fatal(err)
		}
		w.checkFencing()
		if len(w.violations) != 1 || !strings.Contains(w.violations[0], "invariant 2") {
			t.Fatalf("got %v, want one invariant 2 violation", w.violations)
		}
	})
	t.Run("a fence naming a generation no replica decided", func(t *testing.T) {
		w, m := newWorld(t)
		// Index 1 set the policy: an entry below the latest decision,
		// but no decision.
		if err := w.auth.Client("").Swap(context.Background(), primary, backup, 0, m.Desired().Gen-1); err != nil {
			t.Fatal(err)
		}
		w.checkFencing()
		if len(w.violations) != 1 || !strings.Contains(w.violations[0], "no replica ever applied") {
			t.Fatalf("got %v, want one invariant 2 violation for an undecided generation", w.violations)
		}
	})
	t.Run("fence lowered", func(t *testing.T) {
		w, m := newWorld(t)
		gen := m.Desired().Gen
		c := w.auth.Client("")
		if err := c.Swap(context.Background(), primary, backup, 0, gen); err != nil {
			t.Fatal(err)
		}
		if err := c.Swap(context.Background(), backup, []dnsprovider.RRset{backup[0]}, gen, gen-1); err != nil {
			t.Fatal(err)
		}
		w.checkFencing()
		if len(w.violations) != 1 || !strings.Contains(w.violations[0], "back to gen=") {
			t.Fatalf("got %v, want the fence going back", w.violations)
		}
	})
}

// Invariant 7's hourly check must flag repairs beyond the cap that every
// replica recorded, and allow one whose record was lost with its leader.
func TestRemediationCapCheckAllowsOnlyUnrecordedExcess(t *testing.T) {
	record := func(m *failover.Machine, index uint64, key string) {
		recordRepair(t, m, index, remediationName, key, failover.RemediationApplied)
	}
	for _, tc := range []struct {
		name     string
		recorded int
		want     bool
	}{
		{"four repairs, all recorded", 4, true},
		{"four repairs, one unrecorded", 3, false},
		{"three repairs", 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := checkWorld()
			m := failover.New()
			w.nodes = []*simNode{{id: "a", machine: m}}
			ran := 4
			if tc.name == "three repairs" {
				ran = 3
			}
			for i := range ran {
				key := "t" + string(rune('1'+i)) + "#1"
				w.actions = append(w.actions, remAction{remediation: remediationName, node: "a", target: key[:2], key: key})
				if i < tc.recorded {
					record(m, uint64(i+1), key)
				}
			}
			w.checkRemediationCaps()
			if got := len(w.violations) > 0; got != tc.want {
				t.Fatalf("violation: got %v (%v), want %v", got, w.violations, tc.want)
			}
		})
	}
}

// recordRepair applies a record of remediation name's action key with
// result, by node a, at index.
func recordRepair(t *testing.T, m *failover.Machine, index uint64, name, key, result string) {
	t.Helper()
	b, err := failover.Encode(failover.Command{At: int64(index), Payload: failover.Remediation{Name: name,
		Target: "node/" + key, Verb: "repair", Result: result, Key: name + "/" + key, Actor: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	m.Apply(index, b)
}

// Invariant 7's hourly check counts a repair as recorded once any check
// saw its record, so that the churning repair's records, pushing it out of
// the bounded records, do not make it look unrecorded and excuse an excess.
func TestRemediationCapCheckRemembersEvictedRecords(t *testing.T) {
	w := checkWorld()
	m := failover.New()
	w.nodes = []*simNode{{id: "a", machine: m}}
	idx := uint64(0)
	repair := func(i int) {
		key := "t" + strconv.Itoa(i) + "#1"
		w.actions = append(w.actions, remAction{remediation: remediationName, node: "a", target: key[:2], key: key})
		idx++
		recordRepair(t, m, idx, remediationName, key, failover.RemediationApplied)
		w.checkRemediationCaps()
	}
	for i := range remediationSettings.MaxPerHour {
		repair(i)
	}
	if len(w.violations) > 0 {
		t.Fatalf("violations %v within the cap", w.violations)
	}
	for i := range failover.MaxRemediations {
		idx++
		recordRepair(t, m, idx, churnName, "c"+strconv.Itoa(i)+"#1", failover.RemediationDryRun)
	}
	repair(remediationSettings.MaxPerHour)
	if len(w.violations) == 0 {
		t.Fatalf("no violation for %d recorded repairs, cap %d, after a churn evicted the first records", remediationSettings.MaxPerHour+1, remediationSettings.MaxPerHour)
	}
}
