package debris

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
	"github.com/drwatch/drwatch/internal/kubeapi"
	"github.com/drwatch/drwatch/internal/openstackauth"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Name is the remediation's name in config, records and metrics.
const Name = "cloud-debris"

// VerbDelete is the verb of every action this remediator plans.
const VerbDelete = "delete"

// Kinds of target, the first part of an action's Target.
const (
	KindLoadBalancer = "loadbalancer"
	KindVolume       = "volume"
	KindFloatingIP   = "floatingip"
)

// ErrDefaultCluster refuses cloud-provider-openstack's default cluster
// name on a live cluster: another cluster of the project that keeps it
// too carries the same marks, and its resources would be taken for debris.
var ErrDefaultCluster = errors.New("is the cloud provider's default, shared by any cluster that keeps it; only a decommissioned cluster may use it")

// ErrStillThere means a delete was accepted but the resource was still
// there when the delete timeout ran out.
var ErrStillThere = errors.New("still there after the delete timeout")

// StuckError means a resource is stuck deleting in a state only an admin
// can clear (a volume deleting or error_deleting past the delete timeout).
// It wraps remediate.ErrNeedsAdmin, so the Runner parks the target: it is
// reported, never retried forever.
type StuckError struct {
	Target, Status string
	Since          time.Time
	// Command is what an admin runs.
	Command string
}

func (e *StuckError) Error() string {
	return fmt.Sprintf("%s stuck %s since %s: an admin must run: %s", e.Target, e.Status, e.Since.UTC().Format(time.RFC3339), e.Command)
}

// Unwrap makes it a remediate.ErrNeedsAdmin.
func (e *StuckError) Unwrap() error { return remediate.ErrNeedsAdmin }

// Debris is the cloud-debris remediator. Plan and Apply are not safe for
// concurrent use (the Runner calls them one at a time).
type Debris struct {
	cfg  CloudDebrisConfig
	kube kubeapi.Interface
	log  *slog.Logger
	now  func() time.Time
	poll time.Duration
	// reclaimPath is where the reclaim record is kept ("" for memory).
	reclaimPath string
	reclaim     *reclaimRecord
}

// Option tunes New.
type Option func(*Debris)

// WithPollInterval sets how often Apply re-reads a resource it deletes
// (default 2s).
func WithPollInterval(p time.Duration) Option { return func(d *Debris) { d.poll = p } }

// WithReclaimFile keeps the record of the PersistentVolumes' reclaim
// policies in path (the node's data directory), so that it survives a
// restart. Without it the record lives in memory: after a restart every
// volume whose PV is already gone is kept and reported, never deleted.
func WithReclaimFile(path string) Option { return func(d *Debris) { d.reclaimPath = path } }

