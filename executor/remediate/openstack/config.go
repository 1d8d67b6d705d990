package openstack

import (
	"net/netip"
	"strings"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/internal/field"
)

// OpenStackClusterConfig names one Kubernetes cluster's OpenStack project
// and configures the remediators of executor/remediate/openstack.
type OpenStackClusterConfig struct {
	remediate.OpenStackAuth `yaml:",inline"`
	Site                    string `yaml:"site" default:"primary" doc:"Which site's Kubernetes cluster runs on these instances: primary or backup."`
	RouterID                string `yaml:"router_id" doc:"ID of the cluster's Neutron router, whose extra routes carry the pod CIDRs."`
	PodCIDR                 string `yaml:"pod_cidr" doc:"The cluster's pod CIDR, e.g. 198.19.0.0/16."`
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
	remediate.Settings `yaml:",inline"`
	RouteLimit         int `yaml:"route_limit" default:"30" doc:"Neutron's max_routes for the router (the default is Neutron's own)."`
	WarnMargin         int `yaml:"route_warn_margin" default:"3" doc:"Warn when the routes left after clean-up are within this many of route_limit."`
}

// SecurityGroupsConfig configures security-groups.
type SecurityGroupsConfig struct {
	remediate.Settings `yaml:",inline"`
	RequiredGroup      string `yaml:"required_security_group" doc:"Name of the security group every cluster instance must have (required when enabled)."`
}

// NeverReadyInstancesConfig configures never-ready-instances.
type NeverReadyInstancesConfig struct {
	remediate.Settings `yaml:",inline"`
	ActiveFor          time.Duration `yaml:"active_for" default:"15m" doc:"How long an instance must be ACTIVE (and since its last reboot) with no Ready node before it is rebooted."`
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
		mode remediate.Mode
	}{{"neutron_route_gc", o.NeutronRouteGC.Mode}, {"security_groups", o.SecurityGroups.Mode}, {"never_ready_instances", o.NeverReadyInstances.Mode}} {
		if r.mode == remediate.ModeOn {
			on = append(on, r.name)
		}
	}
	return strings.Join(on, ", ")
}

// Validate implements repair.Section.
func (o OpenStackClusterConfig) Validate() field.Errors {
	var errs field.Errors
	errs.Append("neutron_route_gc", o.NeutronRouteGC.Settings.Validate())
	errs.Append("security_groups", o.SecurityGroups.Settings.Validate())
	errs.Append("never_ready_instances", o.NeverReadyInstances.Settings.Validate())
	errs = append(errs, remediate.ValidateAuth(o.OpenStackAuth, o.Enabled())...)
	remediate.ValidateSite(&errs, "", o.Site)
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
	remediate.NonNegative(&errs, "neutron_route_gc.route_limit", o.NeutronRouteGC.RouteLimit)
	remediate.NonNegative(&errs, "neutron_route_gc.route_warn_margin", o.NeutronRouteGC.WarnMargin)
	remediate.NonNegative(&errs, "never_ready_instances.active_for", o.NeverReadyInstances.ActiveFor)
	remediate.NonNegative(&errs, "never_ready_instances.max_age", o.NeverReadyInstances.MaxAge)
	if n := o.NeverReadyInstances; n.MaxAge > 0 && n.ActiveFor > 0 && n.MaxAge <= 2*n.ActiveFor {
		// The soft reboot comes at active_for, the hard one active_for
		// later: a shorter bound would cut the repair off halfway.
		errs.Add("never_ready_instances.max_age", "%v must exceed 2 times active_for (%v)", n.MaxAge, n.ActiveFor)
	}
	return errs
}

// DeriveDefaults implements repair.Deriver: never_ready_instances.max_age
// is 1h, or 3 times active_for when that is longer.
func (o *OpenStackClusterConfig) DeriveDefaults() {
	if n := &o.NeverReadyInstances; n.MaxAge == 0 {
		n.MaxAge = max(DefaultNeverReadyMaxAge, 3*n.ActiveFor)
	}
}
