package kube

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/repair"
	"github.com/drwatch/drwatch/internal/kubeapi"
	corev1 "k8s.io/api/core/v1"
)

// Clients are the Kubernetes APIs of both sites; either may be nil.
type Clients struct {
	Primary, Backup kubeapi.Interface
}

func (c Clients) site(s string) kubeapi.Interface {
	if s == "backup" {
		return c.Backup
	}
	return c.Primary
}

// config is the part of the remediations config this package's repairs
// read, held as executor/remediate/all's Config holds it.
type config struct {
	remediate.Config     `yaml:",inline"`
	DeadNodeOutOfService DeadNodeConfig     `yaml:"dead_node_out_of_service"`
	DrainTrap            DrainTrapConfig    `yaml:"drain_trap"`
	OrphanedPods         OrphanedPodsConfig `yaml:"orphaned_pods"`
	BackupWarmup         BackupWarmupConfig `yaml:"backup_warmup"`
}

// entries builds this package's repairs through the one assembly loop, as
// the node does, with cloud (nil: none) as every site's cloud.
func entries(cfg config, clients Clients, cloud any, now func() time.Time) ([]remediate.Entry, error) {
	return repair.Assemble(&cfg, []repair.Repair{DeadNodeRepair, DrainTrapRepair, OrphanedPodsRepair, BackupWarmupRepair}, repair.Env{
		Kube:  clients.site,
		Cloud: func(string) any { return cloud },
		Now:   now,
	})
}

func TestEntries(t *testing.T) {
	var cs kubeapi.Interface = new(kubeapi.Client) // never called
	dry := remediate.Settings{Mode: remediate.ModeDryRun}
	all := config{}
	all.DeadNodeOutOfService.Settings = dry
	all.DrainTrap.Settings = dry
	all.OrphanedPods.Settings = dry
	all.BackupWarmup.Settings = dry
	tests := []struct {
		name      string
		cfg       config
		clients   Clients
		wantNames []string
		wantErr   string
	}{
		{"all off by default", config{}, Clients{}, nil, ""},
		{"all enabled", all, Clients{Primary: cs, Backup: cs},
			[]string{DeadNodeName, DrainTrapName, OrphanedPodsName, BackupWarmupName}, ""},
		{"missing backup client", all, Clients{Primary: cs}, nil, "backup-warmup needs the backup site's kubernetes client"},
		{"bad mode", config{DrainTrap: DrainTrapConfig{Settings: remediate.Settings{Mode: "yes"}}}, Clients{}, nil, "drain_trap.mode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			es, err := entries(tt.cfg, tt.clients, nil, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range es {
				names = append(names, e.Remediator.Name())
				if e.Settings.MaxPerPass != remediate.DefaultMaxPerPass {
					t.Fatalf("%s: got max_per_pass %d, want the default", e.Remediator.Name(), e.Settings.MaxPerPass)
				}
			}
			if !slices.Equal(names, tt.wantNames) {
				t.Fatalf("got %v, want %v", names, tt.wantNames)
			}
		})
	}
}

// TestEntriesPassTheAlphaGate: alpha_gate_on reaches dead-node, off by
// default.
func TestEntriesPassTheAlphaGate(t *testing.T) {
	cs := Clients{Primary: new(kubeapi.Client)} // never called
	for _, on := range []bool{false, true} {
		cfg := config{}
		cfg.DeadNodeOutOfService.Settings = remediate.Settings{Mode: remediate.ModeDryRun}
		cfg.DeadNodeOutOfService.AlphaGateOn = on
		es, err := entries(cfg, cs, nil, nil)
		if err != nil || len(es) != 1 {
			t.Fatalf("got %d entries %v, want dead-node", len(es), err)
		}
		if got := es[0].Remediator.(*DeadNode).alphaGate; got != on {
			t.Fatalf("alpha_gate_on %v: got %v", on, got)
		}
	}
}

// deadCloud reports every instance gone and records reboots.
type deadCloud struct{ recordingRebooter }

func (*deadCloud) InstanceState(context.Context, *corev1.Node) (InstanceState, error) {
	return InstanceGone, nil
}

// orphaned-pods asks the cloud of its own site whether a node is down:
// without that, a StatefulSet pod on a dead node would be held for ever.
func TestEntriesGiveOrphanedPodsTheirSiteCloud(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	node(t, c, "w1", corev1.ConditionUnknown, time.Now().Add(-time.Hour), false)
	ownedPod(t, c, ns, "db-0", "w1", "StatefulSet")
	terminate(t, c, ns, "db-0", 30)
	var cfg config
	cfg.OrphanedPods.Settings = remediate.Settings{Mode: remediate.ModeDryRun}
	cfg.OrphanedPods.After = time.Second
	later := func() time.Time { return time.Now().Add(time.Hour) }
	es, err := entries(cfg, Clients{Primary: api(t)}, &deadCloud{}, later)
	if err != nil || len(es) != 1 {
		t.Fatalf("got %d entries, %v; want orphaned-pods", len(es), err)
	}
	acts, err := es[0].Remediator.Plan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(acts) != 1 || acts[0].Target != "pod/"+ns+"/db-0" {
		t.Fatalf("got %v, want db-0 force-deleted (its instance is gone)", acts)
	}
}

// The repairs that disrupt nodes share their site's node disruption
// budget, with the site's max_disrupted_nodes; the others have none.
func TestEntriesShareTheSiteDisruptionBudget(t *testing.T) {
	var cs kubeapi.Interface = new(kubeapi.Client) // never called
	dry := remediate.Settings{Mode: remediate.ModeDryRun}
	var cfg config
	cfg.DeadNodeOutOfService.Settings = dry
	cfg.DrainTrap.Settings = dry
	cfg.OrphanedPods.Settings, cfg.OrphanedPods.Site = dry, "backup"
	cfg.Kubernetes.Backup.MaxDisruptedNodes = 2
	es, err := entries(cfg, Clients{Primary: cs, Backup: cs}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range es {
		got[e.Remediator.Name()] = e.Cluster + "/" + strconv.Itoa(e.MaxDisruptedNodes)
	}
	want := map[string]string{DeadNodeName: "primary/1", OrphanedPodsName: "backup/2", DrainTrapName: "/0"}
	if !maps.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
