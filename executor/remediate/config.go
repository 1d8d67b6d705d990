package remediate

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/drwatch/drwatch/internal/field"
	"github.com/drwatch/drwatch/internal/kubeconfig"
	"github.com/drwatch/drwatch/internal/openstackauth"
)

// Config is the `remediations:` section of a node's config file. Every
// remediator is off unless its mode says otherwise. The config package can
// embed it as is (yaml tags, doc tags, default tags applied by Defaulted);
// Validate names fields relative to the section.
type Config struct {
	Interval time.Duration `yaml:"interval" default:"30s" doc:"Period between remediation passes on the leader."`
	// Kubernetes names the clusters of each site; the Kubernetes
	// remediators act on the one their site field names.
	Kubernetes KubeSites `yaml:"kubernetes" doc:"How to reach each site's Kubernetes API."`

	DeadNodeOutOfService DeadNodeConfig       `yaml:"dead_node_out_of_service" doc:"Taint node.kubernetes.io/out-of-service on nodes whose guest Nova confirms down: powered off, crashed, its host forced down by an operator (admin) or gone; report-only for a host merely down (not fenced) and before Kubernetes 1.26 (seeds 003, 004)."`
	DrainTrap            DrainTrapConfig      `yaml:"drain_trap" doc:"Evict, one at a time, the pods that are a Local load balancer's only endpoints while their nodes are out of its Octavia pool, when a Ready pool node admits the replacement (else only reported) (seed 002)."`
	OrphanedPods         OrphanedPodsConfig   `yaml:"orphaned_pods" doc:"Force-delete pods stuck Terminating, never one that may still run where a second copy would conflict (seed 000)."`
	BackupWarmup         BackupWarmupConfig   `yaml:"backup_warmup" doc:"Scale workloads up on the backup cluster at failover."`
	OctaviaStuckLB       OctaviaStuckLBConfig `yaml:"octavia_stuck_lb" doc:"Fail over Octavia load balancers stuck in ERROR with their data plane down (operating_status OFFLINE or ERROR; one that still serves is only reported), or PENDING_* (seed 000)."`
	// OpenStack holds one cluster's Neutron and Nova remediators (seed 001).
	OpenStack OpenStackClusterConfig `yaml:"openstack" doc:"One Kubernetes cluster's OpenStack project: Neutron route GC, security groups and never-ready instances (seed 001)."`
	// CloudDebris deletes what a dead cluster's cloud provider left behind.
	CloudDebris CloudDebrisConfig `yaml:"cloud_debris" doc:"Delete the Octavia load balancers, Cinder CSI volumes and Neutron floating IPs (and load-balancer VIP ports) one cluster's cloud provider left behind, once their Service or PersistentVolume is gone from the cluster or the cluster is decommissioned, and check in OpenStack that each is really gone (seed 001, the deorbiter). What Kubernetes was told to keep stays: a volume goes only if drwatch saw its PersistentVolume with reclaim policy Delete, a floating IP only if it saw its Service without loadbalancer.openstack.org/keep-floatingip; the rest is reported."`
}

