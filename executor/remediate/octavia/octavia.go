package octavia

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/internal/openstackauth"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
)

// Name is the remediation's name in config, records and metrics.
const Name = "octavia-stuck-lb"

// VerbFailover is the verb of every action this remediator plans.
const VerbFailover = "failover"

// NeedsAdminError means Octavia refused the failover call (403): under the
// default policy only an admin may fail a load balancer over. Command is
// what the admin must run.
type NeedsAdminError struct {
	// LB is the load balancer's ID.
	LB string
	// Command is "openstack loadbalancer failover <id>".
	Command string
}

func (e *NeedsAdminError) Error() string {
	return fmt.Sprintf("octavia refused the failover of load balancer %s (403, admin-only by default policy): an admin must run: %s", e.LB, e.Command)
}

// Unwrap makes it a remediate.ErrNeedsAdmin: retrying cannot help.
func (e *NeedsAdminError) Unwrap() error { return remediate.ErrNeedsAdmin }

// ErrFailoverFailed means the load balancer went back to ERROR (or was
// deleted) while a failover was followed.
var ErrFailoverFailed = errors.New("failover did not bring the load balancer to ACTIVE")

// StuckLB is the octavia-stuck-lb remediator. Plan and Apply are not safe
// for concurrent use (the Runner calls them one at a time).
type StuckLB struct {
	cfg  OctaviaStuckLBConfig
	log  *slog.Logger
	now  func() time.Time
	poll time.Duration
}

// Option tunes New.
type Option func(*StuckLB)

// WithClock sets the clock that ages PENDING_* states (tests).
func WithClock(now func() time.Time) Option { return func(s *StuckLB) { s.now = now } }

// WithPollInterval sets how often Apply re-reads a load balancer it follows
// (default 2s).
func WithPollInterval(d time.Duration) Option { return func(s *StuckLB) { s.poll = d } }

