package faultproxy

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Kind names what a Mode does to traffic.
type Kind int

// The kinds of fault a Proxy can apply.
const (
	KindPass      Kind = iota // forward everything unchanged
	KindBlackhole             // accept, never forward or answer; freeze existing conns
	KindReset                 // close new and existing conns with RST
	KindDelay                 // forward every chunk after a fixed delay
	KindDrop                  // reset a seeded fraction of new conns; pass the rest
)

func (k Kind) String() string {
	switch k {
	case KindPass:
		return "pass"
	case KindBlackhole:
		return "blackhole"
	case KindReset:
		return "reset"
	case KindDelay:
		return "delay"
	case KindDrop:
		return "drop"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Mode is what the proxy does to traffic. Build one with Pass, Blackhole,
// Reset, Delay or Drop.
type Mode struct {
	Kind     Kind
	Delay    time.Duration // KindDelay: added to every chunk in each direction
	Fraction float64       // KindDrop: share of new connections reset, in [0,1]
	Seed     uint64        // KindDrop: seed of the deterministic choice
}

func (m Mode) String() string {
	switch m.Kind {
	case KindDelay:
		return fmt.Sprintf("delay(%s)", m.Delay)
	case KindDrop:
		return fmt.Sprintf("drop(%g, seed %d)", m.Fraction, m.Seed)
	}
	return m.Kind.String()
}

// Predefined modes.
var (
	// Pass forwards traffic unchanged. Connections frozen by Blackhole resume.
	Pass = Mode{Kind: KindPass}
	// Blackhole accepts new connections but never dials the target or
	// answers, and stops forwarding bytes on existing connections, like a
	// network that silently eats packets. Leaving Blackhole resumes them.
	Blackhole = Mode{Kind: KindBlackhole}
	// Reset closes every existing and new connection with an RST
	// (SO_LINGER 0), like a host that refuses connections.
	Reset = Mode{Kind: KindReset}
)

// Delay forwards every chunk read in either direction d after it was read,
// preserving order.
func Delay(d time.Duration) Mode { return Mode{Kind: KindDelay, Delay: d} }

// Drop resets a fraction of new connections, chosen by a PRNG seeded with
// seed, so the same sequence of connections sees the same drops in every
// run. Connections that are not dropped pass unchanged.
func Drop(fraction float64, seed uint64) Mode {
	return Mode{Kind: KindDrop, Fraction: fraction, Seed: seed}
}

// Stats counts connections since the proxy started.
type Stats struct {
	Accepted uint64 // connections accepted from clients
	Active   int    // connections currently open (client side)
	Dropped  uint64 // new connections reset by Drop or Reset
	Dialed   uint64 // connections opened to the target
}

// Proxy is a TCP proxy between clients connecting to Addr and a target.
// All methods are safe for concurrent use.
type Proxy struct {
	ln net.Listener

	mu      sync.Mutex
	mode    Mode
	from    map[string]Mode // per client IP, overriding mode
	rng     *rand.Rand
	target  string
	changed chan struct{} // closed and replaced on every SetMode
	conns   map[*pconn]struct{}
	closed  bool

	accepted, dropped, dialed atomic.Uint64

	bytesMu sync.Mutex
	bytes   map[string]*Bytes // per client IP

	wg   sync.WaitGroup
	done chan struct{}
}

// New listens on listenAddr (use "127.0.0.1:0" for a free port) and forwards
// to target in Pass mode.
func New(listenAddr, target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", listenAddr)
	if err != nil {
		return nil, fmt.Errorf("faultproxy listen %s: %w", listenAddr, err)
	}
	p := &Proxy{
		ln:      ln,
		mode:    Pass,
		target:  target,
		changed: make(chan struct{}),
		conns:   make(map[*pconn]struct{}),
		from:    make(map[string]Mode),
		bytes:   make(map[string]*Bytes),
		done:    make(chan struct{}),
	}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr is the address clients connect to.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target is the address new connections are forwarded to.
func (p *Proxy) Target() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.target
}

// SetTarget changes where new connections go; existing ones keep theirs.
func (p *Proxy) SetTarget(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = target
}

// Mode returns the current mode.
func (p *Proxy) Mode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// SetMode switches the fault applied from now on to clients without a mode
// of their own (SetModeFrom). Switching to Reset closes every open
// connection it applies to with RST before it returns; switching away from
// Blackhole resumes frozen connections.
func (p *Proxy) SetMode(m Mode) {
	p.mu.Lock()
	p.mode = m
	p.changeLocked(m)
}

// SetModeFrom applies m to connections from the client IP ip (as in
// "127.0.0.12"), new and existing, overriding the proxy-wide mode until
// ClearModeFrom. It lets one proxy in front of a node cut off some peers
// and not others, when each peer dials from its own address.
func (p *Proxy) SetModeFrom(ip string, m Mode) {
	p.mu.Lock()
	p.from[ip] = m
	p.changeLocked(m)
}

// ClearModeFrom returns connections from ip to the proxy-wide mode.
func (p *Proxy) ClearModeFrom(ip string) {
	p.mu.Lock()
	delete(p.from, ip)
	p.changeLocked(Pass) // Pass: wake everyone without reseeding a Drop

}

// ModeFrom returns the mode applied to connections from ip.
func (p *Proxy) ModeFrom(ip string) Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.modeForLocked(ip)
}

// changeLocked wakes every connection to re-read its mode and resets those
// now under Reset. It is called with p.mu held and releases it.
func (p *Proxy) changeLocked(m Mode) {
	if m.Kind == KindDrop {
		p.rng = rand.New(rand.NewPCG(m.Seed, m.Seed^0x9e3779b97f4a7c15))
	}
	close(p.changed)
	p.changed = make(chan struct{})
	var victims []*pconn
	for c := range p.conns {
		if p.modeForLocked(c.src).Kind == KindReset {
			victims = append(victims, c)
		}
	}
	p.mu.Unlock()
	for _, c := range victims {
		c.reset()
	}
}

func (p *Proxy) modeForLocked(ip string) Mode {
	if m, ok := p.from[ip]; ok {
		return m
	}
	return p.mode
}

// Stats returns the connection counters.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	active := len(p.conns)
	p.mu.Unlock()
	return Stats{
		Accepted: p.accepted.Load(),
		Active:   active,
		Dropped:  p.dropped.Load(),
		Dialed:   p.dialed.Load(),
	}
}

