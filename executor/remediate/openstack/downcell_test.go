package openstack

import (
	"context"
	"strings"
	"testing"

	"github.com/drwatch/drwatch/executor/remediate/kube"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNovaDownCell: with cell1's database out of nova-api's reach, real
// Nova lists the cell's servers as UNKNOWN records at microversion 2.69
// and neutron-route-gc's listing says so; a server read by ID in the down
// cell is UNKNOWN for dead-node, never down; never-ready-instances, which
// lists at the default microversion, sees nothing and reboots nothing.
func TestNovaDownCell(t *testing.T) {
	s, c := novaClients(t, "member-appcred")
	id := mkServers(t, s, server{name: "dc-a", meta: inCluster})["dc-a"]
	s.SetCellDown(true)
	t.Cleanup(func() { s.SetCellDown(false) })
	ctx := context.Background()

	all, partial, err := (&RouteGC{c: c}).projectServers(ctx)
	if err != nil {
		t.Fatalf("list at 2.69 with a down cell: %v", err)
	}
	if !strings.Contains(partial, "down cell") || !strings.Contains(partial, id) {
		t.Errorf("got partial %q, want it to name the down cell and %s", partial, id)
	}
	found := false
	for _, v := range all {
		if v.ID == id {
			found = v.Status == "UNKNOWN"
		}
	}
	if !found {
		t.Errorf("got %d servers, want %s among them with status UNKNOWN", len(all), id)
	}

	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "dc-a"}, Spec: corev1.NodeSpec{ProviderID: "openstack:///" + id}}
	// Nova answers 500 for a server in a down cell below 2.69.
	if st, err := NewNovaInstances(c).InstanceState(ctx, n); st != kube.InstanceUnknown || err == nil {
		t.Errorf("server in a down cell: got %s %v, want UNKNOWN with an error", st, err)
	}

	// Below 2.69 Nova skips the down cell's servers without a word:
	// never-ready-instances then sees no instance, so it reboots none.
	nr := NewNeverReady(c, Selector{NamePrefix: "dc-", MetadataKey: "kluster", MetadataValue: "k"},
		&fakeReadiness{ready: map[string]bool{"dc-a": false}}, 0, 0, nil)
	if acts, err := nr.Plan(ctx); err != nil || len(acts) != 0 {
		t.Errorf("never-ready plan with the cell down: got %+v %v, want nothing", acts, err)
	}
}