// New returns the remediator for cfg. kube is the cluster whose Services
// and PersistentVolumes are checked; it may be nil only when cfg says the
// cluster is decommissioned.
func New(cfg CloudDebrisConfig, kube kubeapi.Interface, logger *slog.Logger, opts ...Option) (*Debris, error) {
	if cfg.ClusterName == "" {
		return nil, errors.New("cloud-debris: cluster_name is required")
	}
	if cfg.CSICluster == "" {
		cfg.CSICluster = cfg.ClusterName
	}
	if !cfg.Decommissioned {
		for _, f := range []struct{ path, v string }{{"cluster_name", cfg.ClusterName}, {"csi_cluster", cfg.CSICluster}} {
			if f.v == DefaultCloudProviderCluster {
				return nil, fmt.Errorf("cloud-debris: %s %q: %w", f.path, f.v, ErrDefaultCluster)
			}
		}
	}
	if cfg.DeleteTimeout <= 0 {
		cfg.DeleteTimeout = DefaultDeleteTimeout
	}
	if (cfg.Cloud == "") == (cfg.AuthURL == "") {
		return nil, errors.New("cloud-debris: set exactly one of cloud and auth_url")
	}
	if kube == nil && !cfg.Decommissioned {
		return nil, fmt.Errorf("cloud-debris needs the %s site's kubernetes client (remediations.kubernetes.%s) unless decommissioned", cfg.Site, cfg.Site)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	d := &Debris{cfg: cfg, kube: kube, log: logger, now: time.Now, poll: 2 * time.Second}
	for _, o := range opts {
		o(d)
	}
	var err error
	if d.reclaim, err = loadReclaimRecord(d.reclaimPath); err != nil {
		return nil, fmt.Errorf("cloud-debris: %w", err)
	}
	return d, nil
}

// Name returns "cloud-debris".
func (d *Debris) Name() string { return Name }

// lbData is what Apply needs of a load balancer.
type lbData struct {
	ID, Name, VIPPort string
	Services          []ServiceRef
	// FIPs are the floating IPs on the VIP port when planned.
	FIPs []string
}

// fipData is what Apply needs of a floating IP.
type fipData struct {
	ID      string
	Service ServiceRef
}

// volData is what Apply needs of a volume.
type volData struct{ ID, PV string }

// Plan lists the project's load balancers, floating IPs and volumes that
// carry every mark of the cluster, and returns a delete for each one whose
// Service or PersistentVolume is absent from the cluster and that no
// Service refers to (any of them, for a decommissioned cluster), sorted by
// target. A volume stuck deleting or error_deleting, and a volume or
// floating IP Kubernetes asked to keep or that drwatch never saw asked to
// go, is a report-only action. A Kubernetes or OpenStack read error plans
// nothing (fail closed). It never writes to the cloud or the cluster; it
// records the reclaim policies and keep-floatingip annotations it saw.
func (d *Debris) Plan(ctx context.Context) ([]remediate.Action, error) {
	inv, err := d.inventory(ctx)
	if err != nil {
		return nil, err
	}
	return inv.acts, nil
}

// inventory is one read of the world: the cluster's resources and the
// actions due.
type inventory struct {
	// total counts the cluster's resources (by naming or metadata).
	total int
	acts  []remediate.Action
}

func (d *Debris) inventory(ctx context.Context) (inventory, error) {
	var inv inventory
	present, err := d.clusterObjects(ctx)
	if err != nil {
		return inv, err
	}
	c, err := d.clients(ctx)
	if err != nil {
		return inv, err
	}
	defer c.done()

	// Load balancers.
	pages, err := loadbalancers.List(c.lb, loadbalancers.ListOpts{ProjectID: c.project}).AllPages(ctx)
	if err != nil {
		return inv, fmt.Errorf("list load balancers: %w", err)
	}
	lbs, err := loadbalancers.ExtractLoadBalancers(pages)
	if err != nil {
		return inv, fmt.Errorf("decode load balancers: %w", err)
	}
	vipOf := map[string]string{} // VIP port → load balancer being deleted
	for _, lb := range lbs {
		svcs, ok := d.lbServices(lb, c.project)
		if !ok {
			continue
		}
		inv.total++
		if lb.ProvisioningStatus != "ACTIVE" && lb.ProvisioningStatus != "ERROR" {
			// PENDING_*: in flux, perhaps being deleted by the cloud
			// provider right now; DELETED: gone.
			continue
		}
		if absent, why := present.servicesAbsent(svcs); absent && !present.referenced(lb.ID, lb.VipAddress) {
			data := lbData{ID: lb.ID, Name: lb.Name, VIPPort: lb.VipPortID, Services: svcs}
			var keptFIPs []string
			if c.net != nil && lb.VipPortID != "" {
				fips, err := listFIPs(ctx, c.net, floatingips.ListOpts{ProjectID: c.project, PortID: lb.VipPortID})
				if err != nil {
					return inv, err
				}
				for _, f := range fips {
					if keep := d.fipKeepReason(f, svcs, present); keep != "" {
						keptFIPs = append(keptFIPs, fmt.Sprintf("%s (%s)", f.ID, keep))
						continue
					}
					data.FIPs = append(data.FIPs, f.ID)
				}
				vipOf[lb.VipPortID] = lb.ID
			}
			reason := fmt.Sprintf("load balancer %s of Service %s, %s", lb.Name, joinRefs(svcs), why)
			if len(data.FIPs) > 0 {
				reason += fmt.Sprintf("; with floating IP %s on its VIP port %s", strings.Join(data.FIPs, ", "), lb.VipPortID)
			}
			if len(keptFIPs) > 0 {
				reason += fmt.Sprintf("; floating IP %s on its VIP port stays", strings.Join(keptFIPs, ", "))
			}
			inv.acts = append(inv.acts, remediate.Action{Target: KindLoadBalancer + "/" + lb.ID, Verb: VerbDelete,
				Reason: reason, Key: KindLoadBalancer + "/" + lb.ID, Data: data})
		}
	}

	// Floating IPs the cloud provider made for a Service, no longer on a
	// port (their load balancer, and with it its VIP port, is gone).
	if c.net != nil {
		fips, err := listFIPs(ctx, c.net, floatingips.ListOpts{ProjectID: c.project})
		if err != nil {
			return inv, err
		}
		for _, f := range fips {
			svc, ok := serviceFromFIPDescription(f.Description, d.cfg.ClusterName)
			if !ok || f.ProjectID != c.project {
				continue
			}
			inv.total++
			if f.PortID != "" {
				// On a port: only with its load balancer (above).
				continue
			}
			if absent, why := present.servicesAbsent([]ServiceRef{svc}); absent && !present.referenced(f.ID, f.FloatingIP) {
				act := remediate.Action{Target: KindFloatingIP + "/" + f.ID, Verb: VerbDelete,
					Reason: fmt.Sprintf("floating IP %s of Service %s, on no port, %s", f.FloatingIP, svc, why),
					Key:    KindFloatingIP + "/" + f.ID, Data: fipData{ID: f.ID, Service: svc}}
				act.ReportOnly = d.reclaim.keepFIPReason(svc, d.cfg.Decommissioned)
				inv.acts = append(inv.acts, act)
			}
		}
	}

	// Volumes.
	vopts := volumes.ListOpts{Metadata: map[string]string{CSIClusterKey: d.cfg.CSICluster}}
	if d.cfg.ProjectID != "" {
		// Admin credentials list their own project's volumes unless told
		// otherwise; the project filter needs all_tenants.
		vopts.AllTenants, vopts.TenantID = true, c.project
	}
	vpages, err := volumes.List(c.vol, vopts).AllPages(ctx)
	if err != nil {
		return inv, fmt.Errorf("list volumes: %w", err)
	}
	vols, err := volumes.ExtractVolumes(vpages)
	if err != nil {
		return inv, fmt.Errorf("decode volumes: %w", err)
	}
	now := d.now()
	for _, v := range vols {
		// The metadata filter is the server's; the exact check is ours.
		if !d.volumeIsOurs(v, c.project) {
			continue
		}
		inv.total++
		absent, why := present.volumeAbsent(v)
		if !absent {
			continue
		}
		target := KindVolume + "/" + v.ID
		act := remediate.Action{Target: target, Verb: VerbDelete, Key: target, Data: volData{ID: v.ID, PV: pvName(v)}}
		switch keep := d.reclaim.keepReason(v.ID, d.cfg.Decommissioned); {
		case len(v.Attachments) > 0:
			// Attached: not debris while a server uses it.
			continue
		case v.Status == "error_deleting", v.Status == "deleting" && now.Sub(since(v)) > d.cfg.DeleteTimeout:
			stuck := &StuckError{Target: target, Status: v.Status, Since: since(v), Command: adminVolumeCommand(v.ID)}
			act.Reason = fmt.Sprintf("volume %s (PersistentVolume %s) %s, stuck %s since %s", v.Name, pvName(v), why, v.Status, since(v).UTC().Format(time.RFC3339))
			act.ReportOnly = stuck.Error()
		case keep != "" && (v.Status == "deleting" || deletable(v.Status)):
			act.Reason = fmt.Sprintf("volume %s (PersistentVolume %s, %s) %s", v.Name, pvName(v), v.Status, why)
			act.ReportOnly = keep
		case v.Status == "deleting", deletable(v.Status):
			act.Reason = fmt.Sprintf("volume %s (PersistentVolume %s, %s) %s", v.Name, pvName(v), v.Status, why)
		default:
			// creating, attaching, backing-up...: in use or in flux.
			continue
		}
		inv.acts = append(inv.acts, act)
	}
	sort.Slice(inv.acts, func(i, j int) bool { return inv.acts[i].Target < inv.acts[j].Target })
	return inv, nil
}

// lbServices returns the Services the load balancer is the cluster's for:
// the one its name says and any its tags name (a load balancer shared
// between Services carries one tag per Service). It must carry every mark
// the cloud provider writes, each naming this cluster: the name, the tag
// with the name, and the description of one of its Services. A tag naming
// another cluster's Service, or a description naming another cluster
// (two clusters that share a name prefix, or a load balancer renamed by
// hand), makes it none of ours.
func (d *Debris) lbServices(lb loadbalancers.LoadBalancer, project string) ([]ServiceRef, bool) {
	svc, ok := serviceFromLBName(lb.Name, d.cfg.ClusterName)
	if !ok || lb.ProjectID != project || !slices.Contains(lb.Tags, lb.Name) {
		return nil, false
	}
	out := []ServiceRef{svc}
	for _, t := range lb.Tags {
		if !strings.HasPrefix(t, lbPrefix) {
			continue
		}
		s, ok := serviceFromLBName(t, d.cfg.ClusterName)
		if !ok {
			return nil, false
		}
		if s != svc {
			out = append(out, s)
		}
	}
	if !slices.ContainsFunc(out, func(s ServiceRef) bool { return lb.Description == lbDescription(s, d.cfg.ClusterName) }) {
		return nil, false
	}
	return out, true
}

// volumeIsOurs says whether the volume carries every mark Cinder CSI and
// its external-provisioner write, the cluster naming this one.
func (d *Debris) volumeIsOurs(v volumes.Volume, project string) bool {
	return v.Metadata[CSIClusterKey] == d.cfg.CSICluster && (v.TenantID == "" || v.TenantID == project) &&
		v.Metadata[CSIPVNameKey] != "" && v.Metadata[CSIPVCNameKey] != "" && v.Metadata[CSIPVCNamespaceKey] != ""
}

// fipKeepReason says why a floating IP on the VIP port of the load
// balancer of svcs, about to be deleted, must stay ("" when it goes with
// it): one the cloud provider did not make for one of these Services in
// this cluster (the Service brought its own, which the cloud provider
// never deletes either), one a Service refers to, or one a Service asked
// to keep, or might have.
func (d *Debris) fipKeepReason(f floatingips.FloatingIP, svcs []ServiceRef, present clusterView) string {
	svc, ok := serviceFromFIPDescription(f.Description, d.cfg.ClusterName)
	switch {
	case !ok || !slices.Contains(svcs, svc):
		return "not made by the cloud provider for the load balancer's Services"
	case present.referenced(f.ID, f.FloatingIP):
		return "a Service refers to it"
	}
	for _, s := range svcs {
		if keep := d.reclaim.keepFIPReason(s, d.cfg.Decommissioned); keep != "" {
			return keep
		}
	}
	return ""
}

// deletable says whether Cinder accepts a tenant's delete in this status
// (cinder/volume/api.py: delete without force).
func deletable(status string) bool {
	switch status {
	case "available", "error", "error_restoring", "error_extending", "error_managing":
		return true
	}
	return false
}

func adminVolumeCommand(id string) string {
	return "openstack volume set --state error " + id + " && openstack volume delete --force " + id
}

// since is when the volume's current state began, as far as the API says.
func since(v volumes.Volume) time.Time {
	if !v.UpdatedAt.IsZero() {
		return v.UpdatedAt
	}
	return v.CreatedAt
}

// pvName is the PersistentVolume the volume was made for: the CSI
// metadata, else its name (the CSI plugin names volumes after the PV).
func pvName(v volumes.Volume) string {
	if n := v.Metadata[CSIPVNameKey]; n != "" {
		return n
	}
	return v.Name
}

func joinRefs(refs []ServiceRef) string {
	s := make([]string, len(refs))
	for i, r := range refs {
		s[i] = r.String()
	}
	return strings.Join(s, ", ")
}

func listFIPs(ctx context.Context, net *gophercloud.ServiceClient, opts floatingips.ListOpts) ([]floatingips.FloatingIP, error) {
	pages, err := floatingips.List(net, opts).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list floating IPs: %w", err)
	}
	out, err := floatingips.ExtractFloatingIPs(pages)
	if err != nil {
		return nil, fmt.Errorf("decode floating IPs: %w", err)
	}
	return out, nil
}

