package all

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/debris"
	"github.com/drwatch/drwatch/executor/remediate/kube"
	"github.com/drwatch/drwatch/executor/remediate/octavia"
	"github.com/drwatch/drwatch/executor/remediate/openstack"
	"github.com/drwatch/drwatch/internal/field"
)

// Validate names each problem by its path inside the remediations section,
// so the config loader can prefix it and find its line; the words are the
// ones `drwatch config validate` has always printed.
func TestConfigValidatePathsAreRelativeToTheSection(t *testing.T) {
	var c Config
	c.DeadNodeOutOfService = kube.DeadNodeConfig{Settings: remediate.Settings{Mode: "maybe", MaxPerPass: -1}, Site: "middle"}
	c.DrainTrap = kube.DrainTrapConfig{Settings: remediate.Settings{BrakeShare: 2}, ClusterName: "a b"}
	c.OrphanedPods = kube.OrphanedPodsConfig{RebootWait: 30 * 1e9}
	c.BackupWarmup.Workloads = []kube.Workload{{Kind: "DaemonSet", Replicas: 0, IdleReplicas: -1}}
	c.OctaviaStuckLB = octavia.OctaviaStuckLBConfig{Settings: remediate.Settings{Mode: remediate.ModeOn}, LoadBalancers: []string{"", "a", "a"}, PendingTimeout: -1}
	c.OpenStack = openstack.OpenStackClusterConfig{Site: "nowhere", PodCIDR: "198.19.0.1/16", InstanceMetadataValue: "v"}
	c.OpenStack.NeutronRouteGC.Mode = remediate.ModeOn
	c.OpenStack.SecurityGroups.Settings = remediate.Settings{Mode: "sometimes", MaxPerHour: -1}
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
	base := openstack.OpenStackClusterConfig{OpenStackAuth: remediate.OpenStackAuth{Cloud: "c"}, RouterID: "r", PodCIDR: "198.19.0.0/16", InstanceNamePrefix: "k-"}
	base.SecurityGroups.RequiredGroup = "g"
	modes := map[string]func(*openstack.OpenStackClusterConfig) *remediate.Mode{
		"neutron_route_gc":      func(o *openstack.OpenStackClusterConfig) *remediate.Mode { return &o.NeutronRouteGC.Mode },
		"security_groups":       func(o *openstack.OpenStackClusterConfig) *remediate.Mode { return &o.SecurityGroups.Mode },
		"never_ready_instances": func(o *openstack.OpenStackClusterConfig) *remediate.Mode { return &o.NeverReadyInstances.Mode },
	}
	for name, mode := range modes {
		t.Run(name, func(t *testing.T) {
			for _, tc := range []struct {
				what      string
				mode      remediate.Mode
				key, val  string
				wantField string
			}{
				{"on with a prefix alone", remediate.ModeOn, "", "", "openstack.instance_metadata_key"},
				{"on with a key of any value", remediate.ModeOn, "kluster", "", "openstack.instance_metadata_value"},
				{"on with key and value", remediate.ModeOn, "kluster", "k", ""},
				{"dry-run with a prefix alone", remediate.ModeDryRun, "", "", ""},
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

// The `default` tags are the defaults the repairs run with: a zero section
// gets the values the code's constants name, and the defaults derived from
// other fields follow them. Look-alike: a value set in the section is kept,
// zero or not.
func TestDefaultedFollowsTheTags(t *testing.T) {
	d := Config{}.Defaulted()
	for _, tt := range []struct {
		field     string
		got, want any
	}{
		{"interval", d.Interval, remediate.DefaultInterval},
		{"kubernetes.primary.max_disrupted_nodes", d.Kubernetes.Primary.MaxDisruptedNodes, remediate.DefaultMaxDisruptedNodes},
		{"dead_node_out_of_service.not_ready_for", d.DeadNodeOutOfService.After, kube.DefaultDeadNodeAfter},
		{"dead_node_out_of_service.site", d.DeadNodeOutOfService.Site, "primary"},
		{"dead_node_out_of_service.mode", d.DeadNodeOutOfService.Mode, remediate.ModeOff},
		{"dead_node_out_of_service.max_per_pass", d.DeadNodeOutOfService.MaxPerPass, remediate.DefaultMaxPerPass},
		{"dead_node_out_of_service.max_per_hour", d.DeadNodeOutOfService.MaxPerHour, remediate.DefaultMaxPerHour},
		{"dead_node_out_of_service.brake_share", d.DeadNodeOutOfService.BrakeShare, remediate.DefaultBrakeShare},
		{"orphaned_pods.terminating_for", d.OrphanedPods.After, kube.DefaultOrphanAfter},
		{"orphaned_pods.reboot_wait", d.OrphanedPods.RebootWait, kube.DefaultOrphanRebootWait},
		{"backup_warmup.ready_timeout", d.BackupWarmup.ReadyTimeout, kube.DefaultReadyTimeout},
		{"octavia_stuck_lb.pending_timeout", d.OctaviaStuckLB.PendingTimeout, octavia.DefaultPendingTimeout},
		{"octavia_stuck_lb.failover_timeout", d.OctaviaStuckLB.FailoverTimeout, octavia.DefaultFailoverTimeout},
		{"cloud_debris.delete_timeout", d.CloudDebris.DeleteTimeout, debris.DefaultDeleteTimeout},
		{"cloud_debris.site", d.CloudDebris.Site, "primary"},
		{"openstack.site", d.OpenStack.Site, "primary"},
		{"openstack.neutron_route_gc.route_limit", d.OpenStack.NeutronRouteGC.RouteLimit, openstack.DefaultRouteLimit},
		{"openstack.neutron_route_gc.route_warn_margin", d.OpenStack.NeutronRouteGC.WarnMargin, openstack.DefaultRouteWarnMargin},
		{"openstack.never_ready_instances.active_for", d.OpenStack.NeverReadyInstances.ActiveFor, openstack.DefaultNeverReadyActiveFor},
		{"openstack.never_ready_instances.max_age", d.OpenStack.NeverReadyInstances.MaxAge, openstack.DefaultNeverReadyMaxAge},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.field, tt.got, tt.want)
		}
	}

	var c Config
	c.Interval = 2 * time.Minute
	c.CloudDebris.ClusterName = "k1"
	c.OpenStack.NeverReadyInstances.ActiveFor = 30 * time.Minute
	c.OrphanedPods.Site = "backup"
	c.DeadNodeOutOfService.BrakeShare = 1
	d = c.Defaulted()
	for _, tt := range []struct {
		field     string
		got, want any
	}{
		{"interval", d.Interval, 2 * time.Minute},
		{"orphaned_pods.site", d.OrphanedPods.Site, "backup"},
		{"dead_node_out_of_service.brake_share", d.DeadNodeOutOfService.BrakeShare, 1.0},
		{"cloud_debris.csi_cluster", d.CloudDebris.CSICluster, "k1"},
		{"openstack.never_ready_instances.max_age", d.OpenStack.NeverReadyInstances.MaxAge, 90 * time.Minute},
	} {
		if tt.got != tt.want {
			t.Errorf("set %s: got %v, want %v", tt.field, tt.got, tt.want)
		}
	}
}

// A repair's OpenStack credentials follow the octavia probe's rules: once
// any of them is set, they must be complete, even while the repair is off
// (a half-filled block is a mistake, found before the repair is turned
// on). An off repair with no credentials, or with complete ones, is left
// alone.
func TestOpenStackCredentialsSetHalfwayAreRefusedEvenWhenOff(t *testing.T) {
	half := remediate.OpenStackAuth{ApplicationCredentialIDFile: "/etc/drwatch/ac-id"}
	for _, tc := range []struct {
		name string
		c    Config
		want field.Errors
	}{
		{"off, half set", Config{OctaviaStuckLB: octavia.OctaviaStuckLBConfig{OpenStackAuth: half}, OpenStack: openstack.OpenStackClusterConfig{OpenStackAuth: half},
			CloudDebris: debris.CloudDebrisConfig{OpenStackAuth: half, ClusterName: "k"}}, field.Errors{
			{Path: "octavia_stuck_lb.auth_url", Msg: "required"},
			{Path: "octavia_stuck_lb.application_credential_secret_file", Msg: "required"},
			{Path: "openstack.auth_url", Msg: "required"},
			{Path: "openstack.application_credential_secret_file", Msg: "required"},
			{Path: "cloud_debris.auth_url", Msg: "required"},
			{Path: "cloud_debris.application_credential_secret_file", Msg: "required"},
		}},
		{"off, none", Config{}, nil},
		{"off, complete", Config{OctaviaStuckLB: octavia.OctaviaStuckLBConfig{OpenStackAuth: remediate.OpenStackAuth{Cloud: "c"}},
			OpenStack:   openstack.OpenStackClusterConfig{OpenStackAuth: remediate.OpenStackAuth{AuthURL: "https://k/v3", ApplicationCredentialIDFile: "/i", ApplicationCredentialSecretFile: "/s"}},
			CloudDebris: debris.CloudDebrisConfig{OpenStackAuth: remediate.OpenStackAuth{Cloud: "c"}, ClusterName: "k"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.c.Defaulted().Validate(); !slices.Equal(got, tc.want) {
				t.Errorf("got\n%v\nwant\n%v", got, tc.want)
			}
		})
	}
}

// reboot_wait defaults to a safe wait, and a wait too short for a node to
// reboot is refused, naming the field.
func TestOrphanedPodsRebootWait(t *testing.T) {
	if got := (Config{}).Defaulted().OrphanedPods.RebootWait; got != kube.DefaultOrphanRebootWait {
		t.Fatalf("default reboot_wait: got %s, want %s", got, kube.DefaultOrphanRebootWait)
	}
	for _, tc := range []struct {
		wait    time.Duration
		wantErr bool
	}{{0, false}, {time.Minute, false}, {time.Hour, false}, {30 * time.Second, true}, {-time.Minute, true}} {
		var c Config
		c.OrphanedPods.RebootNode = true
		c.OrphanedPods.RebootWait = tc.wait
		errs := c.Defaulted().Validate()
		if tc.wantErr != (len(errs) != 0) || (len(errs) != 0 && (!hasPath(errs, "orphaned_pods.reboot_wait") ||
			!strings.Contains(errs.Under("remediations").Error(), "remediations.orphaned_pods.reboot_wait: "))) {
			t.Errorf("reboot_wait %s: got %v, want error %v at orphaned_pods.reboot_wait, shown as remediations.orphaned_pods.reboot_wait", tc.wait, errs, tc.wantErr)
		}
	}
}

// hasPath reports whether errs has a problem at path, relative to the
// remediations section.
func hasPath(errs field.Errors, path string) bool {
	for _, e := range errs {
		if e.Path == path {
			return true
		}
	}
	return false
}

func TestConfigValidate(t *testing.T) {
	var c Config
	if err := c.Defaulted().Validate(); err != nil {
		t.Fatalf("zero config: %v", err)
	}
	d := c.Defaulted()
	if d.DeadNodeOutOfService.Mode != remediate.ModeOff || d.DrainTrap.Site != "primary" || d.OrphanedPods.MaxPerPass != remediate.DefaultMaxPerPass {
		t.Fatalf("got defaults %+v, want off, primary, default caps", d)
	}
	c.DrainTrap.Mode = "maybe"
	c.DrainTrap.ClusterName = "my cluster"
	c.BackupWarmup.Workloads = []kube.Workload{{Kind: "DaemonSet", Name: "x"}}
	err := c.Validate()
	for _, want := range []string{"drain_trap.mode", "drain_trap.cloud_provider_cluster_name", "workloads[x].kind", "workloads[x]: namespace", "workloads[x].replicas"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v, want a problem naming %s", err, want)
		}
	}
}

func TestConfigValidateBrakeShare(t *testing.T) {
	for _, tt := range []struct {
		share float64
		ok    bool
	}{{0, true}, {0.3, true}, {1, true}, {-0.1, false}, {1.5, false}} {
		var c Config
		c.OctaviaStuckLB.BrakeShare = tt.share
		c.OpenStack.NeverReadyInstances.BrakeShare = tt.share
		errs := c.Validate()
		if tt.ok != (len(errs) == 0) {
			t.Fatalf("brake_share %v: got %v, want ok=%v", tt.share, errs, tt.ok)
		}
		if !tt.ok {
			for _, want := range []string{"octavia_stuck_lb.brake_share", "openstack.never_ready_instances.brake_share"} {
				if !hasPath(errs, want) {
					t.Fatalf("brake_share %v: got %v, want a problem at %s", tt.share, errs, want)
				}
				if shown := errs.Under("remediations").Error(); !strings.Contains(shown, "remediations."+want+": ") {
					t.Fatalf("brake_share %v: got %q under remediations, want a problem naming remediations.%s", tt.share, shown, want)
				}
			}
		}
	}
	if got := (Config{}).Defaulted().DeadNodeOutOfService.BrakeShare; got != remediate.DefaultBrakeShare {
		t.Fatalf("got default brake share %v, want %v", got, remediate.DefaultBrakeShare)
	}
}

// The octavia_stuck_lb rules of the remediations config each name their
// field, relative to the section.
func TestOctaviaStuckLBConfigValidate(t *testing.T) {
	on := remediate.Settings{Mode: remediate.ModeOn}
	for _, tc := range []struct {
		name string
		cfg  octavia.OctaviaStuckLBConfig
		want string // substring of the problems as the config file shows them; empty means valid
	}{
		{"off needs nothing", octavia.OctaviaStuckLBConfig{}, ""},
		{"on with cloud", octavia.OctaviaStuckLBConfig{Settings: on, OpenStackAuth: remediate.OpenStackAuth{Cloud: "c"}}, ""},
		{"on without credentials", octavia.OctaviaStuckLBConfig{Settings: on}, "remediations.octavia_stuck_lb.cloud: cloud or auth_url must be set"},
		{"both", octavia.OctaviaStuckLBConfig{OpenStackAuth: remediate.OpenStackAuth{Cloud: "c", AuthURL: "https://k/v3"}}, "auth_url: set either cloud or application credentials, not both"},
		{"auth url without files", octavia.OctaviaStuckLBConfig{Settings: on, OpenStackAuth: remediate.OpenStackAuth{AuthURL: "https://k/v3"}}, "application_credential_secret_file: required"},
		{"bad auth url", octavia.OctaviaStuckLBConfig{Settings: on, OpenStackAuth: remediate.OpenStackAuth{AuthURL: "k", ApplicationCredentialIDFile: "i", ApplicationCredentialSecretFile: "s"}}, "must be an http(s) URL"},
		{"ca with cloud", octavia.OctaviaStuckLBConfig{OpenStackAuth: remediate.OpenStackAuth{Cloud: "c", CAFile: "/ca"}}, "ca_file: only with auth_url"},
		{"clouds file alone", octavia.OctaviaStuckLBConfig{OpenStackAuth: remediate.OpenStackAuth{CloudsFile: "/c.yaml"}}, "clouds_file: needs cloud"},
		{"empty lb", octavia.OctaviaStuckLBConfig{OpenStackAuth: remediate.OpenStackAuth{Cloud: "c"}, LoadBalancers: []string{""}}, "load_balancers[0]: must not be empty"},
		{"repeated lb", octavia.OctaviaStuckLBConfig{OpenStackAuth: remediate.OpenStackAuth{Cloud: "c"}, LoadBalancers: []string{"a", "a"}}, "load_balancers[1]: \"a\" is listed twice"},
		{"bad mode", octavia.OctaviaStuckLBConfig{Settings: remediate.Settings{Mode: "maybe"}}, "remediations.octavia_stuck_lb.mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := Config{OctaviaStuckLB: tc.cfg}.Defaulted().Validate()
			shown := errs.Under(remediate.Section).Err()
			switch {
			case tc.want == "" && shown != nil:
				t.Fatalf("got %v, want valid", shown)
			case tc.want != "" && (shown == nil || !strings.Contains(shown.Error(), tc.want)):
				t.Fatalf("got %v, want an error containing %q", shown, tc.want)
			}
			for _, e := range errs {
				if !strings.HasPrefix(e.Path, "octavia_stuck_lb.") {
					t.Errorf("got a problem at %q, want its path relative to the remediations section (octavia_stuck_lb.…)", e.Path)
				}
			}
		})
	}
	if d := (Config{}).Defaulted().OctaviaStuckLB; d.PendingTimeout != octavia.DefaultPendingTimeout || d.Mode != remediate.ModeOff {
		t.Fatalf("got defaults %+v, want pending_timeout 10m and mode off", d)
	}
}

// The cloud_debris rules of the remediations config each name their field.
func TestCloudDebrisConfigNamesTheField(t *testing.T) {
	on := remediate.Settings{Mode: remediate.ModeDryRun}
	auth := remediate.OpenStackAuth{Cloud: "c"}
	for _, tc := range []struct {
		name string
		cfg  debris.CloudDebrisConfig
		want string // substring of the problems as the config file shows them; empty means valid
	}{
		{"off needs nothing", debris.CloudDebrisConfig{}, ""},
		{"enabled", debris.CloudDebrisConfig{Settings: on, OpenStackAuth: auth, ClusterName: "k"}, ""},
		{"no cluster name", debris.CloudDebrisConfig{Settings: on, OpenStackAuth: auth}, "remediations.cloud_debris.cluster_name: required when enabled"},
		{"no credentials", debris.CloudDebrisConfig{Settings: on, ClusterName: "k"}, "remediations.cloud_debris.cloud: cloud or auth_url must be set"},
		{"cluster name with a slash", debris.CloudDebrisConfig{OpenStackAuth: auth, ClusterName: "a/b"}, "remediations.cloud_debris.cluster_name: \"a/b\" must be"},
		{"csi cluster with a space", debris.CloudDebrisConfig{OpenStackAuth: auth, ClusterName: "k", CSICluster: "a b"}, "remediations.cloud_debris.csi_cluster"},
		{"bad site", debris.CloudDebrisConfig{Site: "moon"}, "remediations.cloud_debris.site: \"moon\" must be primary or backup"},
		{"negative timeout", debris.CloudDebrisConfig{DeleteTimeout: -1}, "remediations.cloud_debris.delete_timeout"},
		{"bad mode", debris.CloudDebrisConfig{Settings: remediate.Settings{Mode: "maybe"}}, "remediations.cloud_debris.mode"},
		{"default cluster name", debris.CloudDebrisConfig{Settings: on, OpenStackAuth: auth, ClusterName: "kubernetes"}, "remediations.cloud_debris.cluster_name: \"kubernetes\" is cloud-provider-openstack's default"},
		{"default csi cluster", debris.CloudDebrisConfig{Settings: on, OpenStackAuth: auth, ClusterName: "k", CSICluster: "kubernetes"}, "remediations.cloud_debris.csi_cluster: \"kubernetes\" is cloud-provider-openstack's default"},
		{"default cluster name, decommissioned", debris.CloudDebrisConfig{Settings: on, OpenStackAuth: auth, ClusterName: "kubernetes", Decommissioned: true}, ""},
		{"a name that only contains the default", debris.CloudDebrisConfig{Settings: on, OpenStackAuth: auth, ClusterName: "kubernetes-eu1"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shown := Config{CloudDebris: tc.cfg}.Defaulted().Validate().Under(remediate.Section).Err()
			switch {
			case tc.want == "" && shown != nil:
				t.Fatalf("got %v, want valid", shown)
			case tc.want != "" && (shown == nil || !strings.Contains(shown.Error(), tc.want)):
				t.Fatalf("got %v, want an error containing %q", shown, tc.want)
			}
		})
	}
}
