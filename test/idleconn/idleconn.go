package idleconn

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Held opens n idle connections to addr from src and counts those the
// server still holds half a second later: a server that sheds a connection
// closes it at once, one that admits it waits longer than that for the
// client to speak. The caller closes the connections with closeAll.
func Held(tb testing.TB, addr string, src net.IP, n int) (held int, closeAll func()) {
	tb.Helper()
	var conns []net.Conn
	closeAll = func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}
	for range n {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: src}, Timeout: time.Second}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			closeAll()
			tb.Fatalf("dial %s from %s: %v", addr, src, err)
		}
		conns = append(conns, c)
	}
	return Open(conns), closeAll
}

// Open counts the connections in conns that the server still holds half a
// second from now: a read on one the server has closed fails at once
// (EOF, or a reset), one it holds times out. The connections must be
// silent from the server's side. Read them all at once: a read past its
// deadline reports the timeout even when the close has arrived.
func Open(conns []net.Conn) int {
	deadline := time.Now().Add(500 * time.Millisecond)
	var open atomic.Int32
	var wg sync.WaitGroup
	for _, c := range conns {
		_ = c.SetReadDeadline(deadline)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ne net.Error
			if _, err := c.Read(make([]byte, 1)); errors.As(err, &ne) && ne.Timeout() {
				open.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(open.Load())
}
