package openstack

import (
	"context"
	"testing"

	"github.com/drwatch/drwatch/executor/remediate"
)

// TestNeverReadyCensus: the population of never-ready-instances is the
// cluster's instances (a look-alike outside the cluster is not counted),
// and only reboots count as affected (a warn changes nothing).
func TestNeverReadyCensus(t *testing.T) {
	s, c := novaClients(t, "member-appcred")
	mkServers(t, s,
		server{name: "ce-a", meta: inCluster},
		server{name: "ce-b", meta: inCluster},
		server{name: "ce-c", meta: inCluster},
		server{name: "ce-other", meta: map[string]string{"kluster": "other"}})
	r := NewNeverReady(c, Selector{NamePrefix: "ce-", MetadataKey: "kluster", MetadataValue: "k"}, nil, 0, 0, nil)
	pop, err := r.Census(context.Background(), []remediate.Action{
		{Target: "server/a", Verb: "reboot-soft"}, {Target: "server/a", Verb: "reboot-hard"}, {Target: "server/b", Verb: VerbWarn}})
	if err != nil {
		t.Fatal(err)
	}
	if want := (remediate.Population{Total: 3, Affected: 1, Unit: "cluster instances"}); pop != want {
		t.Fatalf("got %+v, want %+v", pop, want)
	}
}
