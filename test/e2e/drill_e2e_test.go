package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/api"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/faultproxy"
	"github.com/miekg/dns"
)

// The drill's canary and its fence, as the default drill.record names them.
const (
	CanaryName     = "drwatch-drill." + Name
	DrillFenceName = "_drwatch-drill." + Zone
)

// Drills against real BIND and real Caddy, in one world to keep the suite
// short: a drill passes and reports an RTO; a drill with the backup Caddy
// down fails by the rule a real failover would face and writes nothing; a
// drill with BIND down fails
// and is rolled back once BIND is back; a leader SIGKILLed mid-drill leaves
// the drill to the next leader, which rolls it back and ends it once, with
// the canary at its primary values. After every drill the production RRsets at BIND are
// byte-identical to what they were before the first.
func TestDrills(t *testing.T) {
	// A 2 s interval gives the DNS exchanges a 2 s timeout, room for the
	// delay the last case puts on every write.
	w := Start(t, Options{Interval: 2 * time.Second, Timeout: time.Second})
	before := productionBytes(t, w)

	t.Run("a drill passes and reports an RTO", func(t *testing.T) {
		f := w.Follower()
		out, stderr, code := w.CLI(f, "drill", "--reason", "e2e rehearsal", "--timeout", "60s")
		if code != 0 {
			t.Fatalf("drill: exit %d\n%s\n%s", code, out, stderr)
		}
		t.Logf("drwatch drill:\n%s", out)
		for _, want := range []string{"PASSED", "backup_written", "backup_verified", "primary_written", "primary_verified",
			"[PASS] dns_credentials", "[PASS] ttl vs rto budget", "a real failover now would reach most clients in ≈"} {
			if !strings.Contains(out, want) {
				t.Errorf("drill output lacks %q:\n%s", want, out)
			}
		}
		d := lastDrill(t, w, f)
		checkDrillEnd(t, w, before, d, failover.DrillPassed)
		if d.RTO == nil || d.RTO.PropagationSeconds <= 0 || len(d.RTO.Servers) == 0 || d.RTO.TTLSeconds != 5 {
			t.Errorf("drill %d RTO: got %+v, want a propagation time per server and the record's TTL of 5 s", d.ID, d.RTO)
		}
		code, metrics, err := w.get(f, "/metrics")
		if err != nil || code != 200 || !strings.Contains(metrics, "drwatch_drill_last_success_timestamp_seconds ") ||
			!strings.Contains(metrics, `drwatch_drill_rto_seconds{step="total"}`) {
			t.Errorf("metrics of %s (%d, %v) lack the drill's:\n%s", f.ID, code, err, strings.Join(grepLines(metrics, "drwatch_drill"), "\n"))
		}
		if code, page, _ := w.get(f, "/"); code != 200 || !strings.Contains(page, "last drill passed") {
			t.Errorf("status page of %s: no \"last drill passed\" line", f.ID)
		}
	})

	t.Run("a drill with the backup Caddy down fails and says why, writing nothing", func(t *testing.T) {
		backup := w.Sites[failover.Backup].Caddy
		if err := backup.Stop(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := backup.Start(); err != nil {
				t.Fatalf("restart the backup Caddy: %v", err)
			}
			w.WaitHealthy(60 * time.Second)
		})
		Eventually(t, 60*time.Second, func() bool {
			st, ok := w.LeaderView()
			return ok && st.State.Sites[failover.Backup].Verdict == failover.Down
		}, "the leader sees the backup DOWN at quorum")
		f := w.Follower()
		canaryBefore, err := w.query(DrillFenceName, dns.TypeTXT)
		if err != nil {
			t.Fatal(err)
		}
		out, stderr, code := w.CLI(f, "drill", "--reason", "e2e drill with the backup down", "--timeout", "60s")
		if code != 1 {
			t.Fatalf("drill with the backup down: exit %d, want 1 (failed)\n%s\n%s", code, out, stderr)
		}
		for _, want := range []string{"FAILED", failover.RuleTargetUnhealthy, "backup"} {
			if !strings.Contains(out, want) {
				t.Errorf("drill output lacks %q:\n%s", want, out)
			}
		}
		d := lastDrill(t, w, f)
		if d.Outcome != failover.DrillFailed || d.Rule != failover.RuleTargetUnhealthy || len(d.Steps) != 0 {
			t.Errorf("drill %d: got %s, rule %q, steps %s; want failed by %s before any step", d.ID, d.Outcome, d.Rule, stepNames(d.DrillRecord), failover.RuleTargetUnhealthy)
		}
		if got, err := w.Lookup(CanaryName); err != nil || len(got) != 1 || got[0] != PrimaryIP {
			t.Errorf("after drill %d the canary is %v (%v), want its primary value %s", d.ID, got, err, PrimaryIP)
		}
		if after, err := w.query(DrillFenceName, dns.TypeTXT); err != nil || fmt.Sprint(after.Answer) != fmt.Sprint(canaryBefore.Answer) {
			t.Errorf("drill %d moved the drill fence from %v to %v (%v); a drill failed by a rule writes nothing", d.ID, canaryBefore.Answer, after, err)
		}
		if after := productionBytes(t, w); string(after) != string(before) {
			t.Errorf("after drill %d the production RRsets at BIND changed", d.ID)
		}
	})

	t.Run("a drill with the DNS server down fails and is rolled back", func(t *testing.T) {
		f := w.Follower()
		w.StopBIND()
		code, body, err := w.Post(f, "/api/v1/drill", w.Token, `{"reason":"e2e drill with BIND down"}`)
		if err != nil || code != 200 {
			w.RestartBIND()
			t.Fatalf("POST /api/v1/drill: %d %v %s", code, err, body)
		}
		var resp api.WriteResponse
		if err := json.Unmarshal([]byte(body), &resp); err != nil {
			t.Fatal(err)
		}
		Eventually(t, 60*time.Second, func() bool {
			h, ok := drills(w, f)
			return ok && h.Running != nil && h.Running.ID == resp.Index && hasStep(h.Running.DrillRecord, failover.DrillStepRollback)
		}, "drill %d is rolling back while BIND is down", resp.Index)
		w.RestartBIND()
		d := waitDrillEnded(t, w, f, resp.Index)
		checkDrillEnd(t, w, before, d, failover.DrillFailed)
		if d.Rule != failover.DrillStepBackupWritten {
			t.Errorf("drill %d: got rule %q (%s), want the step that failed, backup_written", d.ID, d.Rule, d.Detail)
		}
	})

	t.Run("a leader SIGKILLed mid-drill: the next leader ends it once", func(t *testing.T) {
		// Every write of the drill takes a second or more, so the leader
		// can be killed between the canary's write and its write back.
		w.SetDNSMode(faultproxy.Delay(600 * time.Millisecond))
		t.Cleanup(func() { w.SetDNSMode(faultproxy.Pass) })
		old := w.Leader()
		f := w.Follower()
		code, body, err := w.Post(f, "/api/v1/drill", w.Token, `{"reason":"e2e drill, leader killed"}`)
		if err != nil || code != 200 {
			t.Fatalf("POST /api/v1/drill: %d %v %s", code, err, body)
		}
		var resp api.WriteResponse
		if err := json.Unmarshal([]byte(body), &resp); err != nil {
			t.Fatal(err)
		}
		id := resp.Index
		var mid api.DrillReport
		Eventually(t, 30*time.Second, func() bool {
			h, ok := drills(w, f)
			if !ok {
				return false
			}
			for _, d := range h.Drills {
				if d.ID == id {
					t.Fatalf("drill %d ended (%s) before the leader could be killed mid-drill", id, d.Outcome)
				}
			}
			if h.Running != nil && h.Running.ID == id && hasStep(h.Running.DrillRecord, failover.DrillStepBackupWritten) &&
				!hasStep(h.Running.DrillRecord, failover.DrillStepPrimaryWritten) {
				mid = *h.Running
				return true
			}
			return false
		}, "drill %d has written the canary to the backup values", id)
		old.Kill()
		t.Logf("killed leader %s with drill %d at steps %s", old.ID, id, stepNames(mid.DrillRecord))
		d := waitDrillEnded(t, w, f, id)
		if d.EndedBy == old.ID {
			t.Errorf("drill %d ended by the killed leader %s, want the next one", id, old.ID)
		}
		if !hasStep(d.DrillRecord, failover.DrillStepInterrupted) {
			t.Errorf("drill %d: got steps %s, want the next leader's interrupted step", id, stepNames(d.DrillRecord))
		}
		checkDrillEnd(t, w, before, d, failover.DrillRolledBack)
		h, err := w.History(f)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range h {
			if e.Kind == failover.KindDrill && strings.Contains(e.Detail, fmt.Sprintf("drill %d ", id)) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("history has %d entries for drill %d, want exactly one:\n%s", n, id, Summary(h))
		}
	})
}