// CloudDebrisConfig configures cloud-debris. A resource is the cluster's
// only by its exact cloud-provider-openstack naming or Cinder CSI metadata.
type CloudDebrisConfig struct {
	Settings      `yaml:",inline"`
	OpenStackAuth `yaml:",inline"`
	Site          string `yaml:"site" default:"primary" doc:"Which site's Kubernetes cluster owns the resources (its Services and PersistentVolumes are checked): primary or backup."`
	ProjectID     string `yaml:"project_id" doc:"ID of the project whose resources are considered; empty means the credentials' own project. Another project's resources are never listed, counted or deleted, even with admin credentials."`
	ClusterName   string `yaml:"cluster_name" doc:"The cloud provider's --cluster-name (required when enabled): load balancers named kube_service_<cluster_name>_<namespace>_<service> and floating IPs described \"Floating IP for Kubernetes external service <namespace>/<service> from cluster <cluster_name>\" are the cluster's. The default kubernetes is refused unless decommissioned: another cluster of the project may keep it too."`
	CSICluster    string `yaml:"csi_cluster" default:"(cluster_name)" doc:"The Cinder CSI plugin's --cluster: volumes whose metadata cinder.csi.openstack.org/cluster equals it are the cluster's (kubernetes is refused unless decommissioned)."`
	// Decommissioned skips the Kubernetes check: the cluster is gone for
	// good, so everything with its naming or metadata is debris.
	Decommissioned bool          `yaml:"decommissioned" default:"false" doc:"The cluster is gone for good: every resource with its naming or metadata is debris, without asking its Kubernetes API (false: only those whose Service or PersistentVolume is absent there, that no Service refers to, and that Kubernetes did not ask to keep). What drwatch saw kept is kept even then. Mind the caps and brake_share: with it, everything qualifies at once."`
	DeleteTimeout  time.Duration `yaml:"delete_timeout" default:"5m" doc:"How long one delete is followed until OpenStack answers 404; a volume still deleting or error_deleting after it (or found so for longer) is reported for an admin and never retried."`
}

// KubeSites is the remediations.kubernetes cluster list (kubeconfig.Sites:
// its keys, defaults, rules and client connection), under the name Config
// holds it by. The list lives in a leaf because the cluster health
// monitor reaches the same clusters, and a monitor never imports an
// executor.
type KubeSites = kubeconfig.Sites

// DeadNodeConfig configures dead-node-out-of-service.
type DeadNodeConfig struct {
	Settings `yaml:",inline"`
	Site     string        `yaml:"site" default:"primary" doc:"Which site's cluster to watch: primary or backup."`
	After    time.Duration `yaml:"not_ready_for" default:"5m" doc:"How long a node must be NotReady or Unknown before its instance is checked."`
	// AlphaGateOn is the operator's word for what the API cannot show.
	AlphaGateOn bool `yaml:"alpha_gate_on" default:"false" doc:"Kubernetes 1.24 and 1.25 only: true if kube-controller-manager runs with --feature-gates=NodeOutOfServiceVolumeDetach=true, which drwatch cannot see. While false the taint is report-only there. Ignored from 1.26 (on by default) and before 1.24 (no such gate)."`
}

// DrainTrapConfig configures drain-trap. Its load-balancer pools are read
// from Octavia with remediations.openstack's credentials, when that section
// is for the same site; without them drain-trap moves nothing.
type DrainTrapConfig struct {
	Settings `yaml:",inline"`
	Site     string `yaml:"site" default:"primary" doc:"Which site's cluster to watch: primary or backup. Its Octavia pools are read with the credentials of remediations.openstack for the same site; without them nothing moves."`
	// ClusterName finds a Service's load balancer by the name the OpenStack
	// cloud provider gives it when the Service carries no
	// loadbalancer.openstack.org/load-balancer-id annotation.
	ClusterName string `yaml:"cloud_provider_cluster_name" default:"kubernetes" doc:"The OpenStack cloud provider's --cluster-name: a Service without the loadbalancer.openstack.org/load-balancer-id annotation has the load balancer kube_service_<cluster>_<namespace>_<name> in the project of remediations.openstack."`
}

