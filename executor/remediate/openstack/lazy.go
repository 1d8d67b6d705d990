package openstack

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/monitor/clusterhealth"
)

// lazyClients authenticates with OpenStack on first use and retries on the
// next use after a failure. In a meltdown the primary's Keystone is down;
// drwatch must still start, and its repairs begin once the cloud answers.
type lazyClients struct {
	auth remediate.OpenStackAuth

	mu sync.Mutex
	c  *Clients
}

func (l *lazyClients) get(ctx context.Context) (*Clients, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c != nil {
		return l.c, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := NewClients(ctx, l.auth)
	if err != nil {
		return nil, fmt.Errorf("openstack: %w", err)
	}
	l.c = c
	return c, nil
}

// lazyRemediator builds its remediator from the clients on first use.
type lazyRemediator struct {
	name    string
	clients *lazyClients
	build   func(*Clients) (remediate.Remediator, error)

	mu sync.Mutex
	r  remediate.Remediator
}

func (l *lazyRemediator) Name() string { return l.name }

func (l *lazyRemediator) resolve(ctx context.Context) (remediate.Remediator, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.r != nil {
		return l.r, nil
	}
	c, err := l.clients.get(ctx)
	if err != nil {
		return nil, err
	}
	if l.r, err = l.build(c); err != nil {
		return nil, err
	}
	return l.r, nil
}

// Plan implements remediate.Remediator.
func (l *lazyRemediator) Plan(ctx context.Context) ([]remediate.Action, error) {
	r, err := l.resolve(ctx)
	if err != nil {
		return nil, err
	}
	return r.Plan(ctx)
}

// Apply implements remediate.Remediator.
func (l *lazyRemediator) Apply(ctx context.Context, a remediate.Action) error {
	r, err := l.resolve(ctx)
	if err != nil {
		return err
	}
	return r.Apply(ctx, a)
}

// Census implements remediate.Census for the remediators that have one
// (all of this package's), so that the disruption brake holds for them as
// for an eagerly built one; one without counts nothing.
func (l *lazyRemediator) Census(ctx context.Context, acts []remediate.Action) (remediate.Population, error) {
	r, err := l.resolve(ctx)
	if err != nil {
		return remediate.Population{}, err
	}
	c, ok := r.(remediate.Census)
	if !ok {
		return remediate.Population{}, nil
	}
	return c.Census(ctx, acts)
}

// Disrupted implements remediate.Disruptor for never-ready-instances; any
// other remediator disrupts no node.
func (l *lazyRemediator) Disrupted(ctx context.Context, applied []remediate.Applied) ([]remediate.Disruption, error) {
	r, err := l.resolve(ctx)
	if err != nil {
		return nil, err
	}
	d, ok := r.(remediate.Disruptor)
	if !ok {
		return nil, nil
	}
	return d.Disrupted(ctx, applied)
}

var (
	_ remediate.Census    = (*lazyRemediator)(nil)
	_ remediate.Disruptor = (*lazyRemediator)(nil)
)

// RouteQuotaReader reads the router neutron-route-gc is configured with, when
// remediations.openstack names one for site; otherwise it says why the
// quota is unknown.
func RouteQuotaReader(os OpenStackClusterConfig, site string) (clusterhealth.RouteQuotaFunc, string) {
	switch {
	case os.AuthURL == "" && os.Cloud == "":
		return nil, "unknown: remediations.openstack is not configured"
	case os.Site != site:
		return nil, "unknown: remediations.openstack is for the " + os.Site + " site"
	case os.RouterID == "":
		return nil, "unknown: remediations.openstack.router_id is not set"
	}
	clients := &lazyClients{auth: os.OpenStackAuth}
	return func(ctx context.Context) (clusterhealth.Routes, error) {
		c, err := clients.get(ctx)
		if err != nil {
			return clusterhealth.Routes{}, err
		}
		q, err := ReadRouteQuota(ctx, c, os.RouterID, os.NeutronRouteGC.RouteLimit)
		if err != nil {
			return clusterhealth.Routes{}, err
		}
		return clusterhealth.Routes{RouterID: q.RouterID, Used: q.Used, Limit: q.Limit}, nil
	}, ""
}
