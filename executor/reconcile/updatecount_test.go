package reconcile

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/drwatch/drwatch/test/dnsservers"
	"github.com/miekg/dns"
)

// updateCounter stands between the providers and a DNS server and records
// every UPDATE that passes: its zone, the fences it writes and the
// server's answer. Messages pass byte for byte (a re-packed message would
// break its TSIG); queries pass, over UDP and TCP alike, counted only.
type updateCounter struct {
	target string
	addr   string
	udp    net.PacketConn
	tcp    net.Listener
	wg     sync.WaitGroup

	mu      sync.Mutex
	updates []sentUpdate
	queries int
}

// sentUpdate is one UPDATE the server answered.
type sentUpdate struct {
	Zone   string
	Fences []string // the fence TXT records it writes, sorted
	Rcode  string
}

func (u sentUpdate) String() string {
	return fmt.Sprintf("%s %s [%s]", u.Zone, u.Rcode, strings.Join(u.Fences, " "))
}

// startUpdateCounter listens on a free port (UDP and TCP) for target.
func startUpdateCounter(t *testing.T, target string) *updateCounter {
	t.Helper()
	port, err := dnsservers.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	c := &updateCounter{target: target, addr: fmt.Sprintf("127.0.0.1:%d", port)}
	if c.tcp, err = net.Listen("tcp", c.addr); err != nil {
		t.Fatal(err)
	}
	if c.udp, err = net.ListenPacket("udp", c.addr); err != nil {
		c.tcp.Close()
		t.Fatal(err)
	}
	c.wg.Add(2)
	go c.serveUDP()
	go c.serveTCP()
	t.Cleanup(func() {
		c.udp.Close()
		c.tcp.Close()
		c.wg.Wait()
	})
	return c
}

// Updates returns the UPDATEs answered so far, in order.
func (c *updateCounter) Updates() []sentUpdate {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.updates)
}

// Queries returns how many queries were answered so far.
func (c *updateCounter) Queries() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queries
}

func (c *updateCounter) serveUDP() {
	defer c.wg.Done()
	buf := make([]byte, 65535)
	for {
		n, from, err := c.udp.ReadFrom(buf)
		if err != nil {
			return
		}
		reply, err := exchangeUDP(c.target, buf[:n])
		if err == nil {
			c.record(buf[:n], reply)
			_, _ = c.udp.WriteTo(reply, from)
		}
	}
}

func exchangeUDP(target string, msg []byte) ([]byte, error) {
	conn, err := net.Dial("udp", target)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if _, err := conn.Write(msg); err != nil {
		return nil, err
	}
	buf := make([]byte, 65535)
	n, err := conn.Read(buf)
	return buf[:n], err
}

func (c *updateCounter) serveTCP() {
	defer c.wg.Done()
	for {
		conn, err := c.tcp.Accept()
		if err != nil {
			return
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			defer conn.Close()
			c.relayTCP(conn)
		}()
	}
}

// relayTCP passes the client's length-prefixed messages to the server one
// at a time and its answers back, recording each UPDATE.
func (c *updateCounter) relayTCP(client net.Conn) {
	server, err := net.Dial("tcp", c.target)
	if err != nil {
		return
	}
	defer server.Close()
	for {
		req, err := readFramed(client)
		if err != nil {
			return
		}
		if _, err := server.Write(req); err != nil {
			return
		}
		reply, err := readFramed(server)
		if err != nil {
			return
		}
		c.record(req[2:], reply[2:])
		if _, err := client.Write(reply); err != nil {
			return
		}
	}
}

func readFramed(r io.Reader) ([]byte, error) {
	var n [2]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	buf := make([]byte, 2+int(binary.BigEndian.Uint16(n[:])))
	copy(buf, n[:])
	_, err := io.ReadFull(r, buf[2:])
	return buf, err
}

func (c *updateCounter) record(req, reply []byte) {
	var m, r dns.Msg
	if m.Unpack(req) != nil || r.Unpack(reply) != nil || len(m.Question) != 1 {
		return
	}
	if m.Opcode == dns.OpcodeQuery {
		c.mu.Lock()
		c.queries++
		c.mu.Unlock()
		return
	}
	if m.Opcode != dns.OpcodeUpdate {
		return
	}
	u := sentUpdate{Zone: m.Question[0].Name, Rcode: dns.RcodeToString[r.Rcode]}
	for _, rr := range m.Ns {
		// Class IN: an add (the delete before it is class ANY).
		if txt, ok := rr.(*dns.TXT); ok && txt.Hdr.Class == dns.ClassINET && strings.HasPrefix(txt.Hdr.Name, "_drwatch") {
			u.Fences = append(u.Fences, strings.TrimSuffix(txt.Hdr.Name, "."+m.Question[0].Name)+"="+strings.Join(txt.Txt, ""))
		}
	}
	slices.Sort(u.Fences)
	c.mu.Lock()
	c.updates = append(c.updates, u)
	c.mu.Unlock()
}
