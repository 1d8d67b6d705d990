package dnsprovider_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/dnsprovider"
	"github.com/drwatch/drwatch/dnsprovider/dnstest"
	"github.com/miekg/dns"
)

// eachDone records VerifyEach's done calls, and when each came.
type eachDone struct {
	mu    sync.Mutex
	got   map[int]*dnsprovider.Verification
	at    map[int]time.Time
	twice []int
}

func newEachDone() *eachDone {
	return &eachDone{got: map[int]*dnsprovider.Verification{}, at: map[int]time.Time{}}
}

func (e *eachDone) done(i int, v *dnsprovider.Verification) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, dup := e.got[i]; dup {
		e.twice = append(e.twice, i)
	}
	e.got[i], e.at[i] = v, time.Now()
}

// TestVerifyEachReportsEachDecisionAsItsOwnVerifyWould: 40 decisions, more
// than the queries one server's socket has waiting at once, on two
// servers, one of which lags on a single decision. Each decision gets,
// once, the verdict its own Verify gives on every server; the laggard is
// named for that decision alone, and the others are handed their
// verification without waiting for it.
func TestVerifyEachReportsEachDecisionAsItsOwnVerifyWould(t *testing.T) {
	lagging, err := dnstest.Start("127.0.0.1:0", testZone)
	if err != nil {
		t.Fatal(err)
	}
	defer lagging.Close()
	p := newEmbeddedProvider(t, "_drwatch-each", false)
	const n, late = 40, 7
	desired := make([][]dnsprovider.RRset, n)
	for i := range desired {
		name := fmt.Sprintf("each%d", i)
		desired[i] = []dnsprovider.RRset{
			{Name: name, Type: "A", TTL: time.Minute, Values: []string{"198.51.100.10"}},
			{Name: name + "-txt", Type: "TXT", TTL: time.Minute, Values: []string{fmt.Sprintf("gen=%d", i)}},
		}
		if _, err := p.SetRecords(context.Background(), desired[i]); err != nil {
			t.Fatal(err)
		}
		a := "198.51.100.10"
		if i == late {
			a = "203.0.113.10"
		}
		if err := lagging.Seed(fmt.Sprintf("%s 60 IN A %s", name, a), fmt.Sprintf("%s-txt 60 IN TXT \"gen=%d\"", name, i)); err != nil {
			t.Fatal(err)
		}
	}
	const timeout = 2 * time.Second
	v, err := dnsprovider.NewVerifier(testZone, dnsprovider.VerifyConfig{
		Servers: []string{embedded.Addr(), lagging.Addr()}, Timeout: timeout, Interval: 20 * time.Millisecond,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	e := newEachDone()
	if err := v.VerifyEach(context.Background(), desired, e.done); err != nil {
		t.Fatalf("VerifyEach: %v", err)
	}
	if len(e.got) != n || len(e.twice) != 0 {
		t.Fatalf("done called for %d decisions (twice for %v), want each of %d once", len(e.got), e.twice, n)
	}
	for i := range desired {
		own, err := v.Verify(context.Background(), desired[i])
		if err != nil {
			t.Fatal(err)
		}
		got := e.got[i]
		if len(got.Servers) != len(own.Servers) {
			t.Fatalf("decision %d: got %d servers, want %d", i, len(got.Servers), len(own.Servers))
		}
		for k, s := range got.Servers {
			o := own.Servers[k]
			if s.Server != o.Server || s.Matched != o.Matched || !slices.EqualFunc(s.Got, o.Got, dnsprovider.RRset.Equal) {
				t.Errorf("decision %d, server %s: got matched=%v %v, want what Verify reports: %s matched=%v %v", i, s.Server, s.Matched, s.Got, o.Server, o.Matched, o.Got)
			}
			if s.Matched && s.After <= 0 {
				t.Errorf("decision %d, server %s: matched without a propagation time", i, s.Server)
			}
		}
		if i == late {
			if err := got.Err(); !errors.Is(err, dnsprovider.ErrNotPropagated) || !strings.Contains(err.Error(), lagging.Addr()) || strings.Contains(err.Error(), embedded.Addr()) {
				t.Errorf("lagging decision: got %v, want ErrNotPropagated naming only %s", err, lagging.Addr())
			}
			continue
		}
		if !got.OK() {
			t.Errorf("decision %d: got %v, want verified on both servers", i, got.Err())
		}
		// The laggard holds nobody: every other decision was handed its
		// verification well before the laggard's gave up.
		if e.at[i].Sub(start) >= timeout/2 {
			t.Errorf("decision %d: handed its verification %s after the start, want it before the laggard's give-up at %s", i, e.at[i].Sub(start), timeout)
		}
	}
	if e.at[late].Sub(start) < timeout {
		t.Errorf("lagging decision: handed its verdict %s after the start, want it at the give-up, %s", e.at[late].Sub(start), timeout)
	}
}

// TestVerifyEachAsksAgainOnItsOwnWhatItCannotUse: the replies that one
// socket cannot use are asked again as Verify asks them: a truncated one
// over TCP, a bad one (another question, carrying other records) on a
// query of its own; neither is believed, and both decisions verify. A
// query the server leaves unanswered once costs its decision the query
// timeout and a second round, while the others are handed theirs as
// their replies come.
func TestVerifyEachAsksAgainOnItsOwnWhatItCannotUse(t *testing.T) {
	var mu sync.Mutex
	udpAsked := map[string]int{}
	addr := startFake(t, goodKey(t), func(w dns.ResponseWriter, r *dns.Msg) {
		q := r.Question[0]
		name := strings.TrimSuffix(q.Name, "."+testZone)
		_, udp := w.RemoteAddr().(*net.UDPAddr)
		mu.Lock()
		if udp {
			udpAsked[name]++
		}
		first := udp && udpAsked[name] == 1
		mu.Unlock()
		m := reply(r, dns.RcodeSuccess)
		switch {
		case name == "quiet" && first:
			return
		case name == "big" && udp:
			m.Truncated = true
		case name == "odd" && first:
			m.Question[0].Name = "other." + testZone
			m.Answer = append(m.Answer, rr(q.Name+" 60 IN A 203.0.113.66"))
		default:
			m.Answer = append(m.Answer, rr(q.Name+" 60 IN A 192.0.2.7"))
		}
		_ = w.WriteMsg(m)
	})
	const queryTimeout = time.Second
	v, err := dnsprovider.NewVerifier(testZone, dnsprovider.VerifyConfig{
		Servers: []string{addr}, Timeout: 10 * time.Second, Interval: 10 * time.Millisecond, QueryTimeout: queryTimeout,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"www", "big", "odd", "quiet"}
	desired := make([][]dnsprovider.RRset, len(names))
	for i, name := range names {
		desired[i] = []dnsprovider.RRset{{Name: name, Type: "A", TTL: time.Minute, Values: []string{"192.0.2.7"}}}
	}
	start := time.Now()
	e := newEachDone()
	if err := v.VerifyEach(context.Background(), desired, e.done); err != nil {
		t.Fatalf("VerifyEach: %v", err)
	}
	if len(e.got) != len(names) || len(e.twice) != 0 {
		t.Fatalf("done called for %d decisions (twice for %v), want each of %d once", len(e.got), e.twice, len(names))
	}
	for i, name := range names {
		s := e.got[i].Servers[0]
		if !s.Matched {
			t.Errorf("%s: got unmatched, serving %v (%v), want verified", name, s.Got, s.Err)
		}
		at := e.at[i].Sub(start)
		if name == "quiet" {
			if at < queryTimeout {
				t.Errorf("quiet: handed its verification %s after the start, want it after the unanswered query's timeout (%s)", at, queryTimeout)
			}
		} else if at >= queryTimeout {
			t.Errorf("%s: handed its verification %s after the start, want it before the unanswered query's timeout (%s)", name, at, queryTimeout)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if udpAsked["odd"] != 2 || udpAsked["quiet"] != 2 || udpAsked["www"] != 1 {
		t.Errorf("got %v queries over udp, want odd asked again on its own, quiet in a second round, www once", udpAsked)
	}
}

// TestVerifyEachWithoutServersCallsDoneForNone: a server list that cannot
// be found is VerifyEach's error, and no decision is handed a verdict.
func TestVerifyEachWithoutServersCallsDoneForNone(t *testing.T) {
	v, err := dnsprovider.NewVerifier(testZone, dnsprovider.VerifyConfig{Resolver: "127.0.0.1:1", Timeout: time.Second, QueryTimeout: 200 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := newEachDone()
	err = v.VerifyEach(context.Background(), [][]dnsprovider.RRset{{{Name: "www", Type: "A", Values: []string{"192.0.2.7"}}}}, e.done)
	if err == nil || len(e.got) != 0 {
		t.Fatalf("got err %v and %d verdicts, want an error and none", err, len(e.got))
	}
}
