package cluster

import (
	"context"
	"sync"
	"time"
)

// opInfo asks a server what it runs: the newest log format its state
// machine reads and its release. A server from before formats answers it
// with an error, as it answers every op it does not know: that is how a
// legacy server is told from one that could not be asked.
const opInfo = "info"

// LegacyFormat is the Format of a server that answered opInfo with an
// error: a release from before log formats (failover.LegacyFormat).
const LegacyFormat = 0

// UnknownFormat is the Format of a server this node could not ask (down,
// cut off, not yet asked): nothing may be assumed of what it reads.
const UnknownFormat = -1

// DefaultServerInfoEvery is how often a node asks every server what it
// runs, when Config.ServerInfoEvery asks for the default.
const DefaultServerInfoEvery = 5 * time.Second

// ServerInfo is what one server of the configuration runs, as it last
// told this node.
type ServerInfo struct {
	ID string
	// Format is the newest log format it reads: LegacyFormat for a server
	// from before formats, UnknownFormat when it could not be asked.
	Format int
	// Release is its release string; "" with LegacyFormat or UnknownFormat.
	Release string
	// At is when it answered or the asking failed.
	At time.Time
}

// serverInfos keeps the last ServerInfo of every server; safe for
// concurrent use.
type serverInfos struct {
	mu   sync.Mutex
	byID map[string]ServerInfo
}

func (s *serverInfos) set(i ServerInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID == nil {
		s.byID = map[string]ServerInfo{}
	}
	s.byID[i.ID] = i
}

func (s *serverInfos) get(id string) (ServerInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.byID[id]
	return i, ok
}

// ServerInfos returns what every server of the latest configuration runs,
// in its order, as this node last learnt it (every ServerInfoEvery): this
// node's own from its Config, UnknownFormat for a server not yet asked or
// not answering. It does not block on the network.
func (n *Node) ServerInfos() []ServerInfo {
	var out []ServerInfo
	for _, sv := range n.servers() {
		out = append(out, n.serverInfo(string(sv.ID)))
	}
	return out
}

func (n *Node) serverInfo(id string) ServerInfo {
	if id == n.id {
		return ServerInfo{ID: id, Format: n.cfg.Format, Release: n.cfg.Release, At: time.Now()}
	}
	if i, ok := n.infos.get(id); ok {
		return i
	}
	return ServerInfo{ID: id, Format: UnknownFormat}
}

// MinFormat returns the oldest format among the servers of the latest
// configuration (UnknownFormat when one could not be asked, or there are
// none): what every one of them reads.
func (n *Node) MinFormat() int {
	infos := n.ServerInfos()
	if len(infos) == 0 {
		return UnknownFormat
	}
	f := infos[0].Format
	for _, i := range infos[1:] {
		f = min(f, i.Format)
	}
	return f
}

// askServers asks every other server of the configuration what it runs,
// every ServerInfoEvery, until the node stops.
func (n *Node) askServers(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		var wg sync.WaitGroup
		for _, sv := range n.servers() {
			if string(sv.ID) == n.id {
				continue
			}
			wg.Add(1)
			go func(id, addr string) {
				defer wg.Done()
				n.infos.set(n.ask(id, addr, every))
			}(string(sv.ID), string(sv.Address))
		}
		wg.Wait()
		select {
		case <-n.life.Done():
			return
		case <-t.C:
		}
	}
}

// ask asks one server what it runs, within timeout.
func (n *Node) ask(id, addr string, timeout time.Duration) ServerInfo {
	ctx, cancel := context.WithTimeout(n.life, min(timeout, n.cfg.TransportTimeout))
	defer cancel()
	r, err := n.rpc.call(ctx, id, addr, rpcRequest{Op: opInfo})
	switch {
	case err != nil:
		// Not reached: it may run anything.
		return ServerInfo{ID: id, Format: UnknownFormat, At: time.Now()}
	case r.Code != "":
		// It answered, but knows no opInfo: a release from before formats.
		return ServerInfo{ID: id, Format: LegacyFormat, At: time.Now()}
	}
	return ServerInfo{ID: id, Format: r.Format, Release: r.Release, At: time.Now()}
}
