package remediate

import (
	"errors"
	"fmt"
	"time"
)

// Config is the `remediations:` section of a node's config file. Every
// remediator is off unless its mode says otherwise. The config package can
// embed it as is (yaml tags, doc tags, defaults applied by WithDefaults).
type Config struct {
	Interval time.Duration `yaml:"interval" doc:"Period between remediation passes on the leader (default 30s)."`
	// Kubernetes names the clusters of each site; the Kubernetes
	// remediators act on the one their site field names.
	Kubernetes KubeSites `yaml:"kubernetes" doc:"How to reach each site's Kubernetes API."`

	DeadNodeOutOfService DeadNodeConfig     `yaml:"dead_node_out_of_service" doc:"Taint nodes whose instance is gone node.kubernetes.io/out-of-service (seeds 003, 004)."`
	DrainTrap            DrainTrapConfig    `yaml:"drain_trap" doc:"Reschedule pods that are a Local load balancer's only endpoints on cordoned or NotReady nodes (seed 002)."`
	OrphanedPods         OrphanedPodsConfig `yaml:"orphaned_pods" doc:"Force-delete pods stuck Terminating (seed 000)."`
	BackupWarmup         BackupWarmupConfig `yaml:"backup_warmup" doc:"Scale workloads up on the backup cluster at failover."`
}

// KubeSites holds one Kubernetes API per site.
type KubeSites struct {
	Primary KubeCluster `yaml:"primary" doc:"The primary site's cluster."`
	Backup  KubeCluster `yaml:"backup" doc:"The backup site's cluster."`
}

// KubeCluster says how to reach one Kubernetes API.
type KubeCluster struct {
	Kubeconfig string `yaml:"kubeconfig_file" doc:"kubeconfig file with the credentials drwatch uses."`
	Context    string `yaml:"context" doc:"kubeconfig context; empty means its current context."`
}

// DeadNodeConfig configures dead-node-out-of-service.
type DeadNodeConfig struct {
	Settings `yaml:",inline"`
	Site     string        `yaml:"site" doc:"Which site's cluster to watch: primary (default) or backup."`
	After    time.Duration `yaml:"not_ready_for" doc:"How long a node must be NotReady or Unknown before its instance is checked (default 5m)."`
}

// DrainTrapConfig configures drain-trap.
type DrainTrapConfig struct {
	Settings `yaml:",inline"`
	Site     string `yaml:"site" doc:"Which site's cluster to watch: primary (default) or backup."`
}

// OrphanedPodsConfig configures orphaned-pods. The optional cordon and Nova
// reboot of the node is not implemented.
type OrphanedPodsConfig struct {
	Settings `yaml:",inline"`
	Site     string        `yaml:"site" doc:"Which site's cluster to watch: primary (default) or backup."`
	After    time.Duration `yaml:"terminating_for" doc:"How long past its grace period a pod may stay Terminating before it is force-deleted (default 10m)."`
}

// BackupWarmupConfig configures backup-warmup.
type BackupWarmupConfig struct {
	Settings     `yaml:",inline"`
	ReadyTimeout time.Duration `yaml:"ready_timeout" doc:"How long the DNS flip waits for the workloads to be ready before flipping anyway (default 5m)."`
	Workloads    []Workload    `yaml:"workloads" doc:"The backup cluster's workloads and the replicas they need when the backup is active."`
}

// Workload is a Deployment or StatefulSet and its replica count when active.
type Workload struct {
	Kind      string `yaml:"kind" doc:"Deployment or StatefulSet."`
	Namespace string `yaml:"namespace" doc:"Namespace."`
	Name      string `yaml:"name" doc:"Name."`
	Replicas  int32  `yaml:"replicas" doc:"Replicas when the backup is active (> 0)."`
}

// Defaults.
const (
	DefaultInterval      = 30 * time.Second
	DefaultDeadNodeAfter = 5 * time.Minute
	DefaultOrphanAfter   = 10 * time.Minute
	DefaultReadyTimeout  = 5 * time.Minute
)

// WithDefaults returns c with every zero field defaulted.
func (c Config) WithDefaults() Config {
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.DeadNodeOutOfService.After <= 0 {
		c.DeadNodeOutOfService.After = DefaultDeadNodeAfter
	}
	if c.OrphanedPods.After <= 0 {
		c.OrphanedPods.After = DefaultOrphanAfter
	}
	if c.BackupWarmup.ReadyTimeout <= 0 {
		c.BackupWarmup.ReadyTimeout = DefaultReadyTimeout
	}
	for _, s := range []*string{&c.DeadNodeOutOfService.Site, &c.DrainTrap.Site, &c.OrphanedPods.Site} {
		if *s == "" {
			*s = "primary"
		}
	}
	c.DeadNodeOutOfService.Settings = c.DeadNodeOutOfService.withDefaults()
	c.DrainTrap.Settings = c.DrainTrap.withDefaults()
	c.OrphanedPods.Settings = c.OrphanedPods.withDefaults()
	c.BackupWarmup.Settings = c.BackupWarmup.withDefaults()
	return c
}

// Validate returns every problem at once, each naming its field path.
func (c Config) Validate() error {
	var errs []error
	mode := func(path string, s Settings) {
		if !s.Mode.Valid() {
			errs = append(errs, fmt.Errorf("remediations.%s.mode: %q must be off, dry-run or on", path, s.Mode))
		}
		if s.MaxPerPass < 0 || s.MaxPerHour < 0 {
			errs = append(errs, fmt.Errorf("remediations.%s: caps must be >= 0", path))
		}
	}
	site := func(path, s string) {
		if s != "" && s != "primary" && s != "backup" {
			errs = append(errs, fmt.Errorf("remediations.%s.site: %q must be primary or backup", path, s))
		}
	}
	mode("dead_node_out_of_service", c.DeadNodeOutOfService.Settings)
	site("dead_node_out_of_service", c.DeadNodeOutOfService.Site)
	mode("drain_trap", c.DrainTrap.Settings)
	site("drain_trap", c.DrainTrap.Site)
	mode("orphaned_pods", c.OrphanedPods.Settings)
	site("orphaned_pods", c.OrphanedPods.Site)
	mode("backup_warmup", c.BackupWarmup.Settings)
	for i, w := range c.BackupWarmup.Workloads {
		p := fmt.Sprintf("remediations.backup_warmup.workloads[%d]", i)
		if w.Kind != "Deployment" && w.Kind != "StatefulSet" {
			errs = append(errs, fmt.Errorf("%s.kind: %q must be Deployment or StatefulSet", p, w.Kind))
		}
		if w.Namespace == "" || w.Name == "" {
			errs = append(errs, fmt.Errorf("%s: namespace and name are required", p))
		}
		if w.Replicas <= 0 {
			errs = append(errs, fmt.Errorf("%s.replicas: %d must be > 0", p, w.Replicas))
		}
	}
	return errors.Join(errs...)
}
