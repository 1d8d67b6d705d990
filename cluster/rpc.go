package cluster

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// The cluster RPC runs on the raft port (protocol byte 'F'). Each message
// is a 4-byte big-endian length and a JSON object; a connection carries any
// number of request/response pairs, one at a time, and is pooled.
const maxRPCMessage = 16 << 20

// RPC operations.
const (
	opPropose = "propose"
	opAdd     = "add_voter"
	opRemove  = "remove_server"
	opBarrier = "barrier"
	opPing    = "ping"
	// opLeaving is a peer's goodbye before an orderly stop; the caller is
	// the verified peer of the connection.
	opLeaving = "leaving"
)

type rpcRequest struct {
	Op        string `json:"op"`
	Key       []byte `json:"key,omitempty"`
	Cmd       []byte `json:"cmd,omitempty"`
	ID        string `json:"id,omitempty"`
	Addr      string `json:"addr,omitempty"`
	Force     bool   `json:"force,omitempty"`
	TimeoutMS int64  `json:"timeout_ms,omitempty"` // the caller's remaining deadline
}

type rpcResponse struct {
	Code  string `json:"code,omitempty"` // "" on success; see errorCodes
	Msg   string `json:"msg,omitempty"`
	Resp  []byte `json:"resp,omitempty"`
	Index uint64 `json:"index,omitempty"`
	// Format and Release answer opInfo.
	Format  int    `json:"format,omitempty"`
	Release string `json:"release,omitempty"`
}

// errorCodes carry sentinel errors across the wire so errors.Is works on
// the caller's side of a forwarded call.
var errorCodes = []struct {
	code string
	err  error
}{
	{"not_leader", ErrNotLeader},
	{"no_leader", ErrNoLeader},
	{"needs_confirmation", ErrNeedsConfirmation},
	{"shutdown", ErrShutdown},
	{"leadership_lost", ErrLeadershipLost},
	{"bad_node_id", ErrBadNodeID},
	{"not_member", ErrNotMember},
}

func encodeError(err error) rpcResponse {
	for _, c := range errorCodes {
		if errors.Is(err, c.err) {
			return rpcResponse{Code: c.code, Msg: err.Error()}
		}
	}
	return rpcResponse{Code: "error", Msg: err.Error()}
}

// RemoteError is an error the leader returned that has no sentinel.
type RemoteError struct{ Msg string }

func (e *RemoteError) Error() string { return e.Msg }

func decodeError(r rpcResponse) error {
	if r.Code == "" {
		return nil
	}
	for _, c := range errorCodes {
		if r.Code == c.code {
			if r.Msg == c.err.Error() || r.Msg == "" {
				return c.err
			}
			return &wireError{msg: r.Msg, sentinel: c.err}
		}
	}
	return &RemoteError{Msg: r.Msg}
}

// wireError keeps the remote message and unwraps to the sentinel.
type wireError struct {
	msg      string
	sentinel error
}

func (e *wireError) Error() string { return e.msg }
func (e *wireError) Unwrap() error { return e.sentinel }

func writeMsg(w *bufio.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(b)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return err
	}
	return w.Flush()
}

