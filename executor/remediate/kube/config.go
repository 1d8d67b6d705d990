package kube

import (
	"strings"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/internal/field"
)

// The sections of this package's repairs under remediations:, one per
// repair, each with its yaml, doc and default tags and its Validate.

// DeadNodeConfig configures dead-node-out-of-service.
type DeadNodeConfig struct {
	remediate.Settings `yaml:",inline"`
	Site               string        `yaml:"site" default:"primary" doc:"Which site's cluster to watch: primary or backup."`
	After              time.Duration `yaml:"not_ready_for" default:"5m" doc:"How long a node must be NotReady or Unknown before its instance is checked."`
	// AlphaGateOn is the operator's word for what the API cannot show.
	AlphaGateOn bool `yaml:"alpha_gate_on" default:"false" doc:"Kubernetes 1.24 and 1.25 only: true if kube-controller-manager runs with --feature-gates=NodeOutOfServiceVolumeDetach=true, which drwatch cannot see. While false the taint is report-only there. Ignored from 1.26 (on by default) and before 1.24 (no such gate)."`
}

// DrainTrapConfig configures drain-trap. Its load-balancer pools are read
// from Octavia with remediations.openstack's credentials, when that section
// is for the same site; without them drain-trap moves nothing.
type DrainTrapConfig struct {
	remediate.Settings `yaml:",inline"`
	Site               string `yaml:"site" default:"primary" doc:"Which site's cluster to watch: primary or backup. Its Octavia pools are read with the credentials of remediations.openstack for the same site; without them nothing moves."`
	// ClusterName finds a Service's load balancer by the name the OpenStack
	// cloud provider gives it when the Service carries no
	// loadbalancer.openstack.org/load-balancer-id annotation.
	ClusterName string `yaml:"cloud_provider_cluster_name" default:"kubernetes" doc:"The OpenStack cloud provider's --cluster-name: a Service without the loadbalancer.openstack.org/load-balancer-id annotation has the load balancer kube_service_<cluster>_<namespace>_<name> in the project of remediations.openstack."`
}

// OrphanedPodsConfig configures orphaned-pods, and its opt-in cordon and
// Nova reboot of the node the pods are stuck on.
type OrphanedPodsConfig struct {
	remediate.Settings `yaml:",inline"`
	Site               string        `yaml:"site" default:"primary" doc:"Which site's cluster to watch: primary or backup."`
	After              time.Duration `yaml:"terminating_for" default:"10m" doc:"How long past its grace period a pod may stay Terminating before it is force-deleted."`
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
	remediate.Settings `yaml:",inline"`
	ReadyTimeout       time.Duration `yaml:"ready_timeout" default:"5m" doc:"How long the DNS flip waits for the workloads to be ready before flipping anyway."`
	Workloads          []Workload    `yaml:"workloads" doc:"The backup cluster's workloads and the replicas they need when the backup is active."`
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

// Defaults of this package's sections.
const (
	DefaultDeadNodeAfter = 5 * time.Minute
	DefaultOrphanAfter   = 10 * time.Minute
	DefaultReadyTimeout  = 5 * time.Minute

	// DefaultOrphanRebootWait is orphaned_pods.reboot_wait: long enough for
	// a VM to reboot and its kubelet to start and finish its pods.
	DefaultOrphanRebootWait = 10 * time.Minute
	// MinOrphanRebootWait is the shortest reboot_wait accepted: a shorter
	// wait would force-delete pods before the node could be back.
	MinOrphanRebootWait = time.Minute
)

// Validate implements repair.Section.
func (c DeadNodeConfig) Validate() field.Errors {
	var errs field.Errors
	remediate.NonNegative(&errs, "not_ready_for", c.After)
	errs = append(errs, c.Settings.Validate()...)
	remediate.ValidateSite(&errs, "", c.Site)
	return errs
}

// Validate implements repair.Section.
func (c DrainTrapConfig) Validate() field.Errors {
	var errs field.Errors
	errs = append(errs, c.Settings.Validate()...)
	remediate.ValidateSite(&errs, "", c.Site)
	if n := c.ClusterName; len(n) > 200 || strings.ContainsAny(n, " \t\n/") {
		errs.Add("cloud_provider_cluster_name", "%q must be at most 200 bytes, without spaces or slashes", n)
	}
	return errs
}

// Validate implements repair.Section.
func (c OrphanedPodsConfig) Validate() field.Errors {
	var errs field.Errors
	remediate.NonNegative(&errs, "terminating_for", c.After)
	errs = append(errs, c.Settings.Validate()...)
	remediate.ValidateSite(&errs, "", c.Site)
	if w := c.RebootWait; w != 0 && w < MinOrphanRebootWait {
		errs.Add("reboot_wait", "%s must be at least %s (0 means the default %s)", w, MinOrphanRebootWait, DefaultOrphanRebootWait)
	}
	return errs
}

// Validate implements repair.Section.
func (c BackupWarmupConfig) Validate() field.Errors {
	var errs field.Errors
	remediate.NonNegative(&errs, "ready_timeout", c.ReadyTimeout)
	errs = append(errs, c.Settings.Validate()...)
	labels := field.Labels{}
	for i, w := range c.Workloads {
		p := "workloads[" + labels.Next(w.Name, i) + "]"
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
	return errs
}
