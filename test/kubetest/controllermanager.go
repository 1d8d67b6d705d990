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
	component
}

// ControllerManagerPath returns the cached kube-controller-manager for
// version, or an error wrapping ErrNoBinary that says how to build it.
// DRWATCH_KUBE_CONTROLLER_MANAGER, when set, names the binary to use instead.
func ControllerManagerPath(version string) (string, error) {
	return cachedBinary("kube-controller-manager", "DRWATCH_KUBE_CONTROLLER_MANAGER", version)
}

// ControllerManagerOptions selects and tunes the controllers of
// StartControllerManagerWith.
type ControllerManagerOptions struct {
	// Controllers are the --controllers names to run (e.g.
	// "node-lifecycle-controller"); at least one.
	Controllers []string
	// NodeMonitorGracePeriod is how long a node may go without renewing
	// its lease or status before the node lifecycle controller marks it
	// Unknown and taints it unreachable; zero means the release's default
	// (50 s). NodeMonitorPeriod, how often it checks, is then a fifth of
	// it, at least 1 s.
	NodeMonitorGracePeriod time.Duration
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
	return c.StartControllerManagerWith(t, ControllerManagerOptions{Controllers: controllers})
}

// StartControllerManagerWith is StartControllerManager with options.
func (c *Cluster) StartControllerManagerWith(t testing.TB, opts ControllerManagerOptions) *ControllerManager {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := c.NewControllerManagerWith(ctx, opts)
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	t.Cleanup(m.Close)
	return m
}

// NewControllerManager is StartControllerManager for callers without a
// testing.TB; the caller must Close it. On error nothing is left running.
func (c *Cluster) NewControllerManager(ctx context.Context, controllers ...string) (*ControllerManager, error) {
	return c.NewControllerManagerWith(ctx, ControllerManagerOptions{Controllers: controllers})
}

// NewControllerManagerWith is NewControllerManager with options.
func (c *Cluster) NewControllerManagerWith(ctx context.Context, opts ControllerManagerOptions) (*ControllerManager, error) {
	if len(opts.Controllers) == 0 {
		return nil, errors.New("kube-controller-manager: no controllers named")
	}
	bin, err := ControllerManagerPath(c.version)
	if err != nil {
		return nil, err
	}
	args := []string{
		"--controllers=" + strings.Join(opts.Controllers, ","),
		"--use-service-account-credentials=false",
		"--service-account-private-key-file=" + filepath.Join(c.Dir, "sa.key"),
		"--root-ca-file=" + c.CAFile,
	}
	if g := opts.NodeMonitorGracePeriod; g > 0 {
		args = append(args, "--node-monitor-grace-period="+g.String(),
			"--node-monitor-period="+max(g/5, time.Second).String())
	}
	m := &ControllerManager{}
	if err := c.startComponent(ctx, &m.component, "kube-controller-manager", bin, args); err != nil {
		return nil, err
	}
	return m, nil
}

// component is a process beside the cluster's API server: a control-plane
// component (controller manager, scheduler), which talks to the API server
// as its admin and serves /healthz over TLS with the API server's
// certificate, or kwok.
type component struct {
	// LogPath is its log (stdout and stderr), inside the cluster's Dir.
	LogPath string

	mu   sync.Mutex
	proc *daemon.Process
}

// startComponent starts name from bin with the flags every such component
// shares followed by args, and waits until it answers /healthz. On error
// nothing is left running.
func (c *Cluster) startComponent(ctx context.Context, p *component, name, bin string, args []string) (err error) {
	ports, err := daemon.FreePorts(1)
	if err != nil {
		return err
	}
	p.LogPath = filepath.Join(c.Dir, strings.TrimPrefix(name, "kube-")+".log")
	common := []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--authentication-kubeconfig=" + c.Kubeconfig,
		"--authorization-kubeconfig=" + c.Kubeconfig,
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(ports[0]),
		// The API server's certificate is valid for 127.0.0.1 and is its
		// own CA, so CAFile verifies this server too.
		"--tls-cert-file=" + c.CAFile, "--tls-private-key-file=" + filepath.Join(c.Dir, "serving.key"),
		"--leader-elect=false",
		"--profiling=false",
	}
	if err := p.run(name, bin, append(common, args...), daemon.Options{LogPath: p.LogPath, Dir: c.Dir}); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	healthz := "https://127.0.0.1:" + strconv.Itoa(ports[0]) + "/healthz"
	return waitOK(ctx, name, healthz, c.CAFile, p.LogPath, p.process)
}

// run starts the process.
func (p *component) run(name, bin string, args []string, o daemon.Options) error {
	proc, err := daemon.Start(bin, args, o)
	if err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	p.mu.Lock()
	p.proc = proc
	p.mu.Unlock()
	return nil
}

func (p *component) process() *daemon.Process {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.proc
}

// Close stops the process (TERM, then KILL after 5 s). Idempotent.
func (p *component) Close() {
	p.mu.Lock()
	proc := p.proc
	p.proc = nil
	p.mu.Unlock()
	if proc != nil {
		proc.Stop(5 * time.Second)
	}
}
