package kube

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/executor/remediate/remediatetest"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/fakeclock"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// boot sets a node's boot ID and Ready condition, as its kubelet reports
// them after (re)starting.
func boot(t *testing.T, c kubernetes.Interface, name, bootID string, ready corev1.ConditionStatus, since time.Time) {
	t.Helper()
	updateNodeStatus(t, c, name, func(n *corev1.Node) {
		n.Status.NodeInfo.BootID = bootID
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, Reason: "Test",
			LastHeartbeatTime: metav1.NewTime(since), LastTransitionTime: metav1.NewTime(since)}}
	})
}

// partitionedStatefulNodes makes nodes NotReady for an hour under boot ID
// boot-a, beside five healthy ones, with StatefulSet pods db-0, db-1
// stuck Terminating on the first two.
func partitionedStatefulNodes(t *testing.T, c kubernetes.Interface, ns string, nodes ...string) {
	t.Helper()
	long := time.Now().Add(-time.Hour)
	for _, n := range nodes {
		node(t, c, n, corev1.ConditionFalse, long, false)
		boot(t, c, n, "boot-a", corev1.ConditionFalse, long)
	}
	healthyNodes(t, c, 5)
	for i, n := range nodes[:2] {
		p := fmt.Sprintf("db-%d", i)
		ownedPod(t, c, ns, p, n, "StatefulSet")
		terminate(t, c, ns, p, 30)
	}
}

// passCluster runs one Runner pass over entries, all remediations of the
// cluster "primary" with the default node disruption budget, and returns
// the records it added.
func passCluster(t *testing.T, fc *remediatetest.Log, entries ...remediate.Entry) []failover.RemediationRecord {
	t.Helper()
	for i := range entries {
		entries[i].Cluster = "primary"
	}
	return remediatetest.PassEntries(t, fc, nil, entries...)
}

// detailOf returns the detail of the last record about target with result.
func detailOf(recs []failover.RemediationRecord, result, target string) string {
	d := ""
	for _, r := range recs {
		if r.Result == result && r.Target == target {
			d = r.Detail
		}
	}
	return d
}

// A reboot is a fence, for what a held pod blocks: a node is rebooted only
// when a pod held on it (one that may still run, and whose copy would
// conflict) blocks something, here another pod waiting for its claim. A
// partitioned node whose held pod blocks nothing (the other pod of its
// claim runs beside it, on the same node) is left serving, the pod
// reported; a node with only pods that may be copied is not rebooted
// either: those pods are force-deleted.
func TestOrphanedPodsRebootOnlyANodeWhosePodsBlockSomething(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	long := time.Now().Add(-time.Hour)
	for _, n := range []string{"w1", "w2", "w3"} {
		node(t, c, n, corev1.ConditionFalse, long, false) // partitioned: instance ACTIVE
	}
	healthyNodes(t, c, 5)
	solo := claim(t, c, ns, "solo-data", corev1.ReadWriteOnce)
	ownedPod(t, c, ns, "solo", "w1", "ReplicaSet", solo)
	ownedPod(t, c, ns, "solo-sibling", "w1", "ReplicaSet", solo) // shares the volume on w1: waits for nothing
	shared := claim(t, c, ns, "shared-data", corev1.ReadWriteOnce)
	ownedPod(t, c, ns, "shared", "w2", "ReplicaSet", shared)
	ownedPod(t, c, ns, "shared-next", "", "ReplicaSet", shared) // its replacement, waiting for the volume
	ownedPod(t, c, ns, "web", "w3", "ReplicaSet")
	for _, p := range []string{"solo", "shared", "web"} {
		terminate(t, c, ns, p, 30)
	}
	clk := fakeclock.At(time.Now().Add(time.Hour))
	rb := &recordingRebooter{}
	cloud := fakeInstances{"w1": InstanceActive, "w2": InstanceActive, "w3": InstanceActive}
	r := NewOrphanedPods(api(t), cloud, 10*time.Minute, clk.Now).WithReboot(rb, 10*time.Minute)
	acted, held := splitHeld(remediatetest.Pass(t, remediatetest.NewLog(), r, remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 10}))

	if got := rb.rebooted(); !slices.Equal(got, []string{"w2"}) {
		t.Fatalf("rebooted %q, want only w2, where a pod waits for the held pod's volume", got)
	}
	want := []string{"planned cordon-reboot node/w2", "applied cordon-reboot node/w2",
		"planned force-delete pod/" + ns + "/web", "applied force-delete pod/" + ns + "/web"}
	if !slices.Equal(acted, want) {
		t.Fatalf("got %q, want %q", acted, want)
	}
	if why := held["pod/"+ns+"/solo"]; !strings.Contains(why, "blocks nothing") || !strings.Contains(why, "not rebooted") {
		t.Fatalf("solo: got %q, want it held, saying it blocks nothing so its node is not rebooted", why)
	}
	if !podExists(t, c, ns, "solo") || !podExists(t, c, ns, "shared") || podExists(t, c, ns, "web") {
		t.Fatal("want solo and shared kept, web force-deleted")
	}
}