// clusterView is what the cluster holds: Services and PersistentVolumes (by
// name and by CSI volume handle), and every value a Service refers to a
// cloud resource by. Decommissioned means everything is absent.
type clusterView struct {
	decommissioned bool
	services       map[ServiceRef]bool
	pvNames        map[string]bool
	pvHandles      map[string]bool
	// refs holds every Service annotation value (a load-balancer-id, a
	// floating IP kept by address), spec.loadBalancerIP and ingress IP.
	refs map[string]bool
}

// referenced says whether any Service refers to one of ids (a resource's
// ID or address), by whatever name the Service has.
func (v clusterView) referenced(ids ...string) bool {
	for _, id := range ids {
		if id != "" && v.refs[id] {
			return true
		}
	}
	return false
}

// serviceRefs is every value by which a Service may refer to a cloud
// resource: all its annotation values (the cloud provider's
// load-balancer-id, and any other a tool keeps an ID or address in),
// spec.loadBalancerIP and its ingress IPs. Matching every annotation value
// is broader than the cloud provider's own keys on purpose: a resource any
// Service names is not debris.
func serviceRefs(s corev1.Service) []string {
	var out []string
	for _, v := range s.Annotations {
		out = append(out, v)
	}
	out = append(out, s.Spec.LoadBalancerIP)
	for _, in := range s.Status.LoadBalancer.Ingress {
		out = append(out, in.IP)
	}
	return out
}