// OrphanedPodsConfig configures orphaned-pods, and its opt-in cordon and
// Nova reboot of the node the pods are stuck on.
type OrphanedPodsConfig struct {
	Settings `yaml:",inline"`
	Site     string        `yaml:"site" default:"primary" doc:"Which site's cluster to watch: primary or backup."`
	After    time.Duration `yaml:"terminating_for" default:"10m" doc:"How long past its grace period a pod may stay Terminating before it is force-deleted."`
	// RebootNode fences, by a cordon and a Nova reboot, a node whose held
	// pods block something, once per episode, and then releases them.
	// Off by default.
	RebootNode bool `yaml:"reboot_node" default:"false" doc:"Fence by reboot: when a pod held on a node not confirmed down (a StatefulSet's, or one with a ReadWriteOnce volume) blocks something (its StatefulSet's replacement, another pod waiting for its claim), cordon the node and soft-reboot it through Nova, once per episode, one node at a time within remediations.kubernetes.<site>.max_disrupted_nodes; once it is back Ready under a new boot ID, force-delete what is still Terminating reboot_wait after the reboot, held pods included. A node whose held pods block nothing is not rebooted; they are only reported. drwatch lifts its own cordon once the node is Ready again (needs remediations.openstack for the same site)."`
	// RebootWait is how long the rebooted kubelet gets to finish the pods
	// itself before drwatch force-deletes those still Terminating.
	RebootWait time.Duration `yaml:"reboot_wait" default:"10m" doc:"With reboot_node: how long after the reboot a pod must still be Terminating before it is force-deleted, and the node Ready before drwatch uncordons it (at least 1m)."`
}

// BackupWarmupConfig configures backup-warmup.
type BackupWarmupConfig struct {
	Settings     `yaml:",inline"`
	ReadyTimeout time.Duration `yaml:"ready_timeout" default:"5m" doc:"How long the DNS flip waits for the workloads to be ready before flipping anyway."`
	Workloads    []Workload    `yaml:"workloads" doc:"The backup cluster's workloads and the replicas they need when the backup is active."`
	// ScaleDownAtFailback returns the workloads to their idle replicas once
	// traffic is back on the primary (opt-in): the failback verified at
	// every authoritative server, and one TTL of its records passed since.
	ScaleDownAtFailback bool `yaml:"scale_down_at_failback" default:"false" doc:"After a failback to the primary, scale the workloads back to idle_replicas (opt-in), once the failback is verified at every authoritative server and one TTL of the records has passed since."`
}

// Workload is a Deployment or StatefulSet and its replica count when active.
type Workload struct {
	Kind      string `yaml:"kind" doc:"Deployment or StatefulSet."`
	Namespace string `yaml:"namespace" doc:"Namespace."`
	Name      string `yaml:"name" doc:"Name."`
	Replicas  int32  `yaml:"replicas" doc:"Replicas when the backup is active (> 0)."`
	// IdleReplicas is what scale_down_at_failback returns it to.
	IdleReplicas int32 `yaml:"idle_replicas" default:"0" doc:"Replicas while the primary is active, for scale_down_at_failback (below replicas)."`
}

// OpenStackAuth says how to reach one site's OpenStack: the credentials
// type the octavia probe shares (openstackauth.Credentials, its keys and
// rules), under the name the sections embed it by.
type OpenStackAuth = openstackauth.Credentials

// validateAuth reports the credentials' problems, by path relative to the
// section that holds them. Credentials are needed when the repair is
// enabled; a section that sets any of them, enabled or not, must set them
// completely.
func validateAuth(a OpenStackAuth, enabled bool) field.Errors {
	if a.IsZero() {
		var errs field.Errors
		if enabled {
			errs.Add("cloud", "cloud or auth_url must be set when enabled")
		}
		return errs
	}
	return a.Validate()
}

// OctaviaStuckLBConfig configures octavia-stuck-lb.
type OctaviaStuckLBConfig struct {
	Settings      `yaml:",inline"`
	OpenStackAuth `yaml:",inline"`
	// ProjectID is the only project whose load balancers are watched: admin
	// credentials list and may fail over every project's.
	ProjectID       string        `yaml:"project_id" doc:"ID of the project whose load balancers are watched; empty means the credentials' own project. Load balancers of any other project are never listed, counted or failed over, even with admin credentials."`
	LoadBalancers   []string      `yaml:"load_balancers" doc:"Load balancers of the project to watch, by ID or unique name; empty watches every load balancer of the project."`
	PendingTimeout  time.Duration `yaml:"pending_timeout" default:"10m" doc:"How long a load balancer may stay PENDING_* (since its updated_at) before it is failed over."`
	FailoverTimeout time.Duration `yaml:"failover_timeout" default:"5m" doc:"How long one failover is followed until the load balancer is ACTIVE before it counts as failed."`
}

