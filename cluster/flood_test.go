package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drwatch/drwatch/test/idleconn"
	"github.com/drwatch/drwatch/test/poll"
)

// flood holds n unauthenticated connections to addr, each from one of
// many loopback source addresses in 127.1.0.0/16 (never the peers'
// 127.0.0.1), and redials the ones the server closes, so the pressure
// outlasts the handshake timeout. With hello set each connection sends a
// real ClientHello and then stalls: a handshake the server has begun and
// the client never finishes.
type flood struct {
	addr  string
	n     int
	hello []byte

	mu    sync.Mutex
	conns map[net.Conn]struct{} // open from our side
	next  int                   // source address index, round robin
	ended bool                  // close has run: open nothing more
	dials int                   // connections opened so far

	stop chan struct{}
	wg   sync.WaitGroup
}

func startFlood(t testing.TB, addr string, n int, hello []byte) *flood {
	f := &flood{addr: addr, n: n, hello: hello, conns: map[net.Conn]struct{}{}, stop: make(chan struct{})}
	f.wg.Add(1)
	go f.run()
	t.Cleanup(f.close)
	return f
}

// floodSources is how many loopback addresses one flood dials from: two
// connections each at n = 1000.
const floodSources = 500

func (f *flood) source() *net.TCPAddr {
	f.mu.Lock()
	i := f.next
	f.next = (f.next + 1) % floodSources
	f.mu.Unlock()
	return &net.TCPAddr{IP: net.IPv4(127, 1, byte(i/250), byte(i%250+1))}
}

// run tops the flood up to n open connections every few milliseconds, at
// most refillBurst at a time, so shed connections cost the server churn
// but the test does not spin.
func (f *flood) run() {
	defer f.wg.Done()
	const refillBurst = 250
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		missing := min(f.n-f.open(), refillBurst)
		for range missing {
			d := net.Dialer{LocalAddr: f.source(), Timeout: time.Second}
			c, err := d.Dial("tcp", f.addr)
			if err != nil {
				break // the target is down or its backlog full: next tick
			}
			if f.hello != nil {
				_, _ = c.Write(f.hello)
			}
			f.mu.Lock()
			if f.ended {
				f.mu.Unlock()
				_ = c.Close()
				return
			}
			f.conns[c] = struct{}{}
			f.dials++
			f.mu.Unlock()
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				_, _ = io.Copy(io.Discard, c) // returns when the server closes it, or at close
				_ = c.Close()
				f.mu.Lock()
				delete(f.conns, c)
				f.mu.Unlock()
			}()
		}
		select {
		case <-f.stop:
			return
		case <-tick.C:
		}
	}
}

// dialed counts the connections opened so far; the server may have shed
// many of them already.
func (f *flood) dialed() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dials
}

func (f *flood) open() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.conns)
}

func (f *flood) close() {
	select {
	case <-f.stop:
		return
	default:
	}
	close(f.stop)
	f.mu.Lock()
	f.ended = true
	for c := range f.conns {
		_ = c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// clientHello returns the first record a TLS client sends: a complete
// ClientHello, which starts a handshake the server must answer.
func clientHello(t testing.TB) []byte {
	t.Helper()
	a, b := net.Pipe()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = tls.Client(a, &tls.Config{InsecureSkipVerify: true}).Handshake()
	}()
	hdr := make([]byte, 5)
	if _, err := io.ReadFull(b, hdr); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, int(hdr[3])<<8|int(hdr[4]))
	if _, err := io.ReadFull(b, body); err != nil {
		t.Fatal(err)
	}
	_ = a.Close()
	_ = b.Close()
	wg.Wait()
	return append(hdr, body...)
}

// raiseFileLimit lifts the soft RLIMIT_NOFILE to the hard limit: three
// floods of 1,000 connections need both ends' descriptors in this process.
func raiseFileLimit(t testing.TB, need uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Fatal(err)
		}
	}
	if lim.Cur < need {
		t.Fatalf("open file limit %d (hard), need %d for the flood: raise it (ulimit -Hn, or LimitNOFILE in the CI unit)", lim.Cur, need)
	}
}