func (v clusterView) servicesAbsent(refs []ServiceRef) (bool, string) {
	if v.decommissioned {
		return true, "the cluster is decommissioned"
	}
	for _, r := range refs {
		if v.services[r] {
			return false, ""
		}
	}
	if len(refs) == 1 {
		return true, "the Service is absent from the cluster"
	}
	return true, "every one of its Services is absent from the cluster"
}

func (v clusterView) volumeAbsent(vol volumes.Volume) (bool, string) {
	if v.decommissioned {
		return true, "the cluster is decommissioned"
	}
	if v.pvHandles[vol.ID] || v.pvNames[pvName(vol)] {
		return false, ""
	}
	return true, "its PersistentVolume is absent from the cluster"
}

// clusterObjects lists the cluster's Services and PersistentVolumes. Any
// error is returned: without the list nothing counts as absent.
func (d *Debris) clusterObjects(ctx context.Context) (clusterView, error) {
	if d.cfg.Decommissioned {
		return clusterView{decommissioned: true}, nil
	}
	v := clusterView{services: map[ServiceRef]bool{}, pvNames: map[string]bool{}, pvHandles: map[string]bool{}, refs: map[string]bool{}}
	svcs, err := d.kube.CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return v, fmt.Errorf("list services: %w", err)
	}
	for _, s := range svcs.Items {
		v.services[ServiceRef{Namespace: s.Namespace, Name: s.Name}] = true
		for _, r := range serviceRefs(s) {
			v.refs[r] = true
		}
	}
	pvs, err := d.kube.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return v, fmt.Errorf("list persistent volumes: %w", err)
	}
	for _, pv := range pvs.Items {
		v.pvNames[pv.Name] = true
		if h := volumeHandle(pv); h != "" {
			v.pvHandles[h] = true
		}
	}
	// Every PV of any phase, seen while it exists: once it is gone, only
	// this record tells a volume Kubernetes asked to delete from one it
	// was told to keep.
	if err := d.reclaim.observe(pvs.Items, svcs.Items, d.now()); err != nil {
		return v, err
	}
	return v, nil
}

