package octavia

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/kube"
	"github.com/drwatch/drwatch/test/openstacktest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPoolMembers: the members of a Service's load balancer are read from
// the real Octavia, found by the cloud provider's name within the
// credentials' own project or by the ID annotated on the Service, with
// their operating status; a member with admin_state_up false is left out.
// Another project's or another cluster's load balancer is never taken for
// the Service's, a deleted one is not found, and one not ACTIVE is an
// error (its pool may be changing).
func TestPoolMembers(t *testing.T) {
	s := openstacktest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ns, name := "ingress-nginx", fmt.Sprintf("ingress-%d", time.Now().UnixNano()%1e6)
	id, err := s.CreateLB(ctx, LoadBalancerName(DefaultClusterName, ns, name))
	if err != nil {
		t.Fatal(err)
	}
	pool, err := s.AddListenerPool(ctx, id, "http", 80, "192.0.2.21", "192.0.2.31", "192.0.2.41")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetStatus(ctx, "member", pool.MemberIDs[2], "ERROR"); err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(ctx, "octavia", "UPDATE member SET enabled=0 WHERE id='"+pool.MemberIDs[1]+"'"); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	annotated := svc.DeepCopy()
	annotated.Annotations = map[string]string{AnnotationLoadBalancerID: id}
	member := remediate.OpenStackAuth{Cloud: "member", CloudsFile: s.CloudsFile}
	admin := remediate.OpenStackAuth{Cloud: "admin", CloudsFile: s.CloudsFile}
	render := func(ms []kube.PoolMember) []string {
		var out []string
		for _, m := range ms {
			st := m.OperatingStatus
			if st != "ERROR" {
				st = "-" // the noop driver's own status is not the point
			}
			out = append(out, m.Name+" "+m.Address+" "+st)
		}
		slices.Sort(out)
		return out
	}
	want := []string{"http-1 192.0.2.21 -", "http-3 192.0.2.41 ERROR"}

	for _, tc := range []struct {
		name      string
		auth      remediate.OpenStackAuth
		cluster   string
		svc       *corev1.Service
		wantFound bool
	}{
		{"by name in our project", member, "", svc, true},
		{"by annotated id", admin, "", annotated, true},
		{"by name, admin scoped to another project", admin, "", svc, false},
		{"another cluster's name", member, "other", svc, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, found, err := NewPools(tc.auth, tc.cluster).PoolMembers(ctx, tc.svc)
			if err != nil || found != tc.wantFound {
				t.Fatalf("got found=%v err=%v, want found=%v", found, err, tc.wantFound)
			}
			if found && !slices.Equal(render(got), want) {
				t.Fatalf("got members %q, want %q", render(got), want)
			}
			if !found && len(got) != 0 {
				t.Fatalf("got members %q without a load balancer", render(got))
			}
		})
	}

	t.Run("not ACTIVE: error", func(t *testing.T) {
		if err := s.SetLBStatus(ctx, id, "PENDING_UPDATE", ""); err != nil {
			t.Fatal(err)
		}
		_, found, err := NewPools(member, "").PoolMembers(ctx, svc)
		if !errors.Is(err, ErrPoolChanging) || found {
			t.Fatalf("got found=%v err=%v, want ErrPoolChanging", found, err)
		}
	})
	t.Run("deleted: not found", func(t *testing.T) {
		if err := s.SetLBStatus(ctx, id, "DELETED", ""); err != nil {
			t.Fatal(err)
		}
		_, found, err := NewPools(member, "").PoolMembers(ctx, annotated)
		if err != nil || found {
			t.Fatalf("got found=%v err=%v, want not found", found, err)
		}
		gone := annotated.DeepCopy()
		gone.Annotations[AnnotationLoadBalancerID] = "00000000-0000-0000-0000-000000000000"
		if _, found, err := NewPools(member, "").PoolMembers(ctx, gone); err != nil || found {
			t.Fatalf("missing id: got found=%v err=%v, want not found", found, err)
		}
	})
}
