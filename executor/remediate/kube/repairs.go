package kube

import (
	"fmt"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/repair"
	"github.com/drwatch/drwatch/internal/kubeapi"
)

// The repairs of this package, for the list in executor/remediate/all.
// Each takes its site's Kubernetes client; dead-node, orphaned-pods and
// drain-trap also take what the cloud of their site offers (repair.Env.Cloud):
// without it dead-node never taints, orphaned-pods never force-deletes a
// pod that may still run, and drain-trap moves nothing.
var (
	DeadNodeRepair = repair.Disrupting(repair.For(DeadNodeName, "dead_node_out_of_service", []repair.Client{repair.Kubernetes, repair.OpenStack},
		func(c *DeadNodeConfig) *remediate.Settings { return &c.Settings }, buildDeadNode),
		func(c *DeadNodeConfig) string { return c.Site })
	DrainTrapRepair = repair.For(DrainTrapName, "drain_trap", []repair.Client{repair.Kubernetes, repair.OpenStack},
		func(c *DrainTrapConfig) *remediate.Settings { return &c.Settings }, buildDrainTrap)
	OrphanedPodsRepair = repair.Disrupting(repair.For(OrphanedPodsName, "orphaned_pods", []repair.Client{repair.Kubernetes, repair.OpenStack},
		func(c *OrphanedPodsConfig) *remediate.Settings { return &c.Settings }, buildOrphanedPods),
		func(c *OrphanedPodsConfig) string { return c.Site })
	BackupWarmupRepair = repair.For(BackupWarmupName, "backup_warmup", []repair.Client{repair.Kubernetes},
		func(c *BackupWarmupConfig) *remediate.Settings { return &c.Settings }, buildBackupWarmup)
)

// entry wraps the remediator mk builds on site's client. A repair that
// disrupts nodes shares the cluster's one node disruption budget with the
// other repairs of the site (never-ready-instances).
func entry(env repair.Env, cfg remediate.Config, name, site string, s remediate.Settings, disrupts bool, mk func(kubeapi.Interface) remediate.Remediator) (remediate.Entry, error) {
	c, err := env.KubeClient("remediations: "+name, site)
	if err != nil {
		return remediate.Entry{}, err
	}
	e := remediate.Entry{Remediator: mk(c), Settings: s}
	if disrupts {
		e.Cluster, e.MaxDisruptedNodes = site, cfg.Kubernetes.Site(site).MaxDisrupted()
	}
	return e, nil
}

func buildDeadNode(env repair.Env, cfg remediate.Config, dn DeadNodeConfig) (remediate.Entry, error) {
	instances, _ := env.CloudFor(dn.Site).(InstanceChecker)
	return entry(env, cfg, DeadNodeName, dn.Site, dn.Settings, true, func(c kubeapi.Interface) remediate.Remediator {
		d := NewDeadNode(c, instances, dn.After, env.Now)
		if dn.AlphaGateOn {
			d.WithAlphaGate()
		}
		return d
	})
}

// poolSource is the cloud's side of drain-trap: it reads the pools of the
// load balancers the cloud provider named after cluster.
type poolSource interface {
	Pools(cluster string) LoadBalancerPools
}

func buildDrainTrap(env repair.Env, cfg remediate.Config, dt DrainTrapConfig) (remediate.Entry, error) {
	var pools LoadBalancerPools
	if src, ok := env.CloudFor(dt.Site).(poolSource); ok {
		pools = src.Pools(dt.ClusterName)
	}
	return entry(env, cfg, DrainTrapName, dt.Site, dt.Settings, false, func(c kubeapi.Interface) remediate.Remediator { return NewDrainTrap(c, pools) })
}

func buildOrphanedPods(env repair.Env, cfg remediate.Config, op OrphanedPodsConfig) (remediate.Entry, error) {
	nodes, _ := env.CloudFor(op.Site).(NodeCloud)
	if op.RebootNode && nodes == nil {
		return remediate.Entry{}, fmt.Errorf("remediations.orphaned_pods.reboot_node needs remediations.openstack for the %s site (Nova reboots the node)", op.Site)
	}
	return entry(env, cfg, OrphanedPodsName, op.Site, op.Settings, true, func(c kubeapi.Interface) remediate.Remediator {
		o := NewOrphanedPods(c, nodes, op.After, env.Now)
		if op.RebootNode {
			o.WithReboot(nodes, op.RebootWait)
		}
		return o
	})
}

func buildBackupWarmup(env repair.Env, cfg remediate.Config, bw BackupWarmupConfig) (remediate.Entry, error) {
	return entry(env, cfg, BackupWarmupName, "backup", bw.Settings, false, func(c kubeapi.Interface) remediate.Remediator {
		return NewBackupWarmup(c, bw.Workloads, env.Decision).WithScaleDown(bw.ScaleDownAtFailback, env.Now)
	})
}
