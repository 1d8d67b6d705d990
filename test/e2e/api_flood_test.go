package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/test/idleconn"
	"github.com/drwatch/drwatch/test/poll"
)

// apiFlood holds kept-alive HTTPS connections to one node's API, each
// served GET /livez once, from loopback addresses in 127.9.0.0/16 (no
// watcher's, no site's). Like the clients in the field it refreshes them
// with another request every 20 s, so they are not idle for the node's
// 60 s idle timeout while a test runs.
type apiFlood struct {
	addr string
	tls  *tls.Config

	mu    sync.Mutex
	conns []*idleconn.KeptAlive
	stop  chan struct{}
	wg    sync.WaitGroup
}

func startAPIFlood(t *testing.T, w *World, n *Node) *apiFlood {
	pem, err := os.ReadFile(w.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	f := &apiFlood{addr: n.APIAddr, tls: &tls.Config{RootCAs: pool}, stop: make(chan struct{})}
	f.wg.Add(1)
	go f.refresh()
	t.Cleanup(f.close)
	return f
}

// open opens perSource connections from each of sources, eight at a
// time, and stops early after 100 failures (a node out of descriptors
// fails them all). It returns how many were served.
func (f *apiFlood) open(sources []net.IP, perSource int) (served, failed int) {
	var ok, bad atomic.Int64
	jobs := make(chan net.IP)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for src := range jobs {
				c, err := idleconn.DialKeptAlive(f.addr, src, f.tls, "/livez")
				if err != nil {
					bad.Add(1)
					continue
				}
				ok.Add(1)
				f.mu.Lock()
				f.conns = append(f.conns, c)
				f.mu.Unlock()
			}
		}()
	}
feed:
	for range perSource {
		for _, src := range sources {
			if bad.Load() >= 100 {
				break feed
			}
			jobs <- src
		}
	}
	close(jobs)
	wg.Wait()
	return int(ok.Load()), int(bad.Load())
}

// refresh sends another request on every connection every 20 s and
// forgets those the node closed.
func (f *apiFlood) refresh() {
	defer f.wg.Done()
	tick := time.NewTicker(20 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-tick.C:
		}
		f.mu.Lock()
		conns := f.conns
		f.conns = nil
		f.mu.Unlock()
		var kept []*idleconn.KeptAlive
		for _, c := range conns {
			if c.Get("/livez") == nil {
				kept = append(kept, c)
			} else {
				_ = c.Close()
			}
		}
		f.mu.Lock()
		f.conns = append(f.conns, kept...)
		f.mu.Unlock()
	}
}

func (f *apiFlood) close() {
	select {
	case <-f.stop:
		return
	default:
	}
	close(f.stop)
	f.wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.conns {
		_ = c.Close()
	}
	f.conns = nil
}

// apiMetric reads one unlabelled sample from n's /metrics.
func apiMetric(w *World, n *Node, name string) (float64, error) {
	code, body, err := w.get(n, "/metrics")
	if err != nil {
		return 0, err
	}
	if code != http.StatusOK {
		return 0, fmt.Errorf("GET /metrics: status %d", code)
	}
	for line := range strings.Lines(body) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+" "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, fmt.Errorf("metric %s not served", name)
}

// raftHandshake completes a TLS handshake with n's raft port as peer p
// does, with p's certificate: the node has accepted the connection.
func raftHandshake(w *World, n, p *Node) error {
	pair, err := tls.LoadX509KeyPair(w.path("node-"+p.ID+".crt"), w.path("node-"+p.ID+".key"))
	if err != nil {
		return err
	}
	pem, err := os.ReadFile(w.CAFile)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", n.RaftAddr, &tls.Config{
		Certificates: []tls.Certificate{pair}, RootCAs: pool, ServerName: n.IP, MinVersion: tls.VersionTLS13,
	})
	if err != nil {
		return err
	}
	return c.Close()
}