// Bytes counts the bytes a proxy delivered for the connections of one
// client IP, in each direction: what a peer at that IP sent to the target,
// and what the target sent back to it. They are the bytes on the wire
// (TLS records included), not the application payload.
type Bytes struct {
	ToTarget, FromTarget atomic.Uint64
}

// BytesFrom returns the byte counters of client IP ip since the proxy
// started (zero until that IP connects).
func (p *Proxy) BytesFrom(ip string) (toTarget, fromTarget uint64) {
	b := p.bytesOf(ip)
	return b.ToTarget.Load(), b.FromTarget.Load()
}

func (p *Proxy) bytesOf(ip string) *Bytes {
	p.bytesMu.Lock()
	defer p.bytesMu.Unlock()
	b, ok := p.bytes[ip]
	if !ok {
		b = &Bytes{}
		p.bytes[ip] = b
	}
	return b
}

// Close stops listening, closes every connection and waits for the proxy's
// goroutines. It is idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.done)
	var all []*pconn
	for c := range p.conns {
		all = append(all, c)
	}
	p.mu.Unlock()
	err := p.ln.Close()
	for _, c := range all {
		c.close()
	}
	p.wg.Wait()
	return err
}

// state returns the mode for client IP src and the channel closed at the
// next change of any mode.
func (p *Proxy) state(src string) (Mode, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.modeForLocked(src), p.changed
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			select {
			case <-p.done:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		p.accepted.Add(1)
		pc := &pconn{p: p, client: c.(*net.TCPConn), stop: make(chan struct{})}
		if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
			pc.src = a.IP.String()
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			pc.reset()
			return
		}
		drop := false
		switch m := p.modeForLocked(pc.src); m.Kind {
		case KindReset:
			drop = true
		case KindDrop:
			drop = p.rng.Float64() < m.Fraction
		}
		if drop {
			p.mu.Unlock()
			p.dropped.Add(1)
			pc.reset()
			continue
		}
		p.conns[pc] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go pc.run()
	}
}

// pconn is one proxied connection.
type pconn struct {
	p        *Proxy
	client   *net.TCPConn
	src      string // the client's IP
	upstream atomic.Pointer[net.TCPConn]
	once     sync.Once
	stop     chan struct{}
}

