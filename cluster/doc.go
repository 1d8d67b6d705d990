// Package cluster replicates a state machine across the watcher nodes with
// hashicorp/raft over mutual TLS. It knows nothing of DNS or failover.
//
// A Node stores its log and stable state in raft-boltdb (DataDir/raft.db)
// and file snapshots (DataDir/snapshots). Raft and the cluster RPC share
// one TCP port; every connection is TLS 1.3 with client certificates from
// the cluster CA, and each certificate names its node with the URI SAN
// drwatch://node/<id> (see IssueNodeCert). For simulation, Config.Raft
// swaps the raft transport and the stores for in-memory ones (test/sim runs
// a whole cluster in one process on a virtual clock); the cluster RPC still
// runs over TLS, on whatever Config.Listener and Config.Dial connect.
//
// Any node can Propose: a follower forwards to the leader and retries when
// leadership moves, with one idempotency key per call, so a command is
// applied at most once. The wrapped StateMachine sees only committed
// commands, in order. RunWhileLeader runs leader-only work (the
// reconciler) with a context cancelled the moment leadership is lost, and
// only once the local replica has applied everything committed before.
//
// The package owns the `raft:` section of a node's config file
// (RaftTiming): its defaults and its rules, which Config embeds.
//
// DESIGN.md in this directory explains the choices.
//
// It never imports failover, dnsprovider or probes: what it replicates is
// opaque bytes to it, and the decision core plugs in as a StateMachine.
package cluster
