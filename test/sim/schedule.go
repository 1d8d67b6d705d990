package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/drwatch/drwatch/failover"
)

// Event is one scripted step of a schedule, at a virtual time from the
// start of the run.
type Event struct {
	Seq  int
	At   time.Duration
	Kind string // outage, crash, restart, partition, heal, op, dnsfault, dnsslow, depose, revive, broken, churn, and those of faults.go
	// Node is the node crashed, restarted or partitioned; Peer, when set,
	// makes a partition cut only the Node-Peer link (else Node is isolated).
	// A one-way cut stops Node sending to Peer only.
	Node, Peer string
	// Site, Nodes and For describe an outage: the nodes that see Site fail, and for how long.
	Site  failover.Site
	Nodes []string
	For   time.Duration
	// Probe, in a schedule with failover groups, is the one probe of
	// Site an outage fails: a group's own or the region probe they all
	// name. "" fails every probe of Site (a schedule without groups).
	Probe string
	// Op is an operator command: pause, resume, failover, failback or ack.
	Op string
	// Group is the failover group an operator's command (op, depose)
	// names in a schedule with groups; AllGroups makes a failover move
	// every group.
	Group     string
	AllGroups bool
	// Fault, Count and Writes describe a dnsfault: the next Count calls
	// (only writes, with Writes) to the DNS authority time out, are
	// REFUSED, SERVFAIL, or apply and lose their reply (lost-reply). A
	// churn's Count is how many targets its dry-run repair plans from At.
	Fault  string
	Count  int
	Writes bool
	// Latency is a dnsslow's: Node's DNS requests travel that long, for
	// For; Node "leader" is the node leading when the stretch starts.
	Latency time.Duration
	// Target is the scripted remediator's target a broken event breaks;
	// Fail makes every repair of this breakage fail.
	Target string
	Fail   bool
	// By is a delay's bound, or a clock's skew (negative: behind).
	By time.Duration

	// scenario numbers the scenario (genWorld) that drew the event, from
	// 1; 0 for the others. drawGroups reads it.
	scenario int
}

func (e Event) String() string {
	at := fmt.Sprintf("%6.1fs", e.At.Seconds())
	switch e.Kind {
	case "outage":
		site := string(e.Site)
		if e.Probe != "" {
			site += "/" + e.Probe
		}
		return fmt.Sprintf("%s outage   %s seen down by %s for %s", at, site, strings.Join(e.Nodes, ","), e.For)
	case "partition", "heal":
		if e.Peer != "" {
			return fmt.Sprintf("%s %-9s %s<->%s", at, e.Kind, e.Node, e.Peer)
		}
		return fmt.Sprintf("%s %-9s %s isolated", at, e.Kind, e.Node)
	case "op":
		return fmt.Sprintf("%s op        %s%s (op%d)", at, e.Op, e.groupText(), e.Seq)
	case "dnsfault":
		what := "calls"
		if e.Writes {
			what = "writes"
		}
		return fmt.Sprintf("%s dnsfault  next %d %s %s", at, e.Count, what, e.Fault)
	case "dnsslow":
		return fmt.Sprintf("%s dnsslow   %s's DNS requests take %s for %s", at, e.Node, e.Latency, e.For)
	case "depose":
		return fmt.Sprintf("%s depose    a node with a DNS swap in flight, then op %s%s after %s (op%d)", at, e.Op, e.groupText(), e.For, e.Seq)
	case "revive":
		return fmt.Sprintf("%s revive    every crashed node", at)
	case "broken":
		fail := ""
		if e.Fail {
			fail = " (its repairs fail)"
		}
		return fmt.Sprintf("%s broken    %s needs a repair%s", at, e.Target, fail)
	case "churn":
		return fmt.Sprintf("%s churn     %d targets of a dry-run repair change state every pass", at, e.Count)
	case "cut":
		return fmt.Sprintf("%s cut       %s->%s one way (%s->%s still up)", at, e.Node, e.Peer, e.Peer, e.Node)
	case "mend":
		return fmt.Sprintf("%s mend      %s->%s", at, e.Node, e.Peer)
	case "delay":
		return fmt.Sprintf("%s delay     raft messages up to %s, reordered", at, e.By)
	case "undelay":
		return fmt.Sprintf("%s undelay   raft messages", at)
	case "skew":
		return fmt.Sprintf("%s skew      %s's clock by %+.1fs", at, e.Node, e.By.Seconds())
	case "transfer":
		return fmt.Sprintf("%s transfer  the leader hands over and restarts", at)
	case "remove", "readd":
		return fmt.Sprintf("%s %-9s %s (op%d, via a follower)", at, e.Kind, e.Node, e.Seq)
	}
	return fmt.Sprintf("%s %-9s %s", at, e.Kind, e.Node)
}