// shedsStrangers reports whether the node at addr turns away a new
// connection from a loopback address outside the flood's: closed at once
// means every slot for strangers is taken.
func shedsStrangers(addr string) bool {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 2, 0, 1)}, Timeout: time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	_, err = c.Read(make([]byte, 1))
	return errors.Is(err, io.EOF)
}

// floodPerNode is how many unauthenticated connections a flood holds to
// one node's raft port.
const floodPerNode = 1000

// floodWait bounds each wait of a flooded cluster: three floods cost the
// nodes 128 TLS handshakes each at a time, on the same two cores under
// -race, so it is twice the usual long.
const floodWait = 2 * long

// floodCluster floods every node's raft port with floodPerNode
// connections (half-finished TLS handshakes when hello is set) and returns
// once each node sheds strangers.
func floodCluster(tb testing.TB, tc *tcluster, hello []byte) map[string]*flood {
	tb.Helper()
	floods := map[string]*flood{}
	for _, nd := range tc.nodes {
		floods[nd.id] = startFlood(tb, nd.addr, floodPerNode, hello)
	}
	for _, nd := range tc.nodes {
		poll.For(tb, floodWait, "flood of "+nd.id+" to open its connections", func() bool { return floods[nd.id].dialed() >= floodPerNode })
		poll.For(tb, floodWait, nd.id+" to shed strangers", func() bool { return shedsStrangers(nd.addr) })
	}
	return floods
}

// restartFollower stops the follower f, commits cmd on the leader l while
// f is down, and starts f again on its port; flood, if not nil, is the
// flood of f's port, and f starts only once it has refilled the port. It
// returns when f was started, and a check that f has rejoined: it knows a
// leader and applied cmd. (The load of a flood under -race can cost l its
// lease, so the leader f finds need not be l.)
func restartFollower(tb testing.TB, tc *tcluster, l, f *tnode, cmd string, flood *flood) (time.Time, func() bool) {
	tb.Helper()
	tc.stop(f)
	tc.propose(l, cmd)
	ln, err := listenEventually(tb, f.addr)
	if err != nil {
		tb.Fatal(err)
	}
	if flood != nil {
		before := flood.dialed()
		poll.For(tb, floodWait, "flood of the restarted node's port", func() bool { return flood.dialed() >= before+floodPerNode })
	}
	started := time.Now() // New starts raft: the leader may reach f before it returns
	tc.startWith(f, ln)
	return started, func() bool {
		lid, _ := f.node.Leader()
		return lid != "" && slices.Contains(f.sm.list(), cmd)
	}
}

