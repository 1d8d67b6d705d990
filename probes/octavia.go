package probes

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/drwatch/drwatch/internal/field"
	"github.com/drwatch/drwatch/internal/openstackauth"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
)

// OctaviaSpec configures an octavia probe: one load balancer's provisioning
// and operating status, read through Keystone and the Octavia API, and
// optionally a TCP connect to its VIP.
//
// Credentials come either from clouds.yaml (Cloud, with CloudsFile naming the
// file; empty searches the usual places like the openstack CLI) or from an
// application credential kept in two files (AuthURL,
// ApplicationCredentialIDFile, ApplicationCredentialSecretFile): the
// openstackauth.Credentials the OpenStack repairs use too. Files are read on
// every run.
//
// Every run authenticates afresh: nothing (token, connection) survives a run,
// so a probe cannot report a cached view of a dead Keystone. Token reuse may
// come later, as an explicit cache owned by the caller.
type OctaviaSpec struct {
	// Credentials reach Keystone: the type and the rules the OpenStack
	// repairs share. Its keys sit in the probe's flat mapping and apply
	// to octavia probes only (ca_file to the other types too).
	openstackauth.Credentials `yaml:",inline" types:"octavia"`

	// LoadBalancer is the load balancer's ID or its name (which must be
	// unique in the project).
	LoadBalancer string `yaml:"loadbalancer" types:"octavia" doc:"octavia: load balancer name or ID."`
	// HealthyOperatingStatuses are the operating statuses that count as
	// healthy; empty means just ONLINE. Add DEGRADED to tolerate a pool
	// member down.
	HealthyOperatingStatuses []string `yaml:"healthy_operating_statuses" types:"octavia" default:"[ONLINE]" doc:"octavia: operating statuses that count as up."`
	// RequireActive fails the probe while provisioning_status is anything
	// but ACTIVE, PENDING_* included: for a failback gate, a load balancer
	// in the middle of a failover or an update is not ready yet. Without
	// it PENDING_CREATE and PENDING_UPDATE pass when traffic flows.
	RequireActive bool `yaml:"require_active" types:"octavia" default:"false" doc:"octavia: fail while provisioning_status is not ACTIVE, PENDING_* included (for policy.failback_gate probes: a load balancer mid-failover is not ready)."`

	// CheckVIP also opens a TCP connection to the VIP on VIPPort.
	CheckVIP bool `yaml:"check_vip" types:"octavia" doc:"octavia: also connect to the VIP."`
	// VIPPort is the VIP's port for CheckVIP. The configuration file's
	// default applies only with check_vip (see ConfiguredSite).
	VIPPort int `yaml:"vip_port" types:"octavia" default:"443" doc:"octavia: the VIP port for check_vip."`
	// VIPAddress overrides the address dialled for CheckVIP, e.g. the
	// floating IP in front of a private VIP. Not in the configuration file.
	VIPAddress string `yaml:"-"`
}

// octaviaOperatingStatuses are Octavia's operating statuses.
var octaviaOperatingStatuses = []string{"ONLINE", "DRAINING", "OFFLINE", "DEGRADED", "ERROR", "NO_MONITOR"}

// Validate reports every problem with the spec at once, with paths relative
// to the probe. It is pure: it reads no file.
func (o *OctaviaSpec) Validate() field.Errors { return o.validate(false) }

// configured is the configuration file's rules (validate).
func (o *OctaviaSpec) configured() field.Errors { return o.validate(true) }

// files are the credentials' (openstackauth.Credentials.Files).
func (o *OctaviaSpec) files() []field.File { return o.Credentials.Files() }

