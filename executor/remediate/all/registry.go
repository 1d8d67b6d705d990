package all

import (
	"github.com/drwatch/drwatch/executor/remediate/debris"
	"github.com/drwatch/drwatch/executor/remediate/kube"
	"github.com/drwatch/drwatch/executor/remediate/octavia"
	"github.com/drwatch/drwatch/executor/remediate/openstack"
	"github.com/drwatch/drwatch/executor/remediate/repair"
)

// Repairs is every repair, one line each, in the order the runner plans
// them.
var Repairs = []repair.Repair{
	kube.DeadNodeRepair,
	kube.DrainTrapRepair,
	kube.OrphanedPodsRepair,
	kube.BackupWarmupRepair,
	octavia.Repair,
	debris.Repair,
	openstack.RouteGCRepair,
	openstack.SecurityGroupsRepair,
	openstack.NeverReadyRepair,
}
