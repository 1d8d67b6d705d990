package openstacktest

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// A stack with Neutron serves the network API behind Keystone: a token of
// the member project lists networks, no token is refused, and the catalog
// names Neutron as the "network" endpoint.
func TestNeutronServesTokenAuthenticatedAPI(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	s := stack(t)
	var nets struct {
		Networks []struct{ ID string } `json:"networks"`
	}
	if err := s.NeutronCall(ctx, s.Member, http.MethodGet, "/v2.0/networks", nil, &nets); err != nil {
		t.Fatalf("list networks with a member token: %v", err)
	}
	if nets.Networks == nil {
		t.Fatal("list networks: no networks key in the answer")
	}
	if _, err := s.call(ctx, http.MethodGet, s.NeutronURL+"/v2.0/networks", "", nil, nil); err == nil || !strings.Contains(err.Error(), "status 401") {
		t.Fatalf("list networks without a token: %v, want status 401", err)
	}
	tok, err := s.Token(ctx, s.Member)
	if err != nil {
		t.Fatal(err)
	}
	var cat struct {
		Catalog []struct {
			Type      string `json:"type"`
			Endpoints []struct {
				Interface, URL string
			} `json:"endpoints"`
		} `json:"catalog"`
	}
	if _, err := s.call(ctx, http.MethodGet, s.AuthURL+"/auth/catalog", tok, nil, &cat); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range cat.Catalog {
		for _, ep := range e.Endpoints {
			found = found || (e.Type == "network" && ep.Interface == "public" && ep.URL == s.NeutronURL)
		}
	}
	if !found {
		t.Fatalf("catalog has no public network endpoint %s: %+v", s.NeutronURL, cat.Catalog)
	}
}
