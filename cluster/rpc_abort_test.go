package cluster

import (
	"bufio"
	"context"
	"crypto/tls"
	"net"
	"testing"
	"testing/synctest"
	"time"
)

// A call to a peer that took the request and then stopped reading its
// socket (a wedged process, a full receive window) must end when the call
// fails: closing the broken connection must not wait for the peer to read
// a TLS goodbye, which crypto/tls gives five seconds. A forwarded report
// that overran its deadline that way reached the leader seconds after its
// round, and its evidence was counted as fresh.
//
// net.Pipe has no buffer, like a socket whose peer's window is full, and
// the bubble's clock is virtual, so the bounds below are exact, not wall
// time guesses.

// TestFailedCallDoesNotWaitForAPeerThatStoppedReading: the peer answers a
// frame the client refuses, then reads nothing more.
func TestFailedCallDoesNotWaitForAPeerThatStoppedReading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rc := wedgedPeer(t, []byte{0xff, 0xff, 0xff, 0xff}) // a length over maxRPCMessage
		start := time.Now()
		_, err := rc.call(t.Context(), "b", "b:1", rpcRequest{Op: opPropose, Cmd: []byte("x")})
		if err == nil {
			t.Fatal("call that got a bad frame succeeded")
		}
		if took := time.Since(start); took > time.Second {
			t.Fatalf("call failed %v after it began (%v): it waited on the broken connection's close", took, err)
		}
	})
}

// TestTimedOutCallEndsAtItsDeadlineWhenThePeerStopsReading: the peer never
// answers; the call ends at its deadline.
func TestTimedOutCallEndsAtItsDeadlineWhenThePeerStopsReading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rc := wedgedPeer(t, nil)
		const deadline = 200 * time.Millisecond
		ctx, cancel := context.WithTimeout(t.Context(), deadline)
		defer cancel()
		start := time.Now()
		_, err := rc.call(ctx, "b", "b:1", rpcRequest{Op: opPropose, Cmd: []byte("x")})
		if err == nil {
			t.Fatal("call to a peer that never answers succeeded")
		}
		if took := time.Since(start); took > deadline+time.Second {
			t.Fatalf("call ended %v after it began, %v past its deadline: it waited on the broken connection's close", took, took-deadline)
		}
	})
}

// wedgedPeer returns a client whose only peer, b, reads one request,
// writes answer, and then neither reads nor writes again. Call it inside a
// bubble: the certificates are checked against the bubble's clock.
func wedgedPeer(t *testing.T, answer []byte) *rpcClient {
	t.Helper()
	ca := newTestCA(t, "ca")
	client, server := ca.creds(t, "a"), ca.creds(t, "b")
	cEnd, sEnd := net.Pipe()
	t.Cleanup(func() { _ = sEnd.Close() })
	go func() {
		cfg := server.serverTLS(func(string) bool { return true })
		// A ticket is a write the client reads only later: on an
		// unbuffered pipe it would block both ends at random.
		cfg.SessionTicketsDisabled = true
		tc := tls.Server(sEnd, cfg)
		if err := tc.Handshake(); err != nil {
			t.Errorf("server handshake: %v", err)
			return
		}
		r := bufio.NewReader(tc)
		if _, err := r.ReadByte(); err != nil { // the protocol byte
			return
		}
		var req rpcRequest
		if err := readMsg(r, &req); err != nil {
			t.Errorf("server read: %v", err)
			return
		}
		if answer != nil {
			if _, err := tc.Write(answer); err != nil {
				t.Errorf("server answer: %v", err)
				return
			}
		}
		<-t.Context().Done() // wedged: never reads again
	}()
	m := &mux{creds: client, dialer: func(context.Context, string) (net.Conn, error) { return cEnd, nil }}
	m.conns = map[net.Conn]struct{}{}
	return &rpcClient{m: m, idle: map[string][]*rpcConn{}}
}
