package faultproxy

import (
	"bufio"
	"errors"
	"fmt"
	"github.com/drwatch/drwatch/test/poll"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// echoServer answers every line with prefix+line. It stops at test cleanup.
func echoServer(t *testing.T, prefix string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := io.WriteString(c, prefix+line); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

func newProxy(t *testing.T, target string) *Proxy {
	t.Helper()
	p, err := New("127.0.0.1:0", target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

type client struct {
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{c, bufio.NewReader(c)}
}

// roundTrip sends line and reads the answer, giving up after d.
func (c *client) roundTrip(line string, d time.Duration) (string, error) {
	if err := c.c.SetDeadline(time.Now().Add(d)); err != nil {
		return "", err
	}
	if _, err := io.WriteString(c.c, line+"\n"); err != nil {
		return "", err
	}
	s, err := c.r.ReadString('\n')
	if len(s) > 0 {
		s = s[:len(s)-1]
	}
	return s, err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

const long = 10 * time.Second

// quiet is how long a blackholed read is given to (wrongly) produce data.
const quiet = 300 * time.Millisecond

func TestPass(t *testing.T) {
	p := newProxy(t, echoServer(t, "a:"))
	c := dial(t, p.Addr())
	for _, in := range []string{"one", "two", "three"} {
		got, err := c.roundTrip(in, long)
		if err != nil || got != "a:"+in {
			t.Fatalf("roundTrip(%q): got %q, %v, want %q", in, got, err, "a:"+in)
		}
	}
	if s := p.Stats(); s.Accepted != 1 || s.Dialed != 1 || s.Active != 1 {
		t.Fatalf("stats: got %+v, want 1 accepted, 1 dialed, 1 active", s)
	}
}

func TestBlackholeFreezesAndResumes(t *testing.T) {
	p := newProxy(t, echoServer(t, "a:"))
	old := dial(t, p.Addr())
	if got, err := old.roundTrip("before", long); err != nil || got != "a:before" {
		t.Fatalf("before: got %q, %v, want a:before", got, err)
	}
	p.SetMode(Blackhole)
	if got, err := old.roundTrip("frozen", quiet); !isTimeout(err) {
		t.Fatalf("existing conn in blackhole: got %q, %v, want a timeout", got, err)
	}
	fresh := dial(t, p.Addr()) // the kernel accepts; the proxy never answers
	if got, err := fresh.roundTrip("new", quiet); !isTimeout(err) {
		t.Fatalf("new conn in blackhole: got %q, %v, want a timeout", got, err)
	}
	if d := p.Stats().Dialed; d != 1 {
		t.Fatalf("dialed during blackhole: got %d, want 1", d)
	}
	p.SetMode(Pass)
	// The frozen bytes are delivered once the hole closes, in order.
	old.c.SetDeadline(time.Now().Add(long))
	if got, err := old.r.ReadString('\n'); err != nil || got != "a:frozen\n" {
		t.Fatalf("after heal, existing conn: got %q, %v, want a:frozen", got, err)
	}
	fresh.c.SetDeadline(time.Now().Add(long))
	if got, err := fresh.r.ReadString('\n'); err != nil || got != "a:new\n" {
		t.Fatalf("after heal, held conn: got %q, %v, want a:new", got, err)
	}
}

// Bytes read once the mode is Pass again never overtake the bytes held
// while it was not: the echo's answers come back in the order sent. Many
// separate writes are held, so the proxy still delivers them when the
// next one arrives.
func TestPassAfterHeldBytesKeepsTheirOrder(t *testing.T) {
	p := newProxy(t, echoServer(t, "a:"))
	c := dial(t, p.Addr())
	if got, err := c.roundTrip("open", long); err != nil || got != "a:open" {
		t.Fatalf("open: got %q, %v", got, err)
	}
	const held = 50
	for trial := range 10 {
		p.SetMode(Blackhole)
		for i := range held {
			if _, err := fmt.Fprintf(c.c, "held%d\n", i); err != nil {
				t.Fatal(err)
			}
		}
		p.SetMode(Pass)
		for i := range 5 {
			if _, err := fmt.Fprintf(c.c, "after%d\n", i); err != nil {
				t.Fatal(err)
			}
		}
		c.c.SetDeadline(time.Now().Add(long))
		var want []string
		for i := range held {
			want = append(want, fmt.Sprintf("a:held%d\n", i))
		}
		for i := range 5 {
			want = append(want, fmt.Sprintf("a:after%d\n", i))
		}
		for _, w := range want {
			if got, err := c.r.ReadString('\n'); err != nil || got != w {
				t.Fatalf("trial %d: got %q, %v, want %q", trial, got, err, w)
			}
		}
	}
}

func TestReset(t *testing.T) {
	p := newProxy(t, echoServer(t, "a:"))
	old := dial(t, p.Addr())
	if _, err := old.roundTrip("x", long); err != nil {
		t.Fatal(err)
	}
	p.SetMode(Reset)
	if got, err := old.roundTrip("y", long); err == nil || isTimeout(err) {
		t.Fatalf("existing conn after Reset: got %q, %v, want a connection error", got, err)
	}
	if nc, err := net.Dial("tcp", p.Addr()); err == nil { // or reset during connect
		c := &client{nc, bufio.NewReader(nc)}
		if got, err := c.roundTrip("z", long); err == nil || isTimeout(err) {
			t.Fatalf("new conn in Reset: got %q, %v, want a connection error", got, err)
		}
		nc.Close()
	}
	poll.For(t, long, "reset conns to be gone", func() bool { return p.Stats().Active == 0 })
	if d := p.Stats().Dropped; d != 1 {
		t.Fatalf("dropped: got %d, want 1", d)
	}
	p.SetMode(Pass)
	c := dial(t, p.Addr())
	if got, err := c.roundTrip("back", long); err != nil || got != "a:back" {
		t.Fatalf("after Reset->Pass: got %q, %v, want a:back", got, err)
	}
}

func TestDelay(t *testing.T) {
	p := newProxy(t, echoServer(t, "a:"))
	const d = 50 * time.Millisecond
	p.SetMode(Delay(d))
	c := dial(t, p.Addr())
	start := time.Now()
	got, err := c.roundTrip("slow", long)
	if err != nil || got != "a:slow" {
		t.Fatalf("got %q, %v, want a:slow", got, err)
	}
	// Each direction adds d, so a round trip takes at least 2d: a lower
	// bound, which a busy machine cannot break.
	if el := time.Since(start); el < 2*d {
		t.Fatalf("round trip took %s, want >= %s", el, 2*d)
	}
	if m := p.Mode(); m.Kind != KindDelay || m.Delay != d {
		t.Fatalf("mode: got %v, want delay(%s)", m, d)
	}
}

// dropPattern opens n connections one after another and records which were dropped.
func dropPattern(t *testing.T, fraction float64, seed uint64, n int) []bool {
	t.Helper()
	p := newProxy(t, echoServer(t, "a:"))
	p.SetMode(Drop(fraction, seed))
	out := make([]bool, n)
	for i := range n {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil { // reset before the handshake finished
			out[i] = true
			continue
		}
		cl := &client{c, bufio.NewReader(c)}
		_, err = cl.roundTrip("x", long)
		c.Close()
		if isTimeout(err) {
			t.Fatalf("conn %d timed out", i)
		}
		out[i] = err != nil
	}
	if got, want := p.Stats().Dropped, uint64(count(out)); got != want {
		t.Fatalf("stats dropped: got %d, want %d", got, want)
	}
	return out
}

func count(b []bool) int {
	n := 0
	for _, v := range b {
		if v {
			n++
		}
	}
	return n
}

func TestDropDeterministic(t *testing.T) {
	tests := []struct {
		name     string
		fraction float64
		min, max int // of 40
	}{
		{"none", 0, 0, 0},
		{"all", 1, 40, 40},
		{"half", 0.5, 8, 32},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := dropPattern(t, tt.fraction, 42, 40)
			b := dropPattern(t, tt.fraction, 42, 40)
			for i := range a {
				if a[i] != b[i] {
					t.Fatalf("conn %d: got dropped=%v on second run, want %v (same seed)", i, b[i], a[i])
				}
			}
			if n := count(a); n < tt.min || n > tt.max {
				t.Fatalf("dropped: got %d of 40, want %d..%d", n, tt.min, tt.max)
			}
		})
	}
}

func TestSetTarget(t *testing.T) {
	p := newProxy(t, echoServer(t, "a:"))
	old := dial(t, p.Addr())
	if got, _ := old.roundTrip("1", long); got != "a:1" {
		t.Fatalf("got %q, want a:1", got)
	}
	p.SetTarget(echoServer(t, "b:"))
	c := dial(t, p.Addr())
	if got, err := c.roundTrip("2", long); err != nil || got != "b:2" {
		t.Fatalf("new conn after SetTarget: got %q, %v, want b:2", got, err)
	}
	if got, err := old.roundTrip("3", long); err != nil || got != "a:3" {
		t.Fatalf("old conn after SetTarget: got %q, %v, want a:3", got, err)
	}
}

func TestCloseEndsConnections(t *testing.T) {
	p := newProxy(t, echoServer(t, "a:"))
	c := dial(t, p.Addr())
	if _, err := c.roundTrip("x", long); err != nil {
		t.Fatal(err)
	}
	p.SetMode(Blackhole)
	held := dial(t, p.Addr())
	poll.For(t, long, "held conn accepted", func() bool { return p.Stats().Accepted == 2 })
	if err := p.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second close: got %v, want nil", err)
	}
	for name, cl := range map[string]*client{"active": c, "held": held} {
		if got, err := cl.roundTrip("y", long); err == nil || isTimeout(err) {
			t.Fatalf("%s conn after Close: got %q, %v, want a connection error", name, got, err)
		}
	}
	if _, err := net.DialTimeout("tcp", p.Addr(), long); err == nil {
		t.Fatalf("dial after Close: got nil error, want refused")
	}
}

// dialFrom connects from the local IP src (any 127/8 address is loopback on Linux).
func dialFrom(t *testing.T, src, addr string) *client {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{c, bufio.NewReader(c)}
}

func TestModeFromFiltersBySourceIP(t *testing.T) {
	p := newProxy(t, echoServer(t, "a:"))
	cut := dialFrom(t, "127.0.0.2", p.Addr())
	other := dialFrom(t, "127.0.0.3", p.Addr())
	for _, c := range []*client{cut, other} {
		if got, err := c.roundTrip("hello", long); err != nil || got != "a:hello" {
			t.Fatalf("before: got %q, %v, want a:hello", got, err)
		}
	}

	p.SetModeFrom("127.0.0.2", Blackhole)
	if m := p.ModeFrom("127.0.0.2"); m.Kind != KindBlackhole {
		t.Fatalf("ModeFrom: got %s, want blackhole", m)
	}
	if got, err := cut.roundTrip("frozen", quiet); !isTimeout(err) {
		t.Fatalf("existing conn from the cut IP: got %q, %v, want a timeout", got, err)
	}
	if got, err := other.roundTrip("still", long); err != nil || got != "a:still" {
		t.Fatalf("existing conn from another IP: got %q, %v, want a:still", got, err)
	}
	fresh := dialFrom(t, "127.0.0.2", p.Addr())
	if got, err := fresh.roundTrip("new", quiet); !isTimeout(err) {
		t.Fatalf("new conn from the cut IP: got %q, %v, want a timeout", got, err)
	}
	if got, err := dialFrom(t, "127.0.0.3", p.Addr()).roundTrip("new", long); err != nil || got != "a:new" {
		t.Fatalf("new conn from another IP: got %q, %v, want a:new", got, err)
	}
	// A proxy-wide change does not lift a per-source mode.
	p.SetMode(Pass)
	if got, err := fresh.roundTrip("x", quiet); !isTimeout(err) {
		t.Fatalf("after SetMode(Pass), conn from the cut IP: got %q, %v, want a timeout", got, err)
	}

	p.ClearModeFrom("127.0.0.2")
	cut.c.SetDeadline(time.Now().Add(long))
	if got, err := cut.r.ReadString('\n'); err != nil || got != "a:frozen\n" {
		t.Fatalf("after ClearModeFrom: got %q, %v, want a:frozen", got, err)
	}

	p.SetModeFrom("127.0.0.3", Reset)
	if got, err := other.roundTrip("y", long); err == nil || isTimeout(err) {
		t.Fatalf("conn from a reset IP: got %q, %v, want a connection error", got, err)
	}
	if got, err := cut.roundTrip("z", long); err != nil || got != "a:z" {
		t.Fatalf("conn from a passing IP after another's reset: got %q, %v, want a:z", got, err)
	}
}

func TestBytesFromCountsEachDirectionPerClientIP(t *testing.T) {
	p := newProxy(t, echoServer(t, "ab:"))
	c := dial(t, p.Addr())
	for _, in := range []string{"one", "two"} {
		if _, err := c.roundTrip(in, long); err != nil {
			t.Fatal(err)
		}
	}
	// "one\n" and "two\n" went out (8 bytes); "ab:one\n" and "ab:two\n" came
	// back (14). The count follows the write the client may already have read.
	var to, from uint64
	if !poll.WithinEvery(long, 5*time.Millisecond, func() bool {
		to, from = p.BytesFrom("127.0.0.1")
		return to == 8 && from == 14
	}) {
		t.Fatalf("BytesFrom(127.0.0.1): got %d to target, %d from it; want 8 and 14", to, from)
	}
	if to, from := p.BytesFrom("127.0.0.2"); to != 0 || from != 0 {
		t.Fatalf("BytesFrom(127.0.0.2), an IP that never connected: got %d, %d; want 0, 0", to, from)
	}
}
