package remediate

import (
	"testing"
	"time"
)

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
		{"interval", d.Interval, DefaultInterval},
		{"kubernetes.primary.max_disrupted_nodes", d.Kubernetes.Primary.MaxDisruptedNodes, DefaultMaxDisruptedNodes},
		{"dead_node_out_of_service.not_ready_for", d.DeadNodeOutOfService.After, DefaultDeadNodeAfter},
		{"dead_node_out_of_service.site", d.DeadNodeOutOfService.Site, "primary"},
		{"dead_node_out_of_service.mode", d.DeadNodeOutOfService.Mode, ModeOff},
		{"dead_node_out_of_service.max_per_pass", d.DeadNodeOutOfService.MaxPerPass, DefaultMaxPerPass},
		{"dead_node_out_of_service.max_per_hour", d.DeadNodeOutOfService.MaxPerHour, DefaultMaxPerHour},
		{"dead_node_out_of_service.brake_share", d.DeadNodeOutOfService.BrakeShare, DefaultBrakeShare},
		{"orphaned_pods.terminating_for", d.OrphanedPods.After, DefaultOrphanAfter},
		{"orphaned_pods.reboot_wait", d.OrphanedPods.RebootWait, DefaultOrphanRebootWait},
		{"backup_warmup.ready_timeout", d.BackupWarmup.ReadyTimeout, DefaultReadyTimeout},
		{"octavia_stuck_lb.pending_timeout", d.OctaviaStuckLB.PendingTimeout, DefaultOctaviaPendingTimeout},
		{"octavia_stuck_lb.failover_timeout", d.OctaviaStuckLB.FailoverTimeout, DefaultOctaviaFailoverTimeout},
		{"cloud_debris.delete_timeout", d.CloudDebris.DeleteTimeout, DefaultDebrisDeleteTimeout},
		{"cloud_debris.site", d.CloudDebris.Site, "primary"},
		{"openstack.site", d.OpenStack.Site, "primary"},
		{"openstack.neutron_route_gc.route_limit", d.OpenStack.NeutronRouteGC.RouteLimit, DefaultRouteLimit},
		{"openstack.neutron_route_gc.route_warn_margin", d.OpenStack.NeutronRouteGC.WarnMargin, DefaultRouteWarnMargin},
		{"openstack.never_ready_instances.active_for", d.OpenStack.NeverReadyInstances.ActiveFor, DefaultNeverReadyActiveFor},
		{"openstack.never_ready_instances.max_age", d.OpenStack.NeverReadyInstances.MaxAge, DefaultNeverReadyMaxAge},
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
