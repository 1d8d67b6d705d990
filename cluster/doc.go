// Package cluster replicates a state machine across the watcher nodes with
// hashicorp/raft over mutual TLS. It knows nothing of DNS or failover.
package cluster