// validate checks the spec; configured leaves out the one rule the
// configuration file cannot meet: its vip_port has a default, so it is set
// without check_vip.
func (o *OctaviaSpec) validate(configured bool) field.Errors {
	var es field.Errors
	required(&es, "loadbalancer", o.LoadBalancer)
	es = append(es, o.Credentials.Validate()...)
	for _, st := range o.HealthyOperatingStatuses {
		if !slices.Contains(octaviaOperatingStatuses, st) {
			es.Add("healthy_operating_statuses", "%q is not an Octavia operating status", st)
		}
	}
	if o.CheckVIP && (o.VIPPort < 1 || o.VIPPort > 65535) {
		es.Add("vip_port", "%d is not 1-65535", o.VIPPort)
	}
	if !o.CheckVIP && o.VIPPort != 0 && !configured {
		es.Add("vip_port", "needs check_vip")
	}
	if !o.CheckVIP && o.VIPAddress != "" {
		es.Add("vip_address", "needs check_vip")
	}
	if o.VIPAddress != "" && net.ParseIP(o.VIPAddress) == nil {
		es.Add("vip_address", "%q is not an IP address", o.VIPAddress)
	}
	return es
}

// octaviaMaxNamed bounds the names listed in one Detail entry.
const octaviaMaxNamed = 3

// ProbeOctavia is the octavia prober. It never retries and keeps no state.
//
// Failures: ClassConfig for an unusable spec, credentials file or catalog;
// ClassAuth when Keystone or Octavia refuses our credentials (401/403);
// ClassAPIUnreachable when Keystone or Octavia cannot be reached or answer
// 5xx; ClassLBError when the load balancer is missing or its
// provisioning_status is ERROR (or it is being deleted); ClassLBDegraded when
// its operating_status is not in HealthyOperatingStatuses; ClassRefused or
// ClassTimeout (phase "vip") when CheckVIP cannot connect.
func ProbeOctavia(ctx context.Context, spec Spec, logger *slog.Logger) Result {
	start := time.Now()
	res := octaviaProbe(ctx, spec)
	res.Duration = time.Since(start)
	if logger != nil {
		logger.Debug("octavia probe", "probe", spec.Name, "ok", res.OK, "class", string(res.Class), "reason", res.Reason)
	}
	return res
}

