package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/api"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/faultproxy"
)

// Scenario 12: randomized chaos. Each schedule is drawn from a seed: node
// crashes (SIGKILL), graceful stops (SIGTERM), restarts, node partitions
// and cut links, primary outages
// (Caddy killed, or every probe path reset), one watcher cut from the
// primary, BIND outages, and manual commands through random nodes. After
// the faults heal it checks the invariants:
//   - no automatic flip without quorum evidence in the log (invariant 1);
//   - no acknowledged command lost: every write that returned exit 0 and
//     changed something is in every node's history at its index (5);
//   - DNS converges: BIND serves the desired site's record and fence;
//   - every node's history is identical, and SIGTERM always exits 0.
//
// Each schedule opens in one of three strata, chosen by its seed (seed mod
// 3), so that any three consecutive seeds cover all three: the primary
// fails and then, after a delay drawn from the seed that lands before or
// after the flip decision, the leader is SIGKILLed (0), the leader is
// partitioned from its peers (1), or BIND goes down (2). E2E_CHAOS_STEPS
// random steps follow.
//
// E2E_CHAOS_N schedules run (default 3, one per stratum; `make chaos` runs
// 200, three at a time), E2E_CHAOS_PARALLEL (default 1) at a time, from seed
// E2E_CHAOS_SEED (default: the clock). A failed schedule
// prints its steps and a one-line command that replays it.
func TestChaos12Randomized(t *testing.T) {
	n := envInt(t, "E2E_CHAOS_N", 3)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("E2E_CHAOS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("E2E_CHAOS_SEED=%q: %v", s, err)
		}
		seed = v
	}
	steps := envInt(t, "E2E_CHAOS_STEPS", 10)
	// Schedules run side by side, each in its own world: most of a schedule
	// is its faults' dwell, which costs no CPU.
	slots := make(chan struct{}, envInt(t, "E2E_CHAOS_PARALLEL", 1))
	var wg sync.WaitGroup
	for i := range n {
		s := seed + uint64(i)
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			t.Run(fmt.Sprintf("seed=%d", s), func(t *testing.T) {
				c := newChaos(t, s, steps)
				t.Cleanup(func() {
					if t.Failed() {
						t.Log(c.report())
					}
				})
				c.run()
			})
		}()
	}
	wg.Wait()
}

func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return v
}

// acked is a write that returned success.
type acked struct {
	index uint64
	kind  string
	gen   uint64
	what  string
}

// stratum is how a schedule opens: which fault strikes while the primary's
// outage is on its way to a flip.
type stratum int

const (
	leaderKilled stratum = iota
	leaderPartitioned
	bindDown
	strata // how many
)

func (s stratum) String() string {
	return [...]string{"leader SIGKILLed during the primary outage", "leader partitioned during the primary outage", "BIND down during the primary outage"}[s]
}

// stratumOf is the stratum of the schedule drawn from seed: consecutive
// seeds take consecutive strata, so any three consecutive seeds cover them all.
func stratumOf(seed uint64) stratum { return stratum(seed % uint64(strata)) }

type chaos struct {
	t       *testing.T
	w       *World
	seed    uint64
	steps   int
	stratum stratum
	rng     *rand.Rand
	started time.Time
	acked   []acked
	log     []string
}

func newChaos(t *testing.T, seed uint64, steps int) *chaos {
	return &chaos{t: t, seed: seed, steps: steps, stratum: stratumOf(seed),
		rng: rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d)), started: time.Now()}
}

func (c *chaos) note(format string, args ...any) {
	line := fmt.Sprintf("%6.1fs "+format, append([]any{time.Since(c.started).Seconds()}, args...)...)
	c.log = append(c.log, line)
	c.t.Log(line)
}

// report is the schedule as it ran, one line a step, and the command that
// replays it: what a failure prints last, after the nodes' logs.
func (c *chaos) report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "schedule seed=%d (%s, %d steps):\n", c.seed, c.stratum, c.steps)
	for _, l := range c.log {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	fmt.Fprintf(&b, "replay with: E2E_CHAOS_SEED=%d E2E_CHAOS_N=1 E2E_CHAOS_STEPS=%d go test -race -count=1 -run TestChaos12Randomized -v ./test/e2e/", c.seed, c.steps)
	return b.String()
}

