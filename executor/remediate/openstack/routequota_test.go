package openstack

import (
	"context"
	"strings"
	"testing"
)

func TestReadRouteQuotaCountsEveryRouteAndWritesNothing(t *testing.T) {
	w := newWorld(t)
	if err := w.addRoutes(
		"198.19.1.0/24>10.180.0.3",
		"198.19.2.0/24>10.180.0.4",
		"10.0.0.0/8>10.180.0.1", // outside the pod CIDR: Neutron counts it too
	); err != nil {
		t.Fatal(err)
	}
	// A look-alike router of another cluster: its routes are not ours to count.
	other := newWorld(t)
	if err := other.addRoutes("198.19.9.0/24>10.180.9.9"); err != nil {
		t.Fatal(err)
	}
	n, rev := w.writes(), w.getRouter().RevisionNumber
	got, err := ReadRouteQuota(context.Background(), w.c, w.router, 31)
	if err != nil {
		t.Fatal(err)
	}
	if want := (RouteQuota{RouterID: w.router, Used: 3, Limit: 31}); got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if w.writes() != n || w.getRouter().RevisionNumber != rev {
		t.Fatalf("got %d writes (router revision %d) after reading the quota, want %d (revision %d)",
			w.writes(), w.getRouter().RevisionNumber, n, rev)
	}
	const gone = "00000000-0000-0000-0000-00000000dead"
	if _, err := ReadRouteQuota(context.Background(), w.c, gone, 31); err == nil || !strings.Contains(err.Error(), "get router "+gone) {
		t.Fatalf("got error %v for a missing router, want one naming it", err)
	}
}
