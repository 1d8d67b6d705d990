package remediate

import (
	"slices"
	"testing"

	"github.com/drwatch/drwatch/internal/field"
)

// Validate names each problem by its path inside the remediations section,
// so the config loader can prefix it and find its line; the words are the
// ones `drwatch config validate` has always printed.
func TestConfigValidatePathsAreRelativeToTheSection(t *testing.T) {
	var c Config
	c.DeadNodeOutOfService = DeadNodeConfig{Settings: Settings{Mode: "maybe", MaxPerPass: -1}, Site: "middle"}
	c.DrainTrap = DrainTrapConfig{Settings: Settings{BrakeShare: 2}, ClusterName: "a b"}
	c.OrphanedPods = OrphanedPodsConfig{RebootWait: 30 * 1e9}
	c.BackupWarmup.Workloads = []Workload{{Kind: "DaemonSet", Replicas: 0, IdleReplicas: -1}}
	c.OctaviaStuckLB = OctaviaStuckLBConfig{Settings: Settings{Mode: ModeOn}, LoadBalancers: []string{"", "a", "a"}, PendingTimeout: -1}
	c.OpenStack = OpenStackClusterConfig{Site: "nowhere", PodCIDR: "198.19.0.1/16", InstanceMetadataValue: "v"}
	c.OpenStack.NeutronRouteGC.Mode = ModeOn
	c.OpenStack.SecurityGroups.Settings = Settings{Mode: "sometimes", MaxPerHour: -1}
	want := field.Errors{
		{Path: "dead_node_out_of_service.mode", Msg: `"maybe" must be off, dry-run or on`},
		{Path: "dead_node_out_of_service", Msg: "caps must be >= 0"},
		{Path: "dead_node_out_of_service.site", Msg: `"middle" must be primary or backup`},
		{Path: "drain_trap.brake_share", Msg: "2 must be > 0 and <= 1 (0 or unset: 0.5)"},
		{Path: "drain_trap.cloud_provider_cluster_name", Msg: `"a b" must be at most 200 bytes, without spaces or slashes`},
		{Path: "orphaned_pods.reboot_wait", Msg: "30s must be at least 1m0s (0 means the default 10m0s)"},
		{Path: "backup_warmup.workloads[0].kind", Msg: `"DaemonSet" must be Deployment or StatefulSet`},
		{Path: "backup_warmup.workloads[0]", Msg: "namespace and name are required"},
		{Path: "backup_warmup.workloads[0].idle_replicas", Msg: "-1 must be >= 0 and below replicas"},
		{Path: "backup_warmup.workloads[0].replicas", Msg: "0 must be > 0"},
		{Path: "octavia_stuck_lb.cloud", Msg: "cloud or auth_url must be set when enabled"},
		{Path: "octavia_stuck_lb.load_balancers[0]", Msg: "must not be empty"},
		{Path: "octavia_stuck_lb.load_balancers[2]", Msg: `"a" is listed twice`},
		{Path: "octavia_stuck_lb.pending_timeout", Msg: "-1ns must be >= 0 (0 or unset: the default)"},
		{Path: "openstack.security_groups.mode", Msg: `"sometimes" must be off, dry-run or on`},
		{Path: "openstack.security_groups", Msg: "caps must be >= 0"},
		{Path: "openstack.cloud", Msg: "cloud or auth_url must be set when enabled"},
		{Path: "openstack.site", Msg: `"nowhere" must be primary or backup`},
		{Path: "openstack.instance_name_prefix", Msg: "instance_name_prefix or instance_metadata_key must identify the cluster's instances"},
		{Path: "openstack.instance_metadata_value", Msg: "needs instance_metadata_key"},
		{Path: "openstack.pod_cidr", Msg: `"198.19.0.1/16" must be a network prefix like 198.19.0.0/16`},
		{Path: "openstack.router_id", Msg: "required by neutron_route_gc"},
	}
	got := c.Validate()
	if !slices.Equal(got, want) {
		t.Errorf("got\n%v\nwant\n%v", got, want)
	}
	if got := (Config{}).WithDefaults().Validate(); got != nil {
		t.Errorf("defaults: got %v, want no problem", got)
	}
}
