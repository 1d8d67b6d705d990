// Package sim runs the whole trio of watchers in one process, in a
// testing/synctest bubble, on a virtual clock: three real cluster.Nodes on
// hashicorp/raft with raft.InmemTransport and in-memory log, stable and
// snapshot stores (cluster.Config.Raft; the snapshot store keeps what
// raft.FileSnapshotStore keeps, snapstore.go), each with the real FSM
// (watcher.NewFSM over failover.New), and on the leader what
// package watcher's lead runs there: the policy and tick loop, the real
// DNS reconciler (executor/reconcile, wired with the watcher's backoff)
// against one shared simdns authority and its verifier, and the real
// remediation runner (executor/remediate) with one scripted remediator,
// whose reasons are new every pass (an age and a random number, as the real
// repairs' ages are), and one dry-run repair that, from a churn event
// (TestSimRepairCapHoldsUnderRecordChurn adds one; random schedules draw
// none, as a thousand records make a schedule ten times slower), plans
// its targets in a new state every pass, so that its records push the
// scripted remediator's out of the bounded records.
// Only the outside world is scripted, by a seeded Schedule: what each
// watcher's probes see of each site over virtual time, node crashes (the
// stores survive) and restarts, symmetric partitions of one link or one
// node, operator commands (pause, resume, failover, failback, ack) sent
// through a follower, so they take the cluster's real forwarding RPC, DNS
// faults (the next calls to the authority time out, are REFUSED or
// SERVFAIL, or apply and lose their reply), DNS latency on one node's path
// (a request in flight lands even after its sender gave up), and the
// targets the remediator must repair (breakages; some repairs fail).
// Three scenarios random schedules rarely build are added to one schedule
// in four each: a stale watcher (one watcher last reported DOWN, then
// crashed or was cut off, while another alone sees the outage), a slow
// deposed writer (the first node seen with a DNS swap in flight is
// crashed, and a newer decision follows) and a slow verifier (a second
// decision while the slow leader still writes or verifies the first).
// faults.go adds one-way cuts, bounded delay and reordering of raft
// messages, clock skew within half an interval, the leader handing over
// as a deploy's graceful stop does, and operators removing a follower from
// the voters (and adding it back) through a follower.
//
// A quarter of the seeds run a policy with two or three failover groups
// (groups.go), drawn on a stream of their own so a seed without groups
// keeps its schedule: each group has its own probe on each site and names
// the shared region probe, its own records in the one zone, its own fence
// TXT and its own reconciler on the leader; an outage fails one group's
// probe or the region probe, and operators' commands name a group (or
// all groups). The leader's reconcilers share their writes as the
// watcher's do (reconcile.BatchWrites, window a tenth of an interval), so
// the decisions of several groups that meet (a region outage, a failover
// of every group) reach the authority as one simdns SwapBatch, all or
// nothing, each group under its own fence; the summary line counts the
// batches, and a soak of 40 or more group runs without one fails
// (coverageGaps).
//
// Invariants are checked continuously, after every scripted step, and
// recorded rather than fatal, so a failing run can print its schedule:
//   - 1: an automatic flip needs, in the scripted truth, at least quorum
//     nodes that reported the old site failing fall times within the
//     staleness window plus fall rounds, and quorum nodes that saw the
//     target UP within the staleness window (a necessary condition, so it
//     never fails a correct machine); in a run that skews a clock, both
//     windows widen by what the skew bound lets leaders' clocks stray;
//   - 2: the authority's fence never goes back to a lower generation (so a
//     deposed leader's write never lands over a newer one), never names a
//     generation no replica decided (applied, at any time: a restart rolls
//     a replica's machine back to its last snapshot until a leader commits
//     again, and its log keeps the rest), and the records it holds are
//     always those of the decision its fence names;
//   - 3: every command acknowledged to an operator is in every replica's
//     history, at the index it was acknowledged with;
//   - 4: once the faults stop (every node runs, no link is cut, the
//     authority answers at once), within dnsBound (30 s) of virtual time
//     the replicas agree and the authority holds the leader's desired
//     state: its records and fence, verified (before any decision, the
//     records the operator left, without a fence);
//   - 5: in every replica's history, two automatic flips less than
//     BlockWindow apart have an ack between them;
//   - 6: replicas that applied the same index have byte-identical
//     snapshots (checked after every apply);
//   - with groups, 1, 2, 4 and 5 hold for each group (its own probes,
//     records, fence and block window); besides, no replica's
//     Desired.Gen of a group goes down within one machine's life, each
//     group's fence in DNS never goes back, the zone holds only the
//     groups' records and fences, and a group gets an automatic decision
//     (auto_failover, auto_failback, withheld) only after some watcher saw
//     one of its own critical probes or the region probe failing;
//   - 7: the runner applies at most MaxPerPass actions per pass (counted
//     between the remediator's Plan calls); per remediation, the repairs
//     that ran (each applied action plus each failed target once) stay
//     within MaxPerHour plus those whose outcome no replica recorded (a
//     leader deposed between Apply and its record leaves the next one
//     unaware; a record any check saw counts as recorded even once the
//     churn has evicted it); and no
//     action runs on a node that is no longer leader: not after its own
//     leadership context ended (at an earlier virtual time), and not when
//     some replica had applied an entry of a higher term before the
//     VerifyLeader that preceded the action started. That last test never
//     fails a correct machine: an applied entry of term T was stored by a
//     quorum already at term T, and any quorum a later VerifyLeader of a
//     lower term asks includes one of them, which refuses it.
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
// likes, raft draws its election and heartbeat jitter from math/rand's
// global source (shared by the runs in flight, and drawn from in
// whatever order the scheduler runs raft's goroutines, so seeding it
// would not fix the draws either), and idempotency keys and TLS keys come
// from crypto/rand. Replaying a seed replays its schedule; SIM_REPEAT
// runs each seed that many times in a row, to rerun a failure until it
// shows again.
//
// A panic in any goroutine of a run ends the process before the harness
// can say which schedule it was. So each run names itself in advance: its
// goroutines carry its seed and replay line as pprof labels, which the
// panic's traceback prints (TestMain sets GODEBUG tracebacklabels=1), and
// a file lists the replay line of every run in flight (SIM_INFLIGHT, by
// default drwatch-sim-inflight-<pid> in the temporary directory, printed
// at the start and removed when the process ends normally). A run still going after
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