// Defaults.
const (
	DefaultInterval      = 30 * time.Second
	DefaultDeadNodeAfter = 5 * time.Minute
	DefaultOrphanAfter   = 10 * time.Minute
	DefaultReadyTimeout  = 5 * time.Minute

	DefaultDebrisDeleteTimeout = 5 * time.Minute

	DefaultOctaviaPendingTimeout  = 10 * time.Minute
	DefaultOctaviaFailoverTimeout = 5 * time.Minute

	// DefaultOrphanRebootWait is orphaned_pods.reboot_wait: long enough for
	// a VM to reboot and its kubelet to start and finish its pods.
	DefaultOrphanRebootWait = 10 * time.Minute
	// MinOrphanRebootWait is the shortest reboot_wait accepted: a shorter
	// wait would force-delete pods before the node could be back.
	MinOrphanRebootWait = time.Minute
)

// Defaulted returns c with every zero field set from its `default` tag
// (field.SetDefaults), and then the defaults derived from other fields:
// cloud_debris.csi_cluster is cloud_debris.cluster_name, and
// openstack.never_ready_instances.max_age is 1h, or 3 times active_for
// when that is longer. In this section zero means unset, written in the
// file or not; a negative value is kept, for Validate to name: it is a
// mistake, not "unset".
func (c Config) Defaulted() Config {
	field.SetDefaults(&c)
	if c.CloudDebris.CSICluster == "" {
		c.CloudDebris.CSICluster = c.CloudDebris.ClusterName
	}
	if n := &c.OpenStack.NeverReadyInstances; n.MaxAge == 0 {
		n.MaxAge = max(DefaultNeverReadyMaxAge, 3*n.ActiveFor)
	}
	return c
}

// Section is the key of Config in a node's config file. An error about the
// configuration that a remediator's constructor returns names its field
// under it, as the config loader does with Validate's problems.
const Section = "remediations"

// Validate returns every problem at once, each naming its field by its path
// inside the section ("drain_trap.mode").
func (c Config) Validate() field.Errors {
	var errs field.Errors
	site := func(path, s string) {
		if s != "" && s != "primary" && s != "backup" {
			errs.Add(path+".site", "%q must be primary or backup", s)
		}
	}
	nonNegative(&errs, "interval", c.Interval)
	errs.Append("kubernetes", c.Kubernetes.Validate())
	nonNegative(&errs, "dead_node_out_of_service.not_ready_for", c.DeadNodeOutOfService.After)
	nonNegative(&errs, "orphaned_pods.terminating_for", c.OrphanedPods.After)
	nonNegative(&errs, "backup_warmup.ready_timeout", c.BackupWarmup.ReadyTimeout)
	errs.Append("dead_node_out_of_service", c.DeadNodeOutOfService.Settings.validate())
	site("dead_node_out_of_service", c.DeadNodeOutOfService.Site)
	errs.Append("drain_trap", c.DrainTrap.Settings.validate())
	site("drain_trap", c.DrainTrap.Site)
	if n := c.DrainTrap.ClusterName; len(n) > 200 || strings.ContainsAny(n, " \t\n/") {
		errs.Add("drain_trap.cloud_provider_cluster_name", "%q must be at most 200 bytes, without spaces or slashes", n)
	}
	errs.Append("orphaned_pods", c.OrphanedPods.Settings.validate())
	site("orphaned_pods", c.OrphanedPods.Site)
	if w := c.OrphanedPods.RebootWait; w != 0 && w < MinOrphanRebootWait {
		errs.Add("orphaned_pods.reboot_wait", "%s must be at least %s (0 means the default %s)", w, MinOrphanRebootWait, DefaultOrphanRebootWait)
	}
	errs.Append("backup_warmup", c.BackupWarmup.Settings.validate())
	labels := field.Labels{}
	for i, w := range c.BackupWarmup.Workloads {
		p := "backup_warmup.workloads[" + labels.Next(w.Name, i) + "]"
		if w.Kind != "Deployment" && w.Kind != "StatefulSet" {
			errs.Add(p+".kind", "%q must be Deployment or StatefulSet", w.Kind)
		}
		if w.Namespace == "" || w.Name == "" {
			errs.Add(p, "namespace and name are required")
		}
		if w.IdleReplicas < 0 || (w.Replicas > 0 && w.IdleReplicas >= w.Replicas) {
			errs.Add(p+".idle_replicas", "%d must be >= 0 and below replicas", w.IdleReplicas)
		}
		if w.Replicas <= 0 {
			errs.Add(p+".replicas", "%d must be > 0", w.Replicas)
		}
	}
	errs.Append("octavia_stuck_lb", c.OctaviaStuckLB.Settings.validate())
	errs.Append("octavia_stuck_lb", validateAuth(c.OctaviaStuckLB.OpenStackAuth, c.OctaviaStuckLB.Mode.Enabled()))
	seen := map[string]bool{}
	for i, lb := range c.OctaviaStuckLB.LoadBalancers {
		p := fmt.Sprintf("octavia_stuck_lb.load_balancers[%d]", i)
		switch {
		case lb == "":
			errs.Add(p, "must not be empty")
		case seen[lb]:
			errs.Add(p, "%q is listed twice", lb)
		}
		seen[lb] = true
	}
	nonNegative(&errs, "octavia_stuck_lb.pending_timeout", c.OctaviaStuckLB.PendingTimeout)
	nonNegative(&errs, "octavia_stuck_lb.failover_timeout", c.OctaviaStuckLB.FailoverTimeout)
	errs.Append("openstack", c.OpenStack.validate())
	errs.Append("cloud_debris", c.CloudDebris.validate())
	return errs
}