func readMsg(r *bufio.Reader, v any) error {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxRPCMessage {
		return fmt.Errorf("rpc message of %d bytes too large", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// serveRPC answers requests on one verified connection until it closes.
func (n *Node) serveRPC(conn net.Conn, peer string) {
	r := bufio.NewReader(conn)
	w := bufio.NewWriter(conn)
	for {
		var req rpcRequest
		if err := readMsg(r, &req); err != nil {
			return
		}
		var resp rpcResponse
		if req.Op == opLeaving {
			n.peerLeaving(peer)
		} else {
			resp = n.handleRPC(req)
		}
		if err := writeMsg(w, resp); err != nil {
			n.logger.Debug("rpc reply failed", "peer", peer, "err", err)
			return
		}
	}
}

func (n *Node) handleRPC(req rpcRequest) rpcResponse {
	ctx := n.life
	if req.TimeoutMS > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMS)*time.Millisecond)
		defer cancel()
	}
	switch req.Op {
	case opPing:
		return rpcResponse{}
	case opInfo:
		return rpcResponse{Format: n.cfg.Format, Release: n.cfg.Release}
	case opPropose:
		resp, idx, err := n.applyLocal(ctx, req.Key, req.Cmd)
		if err != nil {
			return encodeError(err)
		}
		return rpcResponse{Resp: resp, Index: idx}
	case opAdd:
		if err := n.addVoterLocal(ctx, req.ID, req.Addr); err != nil {
			return encodeError(err)
		}
		return rpcResponse{}
	case opRemove:
		if err := n.removeLocal(ctx, req.ID, req.Force); err != nil {
			return encodeError(err)
		}
		return rpcResponse{}
	case opBarrier:
		idx, err := n.barrierLocal(ctx)
		if err != nil {
			return encodeError(err)
		}
		return rpcResponse{Index: idx}
	}
	return rpcResponse{Code: "error", Msg: fmt.Sprintf("unknown rpc op %q", req.Op)}
}

// rpcClient pools verified RPC connections per peer.
type rpcClient struct {
	m *mux

	mu     sync.Mutex
	idle   map[string][]*rpcConn // by id+"@"+addr
	closed bool
}

type rpcConn struct {
	c net.Conn
	r *bufio.Reader
	w *bufio.Writer
}

const maxIdlePerPeer = 4

// errTransport marks a failure to reach or hear from the peer: the call may
// or may not have run there, so only idempotent calls are retried.
var errTransport = errors.New("cluster rpc transport")

func (c *rpcClient) call(ctx context.Context, id, addr string, req rpcRequest) (rpcResponse, error) {
	pk := id + "@" + addr
	conn, err := c.get(ctx, pk, id, addr)
	if err != nil {
		return rpcResponse{}, fmt.Errorf("%w: dial %s: %w", errTransport, id, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		req.TimeoutMS = max(1, time.Until(dl).Milliseconds())
		_ = conn.c.SetDeadline(dl)
	} else {
		_ = conn.c.SetDeadline(time.Time{})
	}
	// A cancelled context without a deadline still unblocks the read.
	stop := context.AfterFunc(ctx, func() { _ = conn.c.SetDeadline(time.Now()) })
	var resp rpcResponse
	err = writeMsg(conn.w, req)
	if err == nil {
		err = readMsg(conn.r, &resp)
	}
	stopped := stop()
	if err != nil || !stopped {
		_ = abort(conn.c) // broken: the peer may not be reading
		if err == nil {
			err = ctx.Err()
		}
		return rpcResponse{}, fmt.Errorf("%w: %s %s: %w", errTransport, req.Op, id, err)
	}
	c.put(pk, conn)
	return resp, nil
}

func (c *rpcClient) get(ctx context.Context, pk, id, addr string) (*rpcConn, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrShutdown
	}
	if l := c.idle[pk]; len(l) > 0 {
		conn := l[len(l)-1]
		c.idle[pk] = l[:len(l)-1]
		c.mu.Unlock()
		return conn, nil
	}
	c.mu.Unlock()
	nc, err := c.m.dial(ctx, addr, id, protoRPC)
	if err != nil {
		return nil, err
	}
	return &rpcConn{c: nc, r: bufio.NewReader(nc), w: bufio.NewWriter(nc)}, nil
}

func (c *rpcClient) put(pk string, conn *rpcConn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || len(c.idle[pk]) >= maxIdlePerPeer {
		_ = conn.c.Close()
		return
	}
	c.idle[pk] = append(c.idle[pk], conn)
}

func (c *rpcClient) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, l := range c.idle {
		for _, conn := range l {
			_ = conn.c.Close()
		}
	}
	c.idle = nil
}
