package e2e

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drwatch/drwatch/test/faultproxy"
)

// UDPRelay forwards DNS datagrams from its address to a target, one
// upstream socket per request. The fault proxy speaks TCP only, so the
// reconciler's path to BIND is a faultproxy.Proxy for TCP (UPDATEs) plus
// this relay on the same port for UDP (queries).
type UDPRelay struct {
	pc     net.PacketConn
	target string
	drop   atomic.Bool
	wg     sync.WaitGroup
	closed atomic.Bool
}

// DNSPath is one watcher's way to BIND: a TCP fault proxy (UPDATEs, and
// queries whose UDP answer was truncated) and a UDP relay (queries) on the
// same port.
type DNSPath struct {
	Proxy *faultproxy.Proxy
	Relay *UDPRelay
}

// Addr is the host:port the watcher's dns.rfc2136.server points at.
func (p *DNSPath) Addr() string { return p.Proxy.Addr() }

// Close stops both.
func (p *DNSPath) Close() {
	_ = p.Proxy.Close()
	_ = p.Relay.Close()
}

// newDNSPath starts a TCP fault proxy and a UDP relay on one port, both
// forwarding to target.
func newDNSPath(target string) (*DNSPath, error) {
	for range 50 {
		p, err := faultproxy.New("127.0.0.1:0", target)
		if err != nil {
			return nil, err
		}
		pc, err := net.ListenPacket("udp", p.Addr())
		if err != nil {
			_ = p.Close()
			continue
		}
		r := &UDPRelay{pc: pc, target: target}
		r.wg.Add(1)
		go r.loop()
		return &DNSPath{Proxy: p, Relay: r}, nil
	}
	return nil, errors.New("no port free for both tcp and udp")
}

// SetDrop makes the relay drop every datagram (true) or forward them (false).
func (r *UDPRelay) SetDrop(drop bool) { r.drop.Store(drop) }

// Close stops the relay and waits for its goroutines.
func (r *UDPRelay) Close() error {
	if r.closed.Swap(true) {
		return nil
	}
	err := r.pc.Close()
	r.wg.Wait()
	return err
}

func (r *UDPRelay) loop() {
	defer r.wg.Done()
	for {
		buf := make([]byte, 65535)
		n, from, err := r.pc.ReadFrom(buf)
		if err != nil {
			if r.closed.Load() {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		if r.drop.Load() {
			continue
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.forward(buf[:n], from)
		}()
	}
}

func (r *UDPRelay) forward(req []byte, from net.Addr) {
	up, err := net.Dial("udp", r.target)
	if err != nil {
		return
	}
	defer up.Close()
	_ = up.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := up.Write(req); err != nil {
		return
	}
	buf := make([]byte, 65535)
	n, err := up.Read(buf)
	if err != nil || r.drop.Load() {
		return
	}
	_, _ = r.pc.WriteTo(buf[:n], from)
}

// String names the relay for logs.
func (r *UDPRelay) String() string {
	return fmt.Sprintf("udp relay %s -> %s (drop=%s)", r.pc.LocalAddr(), r.target, strconv.FormatBool(r.drop.Load()))
}
