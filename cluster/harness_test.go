package cluster

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/test/daemon"
	"github.com/drwatch/drwatch/test/poll"
	dto "github.com/prometheus/client_model/go"
)

// listSM is the test state machine: an append-only list of commands.
type listSM struct {
	mu       sync.Mutex
	items    []string
	restores int
}

func (s *listSM) Apply(index uint64, cmd []byte) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items = append(s.items, string(cmd))
	return fmt.Appendf(nil, "n=%d", len(s.items))
}

func (s *listSM) Snapshot() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return json.Marshal(s.items)
}

func (s *listSM) Restore(state []byte) error {
	var items []string
	if err := json.Unmarshal(state, &items); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items = items
	s.restores++
	return nil
}

func (s *listSM) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.items)
}

func (s *listSM) restoreCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restores
}

// logRecord is one captured log line.
type logRecord struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

// logSink captures every record of one node, for assertions and for a
// dump when a test fails.
type logSink struct {
	mu      sync.Mutex
	records []logRecord
}

type sinkHandler struct {
	s     *logSink
	attrs []slog.Attr
}

func (h *sinkHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *sinkHandler) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	for _, a := range h.attrs {
		rec.attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.attrs[a.Key] = a.Value.String()
		return true
	})
	h.s.mu.Lock()
	h.s.records = append(h.s.records, rec)
	h.s.mu.Unlock()
	return nil
}
func (h *sinkHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &sinkHandler{s: h.s, attrs: append(slices.Clone(h.attrs), as...)}
}
func (h *sinkHandler) WithGroup(string) slog.Handler { return h }

func (s *logSink) count(msg string, match map[string]string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.records {
		if r.msg != msg {
			continue
		}
		ok := true
		for k, v := range match {
			if r.attrs[k] != v {
				ok = false
			}
		}
		if ok {
			n++
		}
	}
	return n
}

// atLeast returns the records at level or above.
func (s *logSink) atLeast(level slog.Level) []logRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []logRecord
	for _, r := range s.records {
		if r.level >= level {
			out = append(out, r)
		}
	}
	return out
}

func (s *logSink) dump(t testing.TB, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if os.Getenv("CLUSTER_DEBUG") != "" {
		f, _ := os.Create("/tmp/cluster-" + id + ".log")
		for _, r := range s.records {
			fmt.Fprintf(f, "%s %s %v\n", r.level, r.msg, r.attrs)
		}
		f.Close()
	}
	from := max(0, len(s.records)-400)
	for _, r := range s.records[from:] {
		if r.level < slog.LevelInfo && os.Getenv("CLUSTER_DEBUG") == "" {
			continue
		}
		t.Logf("[%s] %s %s %v", id, r.level, r.msg, r.attrs)
	}
}

// testCA is one certificate authority and the credentials it issues.
type testCA struct {
	cert          *x509.Certificate
	certPEM, keyP []byte
}

func newTestCA(t testing.TB, name string) *testCA {
	t.Helper()
	c, k, err := NewCA(name, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, _, err := ParseCA(c, k)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, certPEM: c, keyP: k}
}

func (ca *testCA) creds(t testing.TB, id string) *Credentials {
	t.Helper()
	cert, key, err := ParseCA(ca.certPEM, ca.keyP)
	if err != nil {
		t.Fatal(err)
	}
	cp, kp, err := IssueNodeCert(cert, key, id, []string{"127.0.0.1", "localhost"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c, err := CredentialsFromPEM(ca.certPEM, cp, kp)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Test timeouts: fast, but loose enough for -race on two busy cores.
const (
	testHeartbeat = 500 * time.Millisecond
	testElection  = 500 * time.Millisecond
)

func testConfig() Config {
	return Config{
		RaftTiming: RaftTiming{
			HeartbeatTimeout:   testHeartbeat,
			ElectionTimeout:    testElection,
			LeaderLeaseTimeout: testHeartbeat / 2,
			CommitTimeout:      10 * time.Millisecond,
			SnapshotInterval:   time.Hour, // tests snapshot explicitly unless they say so
			SnapshotThreshold:  1 << 20,
			TrailingLogs:       1 << 20,
		},
		TransportTimeout: 2 * time.Second,
		HandshakeTimeout: 2 * time.Second,
	}
}

// electionBound is how long a new leader may take once the old one is
// gone, derived from the configuration:
//   - followers notice the silence within 2×HeartbeatTimeout (raft
//     randomises the heartbeat timeout in [HT, 2×HT));
//   - a pre-vote plus vote round takes at most 2×ElectionTimeout, and we
//     allow 3 rounds for split votes;
//   - plus a fixed 5 s for scheduling under -race on two shared cores.
func electionBound(c Config) time.Duration {
	return 2*c.HeartbeatTimeout + 3*2*c.ElectionTimeout + 5*time.Second
}

// tnode is one node of a test cluster, with everything needed to restart it.
type tnode struct {
	id, dir, addr string
	creds         *Credentials
	cfg           Config
	node          *Node
	sm            *listSM
	logs          *logSink
}

type tcluster struct {
	t     testing.TB
	ca    *testCA
	nodes []*tnode
	peers []Peer
}

// newCluster starts n nodes on 127.0.0.1 with configs adjusted by tweak.
func newCluster(t testing.TB, n int, tweak func(i int, c *Config)) *tcluster {
	t.Helper()
	tc := newClusterNoStart(t, n, tweak)
	for _, nd := range tc.nodes {
		tc.startWith(nd, nil)
	}
	return tc
}

// newClusterNoStart prepares n nodes (addresses, certificates, configs)
// without starting them.
func newClusterNoStart(t testing.TB, n int, tweak func(i int, c *Config)) *tcluster {
	t.Helper()
	tc := &tcluster{t: t, ca: newTestCA(t, "test-ca")}
	// Reserved for the test process, outside the ephemeral range: a node
	// stopped for a while gets its port back on restart, whatever else
	// the machine connects to meanwhile.
	ports, err := daemon.FreePorts(n)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		id := string(rune('a' + i))
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[i]))
		tc.nodes = append(tc.nodes, &tnode{id: id, dir: filepath.Join(t.TempDir(), id), addr: addr, creds: tc.ca.creds(t, id)})
	}
	for _, nd := range tc.nodes {
		tc.peers = append(tc.peers, Peer{ID: nd.id, RaftAddr: nd.addr})
	}
	for i, nd := range tc.nodes {
		nd.cfg = testConfig()
		nd.cfg.NodeID, nd.cfg.DataDir, nd.cfg.Peers, nd.cfg.TLS = nd.id, nd.dir, tc.peers, nd.creds
		if tweak != nil {
			tweak(i, &nd.cfg)
		}
	}
	t.Cleanup(func() {
		for _, nd := range tc.nodes {
			if nd.node != nil {
				nd.node.kill()
			}
			if t.Failed() && nd.logs != nil {
				nd.logs.dump(t, nd.id)
			}
		}
	})
	return tc
}

