package octavia

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/test/openstacktest"
)

// TestOnlyTheClusterProject: with admin credentials, which list every
// project's load balancers, a look-alike stuck load balancer of another
// project is never planned, counted or failed over, whether the watch list
// is empty or names it; the cluster project's own stuck load balancer is.
func TestOnlyTheClusterProject(t *testing.T) {
	s := openstacktest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ours := newLB(t, s, "ERROR", "")
	theirs, err := s.CreateLBAs(ctx, s.Admin, fmt.Sprintf("%s-other-tenant", t.Name()))
	if err != nil {
		t.Fatalf("create lb in the admin project: %v", err)
	}
	if err := s.SetLBStatus(ctx, theirs, "ERROR", ""); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name    string
		watched []string
	}{
		{"every load balancer", nil},
		{"listed by id", []string{ours, theirs}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := remediator(t, s, "admin", tc.watched)
			acts, err := r.Plan(ctx)
			if err != nil {
				t.Fatalf("plan: %v", err)
			}
			var targets []string
			for _, a := range acts {
				targets = append(targets, a.Target)
			}
			if !slices.Contains(targets, "loadbalancer/"+ours) || slices.Contains(targets, "loadbalancer/"+theirs) {
				t.Fatalf("got targets %q, want loadbalancer/%s and never the other project's loadbalancer/%s", targets, ours, theirs)
			}
			pop, err := r.Census(ctx, acts)
			if err != nil {
				t.Fatalf("census: %v", err)
			}
			if pop.Affected != len(acts) || pop.Unit != "load balancers" {
				t.Fatalf("got population %+v for %d actions, want them all affected", pop, len(acts))
			}
			if tc.watched != nil {
				if pop.Total != 1 {
					t.Fatalf("got population %+v, want 1 (the other project's is not counted)", pop)
				}
				return
			}
			// The member's own credentials see exactly the member project.
			own, err := remediator(t, s, "member", nil).Census(ctx, nil)
			if err != nil {
				t.Fatalf("member census: %v", err)
			}
			if pop.Total != own.Total {
				t.Fatalf("got %d load balancers, want the member project's %d", pop.Total, own.Total)
			}
		})
	}

	// Apply of a forged action on the other project's load balancer is
	// refused before any write.
	r := remediator(t, s, "admin", nil)
	err = r.Apply(ctx, remediate.Action{Target: "loadbalancer/" + theirs, Verb: VerbFailover, Data: theirs})
	if !errors.Is(err, remediate.ErrPrecondition) {
		t.Fatalf("apply on another project's load balancer: got %v, want ErrPrecondition", err)
	}
	if got := provisioning(t, s, theirs); got != "ERROR" {
		t.Fatalf("got provisioning_status %s for the other project's load balancer, want ERROR (untouched)", got)
	}
}
