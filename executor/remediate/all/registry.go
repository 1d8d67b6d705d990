package all

import (
	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/debris"
	"github.com/drwatch/drwatch/executor/remediate/kube"
	"github.com/drwatch/drwatch/executor/remediate/octavia"
	"github.com/drwatch/drwatch/executor/remediate/openstack"
	"github.com/drwatch/drwatch/executor/remediate/repair"
)

// Config is the `remediations:` section of a node's config file: the part
// that belongs to no repair, and one line per repair section, whose type
// (a repair.Section, with its tags and Validate) is its repair package's
// own. Every repair is off unless its mode says otherwise. The config
// package embeds Config as is (yaml, doc and default tags, applied by
// Defaulted); Validate names fields relative to the section, in the order
// of these lines.
type Config struct {
	remediate.Config `yaml:",inline"`

	DeadNodeOutOfService kube.DeadNodeConfig              `yaml:"dead_node_out_of_service" doc:"Taint node.kubernetes.io/out-of-service on nodes whose guest Nova confirms down: powered off, crashed, its host forced down by an operator (admin) or gone; report-only for a host merely down (not fenced) and before Kubernetes 1.26 (seeds 003, 004)."`
	DrainTrap            kube.DrainTrapConfig             `yaml:"drain_trap" doc:"Evict, one at a time, the pods that are a Local load balancer's only endpoints while their nodes are out of its Octavia pool, when a Ready pool node admits the replacement (else only reported) (seed 002)."`
	OrphanedPods         kube.OrphanedPodsConfig          `yaml:"orphaned_pods" doc:"Force-delete pods stuck Terminating, never one that may still run where a second copy would conflict (seed 000)."`
	BackupWarmup         kube.BackupWarmupConfig          `yaml:"backup_warmup" doc:"Scale workloads up on the backup cluster at failover."`
	OctaviaStuckLB       octavia.OctaviaStuckLBConfig     `yaml:"octavia_stuck_lb" doc:"Fail over Octavia load balancers stuck in ERROR with their data plane down (operating_status OFFLINE or ERROR; one that still serves is only reported), or PENDING_* (seed 000)."`
	OpenStack            openstack.OpenStackClusterConfig `yaml:"openstack" doc:"One Kubernetes cluster's OpenStack project: Neutron route GC, security groups and never-ready instances (seed 001)."`
	CloudDebris          debris.CloudDebrisConfig         `yaml:"cloud_debris" doc:"Delete the Octavia load balancers, Cinder CSI volumes and Neutron floating IPs (and load-balancer VIP ports) one cluster's cloud provider left behind, once their Service or PersistentVolume is gone from the cluster or the cluster is decommissioned, and check in OpenStack that each is really gone (seed 001, the deorbiter). What Kubernetes was told to keep stays: a volume goes only if drwatch saw its PersistentVolume with reclaim policy Delete, a floating IP only if it saw its Service without loadbalancer.openstack.org/keep-floatingip; the rest is reported."`
}

// Repairs is every repair, one line each, in the order the runner plans
// them. Each is bound to the type of its section above (repair.For).
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