// DefaultCloudProviderCluster is cloud-provider-openstack's and Cinder
// CSI's default --cluster-name and --cluster. Two clusters of a project
// that both keep it carry the same marks, so a live cluster's cloud-debris
// refuses it: the neighbour's resources would look like its own debris.
const DefaultCloudProviderCluster = "kubernetes"

func (d CloudDebrisConfig) validate() field.Errors {
	var errs field.Errors
	errs = append(errs, d.Settings.validate()...)
	errs = append(errs, validateAuth(d.OpenStackAuth, d.Mode.Enabled())...)
	if d.Site != "" && d.Site != "primary" && d.Site != "backup" {
		errs.Add("site", "%q must be primary or backup", d.Site)
	}
	if d.Mode.Enabled() && d.ClusterName == "" {
		errs.Add("cluster_name", "required when enabled: it is how the cluster's resources are told from any other's")
	}
	for _, f := range []struct{ path, v string }{{"cluster_name", d.ClusterName}, {"csi_cluster", d.CSICluster}} {
		if len(f.v) > 200 || strings.ContainsAny(f.v, " \t\n/") {
			errs.Add(f.path, "%q must be at most 200 bytes, without spaces or slashes", f.v)
		}
		if f.v == DefaultCloudProviderCluster && !d.Decommissioned {
			errs.Add(f.path, "%q is cloud-provider-openstack's default, which any other cluster in the project may keep too: its resources would be taken for this one's; set the cluster's own --cluster-name, or decommissioned: true", f.v)
		}
	}
	nonNegative(&errs, "delete_timeout", d.DeleteTimeout)
	return errs
}

