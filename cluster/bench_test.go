package cluster

import (
	"context"
	"fmt"
	"github.com/drwatch/drwatch/test/poll"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// reportCmd is a report-sized command (~2 KiB), like an Observe of one
// node's probe round.
func reportCmd(i int) []byte {
	b := make([]byte, 2048)
	copy(b, fmt.Sprintf("report %d ", i))
	for j := 32; j < len(b); j++ {
		b[j] = byte('a' + (i+j)%26)
	}
	return b
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// BenchmarkCommit measures the latency of one ~2 KiB command from Propose
// to applied-on-the-leader (a commit needs the leader's and one follower's
// fsync plus a round trip), proposed on the leader and on a follower
// (forwarded). The floor is a bare request/response on an established
// mTLS connection between the same two nodes, measured in the same run:
// commit/floor says how much raft and the disks add to the network.
func BenchmarkCommit(b *testing.B) {
	tc := newCluster(b, 3, nil)
	defer func() {
		for _, nd := range tc.nodes {
			nd.node.kill()
		}
	}()
	l := tc.leader(30 * time.Second)
	f := tc.follower(l)
	ctx := context.Background()

	// Floor: ping from the follower to the leader over pooled mTLS.
	floor := make([]time.Duration, 0, 200)
	for range 200 {
		t0 := time.Now()
		if _, err := f.node.forward(ctx, l.id, l.addr, rpcRequest{Op: opPing}); err != nil {
			b.Fatal(err)
		}
		floor = append(floor, time.Since(t0))
	}
	floorP50 := percentile(floor, 0.5)

	for _, on := range []struct {
		name string
		nd   *tnode
	}{{"leader", l}, {"follower", f}} {
		b.Run(on.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			b.SetBytes(2048)
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				if _, _, err := on.nd.node.Propose(ctx, reportCmd(i)); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			p50, p99 := percentile(lat, 0.5), percentile(lat, 0.99)
			b.ReportMetric(float64(p50.Microseconds()), "p50-µs")
			b.ReportMetric(float64(p99.Microseconds()), "p99-µs")
			b.ReportMetric(float64(floorP50.Microseconds()), "floor-p50-µs")
			b.ReportMetric(float64(p50)/float64(floorP50), "p50/floor")
			b.ReportMetric(float64(p99)/float64(floorP50), "p99/floor")
		})
	}
}

// lastReportSM keeps the latest report per sender: bounded state, like
// drwatch's counters and verdicts.
type lastReportSM struct {
	mu   sync.Mutex
	last map[byte][]byte
}

func (s *lastReportSM) Apply(_ uint64, cmd []byte) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last[cmd[len(cmd)-1]%3] = slices.Clone(cmd)
	return nil
}

func (s *lastReportSM) Snapshot() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []byte
	for k := range byte(3) {
		out = append(out, s.last[k]...)
	}
	return out, nil
}

func (s *lastReportSM) Restore([]byte) error { return nil }

// BenchmarkDiskGrowth proposes three hours' worth of reports (3 nodes × 1
// report/s = 10800 per hour, as fast as the cluster takes them) into a
// three-node cluster with the default snapshot and truncation settings, as
// a deployed node has them (SnapshotThreshold 256, TrailingLogs 128;
// SnapshotInterval shortened to 1s so the threshold is checked within the
// compressed run), and
// measures the data dirs after each hour. After truncation bolt reuses its
// free pages, so the last hour's growth is the long-run growth; bolt
// allocates file space in 16 MiB steps, so sizes move in plateaus.
func BenchmarkDiskGrowth(b *testing.B) {
	const round = 1800 // 10 minutes of 3 nodes × 1 report/s
	for range b.N {
		tc := newClusterNoStart(b, 3, func(_ int, c *Config) {
			c.SnapshotThreshold = DefaultSnapshotThreshold
			c.TrailingLogs = DefaultTrailingLogs
			c.SnapshotInterval = time.Second
			// Production timeouts: under this load the fast test ones
			// would trigger elections that have nothing to do with disk.
			c.HeartbeatTimeout, c.ElectionTimeout = DefaultHeartbeatTimeout, DefaultElectionTimeout
			c.LeaderLeaseTimeout, c.CommitTimeout = DefaultLeaderLeaseTimeout, DefaultCommitTimeout
		})
		for _, nd := range tc.nodes {
			sm := &lastReportSM{last: map[byte][]byte{}}
			cfg := nd.cfg
			cfg.BindAddr = nd.addr
			n, err := New(context.Background(), cfg, sm)
			if err != nil {
				b.Fatal(err)
			}
			nd.node = n
		}
		l := tc.leader(30 * time.Second)
		size := func() int64 {
			var total int64
			for _, nd := range tc.nodes {
				total += dirSize(b, nd.dir)
			}
			return total
		}
		propose := func(from int) {
			var wg sync.WaitGroup
			sem := make(chan struct{}, 16)
			for i := from; i < from+round; i++ {
				sem <- struct{}{}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer func() { <-sem }()
					if _, _, err := l.node.Propose(context.Background(), reportCmd(i)); err != nil {
						b.Error(err)
					}
				}()
			}
			wg.Wait()
		}
		// Let every node snapshot and truncate before measuring.
		settle := func() {
			idx := l.node.Stats().LastIndex
			for _, nd := range tc.nodes {
				poll.Until(b, 30*time.Second, func() bool {
					st := nd.node.Stats()
					return st.AppliedIndex >= idx && int64(idx)-int64(st.LastSnapshotIndex) <= DefaultSnapshotThreshold+16
				}, "node %s applies index %d and snapshots near it", nd.id, idx)
			}
		}
		start := time.Now()
		const hours = 3
		var sizes []int64
		for h := range hours {
			for r := range 6 {
				propose((h*6 + r) * round)
			}
			settle()
			sizes = append(sizes, size())
		}
		el := time.Since(start)
		if os.Getenv("CLUSTER_DEBUG") != "" {
			for _, nd := range tc.nodes {
				_ = filepath.Walk(nd.dir, func(p string, info os.FileInfo, err error) error {
					if err == nil && !info.IsDir() {
						b.Logf("%s %d", p, info.Size())
					}
					return nil
				})
			}
		}
		for h, sz := range sizes {
			b.ReportMetric(float64(sz)/float64(len(tc.nodes))/(1<<20), fmt.Sprintf("MiB/node-after-%dh", h+1))
		}
		b.ReportMetric(float64(sizes[hours-1]-sizes[hours-2])/(1<<20), "MiB-growth-last-hour-3nodes")
		b.ReportMetric(float64(hours*6*round)/el.Seconds(), "reports/s")
		for _, nd := range tc.nodes {
			nd.node.kill()
		}
	}
}