// Once drwatch's reboot is proven, the node Ready again under a new boot
// ID, what it ran before no longer runs: the StatefulSet pod held on it
// is force-deleted the wait after the reboot, so its replacement can
// start. Look-alike: a node Ready again under the same boot ID was not
// rebooted (the reboot was lost, or the node only reconnected): its pod
// stays held.
func TestOrphanedPodsReleaseHeldPodsOnceFenced(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	partitionedStatefulNodes(t, c, ns, "w1", "w2")
	clk := fakeclock.At(time.Now().Add(time.Hour))
	rb := &recordingRebooter{}
	cloud := fakeInstances{"w1": InstanceActive, "w2": InstanceActive}
	r := NewOrphanedPods(api(t), cloud, 10*time.Minute, clk.Now).WithReboot(rb, 10*time.Minute)
	fc := remediatetest.NewLog()
	on := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 10}

	remediatetest.Pass(t, fc, r, on)
	if got := rb.rebooted(); !slices.Equal(got, []string{"w1", "w2"}) {
		t.Fatalf("rebooted %q, want w1 and w2", got)
	}
	w1, err := c.CoreV1().Nodes().Get(context.Background(), "w1", metav1.GetOptions{})
	if err != nil || w1.Annotations[AnnotationBootID] != "boot-a" {
		t.Fatalf("w1: got annotations %v (%v), want the boot ID before the reboot recorded", w1.Annotations, err)
	}
	boot(t, c, "w1", "boot-b", corev1.ConditionTrue, clk.Now())
	boot(t, c, "w2", "boot-a", corev1.ConditionTrue, clk.Now())
	clk.Add(11 * time.Minute)
	acted, held := splitHeld(remediatetest.Pass(t, fc, r, on))
	if !slices.Contains(acted, "applied force-delete pod/"+ns+"/db-0") || podExists(t, c, ns, "db-0") {
		t.Fatalf("got %q, want db-0 released once w1 is fenced", acted)
	}
	if why := held["pod/"+ns+"/db-1"]; !strings.Contains(why, "not back Ready under a new boot") || !podExists(t, c, ns, "db-1") {
		t.Fatalf("db-1: got held %q, want it kept: w2 is Ready under its old boot", why)
	}
}