// groupText names the group an operator's command is for, "" in a
// schedule without groups.
func (e Event) groupText() string {
	switch {
	case e.AllGroups:
		return " --all-groups"
	case e.Group != "":
		return " --group " + e.Group
	}
	return ""
}

// Schedule is what happens in one run: the probe truth each watcher sees,
// the faults and the operators' commands, all a function of the seed.
type Schedule struct {
	Seed   uint64
	Length time.Duration
	Events []Event
	// Groups are the failover groups of the run's policy (groups.go);
	// none: the policy without groups (simPolicy).
	Groups []string

	start time.Time // the bubble's clock at the run's start
}

// Length of every schedule in virtual time, before the settling phase.
const scheduleLength = 60 * time.Second

// Generate draws the schedule of seed.
func Generate(seed uint64) Schedule {
	rng := rand.New(rand.NewPCG(seed, 0x51a1))
	s := Schedule{Seed: seed, Length: scheduleLength}
	nodes := []string{"a", "b", "c"}
	between := func(lo, hi time.Duration) time.Duration {
		return lo + time.Duration(rng.Int64N(int64(hi-lo)))/(100*time.Millisecond)*(100*time.Millisecond)
	}
	add := func(e Event) { s.Events = append(s.Events, e) }
	for range 1 + rng.IntN(3) {
		site := failover.Primary
		if rng.IntN(5) == 0 {
			site = failover.Backup
		}
		seen := slices.Clone(nodes)
		rng.Shuffle(len(seen), func(i, j int) { seen[i], seen[j] = seen[j], seen[i] })
		seen = seen[:1+rng.IntN(3)]
		slices.Sort(seen)
		add(Event{At: between(3*time.Second, 45*time.Second), Kind: "outage", Site: site, Nodes: seen, For: between(2*time.Second, 20*time.Second)})
	}
	for range rng.IntN(3) {
		n := nodes[rng.IntN(3)]
		at := between(5*time.Second, 50*time.Second)
		add(Event{At: at, Kind: "crash", Node: n})
		add(Event{At: at + between(time.Second, 10*time.Second), Kind: "restart", Node: n})
	}
	for range rng.IntN(3) {
		n := nodes[rng.IntN(3)]
		peer := ""
		if rng.IntN(2) == 0 {
			peer = nodes[(slices.Index(nodes, n)+1+rng.IntN(2))%3]
		}
		at := between(5*time.Second, 50*time.Second)
		add(Event{At: at, Kind: "partition", Node: n, Peer: peer})
		add(Event{At: at + between(time.Second, 10*time.Second), Kind: "heal", Node: n, Peer: peer})
	}
	ops := []string{"pause", "resume", "failover", "failback", "ack"}
	for range rng.IntN(5) {
		add(Event{At: between(5*time.Second, 55*time.Second), Kind: "op", Op: ops[rng.IntN(len(ops))]})
	}
	// The faults of faults.go, drawn after the others so that a seed's
	// outages, crashes, partitions and commands stay what they were.
	for range rng.IntN(3) {
		n := nodes[rng.IntN(3)]
		peer := nodes[(slices.Index(nodes, n)+1+rng.IntN(2))%3]
		at := between(5*time.Second, 50*time.Second)
		add(Event{At: at, Kind: "cut", Node: n, Peer: peer})
		add(Event{At: at + between(time.Second, 10*time.Second), Kind: "mend", Node: n, Peer: peer})
	}
	for range rng.IntN(2) {
		at := between(3*time.Second, 50*time.Second)
		by := 10*time.Millisecond + time.Duration(rng.Int64N(int64(delayBound-10*time.Millisecond)+1))/time.Millisecond*time.Millisecond
		add(Event{At: at, Kind: "delay", By: by})
		add(Event{At: at + between(2*time.Second, 15*time.Second), Kind: "undelay"})
	}
	for range rng.IntN(3) {
		n := nodes[rng.IntN(3)]
		by := time.Duration(1+rng.Int64N(int64(skewBound/(100*time.Millisecond)))) * 100 * time.Millisecond
		if rng.IntN(2) == 0 {
			by = -by
		}
		at := between(3*time.Second, 50*time.Second)
		add(Event{At: at, Kind: "skew", Node: n, By: by})
		add(Event{At: at + between(2*time.Second, 20*time.Second), Kind: "unskew", Node: n})
	}
	for range rng.IntN(3) {
		add(Event{At: between(5*time.Second, 55*time.Second), Kind: "transfer"})
	}
	for range rng.IntN(2) {
		n := nodes[rng.IntN(3)]
		at := between(5*time.Second, 45*time.Second)
		add(Event{At: at, Kind: "remove", Node: n})
		add(Event{At: at + between(2*time.Second, 15*time.Second), Kind: "readd", Node: n})
	}
	scenarios := genWorld(rng, between, add)
	// The failover groups, last and from a stream of their own, so that a
	// seed drawing none keeps the schedule it had before groups existed.
	s.Groups = drawGroups(seed, s.Events, scenarios)
	slices.SortStableFunc(s.Events, func(a, b Event) int { return int(a.At - b.At) })
	for i := range s.Events {
		s.Events[i].Seq = i + 1
	}
	return s
}

