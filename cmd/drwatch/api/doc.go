// Package api serves drwatch's HTTP API and status page on a node's
// api_addr: reads from the local replica, writes proposed through the
// cluster (a follower's Propose is forwarded to the leader), bearer-token
// authentication for writes, JSON errors with stable codes, and no secret in
// any reply. Its listener budgets open connections per source and in all,
// within what the open file limit leaves past a reserve for raft and the
// probes (conns.go; docs/security.md, "Connection budget").
//
// It reads and writes through the Backend interface it declares, so it never
// imports cmd/drwatch/config, cmd/drwatch/node or cmd/drwatch/demo: the node
// that assembles a watcher hands it a Backend.
package api