// OpenStackClusterConfig names one Kubernetes cluster's OpenStack project
// and configures the remediators of executor/remediate/openstack.
type OpenStackClusterConfig struct {
	OpenStackAuth `yaml:",inline"`
	Site          string `yaml:"site" default:"primary" doc:"Which site's Kubernetes cluster runs on these instances: primary or backup."`
	RouterID      string `yaml:"router_id" doc:"ID of the cluster's Neutron router, whose extra routes carry the pod CIDRs."`
	PodCIDR       string `yaml:"pod_cidr" doc:"The cluster's pod CIDR, e.g. 198.19.0.0/16."`
	// Cluster instances are those whose name starts with InstanceNamePrefix
	// and, when InstanceMetadataKey is set, carry that metadata key (with
	// InstanceMetadataValue, when set). A name prefix alone also matches a
	// neighbouring cluster's instances and long-lived VMs that are no
	// nodes (kubespray's <prefix>etcd-N, a bastion), so mode on needs
	// the key and its value (invariant 13: nothing outside the cluster).
	InstanceNamePrefix    string `yaml:"instance_name_prefix" doc:"Nova instances of the cluster have names starting with this. It only narrows: alone, it suffices for dry-run only."`
	InstanceMetadataKey   string `yaml:"instance_metadata_key" doc:"Nova instances of the cluster carry this metadata key, set by whatever creates the nodes (your Terraform, Heat or cluster manager; for example Kubernikus' or Magnum's cluster key, not verified here: read it with openstack server show). Required, with instance_metadata_value, when any of the three repairs is on; dry-run may do with instance_name_prefix alone and then only reports."`
	InstanceMetadataValue string `yaml:"instance_metadata_value" doc:"With instance_metadata_key: the value it must have, naming this cluster (required when a repair is on: any value would also match other clusters under the same key; empty accepts any value in dry-run)."`

	NeutronRouteGC      NeutronRouteGCConfig      `yaml:"neutron_route_gc" doc:"Remove extra routes into the pod CIDR proven to be this cluster's and stale, judged from the nodes' Node.spec.podCIDRs (needs remediations.kubernetes for the site) and every Nova server of the project; never a route through an instance outside the cluster."`
	SecurityGroups      SecurityGroupsConfig      `yaml:"security_groups" doc:"Add the required security group back to cluster instances, and the pod CIDR to node ports' allowed_address_pairs."`
	NeverReadyInstances NeverReadyInstancesConfig `yaml:"never_ready_instances" doc:"Reboot (soft, then hard, at most twice) instances ACTIVE for long, but younger than max_age, whose node never became Ready."`
}

// NeutronRouteGCConfig configures neutron-route-gc.
type NeutronRouteGCConfig struct {
	Settings   `yaml:",inline"`
	RouteLimit int `yaml:"route_limit" default:"30" doc:"Neutron's max_routes for the router (the default is Neutron's own)."`
	WarnMargin int `yaml:"route_warn_margin" default:"3" doc:"Warn when the routes left after clean-up are within this many of route_limit."`
}

// SecurityGroupsConfig configures security-groups.
type SecurityGroupsConfig struct {
	Settings      `yaml:",inline"`
	RequiredGroup string `yaml:"required_security_group" doc:"Name of the security group every cluster instance must have (required when enabled)."`
}

// NeverReadyInstancesConfig configures never-ready-instances.
type NeverReadyInstancesConfig struct {
	Settings  `yaml:",inline"`
	ActiveFor time.Duration `yaml:"active_for" default:"15m" doc:"How long an instance must be ACTIVE (and since its last reboot) with no Ready node before it is rebooted."`
	// MaxAge bounds the repair to new instances: one that never joined
	// within it is no failed boot but something else (a bastion, an etcd
	// VM, a node whose Node object was deleted), and is left alone.
	MaxAge time.Duration `yaml:"max_age" default:"1h, or 3 × active_for when longer" doc:"Instances created or launched longer ago than this are never rebooted: a node that failed its first boot is young (the default lets both reboots fit; must exceed 2 times active_for)."`
}

// Defaults for the OpenStack cluster remediators.
const (
	DefaultRouteLimit          = 30
	DefaultRouteWarnMargin     = 3
	DefaultNeverReadyActiveFor = 15 * time.Minute
	DefaultNeverReadyMaxAge    = time.Hour
)

// Enabled reports whether any of the OpenStack remediators is enabled.
func (o OpenStackClusterConfig) Enabled() bool {
	return o.NeutronRouteGC.Mode.Enabled() || o.SecurityGroups.Mode.Enabled() || o.NeverReadyInstances.Mode.Enabled()
}

