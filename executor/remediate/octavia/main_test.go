package octavia

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/test/openstacktest"
)

// One real Keystone + Octavia stack for the package (openstacktest.Shared),
// started on first use and stopped by TestMain after every test ran.
func TestMain(m *testing.M) {
	code := m.Run()
	openstacktest.CloseShared()
	os.Exit(code)
}

var lbSeq struct {
	sync.Mutex
	n int
}

// newLB creates an ACTIVE load balancer in the member project and sets its
// statuses in the database (empty leaves one alone).
func newLB(t *testing.T, s *openstacktest.Stack, provisioning, operating string) string {
	t.Helper()
	lbSeq.Lock()
	lbSeq.n++
	name := fmt.Sprintf("%s-%d", t.Name(), lbSeq.n)
	lbSeq.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id, err := s.CreateLB(ctx, name)
	if err != nil {
		t.Fatalf("create lb: %v", err)
	}
	if provisioning != "" || operating != "" {
		if err := s.SetLBStatus(ctx, id, provisioning, operating); err != nil {
			t.Fatalf("set lb status: %v", err)
		}
	}
	return id
}

// provisioning reads a load balancer's provisioning status as admin.
func provisioning(t *testing.T, s *openstacktest.Stack, id string) string {
	t.Helper()
	lb, err := s.LBStatus(context.Background(), id)
	if err != nil {
		t.Fatalf("read lb %s: %v", id, err)
	}
	return lb.ProvisioningStatus
}

// remediator returns an octavia-stuck-lb remediator with the clouds.yaml
// entry cloud ("admin" or "member") watching ids of the member project,
// which owns the cluster's load balancers.
func remediator(t *testing.T, s *openstacktest.Stack, cloud string, ids []string, opts ...Option) *StuckLB {
	t.Helper()
	cfg := OctaviaStuckLBConfig{
		OpenStackAuth:   remediate.OpenStackAuth{Cloud: cloud, CloudsFile: s.CloudsFile},
		ProjectID:       s.Member.ProjectID,
		LoadBalancers:   ids,
		FailoverTimeout: 2 * time.Minute,
	}
	r, err := New(cfg, nil, append([]Option{WithPollInterval(200 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