// The repairs of one cluster disrupt one node at a time: orphaned-pods
// reboots w1; w2's reboot, and dead-node's taint of a powered-off w3, wait
// until w1 is back Ready under a new boot, each recorded as skipped by
// the budget naming w1; then the next goes, and the one after it waits
// for that one.
func TestRepairsDisruptOneNodeAtATime(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	partitionedStatefulNodes(t, c, ns, "w1", "w2", "w3")
	clk := fakeclock.At(time.Now().Add(time.Hour))
	rb := &recordingRebooter{}
	cloud := fakeInstances{"w1": InstanceActive, "w2": InstanceActive, "w3": InstanceShutoff}
	on := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 10}
	orphans := NewOrphanedPods(api(t), cloud, 10*time.Minute, clk.Now).WithReboot(rb, 10*time.Minute)
	dead := NewDeadNode(api(t), cloud, 5*time.Minute, clk.Now)
	fc := remediatetest.NewLog()
	pass := func() []failover.RemediationRecord {
		t.Helper()
		return passCluster(t, fc, remediate.Entry{Remediator: orphans, Settings: on}, remediate.Entry{Remediator: dead, Settings: on})
	}
	tainted := func() bool {
		t.Helper()
		has, _ := taintOf(t, c, "w3")
		return has
	}

	recs := pass()
	if got := rb.rebooted(); !slices.Equal(got, []string{"w1"}) || tainted() {
		t.Fatalf("first pass: rebooted %q, w3 tainted %v; want only w1 rebooted", got, tainted())
	}
	for _, target := range []string{"node/w2", "node/w3"} {
		if d := detailOf(recs, failover.RemediationSkippedCap, target); !strings.Contains(d, "node disruption budget of cluster primary") || !strings.Contains(d, "node w1") {
			t.Fatalf("%s: got detail %q, want skipped by the node disruption budget naming w1", target, d)
		}
	}
	pass()
	if got := rb.rebooted(); !slices.Equal(got, []string{"w1"}) || tainted() {
		t.Fatalf("w1 not back: rebooted %q, w3 tainted %v; want nothing more", got, tainted())
	}
	// Ready under the same boot proves no reboot: w1 is still disrupted.
	boot(t, c, "w1", "boot-a", corev1.ConditionTrue, clk.Now())
	pass()
	if got := rb.rebooted(); !slices.Equal(got, []string{"w1"}) || tainted() {
		t.Fatalf("w1 Ready under its old boot: rebooted %q, w3 tainted %v; want nothing more", got, tainted())
	}
	boot(t, c, "w1", "boot-b", corev1.ConditionTrue, clk.Now())
	pass()
	if got := rb.rebooted(); !slices.Equal(got, []string{"w1", "w2"}) || tainted() {
		t.Fatalf("w1 back: rebooted %q, w3 tainted %v; want w2 rebooted next, w3 waiting for it", got, tainted())
	}
	boot(t, c, "w2", "boot-b", corev1.ConditionTrue, clk.Now())
	pass()
	if !tainted() {
		t.Fatal("w2 back: want w3 tainted out of service")
	}
}

// The brake of a repair that disrupts nodes has no floor: in a cluster of
// three nodes, two dead at once trip it (a majority), and nothing is
// tainted; one of three is tainted.
func TestDeadNodeBrakeTripsOnTwoOfThreeNodes(t *testing.T) {
	for _, tt := range []struct {
		name    string
		dead    []string
		tainted []string
	}{
		{"two of three", []string{"w1", "w2"}, nil},
		{"one of three", []string{"w1"}, []string{"w1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := client(t)
			long := time.Now().Add(-time.Hour)
			cloud := fakeInstances{}
			for _, n := range []string{"w1", "w2", "w3"} {
				status, st := corev1.ConditionTrue, InstanceActive
				if slices.Contains(tt.dead, n) {
					status, st = corev1.ConditionUnknown, InstanceShutoff
				}
				node(t, c, n, status, long, false)
				cloud[n] = st
			}
			d := NewDeadNode(api(t), cloud, 5*time.Minute, nil)
			on := remediate.Settings{Mode: remediate.ModeOn, MaxPerPass: 5, MaxPerHour: 10}
			recs := passCluster(t, remediatetest.NewLog(), remediate.Entry{Remediator: d, Settings: on, MaxDisruptedNodes: 3})
			var got []string
			for _, n := range []string{"w1", "w2", "w3"} {
				if has, _ := taintOf(t, c, n); has {
					got = append(got, n)
				}
			}
			if !slices.Equal(got, tt.tainted) {
				t.Fatalf("got tainted %q, want %q (records %q)", got, tt.tainted, remediatetest.Summary(recs))
			}
		})
	}
}