// TestAPIFloodLeavesFilesForProbesPeersAndClients runs one watcher with an
// open file limit of 1,200 and floods its API with kept-alive
// connections: 3,000 from one address, then 32 from each of 64
// addresses. While each flood is held the watcher's API stays within its
// budget (the limit less the reserve of 512), its own probes still open
// connections and vote the sites UP, a peer still completes a raft
// handshake with it, another client's API call is served, and afterwards
// a restarted peer rejoins.
func TestAPIFloodLeavesFilesForProbesPeersAndClients(t *testing.T) {
	const fileLimit = 1200
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur < 8000 || lim.Max < fileLimit {
		t.Fatalf("open file limit %d (hard %d): the flood's client ends need 8000 here (ulimit -Hn, or LimitNOFILE in the CI unit)", lim.Cur, lim.Max)
	}
	w := New(t, Options{})
	target := w.Nodes[0]
	target.FileLimit = fileLimit
	for _, n := range w.Nodes {
		if err := n.Start(); err != nil {
			t.Fatalf("start node %s: %v", n.ID, err)
		}
	}
	w.WaitHealthy(90 * time.Second)
	budget := float64(fileLimit - 512)
	if got, err := apiMetric(w, target, "drwatch_api_connection_limit"); err != nil || got != budget {
		t.Fatalf("node %s with %d files: API connection limit %v, %v; want %v", target.ID, fileLimit, got, err, budget)
	}

	for _, tt := range []struct {
		name      string
		sources   int
		perSource int
		fillTotal bool // enough to hold the whole budget
	}{
		{"3000 from one address", 1, 3000, false},
		{"32 from each of 64 addresses", 64, 32, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := startAPIFlood(t, w, target)
			var srcs []net.IP
			for i := range tt.sources {
				srcs = append(srcs, net.IPv4(127, 9, byte(i/250), byte(i%250+1)))
			}
			served, failed := f.open(srcs, tt.perSource)
			t.Logf("flood: %d connections served, %d failed", served, failed)

			// Another client, from 127.0.0.1.
			if !poll.Within(10*time.Second, func() bool { _, err := w.Status(target); return err == nil }) {
				t.Errorf("another client's API call to %s during the flood: not served within 10s", target.ID)
			}
			open, err := apiMetric(w, target, "drwatch_api_open_connections")
			t.Logf("open API connections during the flood: %v of %v", open, budget)
			if err != nil {
				t.Errorf("open API connections during the flood: %v", err)
			} else if open > budget || (tt.fillTotal && open < budget-16) {
				t.Errorf("open API connections during the flood: %v, want at most %v and, for a flood that fills it, near it", open, budget)
			} else if !tt.fillTotal && open > 32+8 {
				t.Errorf("open API connections during a flood from one address: %v, want its cap of 32 and a few of ours", open)
			}

			// The watcher's own probes open connections and vote UP.
			before := map[failover.Site]uint64{}
			for s, site := range w.Sites {
				before[s] = site.Proxies[target.ID].Stats().Accepted
			}
			poll.For(t, 60*time.Second, "node "+target.ID+"'s probes to connect 3 more times to each site and vote UP", func() bool {
				for s, site := range w.Sites {
					if site.Proxies[target.ID].Stats().Accepted < before[s]+3 {
						return false
					}
				}
				v, ok := w.LeaderView()
				if !ok {
					return false
				}
				for _, s := range []failover.Site{failover.Primary, failover.Backup} {
					if !slices.Contains(v.State.Sites[s].Up, target.ID) {
						return false
					}
				}
				return true
			})

			// A peer's raft connection.
			if !poll.Within(10*time.Second, func() bool { return raftHandshake(w, target, w.Nodes[1]) == nil }) {
				t.Errorf("peer %s's raft handshake with %s during the flood: %v", w.Nodes[1].ID, target.ID, raftHandshake(w, target, w.Nodes[1]))
			}
			if lines := LogLines(target, "too many open files"); len(lines) > 0 {
				t.Errorf("node %s logged %d lines with too many open files, first: %s", target.ID, len(lines), lines[0])
			}

			if tt.fillTotal {
				// A peer restarted into the flood rejoins.
				peer := w.Nodes[1]
				if _, err := peer.Term(20 * time.Second); err != nil {
					t.Fatalf("stop %s: %v", peer.ID, err)
				}
				if err := peer.Start(); err != nil {
					t.Fatalf("restart %s: %v", peer.ID, err)
				}
				poll.For(t, 90*time.Second, "restarted peer "+peer.ID+" to follow a leader and vote both sites UP", func() bool {
					s, err := w.Status(peer)
					if err != nil || s.Leader == "" {
						return false
					}
					v, ok := w.LeaderView()
					return ok && slices.Contains(v.State.Sites[failover.Primary].Up, peer.ID) && slices.Contains(v.State.Sites[failover.Backup].Up, peer.ID)
				})
			}
			if open, err := apiMetric(w, target, "drwatch_api_open_connections"); err == nil && tt.fillTotal && open < budget-64 {
				t.Errorf("open API connections at the end of the checks: %v, want the flood still near %v", open, budget)
			}
		})
	}
}
