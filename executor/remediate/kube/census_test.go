package kube

import (
	"context"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	corev1 "k8s.io/api/core/v1"
)

// TestCensusCountsNodes: the population of dead-node-out-of-service and
// orphaned-pods is the cluster's nodes. Only taints count as affected for
// dead-node (an untaint undoes a repair); orphaned-pods counts the distinct
// nodes its pods and reboots concern.
func TestCensusCountsNodes(t *testing.T) {
	c := client(t)
	long := time.Now().Add(-time.Hour)
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		node(t, c, n, corev1.ConditionTrue, long, false)
	}
	ns := namespace(t, c)
	pod(t, c, ns, "p1", "n1", nil, false)
	pod(t, c, ns, "p2", "n1", nil, false)
	pod(t, c, ns, "p3", "n2", nil, false)
	ctx := context.Background()

	dead := NewDeadNode(api(t), nil, time.Minute, nil)
	pop, err := dead.Census(ctx, []remediate.Action{
		{Target: "node/n1", Verb: "taint"}, {Target: "node/n2", Verb: "taint"}, {Target: "node/n3", Verb: "untaint"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := (remediate.Population{Total: 4, Affected: 2, Unit: "nodes"}); pop != want {
		t.Fatalf("dead-node: got %+v, want %+v", pop, want)
	}

	orph := NewOrphanedPods(api(t), nil, time.Minute, nil)
	pop, err = orph.Census(ctx, []remediate.Action{
		{Target: "pod/" + ns + "/p1", Verb: "force-delete"}, {Target: "pod/" + ns + "/p2", Verb: "force-delete"},
		{Target: "pod/" + ns + "/p3", Verb: "force-delete"}, {Target: "node/n1", Verb: "cordon-reboot"},
		{Target: "node/n4", Verb: "uncordon"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := (remediate.Population{Total: 4, Affected: 2, Unit: "nodes"}); pop != want {
		t.Fatalf("orphaned-pods: got %+v, want %+v (n1 and n2)", pop, want)
	}
}
