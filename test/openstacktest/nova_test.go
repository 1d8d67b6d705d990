package openstacktest

import (
	"context"
	"testing"
	"time"
)

// TestNovaStack starts Keystone, Placement and Nova with fake-driver
// computes, and drives one server the real way: scheduled to ACTIVE, a
// flavor no host fits to ERROR, and a stopped compute goes down.
func TestNovaStack(t *testing.T) {
	if testing.Short() {
		t.Skip("real OpenStack stack")
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	s := stack(t)
	id, err := s.CreateServer(ctx, ServerOpts{Name: "smoke", Host: NovaHosts[1]})
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.WaitServer(ctx, id, "ACTIVE")
	if err != nil {
		t.Fatal(err)
	}
	if v.Host != NovaHosts[1] || v.PowerState == nil || *v.PowerState != 1 {
		t.Fatalf("got host %q power %v, want %s running", v.Host, v.PowerState, NovaHosts[1])
	}
	huge, err := s.CreateServer(ctx, ServerOpts{Name: "huge", Flavor: FlavorHuge})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := s.WaitServer(ctx, huge, "ERROR"); err != nil || v.Fault == nil {
		t.Fatalf("huge flavor: got %+v %v, want ERROR with a fault", v, err)
	}
	t0 := time.Now()
	s.StopCompute(NovaHosts[2])
	if err := s.WaitService(ctx, NovaHosts[2], "down"); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped compute down after %s", time.Since(t0))
}