func octaviaProbe(ctx context.Context, spec Spec) Result {
	o := spec.Octavia
	if o == nil {
		return octaviaFail(ClassConfig, "config", "octavia probe without an octavia spec")
	}
	if es := o.Validate(); es != nil {
		return octaviaFail(ClassConfig, "config", strings.ReplaceAll(es.Error(), "\n", "; "))
	}
	ao, eo, tlsCfg, err := o.Credentials.AuthOptions()
	if err != nil {
		return octaviaFail(ClassConfig, "config", err.Error())
	}
	if _, hasDeadline := ctx.Deadline(); !hasDeadline {
		timeout := spec.Timeout
		if timeout <= 0 {
			// Longer than probeDefaultTimeout: a run is four sequential
			// calls to Python services (token, discovery, lookup, status).
			timeout = 3 * probeDefaultTimeout
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}

	phases := map[string]time.Duration{}
	// One transport per run, without keep-alive: nothing is shared between
	// runs, and uwsgi's http-socket (a common way to serve Keystone) resets
	// reused connections.
	transport := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSClientConfig:     tlsCfg,
		DisableKeepAlives:   true,
		TLSHandshakeTimeout: 10 * time.Second,
	}
	defer transport.CloseIdleConnections()
	provider, err := openstack.NewClient(ao.IdentityEndpoint)
	if err != nil {
		return octaviaFail(ClassConfig, "config", fmt.Sprintf("auth url %q: %v", ao.IdentityEndpoint, err))
	}
	// gophercloud's endpoint discovery does not take our ctx, so the client
	// itself carries the run's remaining time.
	deadline, _ := ctx.Deadline()
	provider.HTTPClient = http.Client{Transport: transport, Timeout: time.Until(deadline)}

	t0 := time.Now()
	err = openstack.Authenticate(ctx, provider, ao)
	phases["auth"] = time.Since(t0)
	if err != nil {
		res := octaviaAPIFail(ctx, err, "keystone", "auth")
		res.Phases = phases
		return res
	}
	// Finding the endpoint includes a version discovery GET to Octavia.
	t0 = time.Now()
	client, err := openstack.NewLoadBalancerV2(provider, eo)
	if err != nil {
		phases["api"] = time.Since(t0)
		var notFound *gophercloud.ErrEndpointNotFound
		res := octaviaAPIFail(ctx, err, "octavia", "api")
		if errors.As(err, &notFound) {
			res = octaviaFail(ClassConfig, "config", fmt.Sprintf("no load-balancer endpoint in the catalog (region %q)", eo.Region))
		}
		res.Phases = phases
		return res
	}

	lb, res, found := octaviaFind(ctx, client, o.LoadBalancer)
	if !found {
		phases["api"] = time.Since(t0)
		res.Phases = phases
		return res
	}
	tree, err := loadbalancers.GetStatuses(ctx, client, lb.ID).Extract()
	phases["api"] = time.Since(t0)
	if err != nil {
		res := octaviaAPIFail(ctx, err, "octavia", "api")
		res.Phases = phases
		return res
	}
	if tree == nil || tree.Loadbalancer == nil {
		res := octaviaFail(ClassError, "api", "octavia: status tree without a load balancer")
		res.Phases = phases
		return res
	}

	res = octaviaJudge(tree.Loadbalancer, o.HealthyOperatingStatuses, o.RequireActive)
	res.Detail["vip_address"] = lb.VipAddress
	res.Phases = phases
	if !res.OK || !o.CheckVIP {
		return res
	}
	addr := o.VIPAddress
	if addr == "" {
		addr = lb.VipAddress
	}
	if addr == "" {
		res = octaviaFail(ClassConfig, "vip", "load balancer has no vip_address and vip_address is not set")
		res.Phases = phases
		return res
	}
	target := net.JoinHostPort(addr, strconv.Itoa(o.VIPPort))
	t0 = time.Now()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", target)
	phases["vip"] = time.Since(t0)
	if err != nil {
		detail := res.Detail
		class, reason := octaviaDialClass(ctx, err)
		res = octaviaFail(class, "vip", fmt.Sprintf("vip %s: %s", target, reason))
		res.Detail = detail
		res.Phases = phases
		return res
	}
	conn.Close()
	return res
}

// octaviaFind resolves the load balancer by ID or by name. found is false
// when res is the probe's failure.
func octaviaFind(ctx context.Context, client *gophercloud.ServiceClient, ref string) (lb *loadbalancers.LoadBalancer, res Result, found bool) {
	if openstackauth.LooksLikeID(ref) {
		lb, err := loadbalancers.Get(ctx, client, ref).Extract()
		if err == nil {
			return lb, Result{}, true
		}
		if !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return nil, octaviaAPIFail(ctx, err, "octavia", "api"), false
		}
		// A name may look like an ID; fall through to the name lookup.
	}
	pages, err := loadbalancers.List(client, loadbalancers.ListOpts{Name: ref}).AllPages(ctx)
	if err != nil {
		return nil, octaviaAPIFail(ctx, err, "octavia", "api"), false
	}
	all, err := loadbalancers.ExtractLoadBalancers(pages)
	if err != nil {
		return nil, octaviaFail(ClassError, "api", "octavia: decode load balancer list: "+err.Error()), false
	}
	switch len(all) {
	case 0:
		return nil, octaviaFail(ClassLBError, "api", fmt.Sprintf("load balancer %q not found", ref)), false
	case 1:
		return &all[0], Result{}, true
	}
	return nil, octaviaFail(ClassConfig, "config", fmt.Sprintf("load balancer name %q is ambiguous (%d matches): use the ID", ref, len(all))), false
}