func (c *pconn) reset() {
	_ = c.client.SetLinger(0)
	if u := c.upstream.Load(); u != nil {
		_ = u.SetLinger(0)
	}
	c.close()
}

func (c *pconn) close() {
	c.once.Do(func() {
		close(c.stop)
		_ = c.client.Close()
		if u := c.upstream.Load(); u != nil {
			_ = u.Close()
		}
	})
}

func (c *pconn) run() {
	defer c.p.wg.Done()
	defer func() {
		c.close()
		c.p.mu.Lock()
		delete(c.p.conns, c)
		c.p.mu.Unlock()
	}()
	// Hold a connection accepted in Blackhole until the mode changes.
	for {
		m, changed := c.p.state(c.src)
		if m.Kind == KindReset {
			c.reset()
			return
		}
		if m.Kind != KindBlackhole {
			break
		}
		select {
		case <-changed:
		case <-c.stop:
			return
		}
	}
	u, err := net.DialTimeout("tcp", c.p.Target(), 10*time.Second)
	if err != nil {
		c.reset()
		return
	}
	c.p.dialed.Add(1)
	c.upstream.Store(u.(*net.TCPConn))
	select {
	case <-c.stop: // closed while dialing
		_ = u.Close()
		return
	default:
	}
	counts := c.p.bytesOf(c.src)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); c.pipe(c.client, c.upstream.Load(), &counts.ToTarget) }()
	go func() { defer wg.Done(); c.pipe(c.upstream.Load(), c.client, &counts.FromTarget) }()
	wg.Wait()
}

type chunk struct {
	data []byte
	at   time.Time
}

// pipe copies src to dst. A chunk read while nothing waits in the queue
// and the mode is Pass is written at once from a pooled buffer; any other
// chunk goes through a queue, so that Delay keeps reading while chunks wait
// and Blackhole can hold bytes without losing them. Passing traffic thus
// costs one goroutine hop and no allocation per chunk: a proxy in front of
// hundreds of probes a second must not load the machine it measures, nor
// delay the other connections the same process carries.
// n counts the bytes delivered.
func (c *pconn) pipe(src, dst *net.TCPConn, n *atomic.Uint64) {
	q := make(chan chunk, 64)
	// queued counts chunks enqueued and not yet delivered; only the reader
	// adds to it, so at 0 the writer holds no chunk and a direct write
	// keeps the order.
	var queued atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(q)
		bp := readBufs.Get().(*[]byte)
		defer readBufs.Put(bp)
		buf := *bp
		for {
			k, err := src.Read(buf)
			if k > 0 {
				if m, _ := c.p.state(c.src); m.Kind == KindPass && queued.Load() == 0 {
					w, werr := dst.Write(buf[:k])
					n.Add(uint64(w))
					if werr != nil {
						c.close()
						return
					}
				} else {
					queued.Add(1)
					select {
					case q <- chunk{append([]byte(nil), buf[:k]...), time.Now()}:
					case <-c.stop:
						return
					}
				}
			}
			if err != nil {
				return
			}
		}
	}()
	defer wg.Wait()
	for ch := range q {
		ok := c.deliver(ch, dst, n)
		queued.Add(-1)
		if !ok {
			c.close()
			for range q { // let the reader finish
			}
			return
		}
	}
	// src reached EOF: pass the half-close on so protocols that rely on it work.
	_ = dst.CloseWrite()
}

// readBufs are the pipes' read buffers.
var readBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// deliver writes one chunk when the mode allows it; false means the
// connection is finished.
func (c *pconn) deliver(ch chunk, dst *net.TCPConn, n *atomic.Uint64) bool {
	for {
		m, changed := c.p.state(c.src)
		switch m.Kind {
		case KindReset:
			c.reset()
			return false
		case KindBlackhole:
			select {
			case <-changed:
				continue
			case <-c.stop:
				return false
			}
		case KindDelay:
			if wait := time.Until(ch.at.Add(m.Delay)); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-changed:
					t.Stop()
					continue
				case <-c.stop:
					t.Stop()
					return false
				}
			}
		}
		w, err := dst.Write(ch.data)
		n.Add(uint64(w))
		return err == nil
	}
}
