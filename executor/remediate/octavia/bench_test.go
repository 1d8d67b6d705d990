package octavia

import (
	"context"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/test/openstacktest"
)

// BenchmarkFailover measures one Apply (Keystone auth, the failover call,
// following the load balancer from ERROR to ACTIVE through the real
// octavia-worker with noop drivers) against the baseline of one Plan
// (Keystone auth and one GET) of the same load balancer, in the same run.
// Run: go test -run '^$' -bench Failover -benchtime 5x ./executor/remediate/octavia/
func BenchmarkFailover(b *testing.B) {
	s := openstacktest.Shared(b)
	ctx := context.Background()
	id, err := s.CreateLB(ctx, "bench-failover")
	if err != nil {
		b.Fatal(err)
	}
	r, err := New(OctaviaStuckLBConfig{
		OpenStackAuth:   remediate.OpenStackAuth{Cloud: "admin", CloudsFile: s.CloudsFile},
		LoadBalancers:   []string{id},
		FailoverTimeout: 2 * time.Minute,
	}, nil, WithPollInterval(100*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	var plan, apply time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if err := s.SetLBStatus(ctx, id, "ERROR", ""); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t0 := time.Now()
		acts, err := r.Plan(ctx)
		plan += time.Since(t0)
		if err != nil || len(acts) != 1 {
			b.Fatalf("plan: got %v, %v, want one action", acts, err)
		}
		t0 = time.Now()
		if err := r.Apply(ctx, acts[0]); err != nil {
			b.Fatalf("apply: %v", err)
		}
		apply += time.Since(t0)
	}
	b.ReportMetric(float64(apply.Milliseconds())/float64(b.N), "ms/failover")
	b.ReportMetric(float64(plan.Milliseconds())/float64(b.N), "ms/plan")
	b.ReportMetric(float64(apply)/float64(plan), "failover/plan")
}
