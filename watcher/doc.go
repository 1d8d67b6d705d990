// Package watcher is one drwatch watcher's runtime, once its parts are
// built: it turns each probe round into an Observe command for the leader,
// keeps the replicated policy in step with this node's file (once the
// cluster's log format reads it: a file's groups wait for format 3) and
// ticks the replicated clock while it leads, runs the DNS reconciler and the
// remediation runner only on the leader, checks what the authoritative
// servers answer on every node, reloads the node's TLS files when they
// change, re-probes suspect sites at once and then at the policy's fast
// interval (its own critical probe of the site just failed, or the
// replicated state names the site suspect, unless this node already votes
// it DOWN) through the scheduler (with failover groups, only the site's
// failing critical probes), logs every history entry the node applies
// as one structured line (the journal's copy of the audit trail), and keeps
// what the status page and the metrics read of all that.
//
// It owns the loops and the state they leave behind, not the configuration:
// cmd/drwatch/node builds a Config from the file and starts a Watcher in one
// pass. It must never import cmd/... (the CLI, the config file, the HTTP
// API): the dependency runs from cmd to here, so the loops can be tested
// with an in-memory log or a fake cluster and no file.
//
// It is the node runtime layer (watcher/): above the decision core
// (failover/), the parts (probes/, dnsprovider/, cluster/), the leader's
// executors (executor/) and the read-only monitors (monitor/), and below
// the shell (cmd/).
package watcher