// Down reports whether node sees probe of site failing at virtual time now.
func (s Schedule) Down(node string, site failover.Site, probe string, now time.Duration) bool {
	for _, e := range s.Events {
		if e.Kind == "outage" && e.Site == site && (e.Probe == "" || e.Probe == probe) && now >= e.At && now < e.At+e.For && slices.Contains(e.Nodes, node) {
			return true
		}
	}
	return false
}

// faultKinds are the event kinds that start a fault.
var faultKinds = []string{"crash", "partition", "cut", "delay", "skew", "transfer", "remove", "dnsfault", "dnsslow"}

// Faults counts the events that start a fault.
func (s Schedule) Faults() int {
	n := 0
	for _, e := range s.Events {
		if slices.Contains(faultKinds, e.Kind) {
			n++
		}
	}
	return n
}

func (s Schedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "schedule seed=%d length=%s", s.Seed, s.Length)
	if len(s.Groups) > 0 {
		fmt.Fprintf(&b, " groups=%s", strings.Join(s.Groups, ","))
	}
	b.WriteString("\n")
	for _, e := range s.Events {
		fmt.Fprintf(&b, "  %3d %s\n", e.Seq, e) // the number SIM_DROP names
	}
	return b.String()
}

// genWorld draws the DNS faults and the remediator's breakages of a
// schedule (after the rest, so the other events of a seed stay as they
// were): up to three DNS faults of one to three calls each, up to two
// stretches of DNS latency on one node (0.2-3 s for 2-15 s), and up to
// five breakages of four targets, one in five of which no repair fixes.
// Churn events are not drawn (a thousand records or more make a schedule
// ten times slower); TestSimRepairCapHoldsUnderRecordChurn adds one.
// It returns how many of the scenarios below it added (each scenario's
// outages and commands are about one group, drawGroups).
func genWorld(rng *rand.Rand, between func(lo, hi time.Duration) time.Duration, add func(Event)) (scenarios int) {
	nodes := []string{"a", "b", "c"}
	faults := []string{"timeout", "refused", "servfail", "lost-reply"}
	for range rng.IntN(4) {
		add(Event{At: between(5*time.Second, 55*time.Second), Kind: "dnsfault", Fault: faults[rng.IntN(len(faults))],
			Count: 1 + rng.IntN(3), Writes: rng.IntN(2) == 0})
	}
	for range rng.IntN(3) {
		add(Event{At: between(5*time.Second, 50*time.Second), Kind: "dnsslow", Node: nodes[rng.IntN(3)],
			Latency: between(200*time.Millisecond, 3*time.Second), For: between(2*time.Second, 15*time.Second)})
	}
	for range rng.IntN(6) {
		add(Event{At: between(2*time.Second, 55*time.Second), Kind: "broken", Target: fmt.Sprintf("t%d", 1+rng.IntN(4)),
			Fail: rng.IntN(5) == 0})
	}
	for _, scenario := range []func(*rand.Rand, func(lo, hi time.Duration) time.Duration, func(Event)){staleWatcher, slowDeposedWriter, slowVerifier} {
		if rng.IntN(4) == 0 {
			scenario(rng, between, tagged(add, scenarios+1))
			scenarios++
		}
	}
	return scenarios
}

