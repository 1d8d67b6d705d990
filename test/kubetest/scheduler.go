package kubetest

import (
	"context"
	"testing"
	"time"
)

// Scheduler is a running kube-scheduler of the cluster's release, with its
// default profile, talking to the API server as its admin.
type Scheduler struct {
	component
}

// SchedulerPath returns the cached kube-scheduler for version, or an error
// wrapping ErrNoBinary that says how to build it. DRWATCH_KUBE_SCHEDULER,
// when set, names the binary to use instead.
func SchedulerPath(version string) (string, error) {
	return cachedBinary("kube-scheduler", "DRWATCH_KUBE_SCHEDULER", version)
}

// StartScheduler starts kube-scheduler, of the release the cluster runs,
// with the default scheduling profile and no leader election, and waits
// until it answers /healthz. It binds every pod without spec.nodeName, so a
// test that starts it must not share the cluster with tests that create
// unbound pods and expect them to stay Pending. It fails the test, naming
// how to build the binary, when it is missing; it stops in t.Cleanup.
func (c *Cluster) StartScheduler(t testing.TB) *Scheduler {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := c.NewScheduler(ctx)
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// NewScheduler is StartScheduler for callers without a testing.TB; the
// caller must Close it. On error nothing is left running.
func (c *Cluster) NewScheduler(ctx context.Context) (*Scheduler, error) {
	bin, err := SchedulerPath(c.version)
	if err != nil {
		return nil, err
	}
	s := &Scheduler{}
	if err := c.startComponent(ctx, &s.component, "kube-scheduler", bin, nil); err != nil {
		return nil, err
	}
	return s, nil
}
