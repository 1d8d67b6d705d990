// Package failover is drwatch's pure decision core: the deterministic state
// machine that the Raft log drives. It imports only the standard library.
package failover
