// Package drillrun is the leader's drill executor: it carries out the
// drills the decision core records (failover.DrillStart) on a canary
// record, and starts the drills the schedule asks for.
//
// A drill moves the canary to the backup values with the same
// compare-and-swap as a real flip, verifies it at every authoritative
// server, writes it back to the primary values, verifies again, stamps
// every step in the log (failover.DrillStep) and ends the drill once
// (failover.DrillEnd). Its writes are fenced on a fence record of their
// own (the production fence's name with "-drill"): bumping the production
// fence would make the production reconciler take its own generation for
// stale. The drill's writes carry the fence gen=ID on the way to the backup
// and gen=ID+1 on the way back, ID being the drill's log index, so tokens
// only grow from one drill to the next and a deposed leader's late write
// fails its compare-and-swap.
//
// Safety rules, each one tested:
//   - It never writes a production record: it writes only the canary RRset
//     and the drill fence, and the core refuses a canary that names a
//     managed record.
//   - It calls VerifyLeader right before every write.
//   - A drill it finds half done, because the previous leader died in the
//     middle of it, a drill that a real decision overtook, and a drill
//     whose step failed, it rolls back, retrying the write back until DNS
//     takes it, so the canary ends at its primary values. (A drill whose
//     leader died before its first step is simply run.)
//   - The first DrillEnd counts, so a drill ends exactly once.
//
// Like the reconciler it never imports cluster: it declares the leadership
// it needs (failover.Leader) and the replica it reads (State).
package drillrun