func (c *chaos) run() {
	t, steps := c.t, c.steps
	c.note("start the world (%s)", c.stratum)
	w := Start(t, Options{})
	c.w = w
	primary := w.Sites[failover.Primary]
	c.open()
	for i := range steps {
		switch k := c.rng.IntN(11); k {
		case 0: // crash a node, keeping at least two running most of the time
			if r := w.Running(); len(r) > 2 || (len(r) == 2 && c.rng.IntN(4) == 0) {
				n := r[c.rng.IntN(len(r))]
				c.note("step %d: SIGKILL node %s", i, n.ID)
				n.Kill()
			} else {
				c.restartOne(i)
			}
		case 1: // graceful stop
			if r := w.Running(); len(r) > 2 {
				n := r[c.rng.IntN(len(r))]
				code, err := n.Term(30 * time.Second)
				c.note("step %d: SIGTERM node %s -> exit %d", i, n.ID, code)
				if err != nil || code != 0 {
					t.Errorf("SIGTERM on %s: exit %d (%v), want 0", n.ID, code, err)
				}
			} else {
				c.restartOne(i)
			}
		case 2:
			c.restartOne(i)
		case 3: // primary outage
			if primary.Caddy.Running() && c.rng.IntN(2) == 0 {
				c.note("step %d: kill primary caddy", i)
				_ = primary.Caddy.Stop()
			} else {
				c.note("step %d: reset every path to the primary", i)
				primary.SetMode(faultproxy.Reset)
			}
		case 4: // primary back
			c.note("step %d: primary back", i)
			if err := primary.Caddy.Start(); err != nil {
				t.Fatal(err)
			}
			primary.SetMode(faultproxy.Pass)
		case 5: // one watcher cut from the primary
			id := IDs[c.rng.IntN(len(IDs))]
			c.note("step %d: blackhole watcher %s's path to the primary", i, id)
			primary.Proxies[id].SetMode(faultproxy.Blackhole)
		case 6: // DNS outage or return
			if c.rng.IntN(2) == 0 {
				c.note("step %d: BIND down", i)
				w.StopBIND()
			} else {
				c.note("step %d: BIND back", i)
				w.RestartBIND()
			}
		case 7, 8: // an operator command through a random running node
			c.command(i)
		case 9: // a node partitioned away, or one link cut
			a := w.Nodes[c.rng.IntN(len(w.Nodes))]
			if c.rng.IntN(2) == 0 {
				c.note("step %d: partition node %s from the others", i, a.ID)
				w.Partition(a)
			} else {
				b := w.Nodes[(indexOf(w.Nodes, a)+1+c.rng.IntN(len(w.Nodes)-1))%len(w.Nodes)]
				c.note("step %d: cut the link %s-%s", i, a.ID, b.ID)
				w.Cut(a, b)
			}
		case 10:
			c.note("step %d: heal node partitions", i)
			w.Heal()
		}
		// The dwell is part of the schedule (how long a fault lasts), not a wait
		// for anything to happen.
		time.Sleep(time.Duration(500+c.rng.IntN(3000)) * time.Millisecond)
	}

	c.note("heal: every node, link, site path and BIND back")
	w.Heal()
	w.RestartBIND()
	if err := primary.Caddy.Start(); err != nil {
		t.Fatal(err)
	}
	for _, s := range w.Sites {
		s.SetMode(faultproxy.Pass)
	}
	for _, n := range w.Nodes {
		if err := n.Start(); err != nil {
			t.Fatal(err)
		}
	}
	c.checkConverged()
}