// New returns the remediator for cfg. It applies cfg's defaults and checks
// the credentials' shape; files are read at each Plan and Apply, so a
// rotated credential is picked up without a restart.
func New(cfg OctaviaStuckLBConfig, logger *slog.Logger, opts ...Option) (*StuckLB, error) {
	if cfg.PendingTimeout <= 0 {
		cfg.PendingTimeout = DefaultPendingTimeout
	}
	if cfg.FailoverTimeout <= 0 {
		cfg.FailoverTimeout = DefaultFailoverTimeout
	}
	if (cfg.Cloud == "") == (cfg.AuthURL == "") {
		return nil, errors.New("octavia-stuck-lb: set exactly one of cloud and auth_url")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &StuckLB{cfg: cfg, log: logger, now: time.Now, poll: 2 * time.Second}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// Name returns "octavia-stuck-lb".
func (s *StuckLB) Name() string { return Name }

// target names a load balancer in records.
func target(id string) string { return "loadbalancer/" + id }

// Plan lists the watched load balancers of the project and returns a
// failover for each one in ERROR, or PENDING_* for longer than the pending
// timeout, sorted by ID. A load balancer in ERROR whose operating_status
// does not say its data plane is down is only reported (see stillServes).
// A watched name or ID that is missing, or belongs to
// another project, is not an error (a deleted load balancer needs no
// failover; another tenant's is none of ours); an ambiguous name is. It
// never writes.
func (s *StuckLB) Plan(ctx context.Context) ([]remediate.Action, error) {
	client, project, done, err := s.client(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	lbs, err := s.watched(ctx, client, project)
	if err != nil {
		return nil, err
	}
	now := s.now()
	var acts []remediate.Action
	for _, lb := range lbs {
		reason, stuck := s.stuck(lb, now)
		if !stuck {
			continue
		}
		acts = append(acts, remediate.Action{
			Target: target(lb.ID),
			Verb:   VerbFailover,
			Reason: reason,
			// One stuck episode (identified by the updated_at of its state) is
			// failed over once; a later episode has a new updated_at.
			Key:        lb.ID + "@" + since(lb).UTC().Format(time.RFC3339Nano),
			Data:       lb.ID,
			ReportOnly: stillServes(lb),
		})
	}
	sort.Slice(acts, func(i, j int) bool { return acts[i].Target < acts[j].Target })
	return acts, nil
}

// since is when the load balancer's current state began, as far as the API
// says: updated_at, or created_at for one never updated.
func since(lb loadbalancers.LoadBalancer) time.Time {
	if !lb.UpdatedAt.IsZero() {
		return lb.UpdatedAt
	}
	return lb.CreatedAt
}

// stuck says whether lb needs a failover now, and why.
func (s *StuckLB) stuck(lb loadbalancers.LoadBalancer, now time.Time) (string, bool) {
	name := lb.Name
	if name == "" {
		name = lb.ID
	}
	at := since(lb)
	st := lb.ProvisioningStatus
	switch {
	case st == "ERROR":
		return fmt.Sprintf("load balancer %s: provisioning_status ERROR since %s", name, at.UTC().Format(time.RFC3339)), true
	case st == "PENDING_DELETE":
		// Being deleted: a failover would fight the deletion.
		return "", false
	case strings.HasPrefix(st, "PENDING_"):
		if age := now.Sub(at); age > s.cfg.PendingTimeout {
			return fmt.Sprintf("load balancer %s: provisioning_status %s since %s (%s, longer than %s)",
				name, st, at.UTC().Format(time.RFC3339), age.Truncate(time.Second), s.cfg.PendingTimeout), true
		}
	}
	return "", false
}

// stillServes says why a load balancer in ERROR must be left alone, or ""
// when it may be failed over. provisioning_status ERROR says the control
// plane failed to apply a change; operating_status says what the health
// manager last saw of the data plane. A failover rebuilds the amphorae, and
// one that fails (Octavia just came back, its workers may not have) cuts a
// load balancer that was still carrying traffic. So only OFFLINE and ERROR,
// which say traffic no longer flows, allow it. ONLINE, DEGRADED (some
// members down, the rest serve) and DRAINING still serve. NO_MONITOR, an
// empty or an unknown status say nothing about traffic: not knowing is not
// evidence of an outage, so those are reported too.
func stillServes(lb loadbalancers.LoadBalancer) string {
	if lb.ProvisioningStatus != "ERROR" {
		return ""
	}
	switch lb.OperatingStatus {
	case "OFFLINE", "ERROR":
		return ""
	}
	return fmt.Sprintf("operating_status %s: the data plane is not known to be down, and a failed failover would cut it; if it must be rebuilt, an operator runs: openstack loadbalancer failover %s",
		orNone(lb.OperatingStatus), lb.ID)
}

// orNone names an empty status.
func orNone(st string) string {
	if st == "" {
		return "(none)"
	}
	return st
}

// watched returns the configured load balancers, or every one of the
// project. Admin credentials list every project's load balancers when not
// told otherwise, so the list asks for the project and each answer is
// checked against it too.
func (s *StuckLB) watched(ctx context.Context, client *gophercloud.ServiceClient, project string) ([]loadbalancers.LoadBalancer, error) {
	if len(s.cfg.LoadBalancers) == 0 {
		pages, err := loadbalancers.List(client, loadbalancers.ListOpts{ProjectID: project}).AllPages(ctx)
		if err != nil {
			return nil, fmt.Errorf("list load balancers: %w", err)
		}
		all, err := loadbalancers.ExtractLoadBalancers(pages)
		if err != nil {
			return nil, fmt.Errorf("decode load balancers: %w", err)
		}
		return slices.DeleteFunc(all, func(lb loadbalancers.LoadBalancer) bool { return !s.ours(lb, project) }), nil
	}
	var out []loadbalancers.LoadBalancer
	seen := map[string]bool{}
	for _, ref := range s.cfg.LoadBalancers {
		lb, err := find(ctx, client, ref, project)
		if err != nil {
			return nil, err
		}
		if lb == nil || seen[lb.ID] || !s.ours(*lb, project) {
			continue
		}
		seen[lb.ID] = true
		out = append(out, *lb)
	}
	return out, nil
}

// ours reports whether lb belongs to project, and logs one that does not:
// a watched ID of another project is a configuration mistake.
func (s *StuckLB) ours(lb loadbalancers.LoadBalancer, project string) bool {
	if lb.ProjectID == project {
		return true
	}
	s.log.Warn("load balancer of another project ignored", "lb", lb.ID, "project", lb.ProjectID, "want_project", project)
	return false
}

// find resolves ref by ID, then by name within project. A missing load
// balancer is nil.
func find(ctx context.Context, client *gophercloud.ServiceClient, ref, project string) (*loadbalancers.LoadBalancer, error) {
	if openstackauth.LooksLikeID(ref) {
		lb, err := loadbalancers.Get(ctx, client, ref).Extract()
		if err == nil {
			return lb, nil
		}
		if !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return nil, fmt.Errorf("get load balancer %s: %w", ref, err)
		}
	}
	pages, err := loadbalancers.List(client, loadbalancers.ListOpts{Name: ref, ProjectID: project}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("find load balancer %q: %w", ref, err)
	}
	all, err := loadbalancers.ExtractLoadBalancers(pages)
	if err != nil {
		return nil, fmt.Errorf("decode load balancers: %w", err)
	}
	switch len(all) {
	case 0:
		return nil, nil
	case 1:
		return &all[0], nil
	}
	return nil, fmt.Errorf("load balancer name %q is ambiguous (%d matches): use the ID", ref, len(all))
}

// Apply fails the load balancer over and follows it until ACTIVE, for at
// most the failover timeout. It is idempotent: an ACTIVE load balancer is
// left alone (success), one PENDING_* (a failover or update in progress,
// younger than the pending timeout) is followed without a new call, and a
// deleted one, one of another project, or one in ERROR that still serves
// wraps remediate.ErrPrecondition.
// A 403 is a *NeedsAdminError, and a 409 on a load balancer stuck PENDING_*
// also wraps remediate.ErrNeedsAdmin: neither changes by retrying. Going
// back to ERROR wraps ErrFailoverFailed.
func (s *StuckLB) Apply(ctx context.Context, a remediate.Action) error {
	id, ok := a.Data.(string)
	if !ok || id == "" {
		return fmt.Errorf("action %s: no load balancer id", a.Target)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.FailoverTimeout)
	defer cancel()
	client, project, done, err := s.client(ctx)
	if err != nil {
		return err
	}
	defer done()
	lb, err := loadbalancers.Get(ctx, client, id).Extract()
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return fmt.Errorf("load balancer %s is gone: %w", id, remediate.ErrPrecondition)
	}
	if err != nil {
		return fmt.Errorf("get load balancer %s: %w", id, err)
	}
	if lb.ProjectID != project {
		return fmt.Errorf("load balancer %s belongs to project %s, not %s: %w", id, lb.ProjectID, project, remediate.ErrPrecondition)
	}
	if why := stillServes(*lb); why != "" {
		// Plan reports such a load balancer; one whose data plane came back
		// since Plan is left alone just the same.
		return fmt.Errorf("load balancer %s: %s: %w", id, why, remediate.ErrPrecondition)
	}
	switch st := lb.ProvisioningStatus; {
	case st == "ACTIVE":
		return nil
	case st == "DELETED" || st == "PENDING_DELETE":
		return fmt.Errorf("load balancer %s is %s: %w", id, st, remediate.ErrPrecondition)
	case strings.HasPrefix(st, "PENDING_"):
		if _, stuck := s.stuck(*lb, s.now()); !stuck {
			// A failover (ours, from an earlier leader, or an admin's) or an
			// update is in progress: wait for it rather than call again.
			s.log.Info("load balancer busy, following it", "lb", id, "provisioning_status", st)
			return s.follow(ctx, client, id)
		}
	}
	err = loadbalancers.Failover(ctx, client, id).ExtractErr()
	switch {
	case gophercloud.ResponseCodeIs(err, http.StatusForbidden):
		return &NeedsAdminError{LB: id, Command: "openstack loadbalancer failover " + id}
	case gophercloud.ResponseCodeIs(err, http.StatusConflict) && strings.HasPrefix(lb.ProvisioningStatus, "PENDING_"):
		// Octavia refuses to fail over an immutable (PENDING_*) load
		// balancer; only an admin resetting its status in the database helps.
		return fmt.Errorf("octavia refused the failover of load balancer %s stuck %s (409 immutable): an admin must reset its provisioning_status, then run: openstack loadbalancer failover %s: %w: %w",
			id, lb.ProvisioningStatus, id, ErrFailoverFailed, remediate.ErrNeedsAdmin)
	case gophercloud.ResponseCodeIs(err, http.StatusConflict):
		// Immutable: something else moved it to PENDING_* since our read.
		s.log.Info("load balancer busy at failover, following it", "lb", id)
	case err != nil:
		return fmt.Errorf("failover load balancer %s: %w", id, err)
	}
	return s.follow(ctx, client, id)
}

// follow polls the load balancer until ACTIVE, ERROR (ErrFailoverFailed)
// or ctx ends.
func (s *StuckLB) follow(ctx context.Context, client *gophercloud.ServiceClient, id string) error {
	t := time.NewTicker(s.poll)
	defer t.Stop()
	last := ""
	for {
		lb, err := loadbalancers.Get(ctx, client, id).Extract()
		switch {
		case gophercloud.ResponseCodeIs(err, http.StatusNotFound):
			return fmt.Errorf("load balancer %s deleted during failover: %w", id, ErrFailoverFailed)
		case err == nil:
			last = lb.ProvisioningStatus
			switch last {
			case "ACTIVE":
				return nil
			case "ERROR", "DELETED":
				return fmt.Errorf("load balancer %s is %s again: %w", id, last, ErrFailoverFailed)
			}
		case ctx.Err() == nil:
			// A transient read error while following: keep polling until the
			// deadline; the failover itself is already under way.
			s.log.Warn("read load balancer while following failover", "lb", id, "err", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("load balancer %s still %q after following its failover: %w", id, last, ctx.Err())
		case <-t.C:
		}
	}
}

// client authenticates with Keystone and returns a load-balancer client
// and the project whose load balancers are ours (project_id, or the
// token's project); done releases its connections.
func (s *StuckLB) client(ctx context.Context) (_ *gophercloud.ServiceClient, project string, done func(), _ error) {
	ao, eo, tlsCfg, err := s.cfg.OpenStackAuth.AuthOptions()
	if err != nil {
		return nil, "", nil, err
	}
	// No keep-alive: nothing is shared between calls, and uwsgi's
	// http-socket (a common way to serve Keystone) resets reused
	// connections.
	transport := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSClientConfig:     tlsCfg,
		DisableKeepAlives:   true,
		TLSHandshakeTimeout: 10 * time.Second,
	}
	done = transport.CloseIdleConnections
	provider, err := openstack.NewClient(ao.IdentityEndpoint)
	if err != nil {
		return nil, "", nil, fmt.Errorf("auth url: %w", err)
	}
	provider.HTTPClient = http.Client{Transport: transport, Timeout: time.Minute}
	if err := openstack.Authenticate(ctx, provider, ao); err != nil {
		done()
		return nil, "", nil, fmt.Errorf("keystone: %w", err)
	}
	project = s.cfg.ProjectID
	if project == "" {
		if project, err = openstackauth.TokenProject(provider); err != nil {
			done()
			return nil, "", nil, err
		}
	}
	client, err := openstack.NewLoadBalancerV2(provider, eo)
	if err != nil {
		done()
		return nil, "", nil, fmt.Errorf("octavia endpoint: %w", err)
	}
	return client, project, done, nil
}
