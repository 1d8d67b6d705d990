package openstack

import (
	"context"
	"strings"
	"testing"

	"github.com/drwatch/drwatch/test/openstacksim"
)

func TestReadRouteQuotaCountsEveryRouteAndWritesNothing(t *testing.T) {
	s, c := simClients(t)
	s.PutRouter(openstacksim.Router{ID: "r1", Revision: 3, Routes: []openstacksim.Route{
		{Destination: "198.19.1.0/24", NextHop: "10.180.0.3"},
		{Destination: "198.19.2.0/24", NextHop: "10.180.0.4"},
		{Destination: "10.0.0.0/8", NextHop: "10.180.0.1"}, // outside the pod CIDR: Neutron counts it too
	}})
	// A look-alike router of another cluster: its routes are not ours to count.
	s.PutRouter(openstacksim.Router{ID: "r2", Routes: []openstacksim.Route{{Destination: "198.19.9.0/24", NextHop: "10.9.0.9"}}})
	w := s.Writes()
	got, err := ReadRouteQuota(context.Background(), c, "r1", 31)
	if err != nil {
		t.Fatal(err)
	}
	if want := (RouteQuota{RouterID: "r1", Used: 3, Limit: 31}); got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if s.Writes() != w {
		t.Fatalf("got %d writes after reading the quota, want %d", s.Writes(), w)
	}
	if _, err := ReadRouteQuota(context.Background(), c, "gone", 31); err == nil || !strings.Contains(err.Error(), "get router gone") {
		t.Fatalf("got error %v for a missing router, want one naming it", err)
	}
}
