package openstack

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/kube"
	"github.com/drwatch/drwatch/executor/remediate/repair"
	"github.com/drwatch/drwatch/internal/kubeapi"
	"github.com/drwatch/drwatch/internal/kubeconfig"
	"github.com/drwatch/drwatch/test/openstacktest"
	corev1 "k8s.io/api/core/v1"
)

// The OpenStack repairs are built without touching the cloud: a node must
// start while the primary's Keystone is down.
func TestCloudRemediatorsStartWithoutTheCloud(t *testing.T) {
	cfg := config{}.Defaulted() // the example configs enable no remediation
	dir := t.TempDir()
	for _, f := range []string{"id", "secret"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	o := &cfg.OpenStack
	o.AuthURL = "https://127.0.0.1:1/v3" // nothing listens: the cloud is down
	o.ApplicationCredentialIDFile, o.ApplicationCredentialSecretFile = filepath.Join(dir, "id"), filepath.Join(dir, "secret")
	o.RouterID, o.PodCIDR, o.InstanceNamePrefix = "r1", "198.19.0.0/16", "k-"
	o.NeutronRouteGC.Mode = "dry-run"
	if _, err := cloudRemediators(cfg, kubeSites{}, slog.New(slog.DiscardHandler), time.Now); err == nil ||
		!strings.Contains(err.Error(), "remediations.openstack.neutron_route_gc") || !strings.Contains(err.Error(), "remediations.kubernetes.primary") {
		t.Fatalf("route gc without the primary's kubernetes client: got %v, want an error naming both fields", err)
	}
	cloud, err := cloudRemediators(cfg, kubeSites{Primary: unreachableKube(t)}, slog.New(slog.DiscardHandler), time.Now)
	entries, instances := cloud.Entries, cloud.Instances
	if err != nil {
		t.Fatalf("got %v; a down cloud must not stop the node", err)
	}
	if len(entries) != 1 || entries[0].Remediator.Name() != "neutron-route-gc" {
		t.Fatalf("got %d entries", len(entries))
	}
	if _, err := entries[0].Remediator.Plan(context.Background()); err == nil {
		t.Error("Plan against a down cloud: got nil error")
	}
	if instances == nil {
		t.Fatal("no instance check for dead-node although the cloud is configured for its site")
	}
	if st, err := instances.InstanceState(context.Background(), &corev1.Node{}); st != "UNKNOWN" || err == nil {
		t.Errorf("instance state with the cloud down: got %s %v, want UNKNOWN and an error (fail closed)", st, err)
	}
	if cloud.Nodes == nil {
		t.Fatal("no instance check for orphaned-pods although the cloud is configured for its site")
	}
	if st, err := cloud.Nodes.InstanceState(context.Background(), &corev1.Node{}); st != "UNKNOWN" || err == nil {
		t.Errorf("orphaned-pods' instance state with the cloud down: got %s %v, want UNKNOWN and an error (fail closed)", st, err)
	}
	if cloud.Pools == nil {
		t.Fatal("no pool reader for drain-trap although the cloud is configured for its site")
	}
	if ms, found, err := cloud.Pools.PoolMembers(context.Background(), &corev1.Service{}); err == nil || found || len(ms) != 0 {
		t.Errorf("pool members with the cloud down: got %v found=%v err=%v, want an error (fail closed)", ms, found, err)
	}
	// Drain-trap on the other site gets no pool reader, so it moves nothing.
	cfg.DrainTrap.Site = "backup"
	if cloud, err := cloudRemediators(cfg, kubeSites{Primary: unreachableKube(t)}, slog.New(slog.DiscardHandler), time.Now); err != nil || cloud.Pools != nil {
		t.Errorf("drain-trap on the backup, cloud for the primary: got pools %v (%v), want none", cloud.Pools, err)
	}
}

// config is the part of the remediations config the OpenStack side reads,
// held as executor/remediate/all's Config holds it: this package's
// section, and the sections of the repairs its cloud serves.
type config struct {
	remediate.Config     `yaml:",inline"`
	DeadNodeOutOfService kube.DeadNodeConfig     `yaml:"dead_node_out_of_service"`
	DrainTrap            kube.DrainTrapConfig    `yaml:"drain_trap"`
	OrphanedPods         kube.OrphanedPodsConfig `yaml:"orphaned_pods"`
	OpenStack            OpenStackClusterConfig  `yaml:"openstack"`
}

// Defaulted returns c with its defaults, as the node's config has them.
func (c config) Defaulted() config {
	repair.Defaults(&c)
	return c
}

// entries builds the repairs of cfg's openstack section with Entries.
func entries(cfg config, clients *Clients, nodes NodeReader, now func() time.Time) ([]remediate.Entry, error) {
	return Entries(cfg.Config, cfg.OpenStack, clients, nodes, now)
}

// kubeSites are the Kubernetes clients of both sites; either may be nil.
type kubeSites struct{ Primary, Backup kubeapi.Interface }

// cloudBuild is what the assembly makes of the OpenStack side: this
// package's repairs, and what the cloud of remediations.openstack gives
// dead-node, orphaned-pods and drain-trap on their sites.
type cloudBuild struct {
	Entries   []remediate.Entry
	Instances kube.InstanceChecker
	Nodes     kube.NodeCloud
	Pools     kube.LoadBalancerPools
}

// cloudRemediators builds the OpenStack side as the node does (one cloud,
// this package's repairs through the one assembly loop), with clients as
// the sites' Kubernetes clients.
func cloudRemediators(cfg config, clients kubeSites, log *slog.Logger, now func() time.Time) (cloudBuild, error) {
	cloud := NewCloud(cfg.OpenStack)
	env := repair.Env{Cloud: cloud.For, Log: log, Now: now, Kube: func(site string) kubeapi.Interface {
		if site == "backup" {
			return clients.Backup
		}
		return clients.Primary
	}}
	es, err := repair.Assemble(&cfg, []repair.Repair{RouteGCRepair, SecurityGroupsRepair, NeverReadyRepair}, env)
	if err != nil {
		return cloudBuild{}, err
	}
	b := cloudBuild{Entries: es}
	b.Instances, _ = cloud.For(cfg.DeadNodeOutOfService.Site).(kube.InstanceChecker)
	b.Nodes, _ = cloud.For(cfg.OrphanedPods.Site).(kube.NodeCloud)
	if c, ok := cloud.For(cfg.DrainTrap.Site).(*Cloud); ok {
		b.Pools = c.Pools(cfg.DrainTrap.ClusterName)
	}
	return b, nil
}

// unreachableKube is a client of a kube-apiserver that does not listen:
// building the repairs must not need it.
func unreachableKube(t *testing.T) kubeapi.Interface {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	kc := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\"}}]\n" +
		"users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := kube.NewClient(kubeconfig.Cluster{Kubeconfig: path})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Each OpenStack repair is built alone, on first use, through Entries,
// which builds every enabled one: each build must get the node reader that
// never-ready-instances and neutron-route-gc need.
func TestCloudRemediatorsEachBuildsBesideTheOthers(t *testing.T) {
	s := openstacktest.SharedWith(t, stackOptions) // real Keystone, Neutron and Nova
	cfg := config{}.Defaulted()                    // the example configs enable no remediation
	dir := t.TempDir()
	for f, v := range map[string]string{"id": s.MemberAppCredID, "secret": s.MemberAppCredSecret} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	o := &cfg.OpenStack
	o.AuthURL, o.Region = s.AuthURL, s.Region
	o.ApplicationCredentialIDFile, o.ApplicationCredentialSecretFile = filepath.Join(dir, "id"), filepath.Join(dir, "secret")
	o.RouterID, o.PodCIDR, o.InstanceNamePrefix = "r1", "198.19.0.0/16", "k-"
	o.SecurityGroups.RequiredGroup = "k-nodes"
	o.NeutronRouteGC.Mode, o.SecurityGroups.Mode, o.NeverReadyInstances.Mode = "dry-run", "dry-run", "dry-run"
	cloud, err := cloudRemediators(cfg, kubeSites{Primary: unreachableKube(t)}, slog.New(slog.DiscardHandler), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if len(cloud.Entries) != 3 {
		t.Fatalf("got %d entries, want 3", len(cloud.Entries))
	}
	for _, e := range cloud.Entries {
		lazy, ok := e.Remediator.(*lazyRemediator)
		if !ok {
			t.Fatalf("%s: got %T, want a lazy remediator", e.Remediator.Name(), e.Remediator)
		}
		if _, err := lazy.resolve(context.Background()); err != nil {
			t.Errorf("%s: build: %v", lazy.name, err)
		}
	}
}

// censusDisruptor is a built repair with a population and disrupted nodes.
type censusDisruptor struct{ remediate.Remediator }

func (censusDisruptor) Census(context.Context, []remediate.Action) (remediate.Population, error) {
	return remediate.Population{Total: 3, Affected: 2, Unit: "cluster instances"}, nil
}

func (censusDisruptor) Disrupted(context.Context, []remediate.Applied) ([]remediate.Disruption, error) {
	return []remediate.Disruption{{Node: "k-1", Why: "rebooted"}}, nil
}

// A repair built on first use keeps what the runner needs of the one it
// builds: its census, so that the disruption brake holds for it, and the
// nodes it keeps disrupted, for its cluster's node budget. Look-alike: a
// built repair without them counts nothing and disrupts nothing.
func TestLazyRemediatorKeepsCensusAndDisruptions(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name     string
		built    remediate.Remediator
		affected int
		nodes    int
	}{
		{"with census and disruptions", censusDisruptor{&NeverReady{}}, 2, 1},
		{"without", struct{ remediate.Remediator }{&NeverReady{}}, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var r remediate.Remediator = &lazyRemediator{name: NeverReadyName, clients: &lazyClients{c: &Clients{}},
				build: func(*Clients) (remediate.Remediator, error) { return tt.built, nil }}
			c, ok := r.(remediate.Census)
			if !ok {
				t.Fatal("lazy remediator is no Census: the brake would never hold for it")
			}
			pop, err := c.Census(ctx, nil)
			if err != nil || pop.Affected != tt.affected {
				t.Fatalf("census: got %+v (%v), want %d affected", pop, err, tt.affected)
			}
			d, ok := r.(remediate.Disruptor)
			if !ok {
				t.Fatal("lazy remediator is no Disruptor")
			}
			ds, err := d.Disrupted(ctx, []remediate.Applied{{Target: "server/x", Key: "reboot/x/1"}})
			if err != nil || len(ds) != tt.nodes {
				t.Fatalf("disrupted: got %v (%v), want %d", ds, err, tt.nodes)
			}
		})
	}
}

// never-ready-instances shares its site's node disruption budget; the
// repairs that disrupt no node (route GC, security groups) have none.
func TestCloudRemediatorsPutNeverReadyInItsSiteBudget(t *testing.T) {
	cfg := config{}.Defaulted()
	dir := t.TempDir()
	for _, f := range []string{"id", "secret"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	o := &cfg.OpenStack
	o.AuthURL = "https://127.0.0.1:1/v3" // never contacted while building
	o.ApplicationCredentialIDFile, o.ApplicationCredentialSecretFile = filepath.Join(dir, "id"), filepath.Join(dir, "secret")
	o.Site, o.PodCIDR, o.InstanceNamePrefix = "backup", "198.19.0.0/16", "k-"
	o.SecurityGroups.RequiredGroup = "k-nodes"
	o.SecurityGroups.Mode, o.NeverReadyInstances.Mode = "dry-run", "dry-run"
	cfg.Kubernetes.Backup.MaxDisruptedNodes = 2
	cloud, err := cloudRemediators(cfg, kubeSites{Backup: unreachableKube(t)}, slog.New(slog.DiscardHandler), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range cloud.Entries {
		got[e.Remediator.Name()] = fmt.Sprintf("%s/%d", e.Cluster, e.MaxDisruptedNodes)
	}
	want := map[string]string{NeverReadyName: "backup/2", SecurityGroupsName: "/0"}
	if !maps.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