func (tc *tcluster) startWith(nd *tnode, ln net.Listener) {
	tc.t.Helper()
	if ln == nil {
		var err error
		ln, err = listenEventually(tc.t, nd.addr)
		if err != nil {
			tc.t.Fatalf("relisten %s: %v", nd.addr, err)
		}
	}
	nd.sm = &listSM{}
	if nd.logs == nil {
		nd.logs = &logSink{}
	}
	cfg := nd.cfg
	cfg.Listener = ln
	cfg.Logger = slog.New(&sinkHandler{s: nd.logs})
	n, err := New(context.Background(), cfg, nd.sm)
	if err != nil {
		tc.t.Fatalf("start %s: %v", nd.id, err)
	}
	nd.node = n
}

// listenEventually re-binds a port a stopped node just released.
func listenEventually(t testing.TB, addr string) (net.Listener, error) {
	var ln net.Listener
	var err error
	poll.WithinEvery(10*time.Second, 20*time.Millisecond, func() bool {
		ln, err = net.Listen("tcp", addr)
		return err == nil
	})
	return ln, err
}

func (tc *tcluster) stop(nd *tnode) {
	tc.t.Helper()
	nd.node.kill()
	nd.node = nil
}

func (tc *tcluster) restart(nd *tnode) {
	tc.t.Helper()
	if nd.node != nil {
		tc.stop(nd)
	}
	tc.startWith(nd, nil)
}

func (tc *tcluster) running() []*tnode {
	var out []*tnode
	for _, nd := range tc.nodes {
		if nd.node != nil {
			out = append(out, nd)
		}
	}
	return out
}

// leader waits until the running nodes agree on one leader among them.
func (tc *tcluster) leader(d time.Duration) *tnode {
	tc.t.Helper()
	var l *tnode
	poll.For(tc.t, d, "a leader all running nodes agree on", func() bool {
		l = nil
		var id string
		for _, nd := range tc.running() {
			lid, _ := nd.node.Leader()
			if lid == "" || (id != "" && lid != id) {
				return false
			}
			id = lid
		}
		for _, nd := range tc.running() {
			if nd.id == id && nd.node.IsLeader() {
				l = nd
			}
		}
		return l != nil
	})
	return l
}

func (tc *tcluster) follower(l *tnode) *tnode {
	for _, nd := range tc.running() {
		if nd != l {
			return nd
		}
	}
	tc.t.Fatal("no follower running")
	return nil
}

func (tc *tcluster) byID(id string) *tnode {
	for _, nd := range tc.nodes {
		if nd.id == id {
			return nd
		}
	}
	return nil
}

// propose proposes on nd and fails the test on error.
func (tc *tcluster) propose(nd *tnode, cmd string) ([]byte, uint64) {
	tc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, idx, err := nd.node.Propose(ctx, []byte(cmd))
	if err != nil {
		for _, o := range tc.running() {
			st := o.node.Stats()
			tc.t.Logf("%s: state %s term %d last %d commit %d applied %d leader %s", o.id, st.State, st.Term, st.LastIndex, st.CommitIndex, st.AppliedIndex, st.LeaderID)
		}
		if os.Getenv("CLUSTER_DEBUG") != "" {
			f, _ := os.Create("/tmp/cluster-goroutines.txt")
			_ = pprof.Lookup("goroutine").WriteTo(f, 2)
			f.Close()
		}
		tc.t.Fatalf("propose %q on %s: %v", cmd, nd.id, err)
	}
	return resp, idx
}

// converged waits until every running node's list equals want.
func (tc *tcluster) converged(d time.Duration, want []string) {
	tc.t.Helper()
	for _, nd := range tc.running() {
		poll.For(tc.t, d, fmt.Sprintf("node %s to hold %d items", nd.id, len(want)), func() bool {
			return slices.Equal(nd.sm.list(), want)
		})
	}
}

func counterValue(t testing.TB, c interface{ Write(*dto.Metric) error }) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func items(prefix string, n int) []string {
	out := make([]string, n)
	for i := range n {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

func dirSize(t testing.TB, dir string) int64 {
	t.Helper()
	var total int64
	err := filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if !info.IsDir() {
			total += info.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return total
}

var _ = bytes.Equal
var _ = strings.Contains