// octaviaJudge summarizes an Octavia status tree (GET
// /v2/lbaas/loadbalancers/{id}/status) into a Result with bounded Detail.
// The verdict rests on the load balancer's own statuses, which Octavia
// aggregates from its listeners, pools and members; those are listed in
// Detail to say why.
func octaviaJudge(lb *loadbalancers.LoadBalancer, healthyStatuses []string, requireActive bool) Result {
	healthy := healthyStatuses
	if len(healthy) == 0 {
		healthy = []string{"ONLINE"}
	}
	isHealthy := func(s string) bool { return slices.Contains(healthy, s) }

	detail := map[string]string{
		"lb_id":               lb.ID,
		"lb_name":             lb.Name,
		"provisioning_status": lb.ProvisioningStatus,
		"operating_status":    lb.OperatingStatus,
	}
	var badListeners, badPools, badMembers []string
	members := map[string]int{}
	seenPools := map[string]bool{}
	nPools := 0
	for _, l := range lb.Listeners {
		if !isHealthy(l.OperatingStatus) {
			badListeners = append(badListeners, octaviaLabel(l.Name, l.ID, l.OperatingStatus))
		}
		for _, p := range l.Pools {
			// A pool reached from two listeners appears twice in the tree.
			if seenPools[p.ID] && p.ID != "" {
				continue
			}
			seenPools[p.ID] = true
			nPools++
			if !isHealthy(p.OperatingStatus) {
				badPools = append(badPools, octaviaLabel(p.Name, p.ID, p.OperatingStatus))
			}
			for _, m := range p.Members {
				st := m.OperatingStatus
				if st == "" {
					st = "UNKNOWN"
				}
				members[st]++
				// NO_MONITOR (no health monitor) and DRAINING (weight 0) are
				// deliberate states, not failures.
				if !isHealthy(st) && st != "NO_MONITOR" && st != "DRAINING" {
					name := m.Name
					if name == "" && m.Address != "" {
						name = net.JoinHostPort(m.Address, strconv.Itoa(m.ProtocolPort))
					}
					badMembers = append(badMembers, octaviaLabel(name, m.ID, st))
				}
			}
		}
	}
	detail["listeners"] = strconv.Itoa(len(lb.Listeners))
	detail["pools"] = strconv.Itoa(nPools)
	if len(members) > 0 {
		keys := make([]string, 0, len(members))
		for k := range members {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s=%d", k, members[k])
		}
		detail["members"] = strings.Join(parts, ",")
	}
	if len(badListeners) > 0 {
		detail["unhealthy_listeners"] = kubeBoundedList(badListeners, octaviaMaxNamed)
	}
	if len(badPools) > 0 {
		detail["unhealthy_pools"] = kubeBoundedList(badPools, octaviaMaxNamed)
	}
	if len(badMembers) > 0 {
		detail["unhealthy_members"] = kubeBoundedList(badMembers, octaviaMaxNamed)
	}

	name := lb.Name
	if name == "" {
		name = lb.ID
	}
	switch lb.ProvisioningStatus {
	case "ERROR":
		return Result{Class: ClassLBError, Phase: "status", Reason: fmt.Sprintf("load balancer %s: provisioning_status ERROR", name), Detail: detail}
	case "PENDING_DELETE", "DELETED":
		return Result{Class: ClassLBError, Phase: "status", Reason: fmt.Sprintf("load balancer %s: provisioning_status %s", name, lb.ProvisioningStatus), Detail: detail}
	}
	// PENDING_CREATE and PENDING_UPDATE are normal transients; the operating
	// status says whether traffic flows meanwhile, and a stuck PENDING_* is
	// for the decision core to notice over time, unless ACTIVE is required.
	if requireActive && lb.ProvisioningStatus != "ACTIVE" {
		return Result{Class: ClassLBDegraded, Phase: "status", Reason: fmt.Sprintf("load balancer %s: provisioning_status %s, want ACTIVE (require_active)", name, lb.ProvisioningStatus), Detail: detail}
	}
	if !isHealthy(lb.OperatingStatus) {
		reason := fmt.Sprintf("load balancer %s: operating_status %s, want %s", name, lb.OperatingStatus, strings.Join(healthy, " or "))
		if len(badPools) > 0 {
			reason += "; pools " + strings.ReplaceAll(detail["unhealthy_pools"], ",", ", ")
		}
		return Result{Class: ClassLBDegraded, Phase: "status", Reason: reason, Detail: detail}
	}
	return Result{OK: true, Detail: detail}
}

