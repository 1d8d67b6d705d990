package cluster

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func TestEnvelopeRoundTrip(t *testing.T) {
	tests := []struct {
		name     string
		key, cmd []byte
	}{
		{"keyed", []byte("0123456789abcdef"), []byte("cmd")},
		{"no key", nil, []byte("cmd")},
		{"empty command", []byte("k"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, c, err := decodeEnvelope(encodeEnvelope(tt.key, tt.cmd))
			if err != nil || !bytes.Equal(k, tt.key) || !bytes.Equal(c, tt.cmd) {
				t.Fatalf("got (%q, %q, %v), want (%q, %q, nil)", k, c, err, tt.key, tt.cmd)
			}
		})
	}
	for _, bad := range [][]byte{nil, {9, 0}, {envelopeV1, 5, 'a'}} {
		if _, _, err := decodeEnvelope(bad); err == nil {
			t.Fatalf("decodeEnvelope(%v): got nil error, want one", bad)
		}
	}
}

func applyN(f *fsm, start uint64, keys ...string) []applyResult {
	var out []applyResult
	for i, k := range keys {
		var key []byte
		if k != "" {
			key = []byte(k)
		}
		r := f.Apply(&raft.Log{Index: start + uint64(i), Data: encodeEnvelope(key, []byte("cmd-"+k))})
		out = append(out, r.(applyResult))
	}
	return out
}

func TestFSMDedupe(t *testing.T) {
	sm := &listSM{}
	f := newFSM(sm, 3)
	rs := applyN(f, 1, "k1", "k2", "k1", "", "")
	if rs[2].index != 1 || !rs[2].dup || string(rs[2].resp) != "n=1" {
		t.Fatalf("duplicate k1: got %+v, want the first answer (index 1, n=1)", rs[2])
	}
	if got := sm.list(); len(got) != 4 {
		t.Fatalf("applied: got %v, want 4 commands (k1 once, two keyless)", got)
	}
	// The table keeps the 3 newest keys: k1 falls out after three more.
	applyN(f, 6, "k3", "k4", "k5")
	if r := applyN(f, 9, "k1")[0]; r.dup {
		t.Fatalf("k1 after eviction: got dup, want applied again")
	}
	if r := applyN(f, 10, "k5")[0]; !r.dup || r.index != 8 {
		t.Fatalf("k5: got %+v, want dup of index 8", r)
	}
	if n := f.dedupeLen(); n != 3 {
		t.Fatalf("table size: got %d, want 3", n)
	}
}

func TestFSMBadEnvelopeIsAnErrorNotAPanic(t *testing.T) {
	f := newFSM(&listSM{}, 3)
	r := f.Apply(&raft.Log{Index: 7, Data: []byte("junk")}).(applyResult)
	if r.err == nil {
		t.Fatalf("got nil error, want one")
	}
}

// memSink is a raft.SnapshotSink in memory.
type memSink struct {
	bytes.Buffer
	cancelled, closed bool
	failAfter         int
}

func (s *memSink) Write(p []byte) (int, error) {
	if s.failAfter > 0 && s.Len()+len(p) > s.failAfter {
		return 0, errors.New("disk full")
	}
	return s.Buffer.Write(p)
}
func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }
func (s *memSink) Close() error  { s.closed = true; return nil }

func TestFSMSnapshotRestore(t *testing.T) {
	sm := &listSM{}
	f := newFSM(sm, 10)
	applyN(f, 1, "a", "b", "", "c")
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil || !sink.closed || sink.cancelled {
		t.Fatalf("persist: got %v closed=%v cancelled=%v, want nil, closed", err, sink.closed, sink.cancelled)
	}
	sm2 := &listSM{}
	f2 := newFSM(sm2, 10)
	if err := f2.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sm2.list(), sm.list()) {
		t.Fatalf("restored list: got %v, want %v", sm2.list(), sm.list())
	}
	// The dedupe table came along: a retry of b is recognised.
	if r := applyN(f2, 5, "b")[0]; !r.dup || r.index != 2 {
		t.Fatalf("retry of b after restore: got %+v, want dup of index 2", r)
	}
	// Snapshot then Restore is the identity: snapshot again, compare bytes.
	snap2, _ := f.Snapshot()
	var again memSink
	_ = snap2.Persist(&again)
	if !bytes.Equal(again.Bytes(), sink.Bytes()) {
		t.Fatalf("second snapshot differs from the first")
	}
}

