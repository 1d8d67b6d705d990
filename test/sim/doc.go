// Package sim runs the whole trio of watchers in one process, in a
// testing/synctest bubble, on a virtual clock: three real cluster.Nodes on
// hashicorp/raft with raft.InmemTransport and in-memory log, stable and
// snapshot stores (cluster.Config.Raft), each with the real FSM
// (internal/watcher.NewFSM over failover.New) and the leader's policy and
// tick loop. Only the outside world is scripted, by a seeded Schedule:
// what each watcher's probes see of each site over virtual time, node
// crashes (the stores survive) and restarts, symmetric partitions of one
// link or one node, and operator commands (pause, resume, failover,
// failback, ack) sent through a follower, so they take the cluster's real
// forwarding RPC. faults.go adds one-way cuts, bounded delay and
// reordering of raft messages, clock skew within half an interval, the
// leader handing over as a deploy's graceful stop does, and operators
// removing a follower from the voters (and adding it back) through a
// follower.
//
// Invariants are checked continuously, after every scripted step, and
// recorded rather than fatal, so a failing run can print its schedule:
//   - 1: an automatic flip needs, in the scripted truth, at least quorum
//     nodes that reported the old site failing fall times within the
//     staleness window plus fall rounds, and quorum nodes that saw the
//     target UP within the staleness window (a necessary condition, so it
//     never fails a correct machine); in a run that skews a clock, both
//     windows widen by what the skew bound lets leaders' clocks stray;
//   - 3: every command acknowledged to an operator is in every replica's
//     history, at the index it was acknowledged with;
//   - 6: replicas that applied the same index have byte-identical
//     snapshots (checked after every apply);
//   - and once the faults stop, every node runs and the replicas agree
//     within settleBound of virtual time.
//
// TestSimSchedules runs SIM_N schedules (default 30) from seed SIM_SEED
// (default 1; SIM_SEED alone runs that one schedule), SIM_PARALLEL at a
// time (default GOMAXPROCS), each in a synctest bubble of its own. Seeds
// are handed out in order and none after a failure, so it reports the
// lowest failing seed whatever the workers' timing: its violation, a
// one-line replay command (with -race when the test binary has it) and
// the schedule, its events numbered. It then shrinks the schedule by
// delta debugging (shrink.go): it removes events, a fault together with
// its end (the ends table: crash with restart, cut with mend, ...),
// while the rest still fails the same invariant, running each candidate
// up to three times, within 200 candidates or two minutes; it prints the
// shrunk schedule and its replay line, where SIM_DROP lists the events
// of the seed's schedule to leave out. SIM_SHRINK=0 skips shrinking.
//
// A seed fixes the schedule, not the interleaving: synctest makes time
// virtual, but the Go scheduler still orders runnable goroutines as it
// likes, and idempotency keys and TLS keys come from crypto/rand.
// Replaying a seed replays its schedule. A run still going after
// runBound of virtual time fails with every goroutine's stack: that is
// how the simulator found cluster.Node.Shutdown waiting for ever for a
// raft future raft never answers once it has shut down (cluster now
// unblocks such waits at shutdown, unblockAtShutdown).
//
// # Feasibility: hashicorp/raft v1.8.0 in a bubble
//
// It works. Raft's goroutines block on channels and timers created in the
// bubble, so they are durably blocked and time jumps ahead; a three-node
// cluster elects a leader in about 0.6 s of virtual time. What it takes:
//   - Not the production transport or stores: real sockets and bolt files
//     are not durably blocking. cluster.Config.Raft swaps in
//     InmemTransport and in-memory stores. The cluster RPC keeps its TLS and
//     runs over net.Pipe (net.go), which is durably blocking; a partition
//     cuts both.
//   - Peer addresses are IP literals: cluster.New resolves host names with
//     the real resolver, which would leave the bubble.
//   - Certificates are issued inside the bubble, whose clock starts at
//     2000-01-01 UTC, so TLS verification sees them valid.
//   - raft.Shutdown does not wait for every goroutine it started: a
//     leadership transfer's TimeoutNow to a stopped peer waits out
//     InmemTransport's timeout (5 s). synctest fails a bubble that ends
//     with goroutines blocked, so Run waits raftLeftovers of virtual time
//     after the last Shutdown.
//
// It must never import cmd/...: it drives the library the node wires, not
// the shell.
package sim
