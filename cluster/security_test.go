package cluster

import (
	"context"
	"crypto/tls"
	"github.com/drwatch/drwatch/test/poll"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestPeerRefused puts a rogue node in c's slot (c's address) and checks
// that a and b refuse it, that it never receives the log, and that each
// refusal is logged once however often the rogue retries.
func TestPeerRefused(t *testing.T) {
	tests := []struct {
		name    string
		rogue   func(tc *tcluster) (id string, creds *Credentials)
		inbound bool // a and b also refuse the rogue's own connections
		// inboundPeer is the identity named in the inbound refusal: none
		// when the rogue, trusting another CA, aborts the handshake first.
		inboundPeer string
	}{
		{"cert from another CA", func(tc *tcluster) (string, *Credentials) {
			return "c", newTestCA(t, "evil-ca").creds(t, "c")
		}, true, ""},
		{"identity of another member", func(tc *tcluster) (string, *Credentials) {
			return "b", tc.ca.creds(t, "b")
		}, false, ""}, // b is a member, so its cert opens a's door; its address does not match
		{"identity of a non-member", func(tc *tcluster) (string, *Credentials) {
			return "d", tc.ca.creds(t, "d")
		}, true, "d"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Start a and b only; c's address is taken by the rogue.
			tc := newClusterOf(t, 3, 2)
			cslot := tc.nodes[2]
			id, creds := tt.rogue(tc)
			rogue := &tnode{id: id, dir: t.TempDir(), addr: cslot.addr, creds: creds, cfg: testConfig()}
			rogue.cfg.NodeID, rogue.cfg.DataDir, rogue.cfg.TLS = id, rogue.dir, creds
			// The rogue believes it is the member at c's address, so it
			// bootstraps and campaigns, dialling a and b.
			rogue.cfg.Peers = []Peer{tc.peers[0], tc.peers[1], {ID: id, RaftAddr: cslot.addr}}
			if id == "b" {
				// Holding b's key makes it b to anyone it dials (see
				// DESIGN.md); here it only listens at c's address, where
				// a and b must refuse it. Without b in its peer list it
				// does not bootstrap.
				rogue.cfg.Peers = []Peer{tc.peers[0], tc.peers[2]}
			}
			rogue.cfg.AdvertiseAddr = cslot.addr
			tc.startWith(rogue, nil)
			t.Cleanup(rogue.node.kill)

			l := tc.leader(electionBound(testConfig()))
			want := items("v", 3)
			for _, s := range want {
				tc.propose(l, s)
			}
			tc.converged(long, want)
			// Let the leader fail to reach the rogue several times.
			poll.For(t, long, "repeated outbound refusals", func() bool {
				return counterValue(t, l.node.metrics.refused) >= 3
			})
			if got := l.logs.count("peer refused", map[string]string{"direction": "outbound", "remote": cslot.addr}); got != 1 {
				t.Fatalf("outbound refusal log lines on leader %s: got %d, want 1", l.id, got)
			}
			if tt.inbound {
				// The rogue campaigns (pre-vote) every election timeout and
				// is refused by a and b, or refuses them first.
				poll.For(t, long, "the rogue's connections to be refused", func() bool {
					n := 0
					for _, nd := range tc.running() {
						n += nd.logs.count("peer refused", map[string]string{"direction": "inbound", "peer": tt.inboundPeer})
					}
					return n >= 1
				})
			}
			for _, nd := range tc.running() {
				noRepeats(t, nd)
			}
			if got := rogue.sm.list(); len(got) != 0 {
				t.Fatalf("rogue state: got %v, want nothing replicated", got)
			}
			if got := rogue.node.Stats().CommitIndex; got > 1 {
				t.Fatalf("rogue commit index: got %d, want <= 1 (its own bootstrap)", got)
			}
			for _, nd := range tc.running() {
				if _, addr := nd.node.Leader(); addr == cslot.addr {
					t.Fatalf("%s follows the rogue", nd.id)
				}
			}
		})
	}
}

// noRepeats fails if a refusal, or a raft warning about one peer, was
// logged more than once: the rate limit must hold however often peers retry.
func noRepeats(t *testing.T, nd *tnode) {
	t.Helper()
	nd.logs.mu.Lock()
	defer nd.logs.mu.Unlock()
	seen := map[string]int{}
	for _, r := range nd.logs.records {
		var key string
		switch {
		case r.msg == "peer refused":
			key = r.msg + "|" + r.attrs["direction"] + "|" + hostOf(r.attrs["remote"]) + "|" + r.attrs["peer"] + "|" + r.attrs["reason"]
		case r.attrs["component"] == "raft" && r.level >= slog.LevelWarn:
			p := r.attrs["peer"] + r.attrs["target"] + r.attrs["server-id"] + r.attrs["candidate"]
			if p == "" {
				continue
			}
			key = r.msg + "|" + p
		default:
			continue
		}
		seen[key]++
		if seen[key] > 1 {
			t.Fatalf("node %s logged %q %d times, want once", nd.id, key, seen[key])
		}
	}
}

