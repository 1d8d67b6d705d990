package kubetest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/test/daemon"
)

// ControllerManager is a running kube-controller-manager of the cluster's
// release, talking to the cluster's API server as its admin.
type ControllerManager struct {
	// LogPath is its log (stdout and stderr), inside the cluster's Dir.
	LogPath string

	mu      sync.Mutex
	proc    *daemon.Process
	healthz string
	caFile  string
}

// ControllerManagerPath returns the cached kube-controller-manager for
// version, or an error wrapping ErrNoBinary that says how to build it.
// DRWATCH_KUBE_CONTROLLER_MANAGER, when set, names the binary to use instead.
func ControllerManagerPath(version string) (string, error) {
	return cachedBinary("kube-controller-manager", "DRWATCH_KUBE_CONTROLLER_MANAGER", version)
}

// StartControllerManager starts kube-controller-manager, of the release the
// cluster runs, with only the named controllers (its --controllers names,
// e.g. "pod-garbage-collector-controller"), and waits until it answers
// /healthz. Everything else is a real cluster's default, except what a test
// cluster needs: no leader election (one instance) and the admin's
// credentials for every controller (no service-account token controller).
// It fails the test, naming how to build the binary, when it is missing; it
// stops in t.Cleanup.
//
// The controllers act on every object of their kinds in the cluster, so a
// test that starts them must not share the cluster with tests that expect
// objects to stay as they wrote them while it runs.
func (c *Cluster) StartControllerManager(t testing.TB, controllers ...string) *ControllerManager {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := c.NewControllerManager(ctx, controllers...)
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	t.Cleanup(m.Close)
	return m
}

// NewControllerManager is StartControllerManager for callers without a
// testing.TB; the caller must Close it. On error nothing is left running.
func (c *Cluster) NewControllerManager(ctx context.Context, controllers ...string) (_ *ControllerManager, err error) {
	if len(controllers) == 0 {
		return nil, errors.New("kube-controller-manager: no controllers named")
	}
	bin, err := ControllerManagerPath(c.version)
	if err != nil {
		return nil, err
	}
	ports, err := daemon.FreePorts(1)
	if err != nil {
		return nil, err
	}
	m := &ControllerManager{
		LogPath: filepath.Join(c.Dir, "controller-manager.log"),
		healthz: "https://127.0.0.1:" + strconv.Itoa(ports[0]) + "/healthz",
		caFile:  c.CAFile,
	}
	args := []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--authentication-kubeconfig=" + c.Kubeconfig,
		"--authorization-kubeconfig=" + c.Kubeconfig,
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(ports[0]),
		// The API server's certificate is valid for 127.0.0.1 and is its
		// own CA, so CAFile verifies this server too.
		"--tls-cert-file=" + c.CAFile, "--tls-private-key-file=" + filepath.Join(c.Dir, "serving.key"),
		"--controllers=" + strings.Join(controllers, ","),
		"--leader-elect=false",
		"--use-service-account-credentials=false",
		"--service-account-private-key-file=" + filepath.Join(c.Dir, "sa.key"),
		"--root-ca-file=" + c.CAFile,
		"--profiling=false",
	}
	m.proc, err = daemon.Start(bin, args, daemon.Options{LogPath: m.LogPath, Dir: c.Dir})
	if err != nil {
		return nil, fmt.Errorf("start kube-controller-manager: %w", err)
	}
	defer func() {
		if err != nil {
			m.Close()
		}
	}()
	if err := m.waitHealthy(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// waitHealthy polls /healthz until it answers ok, the process exits, or ctx
// ends.
func (m *ControllerManager) waitHealthy(ctx context.Context) error {
	return waitOK(ctx, "kube-controller-manager", m.healthz, m.caFile, m.LogPath, func() *daemon.Process {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.proc
	})
}

// Close stops the controller manager (TERM, then KILL after 5 s).
// Idempotent.
func (m *ControllerManager) Close() {
	m.mu.Lock()
	p := m.proc
	m.proc = nil
	m.mu.Unlock()
	if p != nil {
		p.Stop(5 * time.Second)
	}
}
