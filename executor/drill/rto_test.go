package drill

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/failover"
)

func rtoPolicy(ttl int) failover.Policy {
	return failover.Policy{Fall: 3, Interval: 2 * time.Second, Zone: "example.org.", Records: []failover.Record{
		{Name: "lms", Type: "A", TTL: 30}, {Name: "studio", Type: "A", TTL: ttl},
	}}
}

// The estimate adds the policy's worst detection, the measured decision
// and write, the slowest server and the longest TTL, and says so.
func TestEstimateRTOSentence(t *testing.T) {
	m := Measured{Commit: 40 * time.Millisecond, Write: 160 * time.Millisecond, Propagation: []ServerPropagation{
		{Server: "ns2:53", After: 900 * time.Millisecond}, {Server: "ns1:53", After: 300 * time.Millisecond}}, OK: true}
	r := EstimateRTO(rtoPolicy(60), 1500*time.Millisecond, m)
	// The fast interval is the default, a quarter of the 2s interval.
	if r.DetectionMin != time.Second || r.DetectionMax != 7500*time.Millisecond {
		t.Errorf("got detection %s..%s, want 1s..7.5s ((fall-1)×fast_interval to fall×interval + timeout)", r.DetectionMin, r.DetectionMax)
	}
	if r.Total != 7500*time.Millisecond+200*time.Millisecond+900*time.Millisecond+60*time.Second {
		t.Errorf("got total %s, want 68.6s", r.Total)
	}
	want := "a real failover now would reach most clients in ≈ 69 s (detection ≤ 7.5 s, decision and write 200 ms, propagation 900 ms, caches up to TTL 60 s)"
	if got := r.String(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if len(r.Servers) != 2 || r.Servers[0].Server != "ns1:53" || r.Servers[1].Server != "ns2:53" {
		t.Errorf("got servers %v, want ns1 first, then ns2", r.Servers)
	}
}

// The TTL check passes within the budget and fails over it, with every
// number and the TTL that would fit.
func TestTTLCheckAgainstTheBudget(t *testing.T) {
	m := Measured{Commit: 100 * time.Millisecond, Write: 400 * time.Millisecond, Propagation: []ServerPropagation{{Server: "ns1:53", After: time.Second}}, OK: true}
	for _, tc := range []struct {
		name   string
		ttl    int
		budget time.Duration
		pass   bool
		reason []string
	}{
		{"within", 60, 2 * time.Minute, true, []string{"TTL 60 s", "detection ≤ 7.5 s", "decision and write 500 ms", "propagation 1.0 s", "= 69 s, within the RTO budget 120 s"}},
		{"over", 3600, 5 * time.Minute, false, []string{"TTL 3600 s", "over the RTO budget 300 s", "a TTL of at most 291 s would fit"}},
		{"default budget", 300, 0, false, []string{"over the RTO budget 300 s"}},
		{"no ttl", 0, time.Minute, false, []string{"no record has a TTL"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := rtoPolicy(tc.ttl)
			if tc.ttl == 0 {
				p.Records = nil
			}
			c := TTLCheck(EstimateRTO(p, 1500*time.Millisecond, m), tc.budget)
			wantReason(t, c, tc.pass, tc.reason...)
		})
	}
}

// A drill that did not write and verify the canary measured nothing: the
// check says so instead of adding zeros as if they had been measured,
// and reads the times from the drill's record when it did.
func TestTTLCheckSaysWhatTheDrillMeasured(t *testing.T) {
	c := TTLCheck(EstimateRTO(rtoPolicy(60), 1500*time.Millisecond, MeasuredFrom(failover.DrillRecord{})), 0)
	wantReason(t, c, true, "TTL 60 s + detection ≤ 7.5 s = 68 s, within the RTO budget 300 s (drill.rto_budget)", "not measured")
	if strings.Contains(c.Reason, "0 ms") {
		t.Errorf("reason %q adds unmeasured times as 0 ms", c.Reason)
	}
	base := time.Unix(1_700_000_000, 0).UnixNano()
	ms := int64(time.Millisecond)
	d := failover.DrillRecord{RequestedAt: base, StartedAt: base + 6*ms, Canary: failover.DrillCanary{TTL: 60}, Steps: []failover.DrillStepRecord{
		{Step: failover.DrillStepBackupWritten, At: base + 17*ms},
		{Step: failover.DrillStepBackupVerified, At: base + 19*ms, Servers: []failover.ServerVerification{{Server: "ns1:53", VerifiedAt: base + 20*ms}}},
	}}
	c = TTLCheck(EstimateRTO(rtoPolicy(60), 1500*time.Millisecond, MeasuredFrom(d)), 0)
	wantReason(t, c, true, "decision and write 17 ms", "propagation 3 ms")
}

// fakeRemediator plans what its function says; Apply must never be called.
type fakeRemediator struct {
	name string
	plan func(context.Context) ([]remediate.Action, error)
	t    *testing.T
}

func (f fakeRemediator) Name() string                                         { return f.name }
func (f fakeRemediator) Plan(ctx context.Context) ([]remediate.Action, error) { return f.plan(ctx) }
func (f fakeRemediator) Apply(context.Context, remediate.Action) error {
	f.t.Errorf("%s: Apply called during a drill's plan", f.name)
	return nil
}

// The plan lists every action with its mode, report-only ones saying why;
// a remediation that cannot plan fails the check naming it; none enabled
// passes saying so. Nothing is applied.
func TestPlanCheckListsTheActions(t *testing.T) {
	ctx := t.Context()
	if c := PlanCheck(ctx, nil); !c.Pass || !strings.Contains(c.Reason, "no remediation is enabled") {
		t.Errorf("no entries: got %+v", c)
	}
	warm := fakeRemediator{t: t, name: "backup-warmup", plan: func(context.Context) ([]remediate.Action, error) {
		return []remediate.Action{{Target: "deployment/lms/web", Verb: "scale", Reason: "backup active: scale to 3", Key: "k1"}}, nil
	}}
	lb := fakeRemediator{t: t, name: "octavia-stuck-lb", plan: func(context.Context) ([]remediate.Action, error) {
		return []remediate.Action{{Target: "loadbalancer/5f0c", Verb: "failover", Reason: "provisioning_status ERROR", Key: "k2", ReportOnly: "not admin"}}, nil
	}}
	entries := []remediate.Entry{{Remediator: warm, Settings: remediate.Settings{Mode: remediate.ModeOn}}, {Remediator: lb, Settings: remediate.Settings{Mode: remediate.ModeDryRun}}}
	c := PlanCheck(ctx, entries)
	wantReason(t, c, true, "2 action(s) planned", "backup-warmup (on): scale deployment/lms/web: backup active: scale to 3",
		"octavia-stuck-lb (report-only): failover loadbalancer/5f0c: provisioning_status ERROR; not applied: not admin")

	broken := fakeRemediator{t: t, name: "orphaned-pods", plan: func(context.Context) ([]remediate.Action, error) {
		return nil, errors.New("kube api: connection refused")
	}}
	c = PlanCheck(ctx, append(entries, remediate.Entry{Remediator: broken, Settings: remediate.Settings{Mode: remediate.ModeDryRun}}))
	wantReason(t, c, false, "backup-warmup (on)", "could not plan: orphaned-pods: kube api: connection refused")
}

// Readiness runs them all: one check per certificate target, the TTL
// against the budget, the plan.
func TestReadinessRunsEveryCheck(t *testing.T) {
	cs := Readiness(t.Context(), Input{Now: time.Now(), Certificates: []CertTarget{{Name: "lms.example.org"}},
		CertMinValidity: time.Hour, Policy: rtoPolicy(60), ProbeTimeout: time.Second, RTOBudget: 2 * time.Minute})
	var names []string
	for _, c := range cs {
		names = append(names, c.Name)
	}
	if got, want := strings.Join(names, ","), "certificate lms.example.org,ttl vs rto budget,remediation plan"; got != want {
		t.Errorf("got checks %s, want %s", got, want)
	}
}
