package clustertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cluster"
	"github.com/drwatch/drwatch/test/daemon"
	"github.com/drwatch/drwatch/test/poll"
)

// Options adjust the nodes New starts.
type Options struct {
	// NewStateMachine returns a fresh state machine for node id, called at
	// every start. Nil uses *List.
	NewStateMachine func(id string) cluster.StateMachine
	// Configure edits a node's config after the defaults (FastTimeouts,
	// peers, TLS, data dir) are filled in. May be nil.
	Configure func(id string, c *cluster.Config)
}

// Member is one node of a test cluster.
type Member struct {
	ID, Addr, Dir string
	Config        cluster.Config
	Node          *cluster.Node        // nil while stopped
	SM            cluster.StateMachine // the running node's state machine
}

// Cluster is a set of nodes sharing one test CA and one static peer list.
type Cluster struct {
	t             testing.TB
	opts          Options
	CACert, CAKey []byte // PEM, for issuing more node certificates
	Peers         []cluster.Peer
	Members       []*Member
	mu            sync.Mutex
}

// FastTimeouts sets raft timeouts suited to loopback tests under -race on
// a busy machine (500 ms heartbeat and election, 250 ms lease).
func FastTimeouts(c *cluster.Config) {
	c.HeartbeatTimeout = 500 * time.Millisecond
	c.ElectionTimeout = 500 * time.Millisecond
	c.LeaderLeaseTimeout = 250 * time.Millisecond
	c.CommitTimeout = 10 * time.Millisecond
	c.TransportTimeout = 2 * time.Second
	c.HandshakeTimeout = 2 * time.Second
}

// New starts n nodes named a, b, c, ... and stops them at cleanup.
func New(t testing.TB, n int, opts Options) *Cluster {
	t.Helper()
	caCert, caKey, err := cluster.NewCA("clustertest", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ca, key, err := cluster.ParseCA(caCert, caKey)
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{t: t, opts: opts, CACert: caCert, CAKey: caKey}
	// Reserved for the test process (daemon.FreePorts): a member stopped
	// and started again gets its port back.
	ports, err := daemon.FreePorts(n)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[i]))
		id := string(rune('a' + i))
		c.Members = append(c.Members, &Member{ID: id, Addr: addr, Dir: filepath.Join(t.TempDir(), id)})
		c.Peers = append(c.Peers, cluster.Peer{ID: id, RaftAddr: addr})
	}
	for _, m := range c.Members {
		certPEM, keyPEM, err := cluster.IssueNodeCert(ca, key, m.ID, []string{"127.0.0.1"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		creds, err := cluster.CredentialsFromPEM(caCert, certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		cfg := cluster.Config{NodeID: m.ID, DataDir: m.Dir, BindAddr: m.Addr, Peers: c.Peers, TLS: creds}
		FastTimeouts(&cfg)
		if opts.Configure != nil {
			opts.Configure(m.ID, &cfg)
		}
		m.Config = cfg
	}
	t.Cleanup(func() {
		for _, m := range c.Members {
			if m.Node != nil {
				c.Stop(m)
			}
		}
	})
	for _, m := range c.Members {
		c.Start(m)
	}
	return c
}

// Start starts a stopped member on its address and data dir, with a fresh
// state machine (raft replays the log and snapshot into it).
func (c *Cluster) Start(m *Member) {
	c.t.Helper()
	if c.opts.NewStateMachine != nil {
		m.SM = c.opts.NewStateMachine(m.ID)
	} else {
		m.SM = &List{}
	}
	var err error
	// The port was just released; rebinding can race a TIME_WAIT.
	poll.WithinEvery(10*time.Second, 20*time.Millisecond, func() bool {
		m.Node, err = cluster.New(context.Background(), m.Config, m.SM)
		return err == nil
	})
	if err != nil {
		c.t.Fatalf("start %s: %v", m.ID, err)
	}
}

// Stop shuts a member down gracefully (leadership transfer first).
func (c *Cluster) Stop(m *Member) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Node.Shutdown(ctx); err != nil {
		c.t.Errorf("stop %s: %v", m.ID, err)
	}
	m.Node = nil
}

// Leader waits up to d until every running member agrees on one leader,
// and returns it.
func (c *Cluster) Leader(d time.Duration) *Member {
	c.t.Helper()
	var leader *Member
	poll.Until(c.t, d, func() bool {
		leader = c.agreedLeader()
		return leader != nil
	}, "every running member agrees on one leader")
	return leader
}

// agreedLeader is the leader every running member names, or nil.
func (c *Cluster) agreedLeader() *Member {
	var leader *Member
	agreed := ""
	for _, m := range c.Members {
		if m.Node == nil {
			continue
		}
		id, _ := m.Node.Leader()
		if id == "" || (agreed != "" && id != agreed) {
			return nil
		}
		agreed = id
		if m.ID == id && m.Node.IsLeader() {
			leader = m
		}
	}
	return leader
}

// Follower returns a running member other than leader.
func (c *Cluster) Follower(leader *Member) *Member {
	c.t.Helper()
	for _, m := range c.Members {
		if m != leader && m.Node != nil {
			return m
		}
	}
	c.t.Fatal("no running follower")
	return nil
}

// List is an append-only StateMachine of commands; safe for concurrent use.
type List struct {
	mu    sync.Mutex
	items []string
}

var _ cluster.StateMachine = (*List)(nil)

// Apply appends cmd and answers "n=<length>".
func (l *List) Apply(_ uint64, cmd []byte) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.items = append(l.items, string(cmd))
	return fmt.Appendf(nil, "n=%d", len(l.items))
}

// Snapshot returns the list as JSON.
func (l *List) Snapshot() ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return json.Marshal(l.items)
}

// Restore replaces the list.
func (l *List) Restore(state []byte) error {
	var items []string
	if err := json.Unmarshal(state, &items); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.items = items
	return nil
}

// Items returns a copy of the list.
func (l *List) Items() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.items)
}
