package all

import (
	"testing"

	"github.com/drwatch/drwatch/internal/kubeapi"
	"github.com/drwatch/drwatch/internal/kubeconfig"
)

// noKube is a Kubernetes client that Build may hold but that no test here
// calls: Build contacts nothing.
type noKube struct{ kubeapi.Interface }

// What a repair declares about the nodes it disrupts (DisruptsSite, which
// the config reads to refuse two budgets on one cluster) is what its Build
// does: the Entry of each repair, built alone, shares the node disruption
// budget of the cluster Disruptions names, and one that declares none
// disrupts none.
func TestDisruptionsMatchWhatBuildDisrupts(t *testing.T) {
	for _, r := range Repairs {
		t.Run(r.Name, func(t *testing.T) {
			var cfg Config
			cfg.Kubernetes.Primary = kubeconfig.Cluster{Kubeconfig: "/etc/drwatch/primary.kubeconfig"}
			cfg.Kubernetes.Backup = kubeconfig.Cluster{Kubeconfig: "/etc/drwatch/backup.kubeconfig", Context: "dr"}
			cfg.OpenStack.Cloud = "region1"
			cfg.OctaviaStuckLB.Cloud = "region1"
			cfg.CloudDebris.Cloud = "region1"
			cfg.CloudDebris.ClusterName = "k1"
			cfg.DrainTrap.ClusterName = "k1"
			cfg.OpenStack.RouterID, cfg.OpenStack.PodCIDR = "r1", "198.19.0.0/16"
			cfg.OpenStack.InstanceNamePrefix = "k1-"
			cfg.OpenStack.SecurityGroups.RequiredGroup = "k1-nodes"
			cfg, _ = Only(cfg, r.Name)
			entries, err := Build(cfg, Options{NewKubeClient: func(kubeconfig.Cluster) (kubeapi.Interface, error) { return noKube{}, nil }})
			if err != nil {
				t.Fatalf("build: %v", err)
			}
			if len(entries) != 1 {
				t.Fatalf("%d entries, want 1", len(entries))
			}
			ds := Disruptions(cfg)
			switch {
			case entries[0].Cluster == "" && len(ds) != 0:
				t.Fatalf("disrupts no node, but Disruptions lists %+v", ds)
			case entries[0].Cluster != "" && (len(ds) != 1 || ds[0].Site != entries[0].Cluster || ds[0].Repair != r.Name):
				t.Fatalf("its Entry disrupts the %s cluster, but Disruptions lists %+v", entries[0].Cluster, ds)
			case len(ds) == 1 && ds[0].Cluster != cfg.Defaulted().Kubernetes.Site(ds[0].Site):
				t.Fatalf("Disruptions names cluster %+v, want remediations.kubernetes.%s", ds[0].Cluster, ds[0].Site)
			}
		})
	}
}
