package remediate

import (
	"slices"
	"testing"
	"time"

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
		{Path: "openstack.instance_metadata_key", Msg: "required when neutron_route_gc is on: a name prefix alone also matches other clusters' instances and VMs that are no nodes (dry-run may do without)"},
		{Path: "openstack.pod_cidr", Msg: `"198.19.0.1/16" must be a network prefix like 198.19.0.0/16`},
		{Path: "openstack.router_id", Msg: "required by neutron_route_gc"},
	}
	got := c.Validate()
	if !slices.Equal(got, want) {
		t.Errorf("got\n%v\nwant\n%v", got, want)
	}
	if got := (Config{}).Defaulted().Validate(); got != nil {
		t.Errorf("defaults: got %v, want no problem", got)
	}
}

// A name prefix alone also matches a neighbouring cluster's instances and
// VMs that are no nodes: a cluster repair in mode on needs the metadata key
// and its value; dry-run, which only reports, may do with the prefix.
func TestOpenStackRepairsOnNeedAMetadataSelector(t *testing.T) {
	base := OpenStackClusterConfig{OpenStackAuth: OpenStackAuth{Cloud: "c"}, RouterID: "r", PodCIDR: "198.19.0.0/16", InstanceNamePrefix: "k-"}
	base.SecurityGroups.RequiredGroup = "g"
	modes := map[string]func(*OpenStackClusterConfig) *Mode{
		"neutron_route_gc":      func(o *OpenStackClusterConfig) *Mode { return &o.NeutronRouteGC.Mode },
		"security_groups":       func(o *OpenStackClusterConfig) *Mode { return &o.SecurityGroups.Mode },
		"never_ready_instances": func(o *OpenStackClusterConfig) *Mode { return &o.NeverReadyInstances.Mode },
	}
	for name, mode := range modes {
		t.Run(name, func(t *testing.T) {
			for _, tc := range []struct {
				what      string
				mode      Mode
				key, val  string
				wantField string
			}{
				{"on with a prefix alone", ModeOn, "", "", "openstack.instance_metadata_key"},
				{"on with a key of any value", ModeOn, "kluster", "", "openstack.instance_metadata_value"},
				{"on with key and value", ModeOn, "kluster", "k", ""},
				{"dry-run with a prefix alone", ModeDryRun, "", "", ""},
			} {
				var c Config
				c.OpenStack = base
				c.OpenStack.InstanceMetadataKey, c.OpenStack.InstanceMetadataValue = tc.key, tc.val
				*mode(&c.OpenStack) = tc.mode
				var paths []string
				for _, e := range c.Defaulted().Validate() {
					paths = append(paths, e.Path)
				}
				var want []string
				if tc.wantField != "" {
					want = []string{tc.wantField}
				}
				if !slices.Equal(paths, want) {
					t.Errorf("%s: got problems at %v, want %v", tc.what, paths, want)
				}
			}
		})
	}
}

// never_ready_instances.max_age bounds the repair to young instances; a
// bound that leaves no room for both reboots is refused, and the default
// grows with active_for.
func TestNeverReadyMaxAge(t *testing.T) {
	for _, tc := range []struct {
		activeFor, maxAge, want time.Duration
		wantErr                 bool
	}{
		{0, 0, time.Hour, false},
		{40 * time.Minute, 0, 2 * time.Hour, false},
		{15 * time.Minute, 31 * time.Minute, 31 * time.Minute, false},
		{15 * time.Minute, 30 * time.Minute, 30 * time.Minute, true},
		{0, -time.Minute, -time.Minute, true},
	} {
		var c Config
		c.OpenStack.NeverReadyInstances.ActiveFor, c.OpenStack.NeverReadyInstances.MaxAge = tc.activeFor, tc.maxAge
		c = c.Defaulted()
		if got := c.OpenStack.NeverReadyInstances.MaxAge; got != tc.want {
			t.Errorf("active_for %v, max_age %v: got max_age %v, want %v", tc.activeFor, tc.maxAge, got, tc.want)
		}
		errs := c.Validate()
		if got := len(errs) > 0 && errs[0].Path == "openstack.never_ready_instances.max_age"; got != tc.wantErr || (!tc.wantErr && errs != nil) {
			t.Errorf("active_for %v, max_age %v: got %v, want an error on max_age: %v", tc.activeFor, tc.maxAge, errs, tc.wantErr)
		}
	}
}

// max_disrupted_nodes is per cluster, defaults to one node, and a negative
// value is named by its path.
func TestConfigMaxDisruptedNodes(t *testing.T) {
	var c Config
	c.Kubernetes.Backup.MaxDisruptedNodes = -1
	want := field.Errors{{Path: "kubernetes.backup.max_disrupted_nodes", Msg: "-1 must be >= 0 (0 or unset: the default)"}}
	if got := c.Validate(); !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	c.Kubernetes.Backup.MaxDisruptedNodes = 2
	if got, want := c.Kubernetes.Site("primary").MaxDisrupted(), 1; got != want {
		t.Errorf("primary unset: got %d, want the default %d", got, want)
	}
	if got, want := c.Kubernetes.Site("backup").MaxDisrupted(), 2; got != want {
		t.Errorf("backup: got %d, want %d", got, want)
	}
}
