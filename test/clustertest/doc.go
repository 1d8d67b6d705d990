// Package clustertest starts real cluster.Nodes (TCP and mutual TLS on
// 127.0.0.1, stores in t.TempDir) for tests of packages built on cluster:
//
//	c := clustertest.New(t, 3, clustertest.Options{})
//	l := c.Leader(10 * time.Second)
//	_, _, err := c.Follower(l).Node.Propose(ctx, []byte("x"))
//
// Nodes stop at test cleanup. Stop and Start restart a node on the same
// address and data dir.
//
// Like cluster it never imports failover, dnsprovider, probes or cmd/...;
// only tests import it, never the code of a package outside test/.
package clustertest