func TestPersistCancelsOnError(t *testing.T) {
	f := newFSM(&listSM{}, 10)
	applyN(f, 1, strings.Repeat("k", 200))
	snap, _ := f.Snapshot()
	sink := &memSink{failAfter: 10}
	if err := snap.Persist(sink); err == nil || !sink.cancelled || sink.closed {
		t.Fatalf("got %v cancelled=%v closed=%v, want an error and Cancel, no Close", err, sink.cancelled, sink.closed)
	}
}

func TestReadSnapshotRejectsCorruption(t *testing.T) {
	var good bytes.Buffer
	if err := writeSnapshot(&good, []dedupeEntry{{key: "k", index: 3, resp: []byte("r")}}, []byte(`["x"]`)); err != nil {
		t.Fatal(err)
	}
	tests := map[string][]byte{
		"empty":     nil,
		"bad magic": []byte("XXXX\x01\x00\x00"),
		"truncated": good.Bytes()[:good.Len()-2],
		"huge len":  append([]byte(snapshotMagic), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f),
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			if _, _, err := readSnapshot(bufio.NewReader(bytes.NewReader(in))); err == nil {
				t.Fatalf("got nil error, want one")
			}
		})
	}
}

func FuzzReadSnapshot(f *testing.F) {
	var good bytes.Buffer
	_ = writeSnapshot(&good, []dedupeEntry{{key: "k", index: 3, resp: []byte("r")}}, []byte(`["x"]`))
	f.Add(good.Bytes())
	f.Fuzz(func(t *testing.T, in []byte) {
		entries, state, err := readSnapshot(bufio.NewReader(bytes.NewReader(in)))
		if err != nil {
			return
		}
		// Whatever parses must write back to a parseable snapshot.
		var out bytes.Buffer
		if err := writeSnapshot(&out, entries, state); err != nil {
			t.Fatal(err)
		}
		e2, s2, err := readSnapshot(bufio.NewReader(&out))
		if err != nil || len(e2) != len(entries) || !bytes.Equal(s2, state) {
			t.Fatalf("round trip: got %d entries, %v", len(e2), err)
		}
	})
}

func TestCerts(t *testing.T) {
	ca := newTestCA(t, "ca")
	c := ca.creds(t, "node-1")
	if c.NodeID() != "node-1" {
		t.Fatalf("NodeID: got %q, want node-1", c.NodeID())
	}
	if !c.state().leaf.NotAfter.After(time.Now()) || len(c.state().leaf.IPAddresses) != 1 || !slices.Contains(c.state().leaf.DNSNames, "localhost") {
		t.Fatalf("leaf: got NotAfter %v IPs %v DNS %v", c.state().leaf.NotAfter, c.state().leaf.IPAddresses, c.state().leaf.DNSNames)
	}
	if got := IdentityURI("node-1").String(); got != "drwatch://node/node-1" {
		t.Fatalf("IdentityURI: got %q, want drwatch://node/node-1", got)
	}
	other := newTestCA(t, "other")
	cp, kp := mustIssue(t, ca, "x")
	if _, err := CredentialsFromPEM(other.certPEM, cp, kp); err == nil {
		t.Fatalf("cert from another CA: got nil error, want refusal")
	}
	cert, _, _ := ParseCA(ca.certPEM, ca.keyP)
	for name, uris := range map[string][]string{
		"none":     {"https://example.org/"},
		"two":      {"drwatch://node/a", "drwatch://node/b"},
		"bad id":   {"drwatch://node/a%20b"},
		"empty id": {"drwatch://node/"},
	} {
		t.Run(name, func(t *testing.T) {
			leaf := *cert
			leaf.URIs = nil
			for _, u := range uris {
				pu, err := url.Parse(u)
				if err != nil {
					t.Fatal(err)
				}
				leaf.URIs = append(leaf.URIs, pu)
			}
			if id, err := NodeIDFromCert(&leaf); err == nil {
				t.Fatalf("got id %q, want an error", id)
			}
		})
	}
}