// slowVerifier slows the leader's path to the DNS authority (by 2-5 s a
// request), has an operator fail over, and fail back 3-15 s later: the
// second decision commits while the leader is still writing or verifying
// the first, so the ActionResults of the first arrive for a generation
// that is no longer the current one.
func slowVerifier(rng *rand.Rand, between func(lo, hi time.Duration) time.Duration, add func(Event)) {
	at := between(8*time.Second, 30*time.Second)
	add(Event{At: at, Kind: "dnsslow", Node: "leader", Latency: between(2*time.Second, 5*time.Second), For: 25 * time.Second})
	first := at + between(500*time.Millisecond, 1500*time.Millisecond)
	add(Event{At: first, Kind: "op", Op: "failover"})
	add(Event{At: first + between(3*time.Second, 15*time.Second), Kind: "op", Op: "failback"})
}

// staleWatcher is the partial view a stale vote needs to matter: one
// watcher sees the primary fail for a while and crashes, or is cut off and
// stops seeing it, while still DOWN in its last report; then another
// watcher alone sees the primary fail. Only a stale vote counted as fresh
// makes that a quorum.
func staleWatcher(rng *rand.Rand, between func(lo, hi time.Duration) time.Duration, add func(Event)) {
	nodes := []string{"a", "b", "c"}
	rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
	x, y := nodes[0], nodes[1]
	at := between(8*time.Second, 30*time.Second)
	silent := at + between(4*time.Second, 7*time.Second) // after fall failing rounds
	add(Event{At: at, Kind: "outage", Site: failover.Primary, Nodes: []string{x}, For: silent - at + 100*time.Millisecond})
	if rng.IntN(2) == 0 {
		add(Event{At: silent, Kind: "crash", Node: x})
		add(Event{At: silent + between(12*time.Second, 20*time.Second), Kind: "restart", Node: x})
	} else {
		add(Event{At: silent, Kind: "partition", Node: x})
		add(Event{At: silent + between(12*time.Second, 20*time.Second), Kind: "heal", Node: x})
	}
	add(Event{At: silent + between(time.Second, 4*time.Second), Kind: "outage", Site: failover.Primary, Nodes: []string{y},
		For: between(5*time.Second, 10*time.Second)})
}

// slowDeposedWriter slows the leader's path to the DNS authority (by 3-6 s
// a request, the node that leads when it starts), has an operator fail
// over, and then, the first time a node has a swap in flight (checked
// every half second for 20 s), crashes it and has an operator fail back
// 1-2 s later: the new leader writes the newer decision while the deposed
// leader's write is still on its way, and the fence must refuse it when
// it lands. When the swap lands before any check sees it, the two quick
// decisions still race the reconciler's verification and its
// ActionResult.
func slowDeposedWriter(rng *rand.Rand, between func(lo, hi time.Duration) time.Duration, add func(Event)) {
	at := between(8*time.Second, 25*time.Second)
	add(Event{At: at, Kind: "dnsslow", Node: "leader", Latency: between(3*time.Second, 6*time.Second), For: 25 * time.Second})
	first := at + between(500*time.Millisecond, 1500*time.Millisecond)
	add(Event{At: first, Kind: "op", Op: "failover"})
	back := between(time.Second, 2*time.Second)
	for t := first + time.Second; t < first+20*time.Second; t += 500 * time.Millisecond {
		add(Event{At: t, Kind: "depose", Op: "failback", For: back})
	}
	add(Event{At: first + 25*time.Second, Kind: "revive"})
}

// withChurn is s with a churn event: from at, the dry-run repair plans
// count targets in a new state every pass.
func (s Schedule) withChurn(at time.Duration, count int) Schedule {
	s.Events = append(slices.Clone(s.Events), Event{At: at, Kind: "churn", Count: count})
	slices.SortStableFunc(s.Events, func(a, b Event) int { return int(a.At - b.At) })
	for i := range s.Events {
		s.Events[i].Seq = i + 1
	}
	return s
}