// onRepairs names the repairs in mode on, joined by ", "; "" when none.
func (o OpenStackClusterConfig) onRepairs() string {
	var on []string
	for _, r := range []struct {
		name string
		mode Mode
	}{{"neutron_route_gc", o.NeutronRouteGC.Mode}, {"security_groups", o.SecurityGroups.Mode}, {"never_ready_instances", o.NeverReadyInstances.Mode}} {
		if r.mode == ModeOn {
			on = append(on, r.name)
		}
	}
	return strings.Join(on, ", ")
}

func (o OpenStackClusterConfig) validate() field.Errors {
	var errs field.Errors
	errs.Append("neutron_route_gc", o.NeutronRouteGC.Settings.validate())
	errs.Append("security_groups", o.SecurityGroups.Settings.validate())
	errs.Append("never_ready_instances", o.NeverReadyInstances.Settings.validate())
	errs = append(errs, validateAuth(o.OpenStackAuth, o.Enabled())...)
	if o.Site != "" && o.Site != "primary" && o.Site != "backup" {
		errs.Add("site", "%q must be primary or backup", o.Site)
	}
	if o.Enabled() && o.InstanceNamePrefix == "" && o.InstanceMetadataKey == "" {
		errs.Add("instance_name_prefix", "instance_name_prefix or instance_metadata_key must identify the cluster's instances")
	}
	if o.InstanceMetadataValue != "" && o.InstanceMetadataKey == "" {
		errs.Add("instance_metadata_value", "needs instance_metadata_key")
	}
	if on := o.onRepairs(); on != "" {
		if o.InstanceMetadataKey == "" {
			errs.Add("instance_metadata_key", "required when %s is on: a name prefix alone also matches other clusters' instances and VMs that are no nodes (dry-run may do without)", on)
		} else if o.InstanceMetadataValue == "" {
			errs.Add("instance_metadata_value", "required when %s is on: any value would also match other clusters' instances under the same key", on)
		}
	}
	if o.PodCIDR != "" {
		if p, err := netip.ParsePrefix(o.PodCIDR); err != nil || p != p.Masked() {
			errs.Add("pod_cidr", "%q must be a network prefix like 198.19.0.0/16", o.PodCIDR)
		}
	}
	if (o.NeutronRouteGC.Mode.Enabled() || o.SecurityGroups.Mode.Enabled()) && o.PodCIDR == "" {
		errs.Add("pod_cidr", "required by neutron_route_gc and security_groups")
	}
	if o.NeutronRouteGC.Mode.Enabled() && o.RouterID == "" {
		errs.Add("router_id", "required by neutron_route_gc")
	}
	if o.SecurityGroups.Mode.Enabled() && o.SecurityGroups.RequiredGroup == "" {
		errs.Add("security_groups.required_security_group", "required when enabled")
	}
	nonNegative(&errs, "neutron_route_gc.route_limit", o.NeutronRouteGC.RouteLimit)
	nonNegative(&errs, "neutron_route_gc.route_warn_margin", o.NeutronRouteGC.WarnMargin)
	nonNegative(&errs, "never_ready_instances.active_for", o.NeverReadyInstances.ActiveFor)
	nonNegative(&errs, "never_ready_instances.max_age", o.NeverReadyInstances.MaxAge)
	if n := o.NeverReadyInstances; n.MaxAge > 0 && n.ActiveFor > 0 && n.MaxAge <= 2*n.ActiveFor {
		// The soft reboot comes at active_for, the hard one active_for
		// later: a shorter bound would cut the repair off halfway.
		errs.Add("never_ready_instances.max_age", "%v must exceed 2 times active_for (%v)", n.MaxAge, n.ActiveFor)
	}
	return errs
}

// nonNegative names a negative count or duration at path; zero means the
// default.
func nonNegative[T int | time.Duration](errs *field.Errors, path string, v T) {
	if v < 0 {
		errs.Add(path, "%v must be >= 0 (0 or unset: the default)", v)
	}
}