// A node dead-node tainted keeps its cluster's budget while the outage
// its taint's Key names goes on and the instance is not confirmed down;
// it is free once the node is Ready again, gone, down by the cloud, or
// in another outage since (an old taint says nothing of it).
func TestDeadNodeKeepsATaintedNodeDisrupted(t *testing.T) {
	c := client(t)
	long := time.Now().Add(-time.Hour)
	cloud := fakeInstances{}
	var applied []remediate.Applied
	key := func(n *corev1.Node, since time.Time) {
		applied = append(applied, remediate.Applied{Target: "node/" + n.Name,
			Key: "taint/node/" + n.Name + "/" + string(n.UID) + "/" + strconv.FormatInt(since.Unix(), 10)})
	}
	for _, tt := range []struct {
		name  string
		ready corev1.ConditionStatus
		st    InstanceState
		since time.Time // of the outage the key names
	}{
		{"powered-on-again", corev1.ConditionFalse, InstanceActive, long},
		{"still-off", corev1.ConditionFalse, InstanceShutoff, long},
		{"ready-again", corev1.ConditionTrue, InstanceActive, long},
		{"new-outage", corev1.ConditionFalse, InstanceActive, long.Add(-time.Hour)},
	} {
		key(node(t, c, tt.name, tt.ready, long, false), tt.since)
		cloud[tt.name] = tt.st
	}
	gone := node(t, c, "gone", corev1.ConditionFalse, long, false)
	key(gone, long)
	if err := c.CoreV1().Nodes().Delete(context.Background(), "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ds, err := NewDeadNode(api(t), cloud, 5*time.Minute, nil).Disrupted(context.Background(), applied)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].Node != "powered-on-again" {
		t.Fatalf("got %+v, want only powered-on-again disrupted", ds)
	}
}

// A node orphaned-pods rebooted keeps its cluster's budget until it is
// back Ready under a new boot ID, or confirmed down; Ready under its old
// boot ID proves no reboot.
func TestOrphanedPodsKeepARebootedNodeDisrupted(t *testing.T) {
	c := client(t)
	long := time.Now().Add(-time.Hour)
	rebootAt := time.Now().Add(-30 * time.Minute).UTC().Format(time.RFC3339)
	cloud := fakeInstances{}
	var applied []remediate.Applied
	for _, tt := range []struct {
		name, bootID string
		ready        corev1.ConditionStatus
		st           InstanceState
	}{
		{"not-back", "boot-a", corev1.ConditionFalse, InstanceActive},
		{"same-boot", "boot-a", corev1.ConditionTrue, InstanceActive},
		{"new-boot", "boot-b", corev1.ConditionTrue, InstanceActive},
		{"powered-off", "boot-a", corev1.ConditionFalse, InstanceShutoff},
	} {
		n := node(t, c, tt.name, tt.ready, long, true)
		n.Annotations = map[string]string{AnnotationRebooted: rebootAt, AnnotationBootID: "boot-a", AnnotationCordoned: rebootAt}
		if _, err := c.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		boot(t, c, tt.name, tt.bootID, tt.ready, long)
		cloud[tt.name] = tt.st
		applied = append(applied, remediate.Applied{Target: "node/" + tt.name,
			Key: "cordon-reboot/node/" + tt.name + "/" + string(n.UID) + "/" + strconv.FormatInt(long.Unix(), 10)})
	}
	ds, err := NewOrphanedPods(api(t), cloud, 10*time.Minute, nil).WithReboot(&recordingRebooter{}, 10*time.Minute).
		Disrupted(context.Background(), applied)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range ds {
		got = append(got, d.Node)
	}
	if !slices.Equal(got, []string{"not-back", "same-boot"}) {
		t.Fatalf("got %q disrupted, want not-back and same-boot", got)
	}
}