// open makes the primary fail and then, after a delay drawn from the seed
// (up to (fall+1) rounds and a second, so before or after the flip
// decision), strikes with the schedule's stratum fault. The fault stays
// until a random step or the final heal lifts it.
func (c *chaos) open() {
	w, primary := c.w, c.w.Sites[failover.Primary]
	if c.rng.IntN(2) == 0 {
		c.note("open: kill primary caddy")
		_ = primary.Caddy.Stop()
	} else {
		c.note("open: reset every path to the primary")
		primary.SetMode(faultproxy.Reset)
	}
	window := time.Duration(w.Opts.Fall+1)*w.Opts.Interval + time.Second
	time.Sleep(time.Duration(c.rng.Int64N(int64(window)))) // the kill phase: part of the schedule, not a wait
	switch c.stratum {
	case leaderKilled, leaderPartitioned:
		l := w.Leader()
		if l == nil {
			l = w.Running()[0]
			c.note("open: no node names a leader; striking node %s", l.ID)
		}
		if c.stratum == leaderKilled {
			c.note("open: SIGKILL leader %s", l.ID)
			l.Kill()
		} else {
			c.note("open: partition leader %s from the others", l.ID)
			w.Partition(l)
		}
	case bindDown:
		c.note("open: BIND down")
		w.StopBIND()
	}
}

func (c *chaos) restartOne(i int) {
	for _, n := range c.w.Nodes {
		if !n.Running() {
			c.note("step %d: start node %s", i, n.ID)
			if err := n.Start(); err != nil {
				c.t.Fatal(err)
			}
			return
		}
	}
	c.note("step %d: (all nodes already running)", i)
}

func (c *chaos) command(i int) {
	r := c.w.Running()
	if len(r) == 0 {
		return
	}
	n := r[c.rng.IntN(len(r))]
	var args []string
	switch c.rng.IntN(3) {
	case 0:
		args = []string{"failover", "--to", "backup"}
	case 1:
		args = []string{"failback"}
	case 2:
		args = []string{"ack"}
	}
	reason := fmt.Sprintf("chaos step %d", i)
	args = append(args, "--reason", reason, "--yes", "-o", "json", "--timeout", "5s")
	out, stderr, code := c.w.CLI(n, args...)
	c.note("step %d: %s via %s -> exit %d %s", i, args[0], n.ID, code, strings.TrimSpace(firstLine(stderr)))
	if code != 0 {
		return // refused or failed: nothing was acknowledged
	}
	var resp api.WriteResponse
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		c.t.Errorf("%s returned exit 0 with unreadable output %q: %v", args[0], out, err)
		return
	}
	if resp.Result.Noop == "" && resp.Result.Kind != "" {
		c.acked = append(c.acked, acked{index: resp.Index, kind: resp.Result.Kind, gen: resp.Result.Gen, what: args[0] + " (" + reason + ")"})
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func (c *chaos) checkConverged() {
	t, w := c.t, c.w
	var st api.Status
	if !Within(120*time.Second, func() bool {
		var ok bool
		st, ok = w.LeaderView()
		if !ok || (st.State.Desired.Gen != 0 && !st.State.Desired.Done) {
			return false
		}
		want := PrimaryIP
		if st.State.Desired.Active == failover.Backup {
			want = BackupIP
		}
		return w.Answer() == want
	}) {
		t.Fatalf("DNS did not converge after the faults healed: desired %+v, BIND answers %s", st.State.Desired, w.Answer())
	}
	c.note("converged: BIND serves the desired site")
	if g := st.State.Desired.Gen; g != 0 {
		checkFence(t, w, g)
	}
	h := w.SameHistory(60 * time.Second)
	c.note("every running node's history is identical")
	if err := CheckQuorumEvidence(h, w.Opts.Quorum); err != nil {
		t.Errorf("invariant 1: %v", err)
	}
	byIndex := map[uint64]failover.Entry{}
	for _, e := range h {
		if e.Kind != failover.KindAction {
			byIndex[e.Index] = e
		}
	}
	for _, a := range c.acked {
		e, ok := byIndex[a.index]
		if !ok || e.Kind != a.kind || e.Gen != a.gen {
			t.Errorf("acknowledged %s at index %d (kind %s, gen %d) is missing from the history:\n%s", a.what, a.index, a.kind, a.gen, Summary(h))
		}
	}
	t.Logf("converged: desired gen %d active %s; %d decisions, %d acknowledged commands, %d history entries",
		st.State.Desired.Gen, st.State.Desired.Active, len(Decisions(h)), len(c.acked), len(h))
}

func indexOf(nodes []*Node, n *Node) int {
	for i, m := range nodes {
		if m == n {
			return i
		}
	}
	return -1
}
