package openstack

import (
	"context"
	"testing"

	"github.com/drwatch/drwatch/failover/remediate"
	"github.com/drwatch/drwatch/test/openstacksim"
)

// TestNeverReadyCensus: the population of never-ready-instances is the
// cluster's instances (a look-alike outside the cluster is not counted),
// and only reboots count as affected (a warn changes nothing).
func TestNeverReadyCensus(t *testing.T) {
	s, c := simClients(t)
	for _, id := range []string{"a", "b", "c"} {
		node(s, id, "k-"+id, "ACTIVE", "10.0.0.1", t0, nil)
	}
	s.PutServer(openstacksim.Server{ID: "other", Name: "k-other", Status: "ACTIVE", Metadata: map[string]string{"kluster": "other"},
		Created: t0, LaunchedAt: t0})
	r := NewNeverReady(c, cluster, nil, 0, nil)
	pop, err := r.Census(context.Background(), []remediate.Action{
		{Target: "server/a", Verb: "reboot-soft"}, {Target: "server/a", Verb: "reboot-hard"}, {Target: "server/b", Verb: VerbWarn}})
	if err != nil {
		t.Fatal(err)
	}
	if want := (remediate.Population{Total: 3, Affected: 1, Unit: "cluster instances"}); pop != want {
		t.Fatalf("got %+v, want %+v", pop, want)
	}
}