// servicesStillAbsent rechecks, right before a delete, that none of refs exists
// (Get, not a list); an error is returned as is, presence as
// ErrPrecondition.
func (d *Debris) servicesStillAbsent(ctx context.Context, refs []ServiceRef) error {
	if d.cfg.Decommissioned {
		return nil
	}
	for _, r := range refs {
		_, err := d.kube.CoreV1().Services(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
		switch {
		case err == nil:
			return fmt.Errorf("service %s exists again: %w", r, remediate.ErrPrecondition)
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("get service %s: %w", r, err)
		}
	}
	return nil
}

func (d *Debris) pvStillAbsent(ctx context.Context, volumeID, pv string) error {
	if d.cfg.Decommissioned {
		return nil
	}
	_, err := d.kube.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
	switch {
	case err == nil:
		return fmt.Errorf("persistent volume %s exists again: %w", pv, remediate.ErrPrecondition)
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("get persistent volume %s: %w", pv, err)
	}
	// A PV of another name may hold the volume (a static PV).
	pvs, err := d.kube.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list persistent volumes: %w", err)
	}
	for _, p := range pvs.Items {
		if volumeHandle(p) == volumeID {
			return fmt.Errorf("persistent volume %s holds volume %s: %w", p.Name, volumeID, remediate.ErrPrecondition)
		}
	}
	return nil
}