// octaviaLabel names an object by name, else ID, with its status.
func octaviaLabel(name, id, status string) string {
	if name == "" {
		name = id
	}
	if len(name) > 64 {
		name = name[:64]
	}
	// Commas separate the entries of a Detail list.
	name = strings.ReplaceAll(name, ",", "_")
	return name + "(" + status + ")"
}

// credentials are the spec's Keystone credentials.
// octaviaAPIFail classifies an error from Keystone (service "keystone",
// phase "auth") or Octavia (service "octavia", phase "api").
func octaviaAPIFail(ctx context.Context, err error, service, phase string) Result {
	var code gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &code) {
		switch {
		case code.Actual == http.StatusUnauthorized && service == "keystone":
			return octaviaFail(ClassAuth, "auth", "keystone: authentication failed")
		case code.Actual == http.StatusUnauthorized:
			return octaviaFail(ClassAuth, "auth", service+": token rejected")
		case code.Actual == http.StatusForbidden:
			return octaviaFail(ClassAuth, "auth", service+": forbidden")
		case code.Actual == http.StatusNotFound && service == "octavia":
			return octaviaFail(ClassLBError, phase, "octavia: load balancer not found")
		case code.Actual >= 500:
			return octaviaFail(ClassAPIUnreachable, phase, fmt.Sprintf("%s: status %d", service, code.Actual))
		}
		return octaviaFail(ClassError, phase, fmt.Sprintf("%s: unexpected status %d", service, code.Actual))
	}
	var endpointErr *gophercloud.ErrEndpointNotFound
	if errors.As(err, &endpointErr) {
		return octaviaFail(ClassConfig, "config", service+": endpoint not found in catalog")
	}
	var urlErr *url.Error
	var netErr net.Error
	if ctx.Err() != nil || errors.As(err, &urlErr) || errors.As(err, &netErr) {
		_, reason := octaviaDialClass(ctx, err)
		return octaviaFail(ClassAPIUnreachable, phase, service+": "+reason)
	}
	return octaviaFail(ClassError, phase, service+": "+octaviaShort(err.Error()))
}

// octaviaDialClass classifies a network error into refused, timeout, dns,
// tls or plain error, with a short reason.
func octaviaDialClass(ctx context.Context, err error) (Class, string) {
	var dnsErr *net.DNSError
	var netErr net.Error
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	switch {
	case errors.As(err, &dnsErr):
		return ClassDNS, "dns: " + dnsErr.Err
	case errors.As(err, &certErr), errors.As(err, &unknownAuth), errors.As(err, &hostErr):
		return ClassTLS, "tls handshake: " + octaviaShort(octaviaErrText(err))
	case errors.Is(err, context.DeadlineExceeded), ctx.Err() != nil, errors.As(err, &netErr) && netErr.Timeout():
		return ClassTimeout, "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return ClassRefused, "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return ClassRefused, "connection reset"
	}
	return ClassError, octaviaShort(octaviaErrText(err))
}

// octaviaShort bounds an error text used as a reason.
func octaviaShort(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

func octaviaFail(class Class, phase, reason string) Result {
	return Result{Class: class, Phase: phase, Reason: reason, Detail: map[string]string{}}
}

// octaviaErrText strips the "Get \"url\": " prefix of a *url.Error: the URL
// carries nothing secret, but it is noise in a one-line reason.
func octaviaErrText(err error) string {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return urlErr.Err.Error()
	}
	return err.Error()
}
