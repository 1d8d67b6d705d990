package kube

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/drwatch/drwatch/failover/remediate"
	"github.com/drwatch/drwatch/failover/remediate/kubeapi"
	"github.com/drwatch/drwatch/internal/kubeconfig"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// NewClient builds a client from a kubeconfig file and context.
func NewClient(c remediate.KubeCluster) (kubeapi.Interface, error) {
	rc, err := RESTConfig(c)
	if err != nil {
		return nil, err
	}
	cs, err := kubeapi.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return cs, nil
}

// RESTConfig is the connection NewClient uses, for a caller that must wrap
// its transport (the read-only cluster health reader) while reaching the
// cluster through the same remediations.kubernetes settings. Its errors
// name the field, never the kubeconfig's path or content.
func RESTConfig(c remediate.KubeCluster) (*rest.Config, error) {
	if c.Kubeconfig == "" {
		return nil, fmt.Errorf("kubeconfig_file is required")
	}
	rc, err := kubeconfig.RESTConfig("kubeconfig_file", c.Kubeconfig, &clientcmd.ConfigOverrides{CurrentContext: c.Context})
	if err != nil {
		return nil, err
	}
	rc.Timeout = 30 * time.Second
	return rc, nil
}

// readyCondition returns the node's Ready condition, or nil.
func readyCondition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// nodeReady reports whether the node's Ready condition is True.
func nodeReady(n *corev1.Node) bool {
	c := readyCondition(n)
	return c != nil && c.Status == corev1.ConditionTrue
}

// Clients are the Kubernetes APIs of both sites; either may be nil when
// no remediator needs it.
type Clients struct {
	Primary, Backup kubeapi.Interface
}

func (c Clients) site(s string) kubeapi.Interface {
	if s == "backup" {
		return c.Backup
	}
	return c.Primary
}

// Entries builds the Kubernetes remediators cfg enables (mode dry-run or
// on), with their settings, for a remediate.Runner. instances may be nil
// (no cloud check yet: dead nodes are never tainted); decision feeds
// backup-warmup; now may be nil. It fails if an enabled remediator's
// cluster has no client.
//
// nodes is the cloud behind orphaned_pods' site: it confirms nodes down
// and serves reboot_node (enabling that option without it is an error).
// nil means no cloud: orphaned-pods then never force-deletes a pod that may
// still run on a node that exists. pools reads drain-trap's load-balancer
// pools; nil (no cloud for its site) makes every drain-trap Plan fail, so
// nothing moves.
func Entries(cfg remediate.Config, clients Clients, instances InstanceChecker, nodes NodeCloud, pools LoadBalancerPools, decision func() remediate.Decision, now func() time.Time) ([]remediate.Entry, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate().Under(remediate.Section).Err(); err != nil {
		return nil, err
	}
	var out []remediate.Entry
	add := func(name, site string, s remediate.Settings, disrupts bool, mk func(kubeapi.Interface) remediate.Remediator) error {
		if !s.Mode.Enabled() {
			return nil
		}
		c := clients.site(site)
		if c == nil {
			return fmt.Errorf("remediations: %s needs the %s site's kubernetes client (remediations.kubernetes.%s)", name, site, site)
		}
		e := remediate.Entry{Remediator: mk(c), Settings: s}
		if disrupts {
			// One node disruption budget per cluster, shared with
			// never-ready-instances of the same site.
			e.Cluster, e.MaxDisruptedNodes = site, cfg.Kubernetes.Site(site).MaxDisrupted()
		}
		out = append(out, e)
		return nil
	}
	dn, dt, op, bw := cfg.DeadNodeOutOfService, cfg.DrainTrap, cfg.OrphanedPods, cfg.BackupWarmup
	if op.Mode.Enabled() && op.RebootNode && nodes == nil {
		return nil, fmt.Errorf("remediations.orphaned_pods.reboot_node needs remediations.openstack for the %s site (Nova reboots the node)", op.Site)
	}
	err := errors.Join(
		add(DeadNodeName, dn.Site, dn.Settings, true, func(c kubeapi.Interface) remediate.Remediator {
			d := NewDeadNode(c, instances, dn.After, now)
			if dn.AlphaGateOn {
				d.WithAlphaGate()
			}
			return d
		}),
		add(DrainTrapName, dt.Site, dt.Settings, false, func(c kubeapi.Interface) remediate.Remediator { return NewDrainTrap(c, pools) }),
		add(OrphanedPodsName, op.Site, op.Settings, true, func(c kubeapi.Interface) remediate.Remediator {
			o := NewOrphanedPods(c, nodes, op.After, now)
			if op.RebootNode && nodes != nil {
				o.WithReboot(nodes, op.RebootWait)
			}
			return o
		}),
		add(BackupWarmupName, "backup", bw.Settings, false, func(c kubeapi.Interface) remediate.Remediator {
			if decision == nil {
				decision = func() remediate.Decision { return remediate.Decision{} }
			}
			return NewBackupWarmup(c, bw.Workloads, decision).WithScaleDown(bw.ScaleDownAtFailback, now)
		}),
	)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// updateNode writes n with its resourceVersion, so a concurrent change
// makes the update fail: that conflict is the world moving on since Plan
// (ErrPrecondition), and the next pass decides again. what names the
// change in the error ("cordon", "update").
func updateNode(ctx context.Context, client kubeapi.Interface, n *corev1.Node, what string) (*corev1.Node, error) {
	out, err := client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		return nil, fmt.Errorf("%s node %s: %w", what, n.Name, errors.Join(err, remediate.ErrPrecondition))
	}
	if err != nil {
		return nil, fmt.Errorf("%s node %s: %w", what, n.Name, err)
	}
	return out, nil
}