func mustIssue(t *testing.T, ca *testCA, id string) (certPEM, keyPEM []byte) {
	t.Helper()
	cert, key, err := ParseCA(ca.certPEM, ca.keyP)
	if err != nil {
		t.Fatal(err)
	}
	cp, kp, err := IssueNodeCert(cert, key, id, nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return cp, kp
}

func TestValidNodeID(t *testing.T) {
	tests := []struct {
		id string
		ok bool
	}{
		{"a", true}, {"watcher-1.site_b", true}, {"", false}, {"a b", false},
		{"a/b", false}, {strings.Repeat("x", 64), true}, {strings.Repeat("x", 65), false},
	}
	for _, tt := range tests {
		if err := ValidNodeID(tt.id); (err == nil) != tt.ok {
			t.Fatalf("ValidNodeID(%q): got %v, want ok=%v", tt.id, err, tt.ok)
		}
	}
	if _, _, err := IssueNodeCert(nil, nil, "bad id", nil, time.Hour); !errors.Is(err, ErrBadNodeID) {
		t.Fatalf("IssueNodeCert with bad id: got %v, want ErrBadNodeID", err)
	}
}

func TestConfigValidateReportsEverything(t *testing.T) {
	c := Config{NodeID: "a b", Peers: []Peer{{ID: "x", RaftAddr: "nope"}, {ID: "x", RaftAddr: "127.0.0.1:1"}},
		RaftTiming: RaftTiming{HeartbeatTimeout: time.Second, LeaderLeaseTimeout: 2 * time.Second}}
	err := c.withDefaults().validate()
	for _, want := range []string{"node_id", "data_dir", "bind_addr", "tls", "peers[0].raft_addr", "peers[1].id", "leader_lease_timeout"} {
		if err == nil || !strings.Contains(err.Error(), want+":") {
			t.Fatalf("validate: got %v, want a problem for %s", err, want)
		}
	}
}

func TestErrorCodesSurviveTheWire(t *testing.T) {
	for _, c := range errorCodes {
		t.Run(c.code, func(t *testing.T) {
			wrapped := fmt.Errorf("remove x: %w", c.err)
			got := decodeError(encodeError(wrapped))
			if !errors.Is(got, c.err) {
				t.Fatalf("got %v, want errors.Is %v", got, c.err)
			}
			if got.Error() != wrapped.Error() {
				t.Fatalf("message: got %q, want %q", got.Error(), wrapped.Error())
			}
		})
	}
	var re *RemoteError
	if got := decodeError(encodeError(errors.New("other"))); !errors.As(got, &re) || re.Msg != "other" {
		t.Fatalf("unknown error: got %v, want RemoteError(other)", got)
	}
	if decodeError(rpcResponse{}) != nil {
		t.Fatalf("success decoded as an error")
	}
}

func TestRefusalLogOncePerInterval(t *testing.T) {
	r := &refusalLog{interval: time.Minute, last: map[string]time.Time{}}
	t0 := time.Unix(1000, 0)
	steps := []struct {
		key  string
		at   time.Duration
		want bool
	}{
		{"p", 0, true}, {"p", time.Second, false}, {"q", time.Second, true},
		{"p", 59 * time.Second, false}, {"p", 61 * time.Second, true},
	}
	for i, s := range steps {
		if got := r.allow(s.key, t0.Add(s.at)); got != s.want {
			t.Fatalf("step %d allow(%s, +%s): got %v, want %v", i, s.key, s.at, got, s.want)
		}
	}
}

func TestConfigRaftPartsReplaceDataDir(t *testing.T) {
	c := Config{NodeID: "a", BindAddr: "127.0.0.1:1", Raft: &RaftParts{Log: raft.NewInmemStore()}}
	err := c.withDefaults().validate()
	if err == nil || !strings.Contains(err.Error(), "raft: transport, log, stable and snapshot stores are all required") {
		t.Fatalf("validate with a partial Raft: got %v, want a problem for raft", err)
	}
	if strings.Contains(err.Error(), "data_dir:") {
		t.Fatalf("validate with Raft set: got %v, want no data_dir problem (the stores replace it)", err)
	}
	s := raft.NewInmemStore()
	_, tr := raft.NewInmemTransport("")
	c.Raft = &RaftParts{Transport: tr, Log: s, Stable: s, Snapshots: raft.NewInmemSnapshotStore()}
	if err := c.withDefaults().validate(); err != nil && strings.Contains(err.Error(), "raft:") {
		t.Fatalf("validate with every Raft part: got %v, want no raft problem", err)
	}
}