// cloud is one authenticated session: the service clients and the project
// whose resources are the cluster's. net is nil when the catalog has no
// network endpoint (floating IPs and ports are then left alone).
type cloud struct {
	lb, vol, net *gophercloud.ServiceClient
	project      string
	done         func()
}

// clients authenticates afresh (nothing cached can hide a dead or restored
// control plane) and finds the endpoints.
func (d *Debris) clients(ctx context.Context) (cloud, error) {
	ao, eo, tlsCfg, err := d.cfg.OpenStackAuth.AuthOptions()
	if err != nil {
		return cloud{}, err
	}
	transport := &http.Transport{Proxy: http.ProxyFromEnvironment, TLSClientConfig: tlsCfg,
		DisableKeepAlives: true, TLSHandshakeTimeout: 10 * time.Second}
	c := cloud{done: transport.CloseIdleConnections}
	provider, err := openstack.NewClient(ao.IdentityEndpoint)
	if err != nil {
		return cloud{}, fmt.Errorf("auth url: %w", err)
	}
	provider.HTTPClient = http.Client{Transport: transport, Timeout: time.Minute}
	if err := openstack.Authenticate(ctx, provider, ao); err != nil {
		c.done()
		return cloud{}, fmt.Errorf("keystone: %w", err)
	}
	c.project = d.cfg.ProjectID
	if c.project == "" {
		if c.project, err = openstackauth.TokenProject(provider); err != nil {
			c.done()
			return cloud{}, err
		}
	}
	if c.lb, err = openstack.NewLoadBalancerV2(provider, eo); err != nil {
		c.done()
		return cloud{}, fmt.Errorf("octavia endpoint: %w", err)
	}
	if c.vol, err = openstack.NewBlockStorageV3(provider, eo); err != nil {
		c.done()
		return cloud{}, fmt.Errorf("cinder endpoint: %w", err)
	}
	if c.net, err = openstack.NewNetworkV2(provider, eo); err != nil {
		// No Neutron in the catalog: floating IPs and ports stay.
		c.net = nil
	}
	return c, nil
}
