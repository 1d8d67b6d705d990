package openstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
)

// Clients are the Neutron (network v2.0) and Nova (compute v2.1) clients
// of one project. gophercloud service clients are safe for concurrent use.
type Clients struct {
	Network *gophercloud.ServiceClient
	Compute *gophercloud.ServiceClient
}

// NewClients authenticates with Keystone as cfg says (clouds.yaml entry, or
// auth_url with application credential files) and finds the network and
// compute endpoints. The provider re-authenticates when the token expires.
// Errors never contain the secret.
func NewClients(ctx context.Context, cfg remediate.OpenStackAuth) (*Clients, error) {
	ao, eo, tlsCfg, err := cfg.AuthOptions()
	if err != nil {
		return nil, err
	}
	ao.AllowReauth = true
	provider, err := openstack.NewClient(ao.IdentityEndpoint)
	if err != nil {
		return nil, fmt.Errorf("auth url %q: %w", ao.IdentityEndpoint, err)
	}
	provider.HTTPClient = http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		Proxy: http.ProxyFromEnvironment, TLSClientConfig: tlsCfg, TLSHandshakeTimeout: 10 * time.Second}}
	if err := openstack.Authenticate(ctx, provider, ao); err != nil {
		return nil, fmt.Errorf("keystone: %w", err)
	}
	net, err := openstack.NewNetworkV2(provider, eo)
	if err != nil {
		return nil, fmt.Errorf("network endpoint: %w", err)
	}
	comp, err := openstack.NewComputeV2(provider, eo)
	if err != nil {
		return nil, fmt.Errorf("compute endpoint: %w", err)
	}
	return &Clients{Network: net, Compute: comp}, nil
}

// Instance is one Nova server of the cluster, as the remediators see it.
type Instance struct {
	ID       string
	Name     string
	Status   string
	Metadata map[string]string
	// Addresses are the server's fixed IP addresses, sorted by network
	// name then order; Addresses[0] is the node's address.
	Addresses []netip.Addr
	// LaunchedAt is Nova's OS-SRV-USG:launched_at (Created if unset).
	LaunchedAt time.Time
	// Created is Nova's created: a rebuild sets launched_at anew, not it.
	Created time.Time
}

// age is how long ago the instance was created or first launched,
// whichever is earlier, so that a rebuild does not make an old VM young.
func (in Instance) age(now time.Time) time.Duration {
	born := in.LaunchedAt
	if !in.Created.IsZero() && in.Created.Before(born) {
		born = in.Created
	}
	return now.Sub(born)
}

// Selector identifies the cluster's instances: name prefix and/or a
// metadata key (and value). The zero Selector matches nothing.
type Selector struct {
	NamePrefix    string
	MetadataKey   string
	MetadataValue string
}

func (s Selector) empty() bool { return s.NamePrefix == "" && s.MetadataKey == "" }

func (s Selector) matches(v *servers.Server) bool {
	if s.empty() || !strings.HasPrefix(v.Name, s.NamePrefix) {
		return false
	}
	if s.MetadataKey != "" {
		val, ok := v.Metadata[s.MetadataKey]
		if !ok || (s.MetadataValue != "" && val != s.MetadataValue) {
			return false
		}
	}
	return true
}

// listInstances lists the cluster's instances, sorted by ID. Nova filters
// by name (a regular expression) server-side; the metadata check is ours,
// as Nova has no metadata filter on list.
func listInstances(ctx context.Context, compute *gophercloud.ServiceClient, sel Selector) ([]Instance, error) {
	if sel.empty() {
		return nil, errors.New("no instance selector (name prefix or metadata key)")
	}
	opts := servers.ListOpts{}
	if sel.NamePrefix != "" {
		opts.Name = "^" + regexp.QuoteMeta(sel.NamePrefix)
	}
	pages, err := servers.List(compute, opts).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list servers: %w", err)
	}
	all, err := servers.ExtractServers(pages)
	if err != nil {
		return nil, fmt.Errorf("decode servers: %w", err)
	}
	var out []Instance
	for i := range all {
		if sel.matches(&all[i]) {
			out = append(out, toInstance(&all[i]))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func toInstance(v *servers.Server) Instance {
	in := Instance{ID: v.ID, Name: v.Name, Status: v.Status, Metadata: v.Metadata, LaunchedAt: v.LaunchedAt, Created: v.Created}
	if in.LaunchedAt.IsZero() {
		in.LaunchedAt = v.Created
	}
	nets := make([]string, 0, len(v.Addresses))
	for n := range v.Addresses {
		nets = append(nets, n)
	}
	sort.Strings(nets)
	for _, n := range nets {
		list, _ := v.Addresses[n].([]any)
		for _, e := range list {
			m, _ := e.(map[string]any)
			if t, ok := m["OS-EXT-IPS:type"].(string); ok && t != "fixed" {
				continue
			}
			s, _ := m["addr"].(string)
			if a, err := netip.ParseAddr(s); err == nil {
				in.Addresses = append(in.Addresses, a)
			}
		}
	}
	return in
}

// gone reports whether Nova is deleting or has deleted the server.
func (in Instance) gone() bool { return in.Status == "DELETED" || in.Status == "SOFT_DELETED" }

// precondition wraps err with remediate.ErrPrecondition when the API
// refused the write because the world moved on (409 Conflict, 412
// Precondition Failed on a stale revision_number).
func precondition(err error) error {
	if gophercloud.ResponseCodeIs(err, http.StatusConflict) || gophercloud.ResponseCodeIs(err, http.StatusPreconditionFailed) {
		return errors.Join(err, remediate.ErrPrecondition)
	}
	return err
}

// neutronFault returns the type and message of Neutron's error answer
// ({"NeutronError": {"type": "RoutesExhausted", "message": ...}}), or
// empty strings when err carries no such answer.
func neutronFault(err error) (typ, msg string) {
	var ue gophercloud.ErrUnexpectedResponseCode
	if !errors.As(err, &ue) {
		return "", ""
	}
	var body struct {
		NeutronError struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"NeutronError"`
	}
	if json.Unmarshal(ue.Body, &body) != nil {
		return "", ""
	}
	return body.NeutronError.Type, body.NeutronError.Message
}
