package openstack

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate"
	"github.com/drwatch/drwatch/test/kubetest"
	"github.com/drwatch/drwatch/test/openstacktest"
)

// One kube-apiserver (kubetest.Shared) and one real OpenStack stack with
// Neutron and Nova (openstacktest.SharedWith, stackOptions) for the
// package, each started on first use and stopped after every test ran.
func TestMain(m *testing.M) {
	code := m.Run()
	stopDeadHost()
	openstacktest.CloseShared()
	kubetest.CloseShared()
	os.Exit(code)
}

// stackOptions are the options of the package's one stack: every test
// passes them, as the first call starts it.
var stackOptions = openstacktest.Options{Neutron: true, Nova: true}

// The three fake hypervisors of the shared stack.
var (
	hostOK     = openstacktest.NovaHosts[0] // always up
	hostVictim = openstacktest.NovaHosts[1] // disabled or forced down by a test, then restored
	hostDead   = openstacktest.NovaHosts[2] // its nova-compute stopped for good (deadHost)
)

// novaClients authenticates with the shared stack's Keystone through the
// clouds.yaml entry cloud: "member-appcred" is the cluster's project
// through an application credential, as a node would; "demo-admin" is an
// admin in that project and also sees hosts and compute services; "admin"
// is an admin of another project, whose server lists do not show the
// cluster's servers (Nova scopes a list to the token's project).
func novaClients(t *testing.T, cloud string) (*openstacktest.Stack, *Clients) {
	t.Helper()
	s := openstacktest.SharedWith(t, stackOptions)
	startDeadHost(s)
	c, err := NewClients(context.Background(), remediate.OpenStackAuth{Cloud: cloud, CloudsFile: s.CloudsFile})
	if err != nil {
		t.Fatalf("clients as %s: %v", cloud, err)
	}
	return s, c
}

// server describes one test server: created on host (hostOK when empty)
// in the member project, then brought to a state the real way.
type server struct {
	name string
	host string
	meta map[string]string
	// then, when set, runs once the server is ACTIVE (os-stop, pause, ...).
	then func(ctx context.Context, s *openstacktest.Stack, id string) error
	// noValidHost asks for a flavor no hypervisor fits: the scheduler
	// puts the server in ERROR, in cell0, with power state NOSTATE.
	noValidHost bool
	// ports are Neutron ports the server boots with (none: networks
	// "none").
	ports []string
}

// inCluster is the metadata of the cluster's instances.
var inCluster = map[string]string{"kluster": "k"}