// productionBytes is every production RRset BIND serves (the flipped
// record and the production fence), in wire format with each answer's
// rcode (an absent fence is NXDOMAIN).
func productionBytes(t *testing.T, w *World) []byte {
	t.Helper()
	var out []byte
	for _, q := range []struct {
		name string
		typ  uint16
	}{{Name, dns.TypeA}, {Name, dns.TypeAAAA}, {FenceName, dns.TypeTXT}} {
		var r *dns.Msg
		Eventually(t, 20*time.Second, func() bool {
			m := new(dns.Msg)
			m.SetQuestion(q.name, q.typ)
			m.RecursionDesired = false
			var err error
			r, _, err = (&dns.Client{Net: "tcp", Timeout: 2 * time.Second}).Exchange(m, w.BIND.Addr)
			return err == nil
		}, "BIND answers %s %s", q.name, dns.TypeToString[q.typ])
		b, err := (&dns.Msg{MsgHdr: dns.MsgHdr{Rcode: r.Rcode}, Answer: r.Answer}).Pack()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}

// checkDrillEnd requires drill d to have ended with outcome, the canary at
// its primary value under the drill's write-back fence, and the production
// RRsets byte-identical to before.
func checkDrillEnd(t *testing.T, w *World, before []byte, d api.DrillReport, outcome string) {
	t.Helper()
	if d.Outcome != outcome {
		t.Errorf("drill %d: got %s (rule %q: %s), want %s", d.ID, d.Outcome, d.Rule, d.Detail, outcome)
	}
	if got, err := w.Lookup(CanaryName); err != nil || len(got) != 1 || got[0] != PrimaryIP {
		t.Errorf("after drill %d the canary is %v (%v), want its primary value %s", d.ID, got, err, PrimaryIP)
	}
	r, err := w.query(DrillFenceName, dns.TypeTXT)
	if err != nil || len(r.Answer) != 1 || strings.Join(r.Answer[0].(*dns.TXT).Txt, "") != fmt.Sprintf("gen=%d", d.ID+1) {
		t.Errorf("after drill %d the drill fence is %v (%v), want gen=%d", d.ID, r, err, d.ID+1)
	}
	if after := productionBytes(t, w); string(after) != string(before) {
		t.Errorf("after drill %d the production RRsets at BIND changed:\nbefore %x\nafter  %x", d.ID, before, after)
	}
	if got := w.Answer(); got != PrimaryIP {
		t.Errorf("after drill %d BIND answers %s for %s, want %s", d.ID, got, Name, PrimaryIP)
	}
}

func drills(w *World, n *Node) (api.DrillHistory, bool) {
	var h api.DrillHistory
	code, body, err := w.get(n, "/api/v1/drills")
	if err != nil || code != 200 {
		return h, false
	}
	return h, json.Unmarshal([]byte(body), &h) == nil
}

func lastDrill(t *testing.T, w *World, n *Node) api.DrillReport {
	t.Helper()
	h, ok := drills(w, n)
	if !ok || len(h.Drills) == 0 {
		t.Fatalf("no drill in %s's history", n.ID)
	}
	return h.Drills[len(h.Drills)-1]
}

func waitDrillEnded(t *testing.T, w *World, n *Node, id uint64) api.DrillReport {
	t.Helper()
	var d api.DrillReport
	Eventually(t, 90*time.Second, func() bool {
		h, ok := drills(w, n)
		for _, x := range h.Drills {
			if ok && x.ID == id {
				d = x
				return true
			}
		}
		return false
	}, "drill %d ended", id)
	return d
}

func hasStep(d failover.DrillRecord, step string) bool {
	_, ok := d.Step(step)
	return ok
}

func stepNames(d failover.DrillRecord) string {
	var out []string
	for _, s := range d.Steps {
		out = append(out, s.Step)
	}
	return strings.Join(out, ",")
}

// A backup certificate that expires sooner than drill.cert_min_validity
// fails the drill's certificate check, by name, while the probes (which
// only need a valid chain) keep the backup UP: the seed-000 trap of a
// backup that cannot renew while DNS points away from it. Caddy's internal
// certificates live 12 h, so a 24 h minimum is not met. The canary still
// makes its round trip and production is untouched. A certificate already
// expired fails the backup's own probes first, and a drill then fails by
// target_unhealthy, as with the backup down (TestDrills); executor/drill
// tests the check itself against a real Caddy serving an expired one.
func TestDrillFailsOnABackupCertificateExpiringSoon(t *testing.T) {
	w := Start(t, Options{Interval: 2 * time.Second, Timeout: time.Second, DrillCertMinValidity: 24 * time.Hour})
	before := productionBytes(t, w)
	f := w.Follower()
	out, stderr, code := w.CLI(f, "drill", "--reason", "e2e drill, short-lived backup certificate", "--timeout", "60s")
	if code != 1 {
		t.Fatalf("drill: exit %d, want 1 (failed)\n%s\n%s", code, out, stderr)
	}
	d := lastDrill(t, w, f)
	certName := "certificate " + strings.TrimSuffix(Name, ".")
	var cert *failover.DrillCheck
	for i, c := range d.Readiness {
		if c.Name == certName {
			cert = &d.Readiness[i]
		}
	}
	if cert == nil || cert.Pass || !strings.Contains(cert.Reason, "expires") {
		t.Errorf("drill %d readiness: got %+v, want %q failed saying when it expires", d.ID, d.Readiness, certName)
	}
	if d.Rule != certName {
		t.Errorf("drill %d: got rule %q (%s), want the failed check %q", d.ID, d.Rule, d.Detail, certName)
	}
	if !strings.Contains(out, "[FAIL] "+certName) {
		t.Errorf("drill output does not show the failed certificate check:\n%s", out)
	}
	checkDrillEnd(t, w, before, d, failover.DrillFailed)
}