// TestHandshakeFloodDoesNotLockOutPeers floods every node's raft port with
// 1,000 unauthenticated connections from hundreds of loopback addresses
// until no stranger gets a handshake slot, then checks that a peer still
// connects, that a follower restarted into the flood rejoins, and that the
// cluster still elects a leader when the old one dies. A peer locked out
// would never get in while the flood lasts, so the deadlines are the
// generous ones of a loaded machine: how fast a peer gets in is
// BenchmarkRejoinUnderHandshakeFlood's figure, not this test's.
func TestHandshakeFloodDoesNotLockOutPeers(t *testing.T) {
	raiseFileLimit(t, 4*3*floodPerNode)
	tests := []struct {
		name  string
		hello bool
	}{
		{"idle tcp", false},
		{"half-finished tls", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hello []byte
			if tt.hello {
				hello = clientHello(t)
			}
			tc := newCluster(t, 3, nil)
			l := tc.leader(electionBound(testConfig()))
			tc.propose(l, "before")
			tc.converged(long, []string{"before"})
			floods := floodCluster(t, tc, hello)

			// A fresh connection from a peer to the leader, as a restarted
			// peer or a forwarded proposal opens: one try, shed or not.
			f := tc.follower(l)
			ctx, cancel := context.WithTimeout(context.Background(), floodWait)
			c, err := f.node.mux.dial(ctx, l.addr, l.id, protoRPC)
			cancel()
			if err != nil {
				t.Fatalf("peer %s dials leader %s through the flood: %v", f.id, l.id, err)
			}
			_ = c.Close()

			// Restart a follower into the flood: the leader must dial it
			// afresh.
			started, rejoined := restartFollower(t, tc, l, f, "while down", floods[f.id])
			poll.For(t, floodWait, "restarted follower "+f.id+" to rejoin through the flood", rejoined)
			t.Logf("restarted follower %s rejoined in %v", f.id, time.Since(started))

			// Kill the leader once the restarted node sheds strangers too:
			// the two others must reach each other through the flood.
			poll.For(t, floodWait, f.id+" to shed strangers", func() bool { return shedsStrangers(f.addr) })
			l = tc.leader(electionBound(testConfig()))
			tc.stop(l)
			killed := time.Now()
			nl := tc.leader(electionBound(testConfig()))
			t.Logf("new leader %s elected in %v", nl.id, time.Since(killed))
			tc.propose(nl, "after")
			tc.converged(floodWait, []string{"before", "while down", "after"})
		})
	}
}

// BenchmarkRejoinUnderHandshakeFlood measures how long a follower
// restarted into a flood of 1,000 half-finished TLS handshakes on every
// node's raft port takes to rejoin (know the leader and apply what it
// missed). The floor is the same restart in the same cluster before the
// flood starts: flood/floor is what the flood costs a peer.
// TestHandshakeFloodDoesNotLockOutPeers proves that it rejoins at all.
func BenchmarkRejoinUnderHandshakeFlood(b *testing.B) {
	raiseFileLimit(b, 4*3*floodPerNode)
	hello := clientHello(b)
	tc := newCluster(b, 3, nil)
	l := tc.leader(electionBound(testConfig()))
	f := tc.follower(l)
	rejoin := func(cmd string, fl *flood) time.Duration {
		started, rejoined := restartFollower(b, tc, l, f, cmd, fl)
		poll.UntilEvery(b, floodWait, time.Millisecond, rejoined, "restarted follower %s to rejoin", f.id)
		return time.Since(started)
	}
	var floor, flooded time.Duration
	for i := range b.N {
		floor += rejoin(fmt.Sprintf("quiet %d", i), nil)
	}
	floods := floodCluster(b, tc, hello)
	for i := range b.N {
		flooded += rejoin(fmt.Sprintf("flooded %d", i), floods[f.id])
	}
	b.ReportMetric(floor.Seconds()/float64(b.N), "floor-s/rejoin")
	b.ReportMetric(flooded.Seconds()/float64(b.N), "flood-s/rejoin")
	b.ReportMetric(float64(flooded)/float64(floor), "flood/floor")
}

// TestHandshakeSlotsPerSource checks that one address that is not a peer
// holds at most maxPendingPerSource unfinished handshakes, and that
// another address still gets one.
func TestHandshakeSlotsPerSource(t *testing.T) {
	tc := newCluster(t, 1, nil)
	nd := tc.nodes[0]
	// Admitted connections wait for a ClientHello until the handshake
	// timeout (2 s), well past Held's half second.
	held := func(src net.IP, n int) int {
		h, closeAll := idleconn.Held(t, nd.addr, src, n)
		closeAll()
		return h
	}
	if first := held(net.IPv4(127, 3, 0, 1), 2*maxPendingPerSource); first != maxPendingPerSource {
		t.Errorf("%d idle connections from one stranger: got %d held, want %d", 2*maxPendingPerSource, first, maxPendingPerSource)
	}
	if got := held(net.IPv4(127, 3, 0, 2), 1); got != 1 {
		t.Errorf("a second stranger: got %d held, want 1", got)
	}
}
