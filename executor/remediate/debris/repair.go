package debris

import (
	"fmt"
	"path/filepath"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/repair"
	"github.com/drwatch/drwatch/internal/kubeapi"
)

// Repair declares cloud-debris for the list in executor/remediate/all. It
// reaches OpenStack with the credentials of its own section, and checks
// its site's Services and PersistentVolumes unless the cluster is
// decommissioned. With a data directory it keeps what it saw of the PVs'
// reclaim policies there: after a restart it still knows which volumes
// Kubernetes asked to delete.
var Repair = repair.For(Name, "cloud_debris", []repair.Client{repair.OpenStack, repair.Kubernetes},
	func(c *CloudDebrisConfig) *remediate.Settings { return &c.Settings },
	func(env repair.Env, _ remediate.Config, dc CloudDebrisConfig) (remediate.Entry, error) {
		var kc kubeapi.Interface
		if !dc.Decommissioned && env.Kube != nil {
			// Nothing is asked of a decommissioned cluster's API.
			kc = env.Kube(dc.Site)
		}
		var opts []Option
		if env.DataDir != "" {
			opts = append(opts, WithReclaimFile(filepath.Join(env.DataDir, ReclaimFileName)))
		}
		d, err := New(dc, kc, env.Log.With("remediation", Name), opts...)
		if err != nil {
			return remediate.Entry{}, fmt.Errorf("remediations.cloud_debris: %w", err)
		}
		return remediate.Entry{Remediator: d, Settings: dc.Settings}, nil
	})
