package kubetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/drwatch/drwatch/test/daemon"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// KwokVersion is the release of KWOK (sigs.k8s.io/kwok) whose kwok command
// simulates the kubelets. Keep it in step with KWOK_VERSION in
// test/deps/build-kwok.sh and test/deps/parts/kwok.sh.
const KwokVersion = "v0.8.0"

// KwokLabel is the node label that puts a node in KWOK's care: KWOK plays
// the kubelet of every node labelled KwokLabel=true, and of no other.
// Removing the label is a kubelet that stops reporting (StopKubelet).
const KwokLabel = "kwok.drwatch.test/kubelet"

// Kwok is a running kwok: the kubelets of the nodes labelled KwokLabel.
// For each it registers status (Ready, capacity, an InternalIP) and renews
// the node's lease; for each pod bound to one it reports the pod Running
// and Ready, and finishes a pod's deletion as a kubelet would once its
// containers stopped. It runs no containers.
type Kwok struct {
	component
	cluster *Cluster
}

// KwokOptions tunes StartKwok. The zero value is ready to use.
type KwokOptions struct {
	// LeaseDuration is the node lease's duration; KWOK renews it every
	// quarter of it, as a kubelet does. Zero means 40 s, the kubelet's
	// default. Keep a controller manager's NodeMonitorGracePeriod at twice
	// it or more, so that a loaded machine does not miss a renewal.
	LeaseDuration time.Duration
}

// KwokPath returns the cached kwok command and its stages file, or an
// error wrapping ErrNoBinary that says how to build them.
// DRWATCH_KWOK, when set, names the binary to use instead (the stages
// still come from the cache).
func KwokPath() (bin, stages string, err error) {
	const build = "test/deps/build-kwok.sh (builds it once from the Go module proxy: 2-7 min on 2 cores)"
	if stages, err = inCache("kwok", KwokVersion, build, "stages.yaml"); err != nil {
		return "", "", err
	}
	if bin = os.Getenv("DRWATCH_KWOK"); bin != "" {
		return bin, stages, nil
	}
	bin, err = inCache("kwok", KwokVersion, build)
	return bin, stages, err
}

// StartKwok starts kwok for the nodes labelled KwokLabel=true and waits
// until it answers /healthz. It fails the test, naming how to build it,
// when it is missing; it stops in t.Cleanup.
func (c *Cluster) StartKwok(t testing.TB, opts KwokOptions) *Kwok {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	k, err := c.NewKwok(ctx, opts)
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	t.Cleanup(k.Close)
	return k
}

// NewKwok is StartKwok for callers without a testing.TB; the caller must
// Close it. On error nothing is left running.
func (c *Cluster) NewKwok(ctx context.Context, opts KwokOptions) (*Kwok, error) {
	bin, stages, err := KwokPath()
	if err != nil {
		return nil, err
	}
	lease := opts.LeaseDuration
	if lease <= 0 {
		lease = 40 * time.Second
	}
	ports, err := daemon.FreePorts(1)
	if err != nil {
		return nil, err
	}
	// kwok reads ~/.kwok/kwok.yaml when it exists: give it a home of its
	// own, so that only the stages below configure it.
	home := filepath.Join(c.Dir, "kwok-home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, fmt.Errorf("kwok home: %w", err)
	}
	k := &Kwok{component: component{LogPath: filepath.Join(c.Dir, "kwok.log")}, cluster: c}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	args := []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--config=" + stages,
		"--manage-nodes-with-label-selector=" + KwokLabel + "=true",
		"--node-lease-duration-seconds=" + strconv.Itoa(int(max(lease/time.Second, 1))),
		"--server-address=" + addr,
		"--node-ip=127.0.0.1",
	}
	if err := k.run("kwok", bin, args, daemon.Options{LogPath: k.LogPath, Dir: home, Env: []string{"HOME=" + home}}); err != nil {
		return nil, err
	}
	if err := waitOK(ctx, "kwok", "http://"+addr+"/healthz", "", k.LogPath, k.process); err != nil {
		k.Close()
		return nil, err
	}
	return k, nil
}

// AddNode creates a node in KWOK's care with the given extra labels and
// annotations (e.g. the attach-detach controller's
// volumes.kubernetes.io/controller-managed-attach-detach, which a kubelet
// sets). KWOK then reports it Ready and renews its lease.
func (k *Kwok) AddNode(t testing.TB, name string, labels, annotations map[string]string) *corev1.Node {
	t.Helper()
	l := map[string]string{KwokLabel: "true", corev1.LabelHostname: name}
	for key, v := range labels {
		l[key] = v
	}
	n, err := k.cluster.Clientset(t).CoreV1().Nodes().Create(context.Background(), &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l, Annotations: annotations},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("kwok: create node %s: %v", name, err)
	}
	return n
}

// StopKubelet takes node out of KWOK's care, as if its kubelet lost the
// API server (a partition) or its machine stopped: its lease and status
// are no longer renewed, and its pods' status no longer reported, so
// their deletions are never finished. Only the node's KwokLabel changes.
func (k *Kwok) StopKubelet(t testing.TB, node string) { k.setKubelet(t, node, "false") }

// StartKubelet puts node back in KWOK's care: the kubelet reports again.
func (k *Kwok) StartKubelet(t testing.TB, node string) { k.setKubelet(t, node, "true") }

func (k *Kwok) setKubelet(t testing.TB, node, v string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, KwokLabel, v)
	if _, err := k.cluster.Clientset(t).CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("kwok: label node %s %s=%s: %v", node, KwokLabel, v, err)
	}
}