// mkServers creates the servers side by side, waits for each to settle,
// and returns their IDs by name.
func mkServers(t *testing.T, s *openstacktest.Stack, specs ...server) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ids, err := bootServers(ctx, s, specs...)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// bootServers is mkServers without a test: it returns the first error.
func bootServers(ctx context.Context, s *openstacktest.Stack, specs ...server) (map[string]string, error) {
	ids := make(map[string]string, len(specs))
	var mu sync.Mutex
	errs := make(chan error, len(specs))
	var wg sync.WaitGroup
	for _, sp := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- func() error {
				o := openstacktest.ServerOpts{Name: sp.name, Metadata: sp.meta, Host: sp.host, Ports: sp.ports}
				want := "ACTIVE"
				if sp.noValidHost {
					o.Flavor, o.Host, want = openstacktest.FlavorHuge, "", "ERROR"
				} else if o.Host == "" {
					o.Host = hostOK
				}
				id, err := s.CreateServer(ctx, o)
				if err != nil {
					return err
				}
				mu.Lock()
				ids[sp.name] = id
				mu.Unlock()
				if _, err := s.WaitServer(ctx, id, want); err != nil {
					return err
				}
				if sp.then != nil {
					if err := sp.then(ctx, s, id); err != nil {
						return fmt.Errorf("%s: %w", sp.name, err)
					}
				}
				return nil
			}()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// act returns a then step: a server action, waiting for status want.
func act(action string, body any, want string) func(context.Context, *openstacktest.Stack, string) error {
	return func(ctx context.Context, s *openstacktest.Stack, id string) error {
		if err := s.ServerAction(ctx, id, action, body); err != nil {
			return err
		}
		_, err := s.WaitServer(ctx, id, want)
		return err
	}
}

// then chains then steps.
func then(steps ...func(context.Context, *openstacktest.Stack, string) error) func(context.Context, *openstacktest.Stack, string) error {
	return func(ctx context.Context, s *openstacktest.Stack, id string) error {
		for _, f := range steps {
			if err := f(ctx, s, id); err != nil {
				return err
			}
		}
		return nil
	}
}

var (
	// stop powers the guest off through Nova: SHUTOFF, power state
	// SHUTDOWN.
	stop = act("os-stop", nil, "SHUTOFF")
	// resetError is what a failed resize or migration leaves: status ERROR
	// with the guest's power state untouched (os-resetState, admin).
	resetError = act("os-resetState", map[string]any{"state": "error"}, "ERROR")
)

// dbWrite returns a then step that writes the server's power state (and
// vm_state, task_state when set) into the cell database: only for states
// the fake virt driver never produces.
func dbWrite(power int, vmState, taskState string) func(context.Context, *openstacktest.Stack, string) error {
	return func(ctx context.Context, s *openstacktest.Stack, id string) error {
		return s.SetPowerState(ctx, id, power, vmState, taskState)
	}
}

// launchedAt returns a then step that dates the server's launch to at
// (Nova stamps the real time; the tests' clocks need older or newer ones).
func launchedAt(at time.Time) func(context.Context, *openstacktest.Stack, string) error {
	return func(ctx context.Context, s *openstacktest.Stack, id string) error {
		return s.ExecNova(ctx, "nova", fmt.Sprintf("UPDATE instances SET launched_at='%s' WHERE uuid='%s'",
			at.UTC().Format("2006-01-02 15:04:05"), id))
	}
}

// reboots counts Nova's reboot actions on a server (os-instance-actions).
func reboots(t *testing.T, s *openstacktest.Stack, id string) int {
	t.Helper()
	n := 0
	for _, a := range instanceActions(t, s, id) {
		if a == "reboot" {
			n++
		}
	}
	return n
}

// instanceActions lists the actions Nova recorded on a server, oldest
// first.
func instanceActions(t *testing.T, s *openstacktest.Stack, id string) []string {
	t.Helper()
	var out struct {
		Actions []struct {
			Action string `json:"action"`
		} `json:"instanceActions"`
	}
	if err := s.Nova(context.Background(), s.Admin, http.MethodGet, "/servers/"+id+"/os-instance-actions", nil, &out); err != nil {
		t.Fatalf("instance actions of %s: %v", id, err)
	}
	var acts []string
	for i := len(out.Actions) - 1; i >= 0; i-- {
		acts = append(acts, out.Actions[i].Action)
	}
	return acts
}

// waitActive waits until a server is ACTIVE with no task (after a reboot).
func waitActive(t *testing.T, s *openstacktest.Stack, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := s.WaitServer(ctx, id, "ACTIVE"); err != nil {
		t.Fatal(err)
	}
}

// deadHost returns the IDs by name of the servers on hostDead, once its
// nova-compute is stopped for good and os-services shows it down. Every
// test that needs a server there names it in killHost.
func deadHost(t *testing.T) map[string]string {
	t.Helper()
	startDeadHost(openstacktest.SharedWith(t, stackOptions))
	<-dead.done
	if dead.err != nil {
		t.Fatalf("dead hypervisor: %v", dead.err)
	}
	return maps.Clone(dead.ids)
}

// dead is hostDead's end, which runs beside the tests from the first Nova
// test on (startDeadHost): most of it is waiting until Nova sees the
// stopped service down, service_down_time after its last heartbeat.
var dead struct {
	once   sync.Once
	cancel context.CancelFunc
	done   chan struct{} // closed when ids and err are set
	ids    map[string]string
	err    error
}

// startDeadHost starts killHost in the background, once for the package.
// No test but those that call deadHost uses hostDead.
func startDeadHost(s *openstacktest.Stack) {
	dead.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		dead.cancel, dead.done = cancel, make(chan struct{})
		go func() {
			defer close(dead.done)
			dead.ids, dead.err = killHost(ctx, s)
		}()
	})
}

// stopDeadHost cancels killHost, if it was started, and waits for it: for
// TestMain, before the stack stops.
func stopDeadHost() {
	dead.once.Do(func() {}) // orders this after startDeadHost's set-up
	if dead.done != nil {
		dead.cancel()
		<-dead.done
	}
}

// killHost creates the servers that must live on hostDead, stops its
// nova-compute and waits until os-services shows it down.
func killHost(ctx context.Context, s *openstacktest.Stack) (map[string]string, error) {
	ids, err := bootServers(ctx, s,
		server{name: "ch-hv", host: hostDead},
		server{name: "dn-hv", host: hostDead},
		// Powered off through Nova before its host died: the power state
		// Nova last recorded says it is off.
		server{name: "dn-hv-off", host: hostDead, then: stop})
	if err != nil {
		return nil, err
	}
	s.StopCompute(hostDead)
	if err := s.WaitService(ctx, hostDead, "down"); err != nil {
		return nil, err
	}
	return ids, nil
}