// newClusterOf creates a cluster of size n but starts only the first k nodes.
func newClusterOf(t *testing.T, n, k int) *tcluster {
	t.Helper()
	tc := newClusterNoStart(t, n, nil)
	for _, nd := range tc.nodes[:k] {
		tc.startWith(nd, nil)
	}
	return tc
}

// TestStalledHandshakeDoesNotBlockAccept holds many TCP connections open
// without a TLS handshake and checks that new peers still get through.
func TestStalledHandshakeDoesNotBlockAccept(t *testing.T) {
	tc := newCluster(t, 3, nil)
	l := tc.leader(electionBound(testConfig()))
	var stalled []net.Conn
	for range 20 {
		c, err := net.Dial("tcp", l.addr)
		if err != nil {
			t.Fatal(err)
		}
		stalled = append(stalled, c)
	}
	t.Cleanup(func() {
		for _, c := range stalled {
			c.Close()
		}
	})
	// A follower's forwarded proposal needs a fresh RPC connection to the
	// leader, accepted while the stalled ones sit in their handshakes.
	f := tc.follower(l)
	f.node.rpc.close()
	f.node.rpc = &rpcClient{m: f.node.mux, idle: map[string][]*rpcConn{}}
	tc.propose(f, "through")
	tc.converged(long, []string{"through"})
}

// TestTLSVersionAndClientCert checks the listener speaks only TLS 1.3 and
// only to clients with a certificate.
func TestTLSVersionAndClientCert(t *testing.T) {
	tc := newCluster(t, 1, nil)
	nd := tc.nodes[0]
	tests := []struct {
		name string
		cfg  *tls.Config
	}{
		{"tls 1.2", &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*nd.creds.Certificate()}}},
		{"no client cert", &tls.Config{InsecureSkipVerify: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tls.Dialer{Config: tt.cfg}
			ctx, cancel := context.WithTimeout(context.Background(), long)
			defer cancel()
			c, err := d.DialContext(ctx, "tcp", nd.addr)
			if err == nil {
				// TLS 1.3 reports a refused client cert on the first read.
				c.SetDeadline(time.Now().Add(long))
				_, _ = c.Write([]byte{protoRPC})
				_, err = c.Read(make([]byte, 1))
				c.Close()
			}
			if err == nil {
				t.Fatalf("got a working connection, want refusal")
			}
		})
	}
}

func TestSelfIdentityMustMatch(t *testing.T) {
	ca := newTestCA(t, "ca")
	cfg := testConfig()
	cfg.NodeID, cfg.DataDir, cfg.BindAddr, cfg.TLS = "a", t.TempDir(), "127.0.0.1:0", ca.creds(t, "b")
	_, err := New(context.Background(), cfg, &listSM{})
	if err == nil {
		t.Fatalf("New with b's cert as a: got nil error, want refusal")
	}
}

var _ = slices.Equal[[]string]

// TestClientCertIsNotAPeer: an API client certificate from the cluster CA
// opens no watcher's Raft port, even for a watcher that would allow any
// identity: it names a client, not a node.
func TestClientCertIsNotAPeer(t *testing.T) {
	ca := newTestCA(t, "ca")
	watcher := ca.creds(t, "a")
	cert, key, err := ParseCA(ca.certPEM, ca.keyP)
	if err != nil {
		t.Fatal(err)
	}
	cp, kp, err := IssueClientCert(cert, key, "alice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(cp, kp)
	if err != nil {
		t.Fatal(err)
	}
	if name, err := ClientNameFromCert(pair.Leaf); err != nil || name != "alice" {
		t.Fatalf("client name: got %q, %v, want alice", name, err)
	}
	if id, err := NodeIDFromCert(pair.Leaf); err == nil {
		t.Fatalf("a client certificate has node identity %q", id)
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	srv := tls.Server(a, watcher.serverTLS(func(string) bool { return true }))
	cl := tls.Client(b, &tls.Config{MinVersion: tls.VersionTLS13, InsecureSkipVerify: true, Certificates: []tls.Certificate{pair}})
	done := make(chan error, 1)
	go func() { done <- srv.Handshake() }()
	_ = cl.Handshake()
	_ = b.Close()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "no drwatch://node/<id> URI SAN") {
		t.Fatalf("watcher handshake with a client certificate: got %v, want a refusal naming the missing node identity", err)
	}
}
