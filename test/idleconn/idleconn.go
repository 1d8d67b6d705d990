package idleconn

import (
	"errors"
	"io"
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
	// Read them all at once: a read past its deadline reports the timeout
	// even when the close has arrived.
	deadline := time.Now().Add(500 * time.Millisecond)
	var open atomic.Int32
	var wg sync.WaitGroup
	for _, c := range conns {
		_ = c.SetReadDeadline(deadline)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
				open.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(open.Load()), closeAll
}
